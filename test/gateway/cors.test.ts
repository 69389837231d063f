/**
 * CORS ([apim.cors], spec 000): preflights answered by the gateway with origins, methods, headers and the
 * credentials flag; CORS fields on every response, faults included; credentials with * refused; an API's
 * own [cors] override.
 */
import t from 'tap';
import { createGateway } from '../../lib/embed';
import { loadConfig } from '../../lib/config/load';
import { CorsConfigError } from '../../lib/gateway/cors';
import { BASE_TOML, apiToml, echoBackend, request, startGateway, type EchoBackend, type TestGateway } from './helpers';

const PREFLIGHT = {
  Origin: 'https://app.example',
  'Access-Control-Request-Method': 'PUT',
  'Access-Control-Request-Headers': 'content-type',
};

let backend: EchoBackend;
t.before(async () => {
  backend = await echoBackend();
});
t.teardown(() => backend.close());

function api(extra = ''): string {
  return apiToml({
    endpoint: `http://127.0.0.1:${backend.port}`,
    resources: [
      ['/items', ['GET', 'PUT']],
      ['/opt', ['OPTIONS', 'GET']],
    ],
    extra,
  });
}

t.test('default [apim.cors]: origin *, preflight answered by the gateway', async (t) => {
  const g = await startGateway(BASE_TOML, { a: api() });
  t.teardown(() => g.close());
  const seen = backend.seen.length;
  const pre = await request(g.port, '/test/1.0.0/items', { method: 'OPTIONS', headers: PREFLIGHT });
  t.equal(pre.status, 204);
  t.equal(pre.headers['access-control-allow-origin'], '*');
  t.equal(
    pre.headers['access-control-allow-methods'],
    'GET,PUT,OPTIONS',
    'configured methods the path offers (POST, DELETE, PATCH are not)',
  );
  t.equal(pre.headers['access-control-allow-headers'], 'authorization,Access-Control-Allow-Origin,Content-Type,SOAPAction');
  t.equal(pre.headers['access-control-allow-credentials'], undefined);
  const opt = await request(g.port, '/test/1.0.0/opt', { method: 'OPTIONS', headers: PREFLIGHT });
  t.equal(opt.status, 204, 'a preflight is answered even where the API has an OPTIONS resource');
  t.equal(backend.seen.length, seen, 'no preflight reached the backend');

  const actual = await request(g.port, '/test/1.0.0/items', { headers: { Origin: 'https://app.example' } });
  t.equal(actual.status, 200);
  t.equal(actual.headers['access-control-allow-origin'], '*');
  const noOrigin = await request(g.port, '/test/1.0.0/items');
  t.equal(noOrigin.headers['access-control-allow-origin'], '*', 'on every response');
  for (const [path, status] of [
    ['/test/1.0.0/nope', 403],
    ['/nothing', 404],
    ['/test/1.0.0/items?x', 405],
  ] as const) {
    const f = await request(g.port, path, { method: status === 405 ? 'DELETE' : 'GET', headers: { Origin: 'https://app.example' } });
    t.equal(f.status, status);
    t.equal(f.headers['access-control-allow-origin'], '*', `fault ${status} carries CORS`);
  }
  const plain = await request(g.port, '/test/1.0.0/opt', { method: 'OPTIONS' });
  t.equal(backend.seen.length, seen + 3, 'a plain OPTIONS goes to an OPTIONS resource');
  t.equal(plain.status, 200);
  const allow = await request(g.port, '/test/1.0.0/items', { method: 'OPTIONS' });
  t.equal(allow.status, 204, 'a plain OPTIONS without an OPTIONS resource is answered with Allow');
  t.equal(allow.headers.allow, 'GET, PUT, HEAD, OPTIONS');
});

