/**
 * Header rules between client and backend: [apim.transport_headers] (spec 001) exclude/remove/preserve,
 * and [apim.oauth_config] enable_outbound_auth_header / auth_header (spec 000).
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, request, startGateway, type EchoBackend } from './helpers';
import { HeaderRules } from '../../lib/gateway/transport-headers';

let backend: EchoBackend;
t.before(async () => {
  // The backend answers with fields that look like request fields, as a leaky backend would.
  backend = await echoBackend((req, res) => {
    if (!(req.url ?? '').includes('leaky')) return false;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Secret': 's3cr3t', Cookie: 'a=b', 'X-Kept': 'yes', 'Content-Length': '2' });
    res.end('ok');
    return true;
  });
});
t.teardown(() => backend.close());

function api(): Record<string, string> {
  return { a: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET', 'POST']]] }) };
}

function sent(name: string): string[] {
  const h = backend.seen[backend.seen.length - 1]?.headers ?? [];
  const out: string[] = [];
  for (let i = 0; i < h.length; i += 2) if ((h[i] as string).toLowerCase() === name) out.push(h[i + 1] as string);
  return out;
}

t.test("the client's Authorization is not sent to the backend by default", async (t) => {
  const g = await startGateway(BASE_TOML, api());
  t.teardown(() => g.close());
  const r = await request(g.port, '/test/1.0.0/x', { headers: { Authorization: 'Bearer abc', 'X-Other': '1' } });
  t.equal(r.status, 200);
  t.same(sent('authorization'), []);
  t.same(sent('x-other'), ['1'], 'other fields pass');
});

t.test('enable_outbound_auth_header = true sends it', async (t) => {
  const g = await startGateway(`${BASE_TOML}[apim.oauth_config]\nenable_outbound_auth_header = true\n`, api());
  t.teardown(() => g.close());
  await request(g.port, '/test/1.0.0/x', { headers: { Authorization: 'Bearer abc' } });
  t.same(sent('authorization'), ['Bearer abc']);
});

t.test("a custom auth_header is the one removed; Authorization then passes (the backend's own auth)", async (t) => {
  const g = await startGateway(`${BASE_TOML}[apim.oauth_config]\nauth_header = "X-API-Token"\n`, api());
  t.teardown(() => g.close());
  await request(g.port, '/test/1.0.0/x', {
    headers: ['Host', 'gw', 'x-api-token', 'tok', 'Authorization', 'Basic dTpw', 'X-Api-Token', 'again'],
  });
  t.same(sent('x-api-token'), [], 'every occurrence, any case');
  t.same(sent('authorization'), ['Basic dTpw']);
});

t.test('exclude lists apply when [apim.transport_headers] enabled = true', async (t) => {
  const rules =
    '[apim.transport_headers]\nenabled = true\nexcludeRequestHeaders = "X-Secret, cookie"\nexcludeResponseHeaders = "X-Internal-Debug"\n';
  const g = await startGateway(BASE_TOML + rules, api());
  t.teardown(() => g.close());
  const r = await request(g.port, '/test/1.0.0/leaky', { headers: { 'X-Internal-Debug': 'on', 'X-Secret': 'from-client' } });
  t.equal(r.status, 200);
  t.equal(r.body, 'ok');
  t.equal(r.headers['x-secret'], undefined, 'excludeRequestHeaders: removed from the response to the client');
  t.equal(r.headers.cookie, undefined);
  t.equal(r.headers['x-kept'], 'yes');
  t.same(sent('x-internal-debug'), [], 'excludeResponseHeaders: removed from the request to the backend');
  t.same(sent('x-secret'), ['from-client'], 'excludeRequestHeaders does not touch the request');
});

t.test('exclude lists do nothing while enabled = false (the spec default)', async (t) => {
  const rules = '[apim.transport_headers]\nexcludeRequestHeaders = "X-Secret"\nexcludeResponseHeaders = "X-Internal-Debug"\n';
  const g = await startGateway(BASE_TOML + rules, api());
  t.teardown(() => g.close());
  const r = await request(g.port, '/test/1.0.0/leaky', { headers: { 'X-Internal-Debug': 'on' } });
  t.equal(r.headers['x-secret'], 's3cr3t');
  t.same(sent('x-internal-debug'), ['on']);
});

t.test('faults never copy request fields; removeRequestHeaders echoes only the preserved ones, never on OPTIONS', async (t) => {
  const plain = await startGateway(BASE_TOML, api());
  t.teardown(() => plain.close());
  const f0 = await request(plain.port, '/nothing', { headers: { 'X-Correlation-Id': 'c-1', Authorization: 'Bearer t' } });
  t.equal(f0.status, 404);
  t.equal(f0.headers['x-correlation-id'], undefined);
  t.equal(f0.headers.authorization, undefined);

  const rules = '[apim.transport_headers]\nenabled = true\nremoveRequestHeaders = true\npreserveRequestHeaders = "X-Correlation-Id"\n';
  const g = await startGateway(BASE_TOML + rules, api());
  t.teardown(() => g.close());
  const f = await request(g.port, '/nothing', { headers: { 'X-Correlation-Id': 'c-2', Authorization: 'Bearer t' } });
  t.equal(f.status, 404);
  t.equal(f.headers['x-correlation-id'], 'c-2');
  t.equal(f.headers.authorization, undefined);
  const o = await request(g.port, '/nothing', { method: 'OPTIONS', headers: { 'X-Correlation-Id': 'c-3' } });
  t.equal(o.status, 404);
  t.equal(o.headers['x-correlation-id'], undefined, 'always removed for OPTIONS calls (spec 001)');
  const ok = await request(g.port, '/test/1.0.0/x', { headers: { 'X-Correlation-Id': 'c-4' } });
  t.equal(ok.headers['x-correlation-id'], undefined, "a backend response is the backend's");
});

t.test('HeaderRules.outgoing builds a new array only when a field changes', async (t) => {
  const rules = new HeaderRules({
    enabled: true,
    removeRequestHeaders: false,
    preserveRequestHeaders: [],
    excludeRequestHeaders: [],
    excludeResponseHeaders: ['X-Drop'],
    outboundAuthHeader: false,
    authHeader: 'Authorization',
  });
  const untouched = Object.freeze(['Host', 'a', 'Accept', '*/*']);
  t.equal(rules.outgoing(untouched, undefined), undefined, "nothing to remove: the client's array is used as is");
  const input = Object.freeze(['Host', 'a', 'authorization', 'x', 'Accept', '*/*', 'x-drop', '1', 'X-Keep', '2']);
  const out = rules.outgoing(input, ['X-JWT-Assertion', 'jwt']);
  t.same(out, ['Host', 'a', 'Accept', '*/*', 'X-Keep', '2', 'X-JWT-Assertion', 'jwt']);
  t.not(out, input);
  t.same(input, ['Host', 'a', 'authorization', 'x', 'Accept', '*/*', 'x-drop', '1', 'X-Keep', '2'], "the request's fields are not edited");
});

