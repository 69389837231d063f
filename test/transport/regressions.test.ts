/**
 * Regressions, each named for what broke.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, sleep } from '../helpers/client';
import { checkTransitions, saysClose, startTransport } from '../helpers/transport';

// Pausing the request parser at a bodiless head stranded llhttp's message completion (after resume it
// needs another input byte to report it), so the exchange never saw its request complete and every
// response went out with `Connection: close`.
for (const [what, request] of [
  ['GET', 'GET /a HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['GET with Content-Length: 0', 'GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n'],
  ['DELETE', 'DELETE /a HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['HEAD', 'HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n'],
] as const) {
  t.test(`a bodiless request on a fresh backend connection keeps the client connection alive (${what})`, async (t) => {
    const backend = await rawBackend({
      onRequest: (c, req) => c.respond(200, req.method === 'HEAD' ? '' : `${c.id}:${c.requests.length}`),
    });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    if (what === 'HEAD') c.expectHeadResponse();
    await c.write(request);
    const first = await c.finalResponse(3000);
    t.equal(first.status, 200);
    t.notOk(saysClose(first), 'no Connection: close on the first response');
    t.equal(first.headers['connection'], undefined, 'no Connection field at all (keep-alive is the HTTP/1.1 default)');
    await sleep(50);
    t.notOk(c.closed, 'the client connection is still open');
    await c.write('GET /b HTTP/1.1\r\nHost: a\r\n\r\n');
    const second = await c.finalResponse(3000, 1);
    t.equal(second.status, 200);
    t.equal(second.body.toString(), '1:2', 'the second request went over the same backend connection');
    t.notOk(saysClose(second));
    t.equal(h.transport.stats.targetsReused, 1);
    t.equal(h.faults.length, 0);
  });
}

t.test('a Content-Length: 0 response is relayed exactly, and both connections stay reusable', async (t) => {
  const HEAD = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Empty: yes\r\n\r\n';
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/empty') c.write(HEAD);
      else c.respond(200, 'after');
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { via: '' } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /empty HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse(3000);
  t.equal(res.status, 200);
  t.equal(res.bodyLength, 0);
  await sleep(50);
  t.equal(c.raw.toString('latin1'), HEAD, 'the exact head (no Via configured), and nothing after it');
  t.notOk(c.closed, 'the client connection stays open');
  t.equal(h.transport.connections().idleTargets, 1, 'the backend connection went back to the pool');
  await c.write('GET /next HTTP/1.1\r\nHost: a\r\n\r\n');
  const next = await c.finalResponse(3000, 1);
  t.equal(next.body.toString(), 'after');
  t.equal(backend.conns.length, 1, 'one backend connection for both');
  t.equal(h.faults.length, 0);
});

t.test('204, 304 and a HEAD response with a Content-Length: no body expected, connection reusable', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/204') c.write('HTTP/1.1 204 No Content\r\n\r\n');
      else if (req.url === '/304') c.write('HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n');
      else if (req.method === 'HEAD') c.write('HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n');
      else c.respond(200, 'last');
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /204 HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await c.finalResponse(3000)).status, 204);
  await c.write('GET /304 HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await c.finalResponse(3000, 1)).status, 304);
  c.expectHeadResponse();
  await c.write('HEAD /head HTTP/1.1\r\nHost: a\r\n\r\n');
  const head = await c.finalResponse(3000, 2);
  t.equal(head.headers['content-length'], '1234', "HEAD: the backend's Content-Length is relayed");
  await c.write('GET /last HTTP/1.1\r\nHost: a\r\n\r\n');
  const last = await c.finalResponse(3000, 3);
  t.equal(last.body.toString(), 'last', 'no stray body bytes were expected or relayed before it');
  t.equal(backend.conns.length, 1, 'all four over one backend connection');
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
