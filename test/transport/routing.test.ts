/**
 * The router's answers as the client sees them: no route (404, 103003), a local response, an
 * asynchronous decision (the request body waits for it with backpressure, and arrives intact), a
 * router that throws or rejects (a processing fault), and a disabled sender (503, 103004).
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep, toResult } from '../helpers/client';
import { MiB, writeBody } from '../helpers/bodies';
import { assertFault, assertFaultBody, checkTransitions, saysClose, startTransport } from '../helpers/transport';
import { targetFromUrl } from '../../lib/transport';

t.test('no route: 404 with 103003, the connection stays usable', async (t) => {
  const h = await startTransport(t, () => undefined);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/nowhere'));
  const res = await c.finalResponse();
  assertFaultBody(t, toResult(c, res), 404, 103003, 103003, 1);
  t.notOk(saysClose(res));
  assertFault(t, h.faults[0], { code: 103003, base: 103003, state: 1, side: 'source', reason: 'no_route', httpStatus: 404 });
  await c.write(get('/again'));
  t.equal((await c.finalResponse(3000, 1)).status, 404, 'a second request on the same connection is answered too');
});

t.test('no route for a request with a body: the body is read and dropped, the connection stays usable', async (t) => {
  const h = await startTransport(t, () => undefined);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /nowhere HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n01234');
  await sleep(20);
  await c.write('56789GET /next HTTP/1.1\r\nHost: a\r\n\r\n');
  await c.message(2, 3000);
  t.same(
    c.responses.map((r) => r.status),
    [404, 404],
    'the body bytes were not taken for a request',
  );
  t.equal(h.faults.length, 2);
});

t.test('a local response from the router', async (t) => {
  const h = await startTransport(t, () => ({ status: 204, headers: ['X-Local', 'yes'] }));
  const res = await rawRequest(h.port, get('/local'));
  t.equal(res.status, 204);
  t.equal(res.headers['x-local'], 'yes');
  t.equal(h.faults.length, 0);
});

t.test("a local response's own framing and connection fields are ignored: the transport frames it", async (t) => {
  // A router (or fields a gateway echoes from the request onto a fault) must not be able to put a
  // second Content-Length, a Transfer-Encoding or a Connection field into a head the transport frames:
  // a client would read a different message boundary (RFC 9112 §6.3).
  const h = await startTransport(t, () => ({
    status: 200,
    headers: [
      'Content-Length',
      '99',
      'Transfer-Encoding',
      'chunked',
      'Connection',
      'keep-alive, X-Hop',
      'Keep-Alive',
      'timeout=9',
      'X-Kept',
      'yes',
    ],
    body: 'hello',
  }));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/local'));
  const res = await c.finalResponse(3000);
  t.same(
    res.rawHeaders,
    [
      ['X-Kept', 'yes'],
      ['Content-Length', '5'],
    ],
    "exactly the router's other field and the transport's Content-Length",
  );
  t.equal(res.body.toString(), 'hello');
  await c.write(get('/again'));
  t.equal((await c.finalResponse(3000, 1)).body.toString(), 'hello', 'the connection is still in step');
});

t.test('an asynchronous decision: a 1 MiB body waits for it and arrives intact', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.body.length}`) });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  const h = await startTransport(t, () => new Promise((resolve) => setTimeout(() => resolve({ target }), 100)));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(`POST /async HTTP/1.1\r\nHost: a\r\nContent-Length: ${MiB}\r\n\r\n`);
  const sent = await writeBody(c.socket, MiB);
  const res = await c.finalResponse(5000);
  t.equal(res.status, 200);
  t.equal(res.body.toString(), String(MiB));
  t.notOk(sent.cut);
  t.equal(
    createHash('sha256')
      .update(backend.conns[0]?.requests[0]?.body ?? Buffer.alloc(0))
      .digest('hex'),
    sent.sha256,
    'byte-exact',
  );
});

t.test('a router that throws: 500 processing fault, reported once', async (t) => {
  const h = await startTransport(t, () => {
    throw new Error('router bug');
  });
  const res = await rawRequest(h.port, get('/boom'));
  t.equal(res.status, 500);
  t.equal(JSON.parse(res.text).fault.code, 101510 + 1);
  t.equal(h.faults.length, 1);
  t.equal(h.faults[0]?.reason, 'processing');
});

t.test('a router whose promise rejects: 500 processing fault', async (t) => {
  const h = await startTransport(t, () => Promise.reject(new Error('async router bug')));
  const res = await rawRequest(h.port, get('/boom'));
  t.equal(res.status, 500);
  t.equal(h.faults[0]?.reason, 'processing');
  t.equal(h.faults.length, 1);
});

t.test('sender disabled: 503 with 103004, nothing sent', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { senderEnabled: false } });
  const res = await rawRequest(h.port, get('/x'));
  t.equal(res.status, 503);
  t.equal(JSON.parse(res.text).fault.code, 103004);
  t.equal(backend.conns.length, 0);
  assertFault(t, h.faults[0], { code: 103004, base: 103004, state: 0, side: 'target', reason: 'sender_disabled', httpStatus: 503 });
});

checkTransitions(t);