t.test('HeaderRules.outgoing removes a listed name in any letter case, and no other name of its length', async (t) => {
  // Authorization, Cache-Control and X-Debug-Token are all 13 characters long.
  const rules = new HeaderRules({
    enabled: true,
    removeRequestHeaders: false,
    preserveRequestHeaders: [],
    excludeRequestHeaders: [],
    excludeResponseHeaders: ['x-debug-token', 'X-Other'],
    outboundAuthHeader: false,
    authHeader: 'Authorization',
  });
  const input = Object.freeze([
    'AUTHORIZATION',
    'a',
    'Cache-Control',
    'no-cache',
    'x-DEBUG-token',
    'd',
    'X-Debug-Tokem',
    'kept',
    'Authorizatio',
    'kept too',
    'x-other',
    'o',
    'X-Others',
    'kept',
  ]);
  t.same(rules.outgoing(input, undefined), [
    'Cache-Control',
    'no-cache',
    'X-Debug-Tokem',
    'kept',
    'Authorizatio',
    'kept too',
    'X-Others',
    'kept',
  ]);
  t.equal(
    rules.outgoing(Object.freeze(['Cache-Control', 'x', 'X-Debug-Tokem', 'y']), undefined),
    undefined,
    'names of a listed length that are not listed: nothing removed',
  );
});
