/**
 * Endpoint advanced configuration carried by a forward decision (spec 002 part 7 rule 3): a per-call
 * timeout, and retry on given codes while resending loses nothing. Also the exchange record the gateway's
 * access log is built from: it carries the transport fault (code, base, state) even when the transport
 * answered the client itself, the HTTP version, ids, and the upstream time.
 */
import t, { type Test } from 'tap';
import { rawBackend, closedPort } from '../helpers/backend';
import { rawRequest, get, sleep } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';
import { targetFromUrl, type ForwardDecision } from '../../lib/transport';

function forwardTo(url: string, extra: Partial<ForwardDecision>): () => ForwardDecision {
  const target = targetFromUrl(url);
  const d: ForwardDecision = { target, ...extra };
  return () => d;
}

async function slowBackend(t: Test, delayMs: number) {
  const backend = await rawBackend({ onRequest: (c) => void setTimeout(() => c.respond(200, 'late'), delayMs) });
  t.teardown(() => backend.close());
  return backend;
}

t.test('endpoint timeout before the response head: 101504 + 3 = 101507, 504', async (t) => {
  const backend = await slowBackend(t, 1500);
  const h = await startTransport(t, forwardTo(backend.url, { timeout: 200 }));
  const started = Date.now();
  const res = await rawRequest(h.port, get('/slow'));
  const took = Date.now() - started;
  assertFaultBody(t, res, 504, 101507, 101504, 3);
  t.ok(took < 1400, `answered by the endpoint timeout, not the backend (${took} ms)`);
  assertFault(t, h.faults[0], { code: 101507, base: 101504, state: 3, side: 'target', reason: 'socket_timeout', httpStatus: 504 });
  t.match(h.faults[0]?.cause, /endpoint timeout of 200 ms/);
});

t.test('without an endpoint timeout the same backend answers', async (t) => {
  const backend = await slowBackend(t, 300);
  const h = await startTransport(t, forwardTo(backend.url, {}));
  const res = await rawRequest(h.port, get('/slow'));
  t.equal(res.status, 200);
  t.equal(res.text, 'late');
});

t.test('retry on a listed code: connect refused twice, then the third attempt succeeds', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'third time') });
  t.teardown(() => backend.close());
  const good = await closedPort();
  let attempts = 0;
  // The first two connects go to a closed port; the third to the backend.
  const h = await startTransport(t, forwardTo(`http://127.0.0.1:${good}`, { retry: { codes: [101503], count: 2 } }), {
    connect: (host, port) => {
      attempts++;
      const net = require('node:net') as typeof import('node:net');
      return net.connect({ host, port: attempts >= 3 ? Number(new URL(backend.url).port) : port });
    },
  });
  const res = await rawRequest(h.port, get('/r'));
  t.equal(res.status, 200);
  t.equal(res.text, 'third time');
  t.equal(attempts, 3);
  t.equal(h.faults.length, 0, 'a retried failure is not a fault of the exchange');
  t.equal(h.transport.stats.retries, 2);
  await sleep(20);
  t.equal(h.exchanges[0]?.retries, 2, 'the exchange record counts the retries');
});

t.test('retry by base code, limited by count: the last failure is the fault', async (t) => {
  const port = await closedPort();
  const h = await startTransport(t, forwardTo(`http://127.0.0.1:${port}`, { retry: { codes: [101503], count: 1 } }));
  const res = await rawRequest(h.port, get('/r'));
  assertFaultBody(t, res, 502, 101503, 101503, 0);
  t.equal(h.transport.stats.retries, 1);
  t.equal(h.faults.length, 1);
});

t.test('no retry on a code that is not listed', async (t) => {
  const port = await closedPort();
  const h = await startTransport(t, forwardTo(`http://127.0.0.1:${port}`, { retry: { codes: [101504], count: 3 } }));
  const res = await rawRequest(h.port, get('/r'));
  t.equal(res.status, 502);
  t.equal(h.transport.stats.retries, 0);
});

t.test('no retry once a body byte was sent (resending would lose it)', async (t) => {
  let conns = 0;
  const backend = await rawBackend({ onConnection: () => conns++, onData: (c) => c.socket.destroy() });
  t.teardown(() => backend.close());
  const h = await startTransport(t, forwardTo(backend.url, { retry: { codes: [101505, 101500, 101501], count: 3 } }));
  const res = await rawRequest(h.port, 'POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello');
  t.equal(res.status, 502);
  t.equal(h.transport.stats.retries, 0);
  t.equal(conns, 1, 'one connection: the body was not resent');
});

t.test('exchange records: the fault the transport answered, version, ids, upstream time', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => void setTimeout(() => c.respond(200, 'ok'), 50) });
  t.teardown(() => backend.close());
  const refused = await closedPort();
  const good = targetFromUrl(backend.url);
  const bad = targetFromUrl(`http://127.0.0.1:${refused}`);
  const h = await startTransport(t, (req) => ({ target: req.url === '/bad' ? bad : good }));
  t.equal((await rawRequest(h.port, 'GET /good HTTP/1.0\r\n\r\n')).status, 200);
  t.equal((await rawRequest(h.port, get('/bad'))).status, 502);
  await sleep(20);
  const [ok, failed] = h.exchanges;
  t.match(ok, { method: 'GET', url: '/good', httpVersion: '1.0', status: 200, requestNumber: 1, fault: undefined });
  t.ok((ok?.upstreamMs ?? 0) >= 40, `upstream time covers the backend's 50 ms (${ok?.upstreamMs})`);
  t.ok((ok?.durationMs ?? 0) >= (ok?.upstreamMs ?? 0), 'duration includes upstream time');
  t.ok((ok?.connectionId ?? 0) > 0);
  t.match(failed, { url: '/bad', httpVersion: '1.1', status: 502, faultCode: 101503 });
  t.match(failed?.fault, { code: 101503, base: 101503, state: 0, reason: 'connect_refused' }, 'the record carries the fault itself');
});

checkTransitions(t);
