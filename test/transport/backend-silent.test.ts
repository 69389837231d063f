/**
 * A backend that reads the whole request and never answers: the spec's own example (spec 002 part 7,
 * rule 2): a timeout once the request is completely sent is 101504 + REQUEST_DONE(3) = 101507, answered
 * 504. The client connection stays usable: its request was complete.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, saysClose, startTransport } from '../helpers/transport';

const SOCKET_TIMEOUT = 300;

t.test('no answer after the request is sent: 101507 (101504 + 3), 504', async (t) => {
  const backend = await rawBackend({ onRequest: () => {} });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT } });
  const started = Date.now();
  const res = await rawRequest(h.port, get('/silent'));
  const took = Date.now() - started;
  assertFaultBody(t, res, 504, 101507, 101504, 3);
  t.ok(took >= SOCKET_TIMEOUT, `after the socket timeout (${took} ms)`);
  t.equal(backend.conns[0]?.requests.length, 1, 'the backend did get the whole request');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], {
    code: 101507,
    base: 101504,
    state: 3,
    side: 'target',
    reason: 'socket_timeout',
    httpStatus: 504,
    reused: false,
  });
  await sleep(20);
  t.ok(backend.conns[0]?.closed, 'the silent backend socket was closed by the proxy');
});

t.test('the same with a request body fully sent: still state 3, and the client connection is kept', async (t) => {
  const backend = await rawBackend({ onRequest: () => {} });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /silent HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello');
  const res = await c.finalResponse(5000);
  t.equal(res.status, 504);
  t.equal(JSON.parse(res.body.toString()).fault.code, 101507);
  t.notOk(saysClose(res), 'no Connection: close: the request was complete');
  t.equal(backend.conns[0]?.requests[0]?.body.toString(), 'hello', 'the backend got the body');
  assertFault(t, h.faults[0], { code: 101507, base: 101504, state: 3, side: 'target', reason: 'socket_timeout' });
  await sleep(50);
  t.notOk(c.closed, 'client connection still open');
});

checkTransitions(t);
