/**
 * What belongs to proxies and framing, refused or stripped at the edge: Proxy-Authorization and
 * Proxy-Authenticate are removed both ways (RFC 9110 §11.7); a request's Transfer-Encoding must be exactly
 * one `chunked` coding (else 501, 103160: backends that do not combine repeated fields or skip `identity`
 * would frame the body differently, RFC 9112 §6.1, §11.2); a response's goes to the client as one field
 * without `identity`; a `#fragment` in the request target is refused (400, 103161; RFC 9112 §3.2).
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { rawRequest } from '../helpers/client';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';

t.test('Proxy-Authorization is not forwarded; Proxy-Authenticate is not relayed', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok', 'Proxy-Authenticate: Basic realm="inner"\r\nX-Keep: 1\r\n') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(
    h.port,
    'GET /p HTTP/1.1\r\nHost: a\r\nProxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\nX-Other: 1\r\n\r\n',
  );
  t.equal(res.status, 200);
  const seen = backend.conns[0]?.raw.toString('latin1') ?? '';
  t.notMatch(seen, /proxy-authorization/i, 'the backend never sees the proxy credentials');
  t.notMatch(seen, /c2VjcmV0OnNlY3JldA==/, 'nor their value');
  t.match(seen, /X-Other: 1/);
  t.notOk(res.headers['proxy-authenticate'], "the client never sees the backend's proxy challenge");
  t.equal(res.headers['x-keep'], '1');
});

const REFUSED: [string, string][] = [
  ['identity', 'Transfer-Encoding: identity\r\n'],
  ['identity, chunked', 'Transfer-Encoding: identity, chunked\r\n'],
  ['gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n'],
  ['two fields: identity then chunked', 'Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n'],
  ['two fields: chunked twice', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n'],
];

for (const [what, fields] of REFUSED) {
  t.test(`request Transfer-Encoding ${what}: refused, nothing reaches the backend`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, `POST /te HTTP/1.1\r\nHost: a\r\n${fields}\r\n5\r\nhello\r\n0\r\n\r\n`);
    t.ok(res.status === 400 || res.status === 501, `refused (${res.status})`);
    t.equal(backend.conns.length, 0, 'no backend connection');
    if (res.status === 501) {
      t.equal(JSON.parse(res.text).fault.code, 103160);
      assertFault(t, h.faults[0], { code: 103160, base: 103160, state: 2, side: 'source', reason: 'te_refused', httpStatus: 501 });
    }
  });
}

t.test('request Transfer-Encoding: chunked (any case) is relayed', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.body) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'POST /te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(res.text, 'hello');
});

t.test('response Transfer-Encoding in two fields with identity: the client gets one `chunked` field', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /r HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(res.text, 'ok');
  const head = res.raw.toString('latin1').split('\r\n\r\n')[0] ?? '';
  t.same(head.match(/^transfer-encoding:.*$/gim), ['Transfer-Encoding: chunked'], 'one field, one coding');
});

t.test('a #fragment in the request target: 400 with 103161, nothing reaches the backend', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /admin#/public HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal(res.status, 400);
  t.equal(JSON.parse(res.text).fault.code, 103161);
  t.equal(backend.conns.length, 0);
});

checkTransitions(t);
