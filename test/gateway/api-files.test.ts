/**
 * API definition files: errors name file, line and field; a bad file is not deployed and the others
 * are; unknown fields warn with the closest known field; duplicate context + version is refused; one
 * default version per context; gateway labels; runtime tokens; fields not enforced yet are reported;
 * `throughway apis list`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { parseApiText, validateApi } from '../../lib/gateway/apis';
import { formatApiDiagnostic } from '../../lib/gateway/diagnostics';
import { main } from '../../lib/cli';
import { BASE_TOML, apiToml, confDir, echoBackend, request, startGateway } from './helpers';

const GOOD = apiToml({ endpoint: 'http://127.0.0.1:9/v1', resources: [['/menu', ['GET']]], unauthenticatedPolicy: null });

t.test('errors carry file, line and field', async (t) => {
  const text = [
    'name = "Shop"', // 1
    'context = "shop/"', // 2
    'version = "1.0"', // 3
    'default_version = "yes"', // 4
    'auth = "none"', // 5
    '[endpoints]', // 6
    'production = "ftp://x"', // 7
    '[[resources]]', // 8
    'path = "/menu"', // 9
    'methods = ["GET",', // 10
    '  "GTE"]', // 11
    '[[resources]]', // 12
    'path = "/a/{id"', // 13
    'methods = ["GET"]', // 14
    '[[resources]]', // 15
    'methods = ["GET"]', // 16
    '[[resources]]', // 17
    'path = "/menu"', // 18
    'methods = ["GET"]', // 19
  ].join('\n');
  const r = parseApiText(text, 'apis/shop.toml');
  t.equal(r.api, undefined, 'not deployable');
  const at = (field: string) => r.diagnostics.find((d) => d.field === field);
  t.same([at('default_version')?.code, at('default_version')?.line], ['API_TYPE', 4]);
  t.same(
    [at('resources[0].methods[1]')?.code, at('resources[0].methods[1]')?.line, at('resources[0].methods[1]')?.column],
    ['API_ALLOWED', 11, 3],
  );
  t.match(at('resources[0].methods[1]')?.message, /did you mean "GET"/);
  t.same([at('resources[2].path')?.code, at('resources[2].path')?.line], ['API_REQUIRED', 15], 'a missing field points at its table');
  t.equal(
    formatApiDiagnostic(at('resources[0].methods[1]') ?? (undefined as never)),
    'apis/shop.toml:11:3: error API_ALLOWED resources[0].methods[1]: "GTE" is not allowed; did you mean "GET"? (expected one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)',
  );

  // The same file with the type errors fixed reaches the semantic checks.
  const r2 = parseApiText(
    text.replace('"yes"', 'true').replace('"GTE"', '"POST"').replace('[[resources]]\nmethods = ["GET"]\n', ''),
    'apis/shop.toml',
  );
  const at2 = (field: string) => r2.diagnostics.find((d) => d.field === field);
  t.same([at2('context')?.code, at2('context')?.line], ['API_VALUE', 2]);
  t.same([at2('endpoints.production')?.code, at2('endpoints.production')?.line], ['API_VALUE', 7]);
  t.match(at2('endpoints.production')?.message, /unsupported endpoint scheme ftp:/);
  t.same([at2('resources[1].path')?.code, at2('resources[1].path')?.line], ['API_VALUE', 13]);
  const dup = r2.diagnostics.find((d) => d.code === 'API_DUPLICATE_RESOURCE');
  t.equal(dup?.line, 16);
  t.match(dup?.message, /GET \/menu is already defined by resources\[0\]/);

  const syntax = parseApiText('name = "x"\ncontext = \n', 'apis/s.toml');
  t.same([syntax.diagnostics[0]?.code, syntax.diagnostics[0]?.line], ['API_SYNTAX', 2]);
  const twice = parseApiText('name = "x"\nname = "y"\n', 'apis/s.toml');
  t.same([twice.diagnostics[0]?.code, twice.diagnostics[0]?.line], ['API_SYNTAX', 2]);
});

t.test('unknown fields warn with the closest known field and do not refuse the API', async (t) => {
  const r = parseApiText(GOOD.replace('auth = "none"', 'auth = "none"\ndefault_versoin = true\n[cors]\nallow_origin = ["*"]'), 'a.toml');
  t.ok(r.api);
  const w = r.diagnostics.filter((d) => d.code === 'API_UNKNOWN_FIELD');
  t.same(
    w.map((d) => [d.field, d.level, d.line]),
    [
      ['default_versoin', 'warning', 5],
      ['cors.allow_origin', 'warning', 7],
    ],
  );
  t.match(w[0]?.message, /did you mean "default_version"/);
  t.match(w[1]?.message, /did you mean "allow_origins"/);
});

t.test('fields not enforced yet are reported, once per kind', async (t) => {
  const r = parseApiText(
    'name = "x"\ncontext = "/x"\nversion = "1"\npolicy = "Gold"\n[endpoints.production]\nurl = "http://127.0.0.1:1"\ntimeout = "5s"\nretry_codes = [101503]\n[[resources]]\npath = "/a"\nmethods = ["GET"]\nscopes = ["read"]\n[[resources]]\npath = "/b"\nmethods = ["GET"]\nscopes = ["read"]\n',
    'x.toml',
  );
  t.ok(r.api, 'still deployed');
  const n = r.diagnostics.filter((d) => d.code === 'API_NOT_ENFORCED');
  t.same(n, [], 'timeout, retry_codes, auth, scopes (docs/security.md) and policy (docs/throttling.md) are enforced: nothing is listed');
  t.same(
    r.api?.resources.map((x) => [x.auth, x.scopes, x.tokenType]),
    [
      ['oauth2', ['read'], 'any'],
      ['oauth2', ['read'], 'any'],
    ],
    'auth defaults to oauth2, token_type to any',
  );
  t.equal(r.api?.endpoints.production?.timeout, 5000);
});

t.test('runtime tokens in endpoint URLs', async (t) => {
  const text = GOOD.replace('http://127.0.0.1:9/v1', 'http://127.0.0.1:${demo_port}/v1');
  t.equal(parseApiText(text, 'a.toml', { demo_port: '9017' }).api?.endpoints.production?.url, 'http://127.0.0.1:9017/v1');
  const bad = parseApiText(text.replace('demo_port', 'dmeo_port'), 'a.toml', { demo_port: '9017' });
  t.equal(bad.api, undefined);
  t.match(bad.diagnostics[0]?.message, /unknown runtime token \$\{dmeo_port\}/);
});

t.test('definitions given in code use the same validation', async (t) => {
  const r = validateApi({ name: 'x', context: '/x', version: '1', endpoints: {}, resources: [] }, '');
  t.same(r.diagnostics.map((d) => d.code).sort(), ['API_REQUIRED', 'API_REQUIRED']);
  t.equal(r.diagnostics[0]?.file, '<api>');
});

t.test('a bad file is not deployed, the others are; duplicates, default versions and labels', async (t) => {
  const backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  const g = await startGateway(`${BASE_TOML}[apim.sync_runtime_artifacts.gateway]\ngateway_labels = ["Default", "EU"]\n`, {
    a: apiToml({ name: 'A', context: '/shop', version: '1', defaultVersion: true, endpoint: `${ep}/a`, resources: [['/r', ['GET']]] }),
    b: apiToml({ name: 'B', context: '/shop', version: '1', endpoint: `${ep}/b`, resources: [['/r', ['GET']]] }),
    c: apiToml({ name: 'C', context: '/shop', version: '2', defaultVersion: true, endpoint: `${ep}/c`, resources: [['/r', ['GET']]] }),
    d: 'name = "D"\ncontext = "/d"\n',
    e: apiToml({ name: 'E', context: '/e', endpoint: ep, resources: [['/r', ['GET']]], extra: 'labels = ["US"]' }),
    f: apiToml({ name: 'F', context: '/f', endpoint: ep, resources: [['/r', ['GET']]], extra: 'labels = ["EU"]' }),
  });
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  const byName = (n: string) => g.gw.states().find((s) => s.api?.name === n || path.basename(s.file) === `${n.toLowerCase()}.toml`);
  t.equal(byName('A')?.status, 'deployed');
  t.equal(byName('B')?.status, 'refused');
  t.match(
    byName('B')?.diagnostics.find((d) => d.code === 'API_DUPLICATE_CONTEXT')?.message,
    /context \/shop version 1 \(\/shop\/1\) is already deployed by .*a\.toml \(A\)/,
  );
  t.equal(byName('C')?.status, 'deployed');
  t.equal(byName('C')?.defaultRouting, false);
  t.match(
    byName('C')?.diagnostics.find((d) => d.code === 'API_DEFAULT_VERSION_TAKEN')?.message,
    /\/shop already routes to the default version 1/,
  );
  t.equal(byName('D')?.status, 'invalid');
  t.equal(byName('E')?.status, 'not-deployed');
  t.equal(byName('F')?.status, 'deployed', 'a label in gateway_labels');
  t.equal((await request(g.port, '/shop/1/r')).json().url, '/a/r');
  t.equal((await request(g.port, '/shop/r')).json().url, '/a/r', 'the first default version keeps default routing');
  t.equal((await request(g.port, '/shop/2/r')).json().url, '/c/r');
  t.equal((await request(g.port, '/e/1.0.0/r')).status, 404);
  t.ok(
    g.logger.lines.some((l) => l.event === 'api_definition' && l.code === 'API_REQUIRED' && String(l.file).endsWith('d.toml')),
    'errors are logged',
  );
  t.ok(g.logger.lines.some((l) => l.event === 'api_definition' && l.code === 'API_DUPLICATE_CONTEXT'));
});

t.test('throughway apis list', async (t) => {
  const dir = confDir(
    `${BASE_TOML}[throughway.demo]\nenable = true\nport = 9100\n[server]\n`
      .replace('[server]\nhostname = "localhost"\n', '[server]\nhostname = "localhost"\noffset = 5\n')
      .replace(/\[server\]\n$/, ''),
    {
      demo: fs.readFileSync(path.join(__dirname, '..', '..', '..', 'conf', 'apis', 'demo.toml'), 'utf8'),
      broken:
        'name = "Broken"\ncontext = "/b"\nversion = "1"\n[endpoints]\nproduction = "http://127.0.0.1:1"\n[[resources]]\npath = "/x"\nmethods = ["GTE"]\n',
    },
    {
      'apis/pizzashack.openapi.json': fs.readFileSync(
        path.join(__dirname, '..', '..', '..', 'conf', 'apis', 'pizzashack.openapi.json'),
        'utf8',
      ),
    },
  );
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let out = '';
  let err = '';
  const io = { out: (s: string) => (out += s), err: (s: string) => (err += s), cwd: dir };
  const code = await main(['apis', 'list', '--config', path.join(dir, 'deployment.toml')], io);
  t.equal(code, 1, 'exit 1: a file has an error');
  t.equal(err, '');
  t.match(out, /deployed\s+PizzaShack 1\.0\.0  \/pizzashack\/1\.0\.0 \(default: \/pizzashack\)  PUBLISHED  apis\/demo\.toml/);
  t.match(out, /production: http:\/\/127\.0\.0\.1:9105\/v1/, 'the demo port with the offset');
  t.match(out, /invalid\s+apis\/broken\.toml\n\s+apis\/broken\.toml:8:\d+: error API_ALLOWED resources\[0\]\.methods\[0\]/);
  t.match(out, /1 deployed, 1 not deployed/);
  out = '';
  await main(['apis', 'list', '--json', '--config', path.join(dir, 'deployment.toml')], io);
  const list = JSON.parse(out) as { status: string; name?: string }[];
  t.same(
    list.map((s) => [s.status, s.name]),
    [
      ['invalid', undefined],
      ['deployed', 'PizzaShack'],
    ],
  );
});
