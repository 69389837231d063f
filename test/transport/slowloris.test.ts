/**
 * Slow request heads (slowloris): a head that is not complete within headerTimeout is answered 408 with
 * `Connection: close` however steadily its bytes trickle in (the timer runs from the head's first byte,
 * not from the last one), and nothing reaches the backend. Code 101504 + REQUEST_HEAD(1) = 101505.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, sleep, until } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';
import { toResult } from '../helpers/client';

const HEADER_TIMEOUT = 300;

t.test('a head trickled one byte every 30 ms is cut at headerTimeout: 408, Connection: close', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: HEADER_TIMEOUT, socketTimeout: 5000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  const started = Date.now();
  await c.write('GET /slow HTTP/1.1\r\nHost: a\r\n');
  let sent = 0;
  const trickle = setInterval(() => {
    if (c.closed) return;
    c.socket.write('X');
    sent++;
  }, 30);
  t.teardown(() => clearInterval(trickle));
  const res = await c.finalResponse(5000);
  const took = Date.now() - started;
  clearInterval(trickle);
  t.ok(await c.waitClose(2000), 'the connection is closed');
  assertFaultBody(t, toResult(c, res), 408, 101505, 101504, 1);
  t.equal(res.headers['connection'], 'close');
  t.ok(took >= HEADER_TIMEOUT, `not before headerTimeout (${took} ms)`);
  t.ok(took < HEADER_TIMEOUT + 3000, `and not much after it although bytes kept coming (${took} ms, ${sent} bytes trickled)`);
  t.ok(sent >= 5, 'bytes kept arriving all along');
  t.equal(backend.conns.length, 0, 'nothing reached the backend');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101505, base: 101504, state: 1, side: 'source', reason: 'header_timeout', httpStatus: 408 });
});

t.test('a slow head that completes within headerTimeout is served', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: 1000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  for (const part of ['GET /pat', 'ient HTTP/1.1\r\n', 'Host: a\r\n', '\r\n']) {
    await c.write(part);
    await sleep(60);
  }
  const res = await c.finalResponse();
  t.equal(res.status, 200);
  t.equal(res.body.toString(), '/patient');
  t.equal(h.faults.length, 0);
});

t.test('the header timer starts at the first byte of each request, not at the connection', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: HEADER_TIMEOUT, keepAliveTimeout: 5000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/one'));
  t.equal((await c.finalResponse()).status, 200);
  await sleep(HEADER_TIMEOUT * 2); // idle between requests: keep-alive, not a slow head
  t.notOk(c.closed, 'an idle keep-alive connection is not a slow head');
  await c.write(get('/two'));
  const r2 = await c.finalResponse(5000, 1);
  t.equal(r2.status, 200);
  t.equal(r2.body.toString(), '/two');
  t.equal(h.faults.length, 0);
});

t.test('a connection that sends nothing is closed at headerTimeout, not at the longer keepAliveTimeout', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  // keepAliveTimeout far beyond the wait below: only headerTimeout can close the connection in time.
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: HEADER_TIMEOUT, keepAliveTimeout: 600_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  t.ok(await c.waitClose(10_000), 'closed although the keep-alive timeout is ten minutes');
  t.equal(c.receivedBytes, 0, 'without an answer: there was no request to answer');
  t.equal(backend.conns.length, 0, 'nothing reached the backend');
  t.ok(await until(() => h.transport.connections().sources === 0), 'the connection is gone');
});

t.test('after a response the idle connection waits for keepAliveTimeout, not headerTimeout', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { headerTimeout: HEADER_TIMEOUT, keepAliveTimeout: 600_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/one'));
  t.equal((await c.finalResponse()).status, 200);
  await sleep(HEADER_TIMEOUT * 4);
  t.notOk(c.closed, 'still open well past headerTimeout');
  await c.write(get('/two'));
  t.equal((await c.finalResponse(5000, 1)).body.toString(), '/two');
});

checkTransitions(t);