t.test('listed origins: echoed with Vary; others get no CORS fields; credentials', async (t) => {
  const toml = `${BASE_TOML}[apim.cors]\nallow_origins = ["https://app.example", "https://Other.example"]\nallow_credentials = true\nallow_methods = "GET, PUT"\n`;
  const g = await startGateway(toml, { a: api() });
  t.teardown(() => g.close());
  const pre = await request(g.port, '/test/1.0.0/items', { method: 'OPTIONS', headers: PREFLIGHT });
  t.equal(pre.status, 204);
  t.equal(pre.headers['access-control-allow-origin'], 'https://app.example');
  t.equal(pre.headers['access-control-allow-credentials'], 'true');
  t.equal(pre.headers['access-control-allow-methods'], 'GET,PUT');
  t.equal(pre.headers.vary, 'Origin');
  const other = await request(g.port, '/test/1.0.0/items', { headers: { Origin: 'https://other.example' } });
  t.equal(other.headers['access-control-allow-origin'], 'https://other.example', 'origins compare case-insensitively');
  const evil = await request(g.port, '/test/1.0.0/items', { headers: { Origin: 'https://evil.example' } });
  t.equal(evil.status, 200);
  t.equal(evil.headers['access-control-allow-origin'], undefined);
  t.equal(evil.headers['access-control-allow-credentials'], undefined);
  t.equal(evil.headers.vary, 'Origin', 'the response varies by Origin all the same');
  const evilPre = await request(g.port, '/test/1.0.0/items', {
    method: 'OPTIONS',
    headers: { ...PREFLIGHT, Origin: 'https://evil.example' },
  });
  t.equal(evilPre.status, 204);
  t.equal(evilPre.headers['access-control-allow-origin'], undefined, 'a disallowed origin learns nothing');
  t.equal(evilPre.headers['access-control-allow-methods'], undefined);
  const fault = await request(g.port, '/test/1.0.0/nope', { headers: { Origin: 'https://app.example' } });
  t.equal(fault.headers['access-control-allow-origin'], 'https://app.example');
  t.equal(fault.headers['access-control-allow-credentials'], 'true');
});

t.test('allow_credentials with origin * is a configuration error', async (t) => {
  const loaded = loadConfig({
    text: `${BASE_TOML}[apim.cors]\nallow_origins = "*"\nallow_credentials = true\n`,
    file: '/nonexistent/deployment.toml',
  });
  // The loader refuses it (config check and start alike), and a gateway given the result does not start.
  t.equal(loaded.ok, false);
  t.match(
    loaded.diagnostics.filter((d) => d.level === 'error'),
    [{ code: 'CONFIG_CONFLICT', key: 'apim.cors.allow_credentials' }],
  );
  t.throws(() => createGateway({ loaded, apis: [] }));
  // A configuration given as an object skips the loader: the CORS policy itself still refuses it.
  const config = structuredClone(loadConfig({ text: BASE_TOML, file: '/nonexistent/deployment.toml' }).config) as unknown as {
    apim: { cors: Record<string, unknown> };
  };
  config.apim.cors.allow_origins = ['*'];
  config.apim.cors.allow_credentials = true;
  t.throws(() => createGateway({ config: config as never, apis: [] }), CorsConfigError);
  const disabled = loadConfig({
    text: `${BASE_TOML}[apim.cors]\nenable = false\nallow_origins = "*"\nallow_credentials = true\n`,
    file: '/nonexistent/deployment.toml',
  });
  t.doesNotThrow(() => createGateway({ loaded: disabled, apis: [] }), 'not while CORS is off');
});

t.test('CORS disabled: no fields, OPTIONS answered with Allow', async (t) => {
  const g = await startGateway(`${BASE_TOML}[apim.cors]\nenable = false\n`, { a: api() });
  t.teardown(() => g.close());
  const pre = await request(g.port, '/test/1.0.0/items', { method: 'OPTIONS', headers: PREFLIGHT });
  t.equal(pre.status, 204);
  t.equal(pre.headers['access-control-allow-origin'], undefined);
  t.equal(pre.headers.allow, 'GET, PUT, HEAD, OPTIONS');
  const r = await request(g.port, '/test/1.0.0/items', { headers: { Origin: 'https://app.example' } });
  t.equal(r.headers['access-control-allow-origin'], undefined);
});

t.test('an API [cors] override; a bad override refuses only that API', async (t) => {
  let g: TestGateway | undefined;
  g = await startGateway(BASE_TOML, {
    a: api('[cors]\nallow_origins = ["https://only.example"]'),
    b: apiToml({
      name: 'B',
      context: '/b',
      endpoint: `http://127.0.0.1:${backend.port}`,
      resources: [['/x', ['GET']]],
      extra: '[cors]\nallow_credentials = true',
    }),
  });
  t.teardown(() => g?.close());
  const r = await request(g.port, '/test/1.0.0/items', { headers: { Origin: 'https://only.example' } });
  t.equal(r.headers['access-control-allow-origin'], 'https://only.example');
  const states = g.gw.states();
  const b = states.find((s) => s.api?.name === 'B');
  t.equal(b?.status, 'refused');
  t.match(b?.diagnostics.find((d) => d.field === 'cors')?.message, /allow_credentials = true needs explicit allow_origins/);
  const unknown = await request(g.port, '/b/1.0.0/x', { headers: { Origin: 'https://x.example' } });
  t.equal(unknown.status, 404, 'not deployed');
  t.equal(unknown.headers['access-control-allow-origin'], '*', 'the global policy for calls that match no API');
});
