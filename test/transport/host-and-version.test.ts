/**
 * What strict llhttp accepts but a proxy must not forward (found while hardening the parser adapter):
 * an HTTP/1.1 request without Host or with two Host fields (RFC 9112 §3.2: the gateway and the backend
 * could pick different ones), and a major version other than 1. Answered by the proxy, nothing forwarded.
 */
import t, { type Test } from 'tap';
import { rawBackend } from '../helpers/backend';
import { rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

async function setup(t: Test) {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  return { backend, h };
}

const CASES = [
  {
    name: 'two Host fields',
    bytes: 'GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
    status: 400,
    reason: 'client_protocol' as const,
    cause: 'more than one Host field',
  },
  {
    name: 'HTTP/1.1 without Host',
    bytes: 'GET /x HTTP/1.1\r\nX-A: 1\r\n\r\n',
    status: 400,
    reason: 'client_protocol' as const,
    cause: 'no Host field',
  },
  {
    name: 'HTTP/2.0 in the request line',
    bytes: 'GET /x HTTP/2.0\r\nHost: a\r\n\r\n',
    status: 505,
    reason: 'version_not_supported' as const,
    cause: 'HTTP/2.0',
  },
];

for (const c of CASES) {
  t.test(`${c.name}: ${c.status}, Connection: close, nothing forwarded`, async (t) => {
    const { backend, h } = await setup(t);
    const res = await rawRequest(h.port, c.bytes);
    assertFaultBody(t, res, c.status, 101507, 101506, 1);
    t.equal(res.headers['connection'], 'close');
    t.ok(res.closed, 'the client connection is closed');
    t.equal(backend.conns.length, 0, 'no connection reached the backend');
    t.equal(h.faults.length, 1);
    assertFault(t, h.faults[0], { code: 101507, base: 101506, state: 1, side: 'source', reason: c.reason, httpStatus: c.status });
    t.equal(h.faults[0]?.cause, c.cause);
  });
}

t.test('HTTP/1.0 without Host is served (Host is required in 1.1 only)', async (t) => {
  const { backend, h } = await setup(t);
  const res = await rawRequest(h.port, 'GET /old HTTP/1.0\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(backend.conns.length, 1);
  t.equal(h.faults.length, 0);
});

t.test('CONNECT: 501, Connection: close, nothing forwarded (no tunnelling on this listener)', async (t) => {
  const { backend, h } = await setup(t);
  const res = await rawRequest(h.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  assertFaultBody(t, res, 501, 101507, 101506, 1);
  t.equal(res.headers['connection'], 'close');
  t.equal(backend.conns.length, 0, 'no connection reached the backend');
  assertFault(t, h.faults[0], { code: 101507, base: 101506, state: 1, side: 'source', reason: 'connect_method', httpStatus: 501 });
});

t.test('a router cannot add a second framing field to a forwarded response', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'hello') });
  t.teardown(() => backend.close());
  const { targetFromUrl } = await import('../../lib/transport');
  const target = targetFromUrl(backend.url);
  const h = await startTransport(t, () => ({
    target,
    responseHeaders: ['Content-Length', '99', 'Transfer-Encoding', 'chunked', 'Connection', 'close', 'X-Added', 'yes'],
  }));
  const res = await rawRequest(h.port, 'GET /x HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(res.text, 'hello');
  t.equal(res.headers['x-added'], 'yes', 'ordinary fields are added');
  const raw = res.raw.toString('latin1');
  t.equal(raw.match(/content-length:/gi)?.length, 1, 'one Content-Length');
  t.notMatch(raw, /transfer-encoding/i);
});
checkTransitions(t);
