/**
 * Automatic retries only where resending cannot deliver a request twice (RFC 9110 §9.2.2): a backend that
 * reads a request and drops the connection without answering may have acted on it. The stale-socket retry
 * (`retry_stale`) and the endpoint's `retry_codes` resend GET, HEAD, OPTIONS, TRACE, PUT and DELETE; a POST or
 * PATCH whose head was written is never resent and the client gets the backend-closed fault. A request
 * that never left the gateway (the connection was refused) may be retried whatever its method.
 */
import t from 'tap';
import { rawBackend, closedPort, type BackendConn } from '../helpers/backend';
import { RawClient, get, rawRequest } from '../helpers/client';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';
import { targetFromUrl, type ForwardDecision } from '../../lib/transport';

/** How many times the backend read a request for `url`, over all its connections. */
function seen(conns: readonly BackendConn[], url: string): number {
  let n = 0;
  for (const c of conns) for (const r of c.requests) if (r.url === url) n++;
  return n;
}

const IDEMPOTENT = ['GET', 'PUT', 'DELETE'];
const UNSAFE = ['POST', 'PATCH'];

for (const method of [...IDEMPOTENT, ...UNSAFE]) {
  t.test(`retry_stale, ${method} read by the backend on a pooled socket that then closes`, async (t) => {
    // The first request on each connection is answered; the second is read, then the connection closes.
    const backend = await rawBackend({
      onRequest: (c: BackendConn, req) => {
        if (c.requests.length === 1) c.respond(200, `fresh ${c.id} ${req.url}`);
        else c.socket.end();
      },
    });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    await c.write(get('/first'));
    t.equal((await c.finalResponse()).status, 200);
    await c.write(`${method} /r HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n`);
    const res = await c.finalResponse(5000, 1);
    if (IDEMPOTENT.includes(method)) {
      t.equal(res.status, 200, 'retried on a fresh connection');
      t.equal(seen(backend.conns, '/r'), 2, 'the backend saw it twice: once on the stale socket, once on the retry');
      t.equal(h.transport.stats.retries, 1);
    } else {
      t.equal(res.status, 502, 'the client gets the fault');
      t.equal(seen(backend.conns, '/r'), 1, 'the backend saw it once');
      t.equal(h.transport.stats.retries, 0, 'not retried');
      assertFault(t, h.faults[0], {
        code: 101508,
        base: 101505,
        state: 3,
        side: 'target',
        reason: 'closed',
        httpStatus: 502,
        reused: true,
      });
    }
  });

  t.test(`retry_codes, ${method} read by the backend on a fresh connection that then closes`, async (t) => {
    const backend = await rawBackend({ onRequest: (c: BackendConn) => void c.socket.end() });
    t.teardown(() => backend.close());
    const d: ForwardDecision = { target: targetFromUrl(backend.url), retry: { codes: [101505], count: 1 } };
    const h = await startTransport(t, () => d);
    const res = await rawRequest(h.port, `${method} /r HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n`);
    t.equal(res.status, 502);
    if (IDEMPOTENT.includes(method)) {
      t.equal(seen(backend.conns, '/r'), 2, 'one retry: seen twice');
      t.equal(h.transport.stats.retries, 1);
    } else {
      t.equal(seen(backend.conns, '/r'), 1, 'seen once: never resent');
      t.equal(h.transport.stats.retries, 0);
    }
    assertFault(t, h.faults[0], { code: 101508, base: 101505, state: 3, side: 'target', reason: 'closed', httpStatus: 502 });
  });
}

t.test('retry_codes, POST refused at connect: no byte left the gateway, so it is retried', async (t) => {
  const port = await closedPort();
  const d: ForwardDecision = { target: targetFromUrl(`http://127.0.0.1:${port}`), retry: { codes: [101503], count: 1 } };
  const h = await startTransport(t, () => d);
  const res = await rawRequest(h.port, 'POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n');
  t.equal(res.status, 502);
  t.equal(h.transport.stats.retries, 1, 'retried once');
});

checkTransitions(t);
