/**
 * A client that goes away mid-exchange: nobody is left to answer, so the fault is logged and counted
 * (101001 / 101000 + the source state: receiver I/O error receiving / sending), and the backend socket
 * serving it is freed: closed, not returned to the pool (it carries half an exchange).
 *
 * A FIN after a complete request is a half-close the transport honours (RFC 9112 §9.6: the client may
 * still read the response); a FIN in the middle of a request body ends a request that can never
 * complete, so it frees the backend at once like a reset does.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, until } from '../helpers/client';
import { targetFromUrl } from '../../lib/transport';
import { MiB, writeBody } from '../helpers/bodies';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';

for (const how of ['closes (FIN)', 'resets (RST)'] as const) {
  t.test(`client ${how} mid-upload: the backend socket is closed and no target remains`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'never') });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const c = await RawClient.connect(h.port);
    await c.write(`POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: ${10 * MiB}\r\n\r\n`);
    await writeBody(c.socket, 1 * MiB);
    t.ok(await until(() => backend.receivedBytes() > 512 * 1024), 'part of the body reached the backend');
    t.equal(h.transport.connections().targets, 1, 'one target while the upload runs');
    if (how === 'closes (FIN)') c.destroy();
    else c.socket.resetAndDestroy();
    t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the backend sees its socket close');
    t.ok(await until(() => h.transport.connections().targets === 0, 2000), 'connections().targets drops to 0');
    t.same(h.transport.connections(), { sources: 0, targets: 0, idleTargets: 0, inFlight: 0, queued: 0 });
    t.equal(backend.conns[0]?.requests.length, 0, 'the backend never got a complete request');
    t.equal(h.faults.length, 1, 'one fault, logged and counted');
    assertFault(t, h.faults[0], { code: 101003, base: 101001, state: 2, side: 'source', reason: 'client_io_receive' });
  });
}

t.test('client resets while the response streams: 101000 + RESPONSE_BODY(5), backend socket closed, not pooled', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n' + 'x'.repeat(100)),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  await c.write('GET /slow HTTP/1.1\r\nHost: a\r\n\r\n');
  t.ok(await until(() => c.receivedBytes > 100), 'the response started');
  c.socket.resetAndDestroy();
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the backend socket is closed');
  t.ok(await until(() => h.transport.connections().targets === 0, 2000), 'and not kept in the pool');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101005, base: 101000, state: 5, side: 'source', reason: 'client_io_send' });
});

t.test('client resets while waiting for the backend: 101001 + REQUEST_DONE(3)', async (t) => {
  const backend = await rawBackend({ onRequest: () => {} });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  await c.write('GET /wait HTTP/1.1\r\nHost: a\r\n\r\n');
  t.ok(await until(() => backend.conns[0]?.requests.length === 1));
  c.socket.resetAndDestroy();
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the backend socket is closed');
  t.ok(await until(() => h.transport.connections().targets === 0, 2000));
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101004, base: 101001, state: 3, side: 'source', reason: 'client_io_receive' });
});

t.test('a client that half-closes after a complete request still gets its response (RFC 9112 §9.6)', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => setTimeout(() => c.respond(200, `late ${req.body.toString()}`), 50) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /half HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\ndata');
  c.socket.end();
  const res = await c.finalResponse(3000);
  t.equal(res.status, 200);
  t.equal(res.body.toString(), 'late data');
  t.ok(await c.waitClose(2000), 'then the proxy closes');
  t.equal(h.faults.length, 0);
});

// The same end of input, reached only once queued bytes are parsed: the FIN arrived while the bytes
// before it still waited (for the response to the request before them, or for an asynchronous route).
t.test('FIN after a pipelined partial head: closed once the response before it is done, not at headerTimeout', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => setTimeout(() => c.respond(200, req.url), 30) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: 5000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/a') + 'GET /b HTTP/1.1\r\nHo');
  c.socket.end();
  const res = await c.finalResponse(3000);
  t.equal(res.body.toString(), '/a', 'the complete request is answered');
  t.ok(await c.waitClose(1000), 'then the connection closes: the partial head can never complete');
  t.equal(c.responses.length, 1, 'no 408 for a head the client ended itself');
  t.equal(h.faults.length, 0);
});

t.test('FIN in a request body while the route is still being decided: the backend is freed at once', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'never') });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  const h = await startTransport(t, () => new Promise((resolve) => setTimeout(() => resolve({ target }), 50)), {
    settings: { socketTimeout: 5000 },
  });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123');
  c.socket.end();
  t.ok(await c.waitClose(1500), 'the client connection is closed well before the socket timeout');
  t.ok(
    await until(() => h.transport.connections().targets === 0 && backend.conns.every((x) => x.closed), 1500),
    'no backend socket is held',
  );
  t.equal(backend.conns.flatMap((x) => x.requests).length, 0, 'the backend never got a complete request');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101003, base: 101001, state: 2, side: 'source', reason: 'client_io_receive' });
});

t.test('FIN in a request body the proxy already answered (no route): the connection closes at once', async (t) => {
  const h = await startTransport(t, () => undefined, { settings: { socketTimeout: 5000, keepAliveTimeout: 5000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /nowhere HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123');
  const res = await c.finalResponse(3000);
  t.equal(res.status, 404);
  c.socket.end();
  t.ok(await c.waitClose(1500), 'closed: the rest of the body will never come');
  t.equal(h.transport.connections().sources, 0);
  t.equal(h.exchanges.length, 1, 'the exchange is recorded once');
});

checkTransitions(t);
