/**
 * The plain listener with h2c on reads a connection's first bytes to tell HTTP/2's preface (RFC 9113 §3.4)
 * from HTTP/1.x. While it reads them: header_timeout bounds the wait (a silent or half-preface client is
 * closed, slowloris defence), a reset ends only that socket (the node keeps serving), and close() ends such
 * sockets instead of waiting for them (lib/transport/index.ts, docs/http2.md).
 */
import t from 'tap';
import * as net from 'node:net';
import * as http2 from 'node:http2';
import { api, echoBackend, h2Gateway, h2Request, HOST } from './helpers';

/** Resolves with how the socket ended: 'closed' (by the peer) or 'timeout' (still open after ms). */
function ended(socket: net.Socket, ms: number): Promise<'closed' | 'timeout'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
  });
}

function open(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', () => undefined);
    s.once('error', reject);
  });
}

t.test('h2c sniffing: bounded by header_timeout, a reset ends one socket, close() ends the rest', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const g = await h2Gateway([api('Pets', '/pets', `http://${HOST}:${backend.port}`)], {}, '[throughway]\nheader_timeout = 400\n');
  let closed = false;
  t.teardown(() => (closed ? undefined : g.close()));

  const silent = await open(g.plainPort);
  const half = await open(g.plainPort);
  half.write('PRI * HTTP/2.0\r\n');
  const [a, b] = await Promise.all([ended(silent, 5000), ended(half, 5000)]);
  t.equal(a, 'closed', 'a client that sends nothing is closed at header_timeout');
  t.equal(b, 'closed', 'a client that sends half the preface is closed at header_timeout');

  const reset = await open(g.plainPort);
  reset.write('PRI * HT');
  reset.resetAndDestroy();
  await new Promise((r) => setTimeout(r, 100));
  const s = http2.connect(`http://127.0.0.1:${g.plainPort}`);
  s.on('error', () => undefined);
  const r = await h2Request(s, { ':method': 'GET', ':path': '/pets/v1/after' });
  t.equal(r.status, 200, 'after a reset mid-preface the listener still serves h2c');
  s.close();

  await g.close();
  closed = true;

  // A long header_timeout: only close() can end the sniffed socket (else close() waits for it).
  const g2 = await h2Gateway([api('Pets', '/pets', `http://${HOST}:${backend.port}`)], {}, '[throughway]\nheader_timeout = 60000\n');
  const waiting = await open(g2.plainPort);
  waiting.write('PRI');
  await new Promise((r) => setTimeout(r, 50));
  const end = ended(waiting, 5000);
  const done = g2.close().then(() => 'done');
  t.equal(await end, 'closed', 'close() ends a connection still being sniffed');
  t.equal(await Promise.race([done, new Promise((r) => setTimeout(() => r('waiting'), 5000))]), 'done', 'and close() returns');
});
