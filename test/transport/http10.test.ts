/**
 * HTTP/1.0 clients (RFC 9112 §9.3, appendix C.2.2): they get no chunked framing (a chunked backend
 * response is de-chunked and delimited by the close), no 1xx, and the connection closes after the
 * response unless they asked for keep-alive.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, rawRequest, sleep } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

t.test('HTTP/1.0 request, Content-Length response: closed after the response', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.version} ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /old HTTP/1.0\r\nHost: a\r\n\r\n', { waitClose: true });
  t.equal(res.status, 200);
  t.equal(res.text, 'HTTP/1.1 /old', 'the backend got an HTTP/1.1 request (the proxy speaks its own version)');
  t.ok(res.closed, 'the connection closed after the response');
  t.notOk(res.headers['transfer-encoding']);
  t.equal(h.faults.length, 0);
});

t.test('HTTP/1.0 request, chunked backend response: de-chunked, no Transfer-Encoding, ends with the close', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /chunky HTTP/1.0\r\nHost: a\r\n\r\n', { waitClose: true });
  t.equal(res.status, 200);
  t.notOk(res.headers['transfer-encoding'], 'no Transfer-Encoding to a 1.0 client');
  t.equal(res.headers['connection'], 'close');
  t.equal(res.text, 'hello world', 'the payload without chunk framing');
  t.ok(res.response.complete, 'complete when the connection closed');
  const raw = res.raw.toString('latin1');
  t.equal(raw.slice(raw.indexOf('\r\n\r\n') + 4), 'hello world', 'exactly the payload bytes after the head');
  t.ok(res.closed);
});

t.test('HTTP/1.0 with Connection: keep-alive and a Content-Length response: kept alive', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /ka1 HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n');
  const r1 = await c.finalResponse();
  t.equal(r1.status, 200);
  t.equal(r1.headers['connection'], 'keep-alive', 'a 1.0 client is told the connection stays (it is not the default)');
  t.equal(r1.body.toString(), '/ka1');
  await sleep(30);
  t.notOk(c.closed, 'still open');
  await c.write('GET /ka2 HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n');
  const r2 = await c.finalResponse(5000, 1);
  t.equal(r2.body.toString(), '/ka2');
  t.equal(h.faults.length, 0);
});

t.test('HTTP/1.0 keep-alive client, chunked response: de-chunked, so the close must delimit it', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /x HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n');
  t.equal(res.headers['connection'], 'close');
  t.equal(res.text, 'abc');
  t.ok(res.closed);
});

t.test('HTTP/1.0 client never sees a 1xx interim response', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /x HTTP/1.0\r\nHost: a\r\n\r\n', { waitClose: true });
  t.equal(res.responses.length, 1, 'one response only');
  t.equal(res.status, 200);
  t.ok(res.raw.toString('latin1').startsWith('HTTP/1.1 200 '), 'the 103 was not relayed');
});

// The state is the source's when the head was read: REQUEST_BODY(2) once a chunked body is announced;
// a coding other than chunked is refused by the parser itself, in REQUEST_HEAD(1).
for (const [what, fields, body, state] of [
  ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked\r\n', '5\r\nhello\r\n0\r\n\r\n', 2],
  ['Transfer-Encoding: chunked and keep-alive', 'Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n', '5\r\nhello\r\n0\r\n\r\n', 2],
  ['Transfer-Encoding: gzip', 'Transfer-Encoding: gzip\r\n', 'hello', 1],
] as const) {
  t.test(`HTTP/1.0 request with ${what}: 400 and close, nothing forwarded (RFC 9112 §6.1)`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'should not be here') });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, `POST /te HTTP/1.0\r\nHost: a\r\n${fields}\r\n${body}GET /next HTTP/1.0\r\nHost: a\r\n\r\n`);
    assertFaultBody(t, res, 400, 101506 + state, 101506, state);
    t.equal(res.headers['connection'], 'close');
    t.ok(res.closed, 'the connection is closed');
    t.equal(res.responses.length, 1, 'one response: the bytes after the request were not read as another');
    await sleep(30);
    t.equal(backend.conns.length, 0, 'the backend saw no connection');
    assertFault(t, h.faults[0], { code: 101506 + state, base: 101506, state, side: 'source', reason: 'client_protocol', httpStatus: 400 });
    if (state === 2) t.equal(h.faults[0]?.cause, 'Transfer-Encoding in an HTTP/1.0 request');
  });
}

checkTransitions(t);
