/**
 * Connection management on both sides: a client's `Connection: close` closes its connection after the
 * response (the backend connection is still pooled); disable_connection_keepalive makes every backend
 * exchange its own connection; an Upgrade request is forwarded as a plain request (Upgrade is
 * hop-by-hop), so nothing is upgraded and the connection stays HTTP/1.1.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest, until } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

t.test('client Connection: close: response says close, connection closes, backend socket pooled', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'bye') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, get('/bye', 'Connection: close\r\n'));
  t.equal(res.status, 200);
  t.equal(res.headers['connection'], 'close');
  t.ok(res.closed, 'the proxy closed the client connection');
  t.equal(backend.conns[0]?.requests[0]?.headers['connection'], 'keep-alive', "the client's close is hop-by-hop: not forwarded");
  t.ok(await until(() => h.transport.connections().idleTargets === 1), 'the backend connection is pooled');
});

t.test('a request pipelined after Connection: close is not answered', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/last', 'Connection: close\r\n') + get('/ignored'));
  const res = await c.finalResponse();
  t.equal(res.body.toString(), '/last');
  t.ok(await c.waitClose(2000));
  t.equal(c.responses.length, 1);
  t.same(
    backend.conns.flatMap((x) => x.requests.map((r) => r.url)),
    ['/last'],
    'the request after it never reached the backend',
  );
});

t.test('disableKeepAlive: Connection: close to the backend, a new backend connection per request', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${c.id} ${req.url}`, 'Connection: close\r\n') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { disableKeepAlive: true } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  for (let i = 1; i <= 3; i++) {
    await c.write(get(`/${i}`));
    const res = await c.finalResponse(3000, i - 1);
    t.equal(res.body.toString(), `${i} /${i}`);
    t.notOk(res.headers['connection'], "the backend's close is hop-by-hop: the client connection stays");
  }
  t.equal(backend.conns.length, 3);
  t.ok(
    backend.conns.every((x) => x.requests[0]?.headers['connection'] === 'close'),
    'every backend request said Connection: close',
  );
  t.notOk(c.closed);
  t.equal(h.transport.stats.targetsReused, 0);
});

t.test('an Upgrade request is forwarded without Upgrade; not upgraded, the connection goes on as HTTP/1.1', async (t) => {
  // RFC 9110 §7.8: a server that answers without 101 keeps the current protocol. Upgrade is hop-by-hop,
  // so the backend never sees it, never switches, and the next bytes are parsed as HTTP/1.1 again.
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `plain ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/ws', 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n'));
  const res = await c.finalResponse();
  t.equal(res.status, 200);
  t.equal(res.body.toString(), 'plain /ws');
  const req = backend.conns[0]?.requests[0];
  t.equal(req?.headers['upgrade'], undefined, 'Upgrade not forwarded');
  t.equal(req?.headers['connection'], 'keep-alive', 'nor the Connection option naming it');
  await c.write(get('/next'));
  t.equal((await c.finalResponse(3000, 1)).body.toString(), 'plain /next', 'the next request is HTTP again');
  t.equal(h.faults.length, 0);
});

t.test('bytes of another protocol sent after an Upgrade request, without waiting for a 101: 400, closed', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `plain ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, get('/ws', 'Connection: Upgrade\r\nUpgrade: websocket\r\n') + '\x81\x85abcdefghi', {
    waitClose: true,
  });
  t.same(
    res.responses.map((r) => r.status),
    [200, 400],
    'the request is answered; the frame bytes are not HTTP',
  );
  t.ok(res.closed);
  t.equal(backend.conns.flatMap((x) => x.requests).length, 1, 'only the real request reached the backend');
  t.equal(backend.receivedBytes(), backend.conns[0]?.requests[0]?.rawHead.length, 'and not a byte of the frame');
});

checkTransitions(t);
