/**
 * Malformed requests (the request-smuggling vectors of RFC 9112 §6.1, §6.3 and §11.2) are answered by the
 * proxy itself with 400 (431 for an oversize head), `Connection: close`, and the connection closes; and
 * NOTHING reaches the backend: it records every byte it receives, and the tests assert it received zero
 * bytes on zero connections.
 */
import t, { type Test } from 'tap';
import { rawBackend, type RawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport, type Harness } from '../helpers/transport';

interface Case {
  readonly name: string;
  readonly bytes: string;
  readonly status: number;
  readonly reason: 'client_protocol' | 'header_too_large';
  /** Source state at the error: REQUEST_HEAD(1) while the head is read, REQUEST_BODY(2) in the body. */
  readonly state: number;
}

const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n';

const CASES: Case[] = [
  {
    name: 'Content-Length and Transfer-Encoding together',
    bytes: `POST /cl-te HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'Transfer-Encoding and Content-Length together (other order)',
    bytes: `POST /te-cl HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'duplicate differing Content-Length',
    bytes: `POST /dup-cl HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'obs-fold (a header line continued on the next line)',
    bytes: `GET /fold HTTP/1.1\r\nHost: a\r\nX-Folded: first\r\n second\r\n\r\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'bare LF line endings',
    bytes: `GET /bare-lf HTTP/1.1\nHost: a\n\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'bare LF after an otherwise valid header',
    bytes: `GET /bare-lf2 HTTP/1.1\r\nHost: a\nX-Other: b\r\n\r\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'a space before the colon (RFC 9112 §5.1)',
    bytes: `GET /space HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'Content-Length listing the same value twice ("5, 5")',
    bytes: `POST /cl-list HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'a signed Content-Length ("+5")',
    bytes: `POST /cl-sign HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'chunked not the final transfer coding (RFC 9112 §6.3)',
    bytes: `POST /te-order HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${SMUGGLED}`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'a transfer coding without chunked in a request',
    bytes: `POST /te-gzip HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nabc`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'Transfer-Encoding twice',
    bytes: `POST /te-twice HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'NUL in a header value',
    bytes: `GET /nul HTTP/1.1\r\nHost: a\r\nX-Nul: a\u0000b\r\n\r\n`,
    status: 400,
    reason: 'client_protocol',
    state: 1,
  },
  {
    name: 'invalid chunk size',
    bytes: `POST /bad-chunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n${SMUGGLED}`,
    status: 400,
    reason: 'client_protocol',
    state: 2,
  },
  {
    name: 'oversize head (431)',
    bytes: `GET /big-head HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(2000)}\r\n\r\n`,
    status: 431,
    reason: 'header_too_large',
    state: 1,
  },
];

async function setup(t: Test): Promise<{ backend: RawBackend; h: Harness }> {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'should not be here') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxHeaderSize: 1024 } });
  return { backend, h };
}

for (const c of CASES) {
  t.test(`${c.name}: ${c.status}, Connection: close, nothing forwarded`, async (t) => {
    const { backend, h } = await setup(t);
    const res = await rawRequest(h.port, c.bytes);
    const code = 101506 + c.state;
    assertFaultBody(t, res, c.status, code, 101506, c.state);
    t.equal(res.headers['connection'], 'close', 'Connection: close');
    t.ok(res.closed, 'the connection is closed');
    t.equal(res.responses.length, 1, 'exactly one response (nothing answered the bytes after the error)');
    await sleep(30);
    t.equal(backend.conns.length, 0, 'the backend saw no connection');
    t.equal(backend.receivedBytes(), 0, 'the backend received zero bytes');
    t.equal(h.faults.length, 1, 'one fault');
    assertFault(t, h.faults[0], { code, base: 101506, state: c.state, side: 'source', reason: c.reason, httpStatus: c.status });
    t.equal(h.transport.connections().targets, 0, 'no backend connection is left');
  });
}

t.test('a head just under maxHeaderSize is forwarded', async (t) => {
  const { backend, h } = await setup(t);
  const filler = 'a'.repeat(1024 - 'GET /ok HTTP/1.1\r\nHost: a\r\nX-Big: \r\n\r\n'.length);
  const bytes = `GET /ok HTTP/1.1\r\nHost: a\r\nX-Big: ${filler}\r\n\r\n`;
  t.equal(bytes.length, 1024, 'the head is exactly maxHeaderSize bytes');
  const res = await rawRequest(h.port, bytes);
  t.equal(res.status, 200);
  t.equal(backend.conns[0]?.requests[0]?.headers['x-big'], filler);
});

t.test('an invalid chunk on a kept-alive backend connection: the bytes after it never reach the backend', async (t) => {
  const { backend, h } = await setup(t);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  // Warm the pool: one good exchange leaves an idle backend connection.
  await c.write(get('/warm'));
  t.equal((await c.finalResponse()).status, 200);
  // A chunked upload whose first chunk is valid and the second is not, followed by a request to smuggle.
  await c.write('POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
  await sleep(50);
  await c.write(`5x\r\nworld\r\n0\r\n\r\n${SMUGGLED}`);
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 400);
  t.equal(res.headers['connection'], 'close');
  t.ok(await c.waitClose(2000), 'client connection closed');
  await sleep(50);
  const seen = backend.conns.map((x) => x.raw.toString('latin1')).join('');
  t.notOk(seen.includes('world'), 'the invalid chunk was not forwarded');
  t.notOk(seen.includes('/smuggled'), 'the request after it was not forwarded');
  t.ok(
    backend.conns.every((x) => x.closed),
    'the backend connection that carried the partial upload was closed',
  );
  t.equal(backend.conns.flatMap((x) => x.requests).length, 1, 'the backend saw one complete request only (/warm)');
  t.equal(h.faults.length, 1, 'one fault: the destroyed backend socket is not reported again');
  assertFault(t, h.faults[0], { code: 101508, base: 101506, state: 2, side: 'source', reason: 'client_protocol', httpStatus: 400 });
});

checkTransitions(t);
