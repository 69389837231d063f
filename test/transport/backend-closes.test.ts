/**
 * A backend that closes the connection (FIN) before answering: 101505 + the target's state.
 * While the request body streams: 101505 + REQUEST_BODY(2) = 101507; after the request is completely
 * sent: 101505 + REQUEST_DONE(3) = 101508. Both 502; neither is retried (the socket was fresh).
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

t.test('closes while the request body streams: 101507 (101505 + 2), 502, client connection closed', async (t) => {
  const backend = await rawBackend({
    onData: (c) => {
      // As soon as body bytes are here (the head is 'POST ...' up to the blank line), close.
      if (c.raw.indexOf('\r\n\r\n') >= 0 && c.raw.length > c.raw.indexOf('\r\n\r\n') + 4) c.socket.end();
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  // 10 of 1000 body bytes: the request is still streaming when the backend closes.
  await c.write('POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n0123456789');
  const res = await c.finalResponse(5000);
  t.equal(res.status, 502);
  const body = JSON.parse(res.body.toString());
  t.equal(body.fault.code, 101507);
  t.match(body.fault.description, 'base 101505');
  t.match(body.fault.description, 'state REQUEST_BODY(2)');
  t.equal(res.headers['connection'], 'close', 'the rest of the body will not be read');
  t.ok(await c.waitClose(2000), 'client connection closed');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101507, base: 101505, state: 2, side: 'target', reason: 'closed', httpStatus: 502, reused: false });
  t.equal(h.transport.stats.retries, 0, 'not retried');
});

t.test('closes after the request is sent: 101508 (101505 + 3), 502', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.socket.end() });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, get('/closes'), { settle: 30 });
  assertFaultBody(t, res, 502, 101508, 101505, 3);
  t.equal(backend.conns.length, 1, 'one connection: a fresh socket is not retried');
  t.equal(h.transport.stats.retries, 0);
  assertFault(t, h.faults[0], { code: 101508, base: 101505, state: 3, side: 'target', reason: 'closed', httpStatus: 502, reused: false });
  t.equal(h.faults.length, 1);
  t.notOk(res.closed, 'the complete request keeps the client connection');
});

checkTransitions(t);
