/**
 * Every framing of a backend's HTTP/1.1 response reaches an HTTP/2 client as the same answer (docs/http2.md,
 * "What a stream goes through"): a raw `net` backend writes each one byte by byte with pauses, so the
 * transport's writes split the head, the chunk-size lines and the chunk data wherever they can, and the
 * stream's reader (lib/http2/stream-socket.ts) must put them together. A backend that dies mid-body must
 * leave the client with a reset stream, never a complete-looking answer.
 */
import t, { type Test } from 'tap';
import * as net from 'node:net';
import type * as http2 from 'node:http2';
import { api, connect, h2Gateway, h2Request, type H2Answer, type H2Gateway } from './helpers';

/** A backend that answers every request with `answer`, one byte at a time when `trickle`, then closes when `close`. */
async function rawBackend(
  answer: string,
  o: { trickle?: boolean; close?: boolean } = {},
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.once('close', () => sockets.delete(s));
    let seen = '';
    s.on('data', async (d: Buffer) => {
      seen += d.toString('latin1');
      if (!seen.includes('\r\n\r\n')) return;
      seen = '';
      if (o.trickle === true) {
        for (const ch of Buffer.from(answer, 'latin1')) {
          if (s.destroyed) return;
          s.write(Buffer.of(ch));
          await new Promise((r) => setTimeout(r, 1));
        }
      } else s.write(answer, 'latin1');
      if (o.close === true) s.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A gateway in front of `backend`, with one session to it; all closed at the test's end. */
async function gatewayFor(
  t: Test,
  backend: { port: number; close(): Promise<void> },
): Promise<http2.ClientHttp2Session & { gateway: H2Gateway }> {
  const g = await h2Gateway([api('raw', '/raw', `http://127.0.0.1:${backend.port}`)]);
  const s = connect(g);
  t.teardown(async () => {
    s.close();
    await g.close();
    await backend.close();
  });
  return Object.assign(s, { gateway: g });
}

async function through(
  t: Test,
  answer: string,
  headers: http2.OutgoingHttpHeaders,
  o: { trickle?: boolean; close?: boolean } = {},
): Promise<H2Answer> {
  const s = await gatewayFor(t, await rawBackend(answer, o));
  return h2Request(s, { ':method': 'GET', ...headers });
}

t.test('a chunked response with extensions and trailers, written byte by byte', async (t) => {
  const r = await through(
    t,
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nX-Kind: chunked\r\n\r\n' +
      '5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n',
    { ':path': '/raw/v1/c' },
    { trickle: true },
  );
  t.equal(r.status, 200);
  t.equal(r.text(), 'hello 0123456789', 'the chunks decoded, in order');
  t.equal(r.headers['x-kind'], 'chunked');
  t.equal(r.headers['transfer-encoding'], undefined, 'no HTTP/1.1 framing field on HTTP/2 (RFC 9113 §8.2.2)');
  t.equal(r.headers['content-type'], 'text/plain');
});

t.test('a counted response written byte by byte', async (t) => {
  const body = 'x'.repeat(300);
  const r = await through(
    t,
    `HTTP/1.1 201 Created\r\nContent-Length: ${body.length}\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n${body}`,
    { ':path': '/raw/v1/n' },
    { trickle: true },
  );
  t.equal(r.status, 201);
  t.equal(r.body.length, 300);
  t.equal(r.headers['content-length'], '300');
  t.same(r.headers['set-cookie'], ['a=1', 'b=2'], 'repeated set-cookie fields stay apart');
});

t.test('fields: hop-by-hop and Connection-named ones dropped, repeated ones joined, names lower case', async (t) => {
  const r = await through(
    t,
    'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: x-secret, keep-alive\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nX-Multi: a\r\nX-MULTI: b\r\nUpgrade: h2c\r\n\r\nok',
    { ':path': '/raw/v1/f' },
  );
  t.equal(r.status, 200);
  t.equal(r.text(), 'ok');
  t.equal(r.headers['x-secret'], undefined, 'a field the Connection field names is hop-by-hop (RFC 9110 §7.6.1)');
  t.equal(r.headers['keep-alive'], undefined);
  t.equal(r.headers.upgrade, undefined);
  t.equal(r.headers.connection, undefined);
  t.equal(r.headers['x-multi'], 'a, b', 'repeated fields joined in order');
});

t.test('a close-delimited HTTP/1.0 response (no length): the whole body, ended', async (t) => {
  const body = 'y'.repeat(5000);
  const r = await through(t, `HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n${body}`, { ':path': '/raw/v1/old' }, { close: true });
  t.equal(r.status, 200);
  t.equal(r.text(), body);
});

t.test('HEAD and 204: a HEADERS frame that ends the stream, no body read', async (t) => {
  const head = await through(t, 'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n', { ':method': 'HEAD', ':path': '/raw/v1/h' });
  t.equal(head.status, 200);
  t.equal(head.headers['content-length'], '12', "a HEAD's length is the GET's");
  t.equal(head.body.length, 0);
  const none = await through(t, 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n', { ':path': '/raw/v1/n' });
  t.equal(none.status, 204);
  t.equal(none.headers['x-a'], '1');
  t.equal(none.body.length, 0);
});

t.test('a 100 Continue before the answer is not relayed; the final answer is', async (t) => {
  const r = await through(
    t,
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    { ':path': '/raw/v1/c' },
    { trickle: true },
  );
  t.equal(r.status, 200);
  t.equal(r.text(), 'ok');
});

t.test('a backend that dies mid-body: the stream is reset, not ended as if complete', async (t) => {
  const s = await gatewayFor(t, await rawBackend('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n' + 'z'.repeat(10), { close: true }));
  const outcome = await new Promise<{ status: number; bytes: number; ended: boolean; rst: number }>((resolve) => {
    const req = s.request({ ':method': 'GET', ':path': '/raw/v1/cut' });
    let status = 0;
    let bytes = 0;
    let ended = false;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => (ended = true));
    req.on('error', () => undefined);
    req.on('close', () => resolve({ status, bytes, ended, rst: req.rstCode }));
  });
  t.equal(outcome.status, 200, 'the head had gone out');
  t.ok(outcome.bytes < 1000, `fewer bytes than promised (${outcome.bytes})`);
  t.not(outcome.rst, 0, `the stream ended with RST_STREAM (code ${outcome.rst}), not a clean END_STREAM`);
});

t.test('the same session serves many streams of each framing, no connection of the transport left behind', async (t) => {
  const s = await gatewayFor(t, await rawBackend('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'));
  const g = s.gateway;
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => h2Request(s, { ':method': 'GET', ':path': `/raw/v1/${i}` })));
  t.same(
    answers.map((a) => a.text()),
    Array.from({ length: 50 }, () => 'abc'),
  );
  // Each stream's in-process connection closes once its response is written.
  const deadline = Date.now() + 2000;
  while (g.gw.transport.connections().sources > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.equal(g.gw.transport.connections().sources, 0, 'every in-process connection closed');
  t.equal(g.gw.transport.connections().inFlight, 0);
});
