/**
 * Request targets and versions: absolute-form (which a server must accept, RFC 9112 §3.2.2) reaches the
 * backend in origin-form, as a client talking to an origin server must send it (§3.2.1), so the backend
 * cannot take the URI's authority over the Host the proxy sets; asterisk-form is forwarded as is; a
 * request without Host, or with two, is 400 (§3.2); a version other than 1.0/1.1 is 505.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { rawRequest } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import { targetFromUrl } from '../../lib/transport';

const ABSOLUTE = [
  ['http://internal.admin/secret?x=1', '/secret?x=1'],
  ['HTTP://Internal.Admin:81/a/b', '/a/b'],
  ['http://internal.admin', '/'],
  ['http://internal.admin?q=1', '/?q=1'],
] as const;

for (const [target, origin] of ABSOLUTE) {
  t.test(`absolute-form ${target} is forwarded as ${origin}`, async (t) => {
    const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, `GET ${target} HTTP/1.1\r\nHost: public.example\r\n\r\n`);
    t.equal(res.status, 200);
    t.equal(res.text, origin, 'origin-form on the backend side');
    const req = backend.conns[0]?.requests[0];
    t.equal(req?.startLine, `GET ${origin} HTTP/1.1`);
    t.equal(req?.headers['host'], `127.0.0.1:${backend.port}`);
  });
}

t.test('asterisk-form (OPTIONS *) is forwarded as is', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal(res.text, '*');
});

t.test('a route that sets the path wins over the client target', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  const h = await startTransport(t, () => ({ target, path: '/routed' }));
  const res = await rawRequest(h.port, 'GET http://x.example/ignored HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal(res.text, '/routed');
});

for (const [what, bytes, status] of [
  ['no Host', 'GET / HTTP/1.1\r\n\r\n', 400],
  ['two Host fields', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400],
  ['HTTP/2.0 in an HTTP/1 request line', 'GET / HTTP/2.0\r\nHost: a\r\n\r\n', 505],
] as const) {
  t.test(`${what}: ${status}, Connection: close, nothing forwarded`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, bytes);
    t.equal(res.status, status);
    t.equal(JSON.parse(res.text).fault.code, 101507, '101506 + REQUEST_HEAD(1)');
    t.equal(res.headers['connection'], 'close');
    t.ok(res.closed);
    t.equal(backend.conns.length, 0);
    t.equal(h.faults.length, 1);
  });
}

t.test('HTTP/1.0 without Host is accepted (Host is required from 1.1 on)', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, 'GET /old HTTP/1.0\r\n\r\n', { waitClose: true });
  t.equal(res.status, 200);
  t.equal(backend.conns[0]?.requests[0]?.headers['host'], `127.0.0.1:${backend.port}`, 'the proxy supplies Host');
});

checkTransitions(t);
