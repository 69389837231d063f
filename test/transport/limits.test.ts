/**
 * Limits: max_request_body (413, own code 103001), the in-flight limit and its bounded queue
 * (worker_pool_size_max / worker_pool_queue_length: a full queue answers 503 with 103002 at once instead
 * of the reference's silent hang), and the idle keep-alive timeout of client connections.
 */
import t from 'tap';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep, toResult, until } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

t.test('Content-Length over maxRequestBody: 413 with 103001 at once, Connection: close, nothing forwarded', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxRequestBody: 1000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  // Only the head is sent: the answer must not wait for a body it will refuse.
  await c.write('POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n');
  const res = await c.finalResponse(2000);
  t.ok(await c.waitClose(2000), 'closed: the body will not be read');
  assertFaultBody(t, toResult(c, res), 413, 103001, 103001, 2);
  t.equal(res.headers['connection'], 'close');
  t.equal(backend.conns.length, 0, 'nothing reached the backend');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 103001, base: 103001, state: 2, side: 'source', reason: 'body_too_large', httpStatus: 413 });
});

t.test('a chunked body that grows over maxRequestBody: 413, the backend socket carrying it is closed, one fault', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxRequestBody: 1000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /chunks HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n');
  const chunk = `200\r\n${'x'.repeat(0x200)}\r\n`;
  await c.write(chunk); // 512
  await sleep(20);
  await c.write(chunk + chunk); // 1536 > 1000
  const res = await c.finalResponse(3000);
  t.equal(res.status, 413);
  t.equal(JSON.parse(res.body.toString()).fault.code, 103001);
  t.equal(res.headers['connection'], 'close');
  t.ok(await c.waitClose(2000));
  t.ok(await until(() => backend.conns.every((x) => x.closed), 2000), 'the backend connection with the partial body was closed');
  t.equal(backend.conns.flatMap((x) => x.requests).length, 0, 'the backend never got a complete request');
  await sleep(30);
  t.equal(h.faults.length, 1, 'one fault (the destroyed backend socket is not reported again)');
  assertFault(t, h.faults[0], { code: 103001, base: 103001, state: 2, side: 'source', reason: 'body_too_large' });
});

t.test('a body of exactly maxRequestBody is forwarded', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, String(req.body.length)) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxRequestBody: 1000 } });
  const res = await rawRequest(h.port, `POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n${'y'.repeat(1000)}`);
  t.equal(res.status, 200);
  t.equal(res.text, '1000');
  t.equal(h.faults.length, 0);
});

t.test('maxInFlight 1, queueLength 0: a second concurrent request gets 503 (103002) at once', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({ onRequest: (c) => held.push(c) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxInFlight: 1, queueLength: 0 } });
  const first = await RawClient.connect(h.port);
  t.teardown(() => first.destroy());
  await first.write(get('/first'));
  t.ok(await until(() => held.length === 1), 'the first request is in flight');
  const started = Date.now();
  const res = await rawRequest(h.port, get('/second'));
  const took = Date.now() - started;
  assertFaultBody(t, res, 503, 103002, 103002, 1);
  t.ok(took < 2000, `answered at once (${took} ms), not after a timeout`);
  t.equal(backend.conns.length, 1, 'the second request never reached the backend');
  assertFault(t, h.faults[0], { code: 103002, base: 103002, state: 1, side: 'source', reason: 'queue_full', httpStatus: 503 });
  held[0]?.respond(200, 'done');
  t.equal((await first.finalResponse()).status, 200, 'the first completes');
  t.equal(h.transport.connections().inFlight, 0, 'the slot was released');
});

t.test('maxInFlight 1, queueLength 1: the second waits for the slot, the third is refused', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/first') held.push(c);
      else c.respond(200, req.url);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxInFlight: 1, queueLength: 1 } });
  const first = await RawClient.connect(h.port);
  const second = await RawClient.connect(h.port);
  t.teardown(() => {
    first.destroy();
    second.destroy();
  });
  await first.write(get('/first'));
  t.ok(await until(() => held.length === 1));
  await second.write(get('/second'));
  t.ok(await until(() => h.transport.connections().queued === 1), 'the second is queued');
  const third = await rawRequest(h.port, get('/third'));
  t.equal(third.status, 503);
  t.equal(JSON.parse(third.text).fault.code, 103002);
  held[0]?.respond(200, 'first');
  t.equal((await first.finalResponse()).body.toString(), 'first');
  t.equal((await second.finalResponse()).body.toString(), '/second', 'the queued request is served once the slot frees');
  t.equal(h.transport.connections().queued, 0);
  t.equal(h.faults.length, 1);
});

t.test('a queued request whose client leaves frees its place in the queue', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/first') held.push(c);
      else c.respond(200, req.url);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxInFlight: 1, queueLength: 1 } });
  const first = await RawClient.connect(h.port);
  const leaver = await RawClient.connect(h.port);
  const third = await RawClient.connect(h.port);
  t.teardown(() => {
    first.destroy();
    leaver.destroy();
    third.destroy();
  });
  await first.write(get('/first'));
  t.ok(await until(() => held.length === 1));
  await leaver.write(get('/leaver'));
  t.ok(await until(() => h.transport.connections().queued === 1), 'queued');
  leaver.socket.resetAndDestroy();
  t.ok(await until(() => h.transport.connections().sources === 2), 'the leaving client is gone');
  t.equal(h.transport.connections().queued, 0, 'and so is its place in the queue');
  await third.write(get('/third'));
  await sleep(50);
  t.equal(third.responses.length, 0, 'the third request is queued, not refused');
  held[0]?.respond(200, 'first');
  t.equal((await first.finalResponse()).status, 200);
  const r3 = await third.finalResponse(3000);
  t.equal(r3.status, 200, 'served once the slot frees');
  t.equal(r3.body.toString(), '/third');
  t.same(
    backend.conns.flatMap((x) => x.requests.map((r) => r.url)),
    ['/first', '/third'],
    'the request of the client that left was never sent',
  );
});

t.test('keepAliveTimeout closes an idle client connection, quietly', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const KEEP_ALIVE = 300;
  const h = await startTransport(t, backend.url, { settings: { keepAliveTimeout: KEEP_ALIVE } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/once'));
  t.equal((await c.finalResponse()).status, 200);
  const idleFrom = Date.now();
  t.ok(await c.waitClose(3000), 'the idle connection is closed');
  const idle = c.closedAt - idleFrom;
  t.ok(idle >= KEEP_ALIVE - 20, `after about keepAliveTimeout (${idle} ms)`);
  t.ok(idle < KEEP_ALIVE + 3000, `not much later (${idle} ms)`);
  t.ok(c.ended, 'with a FIN, not a reset');
  t.equal(c.responses.length, 1, 'no response is written when an idle connection closes');
  t.equal(h.faults.length, 0, 'an idle close is not a fault');
});

t.test('a connection in use is not closed by keepAliveTimeout', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { keepAliveTimeout: 300 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  for (let i = 0; i < 6; i++) {
    await c.write(get(`/${i}`));
    await c.finalResponse(3000, i);
    await sleep(150);
  }
  t.notOk(c.closed, 'requests every 150 ms keep it open past 2 x keepAliveTimeout');
  t.equal(c.responses.length, 6);
});

checkTransitions(t);
