/**
 * gateway.handleUpgrade(req, socket, head) on a node:http server's 'upgrade' event. The transport does
 * not tunnel upgrades yet (the WebSocket tunnel is Step 8's), so an upgrade is answered with fault 103140
 * (501, Connection: close) instead of a plain response the client could not use. The hand-off half is
 * tested too: with a transport that declares `tunnelsUpgrades`, the request head node:http consumed and the
 * bytes after it (`head`) are replayed to the transport exactly.
 */
import t from 'tap';
import * as http from 'node:http';
import * as net from 'node:net';
import WebSocket from 'ws';
import { api, echoBackend, embedded, field, HOST } from './helpers';

async function upgradeServer(onUpgrade: (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('plain'));
  server.on('upgrade', onUpgrade);
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Writes bytes, reads until the server closes. */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, HOST, () => s.write(bytes));
    let got = '';
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('end', () => {
      s.end();
      resolve(got);
    });
    s.on('error', reject);
  });
}

t.test('an upgrade the transport cannot tunnel is answered with fault 103140 and the connection closed', async (t) => {
  const backend = await echoBackend();
  const { gw, logger } = embedded([api('Chat', '/chat', `http://127.0.0.1:${backend.port}`)]);
  const faults: number[] = [];
  gw.on('fault', (f) => faults.push(f.code));
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });
  const raw = await exchange(app.port, 'GET /chat/v1/room HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  const [head, body] = raw.split('\r\n\r\n');
  t.match(head, /^HTTP\/1\.1 501 Not Implemented\r\n/);
  t.match(head, /\r\nConnection: close/);
  t.match(head, /\r\nContent-Type: application\/json; charset=UTF-8/);
  t.match(JSON.parse(body ?? ''), { fault: { code: 103140, message: 'Upgrade not supported' } });
  t.equal(backend.seen.length, 0, 'nothing reached the backend');
  t.same(faults, [103140]);
  t.match(logger.lines.find((l) => l.event === 'upgrade_refused'), { url: '/chat/v1/room', upgrade: 'websocket', code: 103140 });

  const status = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(`ws://${HOST}:${app.port}/chat/v1/room`);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => reject(new Error('opened')));
    ws.on('error', () => undefined);
  });
  t.equal(status, 501, 'a WebSocket client sees the 501');
});

t.test('hand-off: the consumed request head and the bytes after it are replayed to the transport', async (t) => {
  const backend = await echoBackend();
  const { gw } = embedded([api('Chat', '/chat', `http://127.0.0.1:${backend.port}/svc`)]);
  // What the Step 8 tunnel declares; this transport then forwards the request as plain HTTP/1.1.
  (gw.transport as unknown as { tunnelsUpgrades: boolean }).tunnelsUpgrades = true;
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });
  // node:http hands everything after the upgrade request's head over as `head`: here a second request.
  const raw = await exchange(
    app.port,
    'GET /chat/v1/room?id=1 HTTP/1.1\r\nHost: localhost\r\nX-Case-Kept: A b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' + 'GET /chat/v1/second HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
  );
  t.equal(backend.seen.length, 2, 'both requests reached the transport');
  t.equal(backend.seen[0]?.url, '/svc/room?id=1');
  t.equal(field(backend.seen[0]?.headers ?? [], 'x-case-kept'), 'A b');
  t.equal(backend.seen[1]?.url, '/svc/second', 'the head bytes followed the replayed request');
  t.equal(raw.match(/HTTP\/1\.1 200 OK/g)?.length, 2);
});
