/**
 * A backend that resets the connection (RST) after reading the request: a receive error at the target's
 * state, 101501 + REQUEST_DONE(3) = 101504, answered 502. Coded as a send error it was 101500 + 3 =
 * 101503, the number of "connection refused" (101503 + REQUEST_READY(0)), which a refused connect keeps.
 * A reset while the body still streams stays a send error: 101500 + REQUEST_BODY(2) = 101502.
 */
import t from 'tap';
import { closedPort, rawBackend } from '../helpers/backend';
import { HOST, RawClient, get, rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

t.test('reset after the request was read: 101504 (101501 + 3), 502, not 101503', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.socket.resetAndDestroy() });
  t.teardown(() => backend.close());
  // POST: not idempotent, so the fresh socket's failure is not retried (target.ts, RFC 9110 §9.2.2).
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'POST /reset HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi');
  assertFaultBody(t, res, 502, 101504, 101501, 3);
  t.equal(backend.conns[0]?.requests.length, 1, 'the backend read the whole request before resetting');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], {
    code: 101504,
    base: 101501,
    state: 3,
    side: 'target',
    reason: 'io_receive',
    httpStatus: 502,
    reused: false,
  });
  t.equal(h.faults[0]?.cause, 'ECONNRESET');
  t.not(h.faults[0]?.code, 101503, 'not the code of a refused connection');
});

t.test('reset while the request body streams: 101502 (101500 + 2), a send error', async (t) => {
  const backend = await rawBackend({
    onData: (c) => {
      if (c.raw.indexOf('\r\n\r\n') >= 0 && c.raw.length > c.raw.indexOf('\r\n\r\n') + 4) c.socket.resetAndDestroy();
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n0123456789');
  const res = await c.finalResponse(5000);
  t.equal(res.status, 502);
  await h.waitFaults(1);
  assertFault(t, h.faults[0], { code: 101502, base: 101500, state: 2, side: 'target', reason: 'io_send', httpStatus: 502, reused: false });
});

t.test('a refused connection keeps 101503 (101503 + 0)', async (t) => {
  const port = await closedPort();
  const h = await startTransport(t, `http://${HOST}:${port}`);
  const res = await rawRequest(h.port, get('/refused'));
  assertFaultBody(t, res, 502, 101503, 101503, 0);
  assertFault(t, h.faults[0], { code: 101503, base: 101503, state: 0, side: 'target', reason: 'connect_refused', httpStatus: 502 });
});

checkTransitions(t);
