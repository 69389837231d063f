/**
 * The consoles' pieces without a server: the publisher form through the validator (errors by field),
 * the state line rewritten with comments kept, the lifecycle table, sessions bounded and expired.
 */
import t from 'tap';
import { checkForm, emptyForm, fieldOf, formFromText, TRANSITIONS, withState } from '../../lib/portal/api-form';
import { CONSOLE_STATES, fileNameFor } from '../../lib/portal/catalogue';
import {
  IDLE_TTL,
  MAX_SESSIONS,
  MAX_SESSIONS_PER_ADDRESS,
  MAX_SESSIONS_PER_USER,
  Sessions,
  SIGNIN_COOKIE,
  SIGNIN_TTL,
  SignInSeal,
} from '../../lib/portal/session';
import { safeBack } from '../../lib/portal';
import { faultCode, removeDotSegments, tryTarget } from '../../lib/portal/tryit';
import { importOpenApi } from '../../lib/portal/openapi';
import { parseApiText } from '../../lib/gateway/apis';

t.test('the form is checked by the gateway validator, errors by field', async (t) => {
  const f = { ...emptyForm(), name: 'Shop', context: '/shop', production: 'not a url', resources: 'GET /items' };
  const r = checkForm(f, '/tmp/x.toml', {});
  t.match(r.errors.production, /is not a usable endpoint URL/, 'bad endpoint beside production');
  const ok = checkForm(
    { ...f, production: 'http://127.0.0.1:9/v1', scopes: 'read: admin, subscriber', resources: 'GET /items read\nPOST,PUT /items' },
    '/tmp/x.toml',
    {},
  );
  t.same(ok.errors, {});
  const api = parseApiText(ok.text, '/tmp/x.toml').api;
  t.equal(api?.resources.length, 2);
  t.same(api?.resources[0]?.scopes, ['read']);
  t.same(api?.scopes[0]?.roles, ['admin', 'subscriber']);
  t.equal(api?.state, 'PUBLISHED', 'a draft has no state line (the validator default)');
  t.notMatch(ok.text, /^state/m);
  t.match(checkForm({ ...f, production: 'http://h/', resources: 'menu' }, '', {}).errors.resources, /line 1/);
  t.match(
    checkForm({ ...f, production: 'http://h/', context: 'no-slash' }, '', {}).errors.context,
    /^Context: "no-slash" is not an absolute path/,
  );
  t.equal(fieldOf('endpoints.sandbox.url'), 'sandbox');
  t.equal(fieldOf('endpoints'), 'production');
  t.equal(fieldOf('resources[2].methods'), 'resources');
  t.equal(fieldOf('mediation.script'), undefined);
});

t.test('editing keeps what the form does not show', async (t) => {
  const text =
    'name = "A"\ncontext = "/a"\nversion = "1"\n[endpoints.production]\nurl = "http://h:1/"\nsuspend_codes = [101503]\n[[resources]]\npath = "/x"\nmethods = ["GET"]\ntoken_type = "user"\n';
  const p = formFromText(text);
  t.ok(p);
  t.equal(p?.form.production, 'http://h:1/');
  const original = { text, raw: p?.raw ?? {} };
  const r = checkForm({ ...(p?.form ?? emptyForm()), production: 'http://h:2/' }, '', {}, original, 'PUBLISHED');
  t.same(r.errors, {});
  const api = parseApiText(r.text, '').api;
  t.same(api?.endpoints.production?.suspendCodes, [101503], 'endpoint advanced configuration kept');
  t.equal(api?.resources[0]?.tokenType, 'user', 'resource keys kept');
  t.equal(api?.endpoints.production?.url, 'http://h:2/');
  const withCors = checkForm(
    { ...(p?.form ?? emptyForm()), cors_origins: 'https://a.example, https://b.example', cors_credentials: 'true' },
    '',
    {},
    original,
  );
  t.same(withCors.errors, {});
  t.same(
    parseApiText(withCors.text, '').api?.cors,
    { allowOrigins: ['https://a.example', 'https://b.example'], allowCredentials: true },
    'CORS origins and credentials from the form',
  );
  t.equal(parseApiText(checkForm(p?.form ?? emptyForm(), '', {}, original).text, '').api?.cors, undefined, 'no CORS field, no override');
});

t.test('the state line is rewritten in place, comments kept', async (t) => {
  const text = '# header comment\nname = "A"\nstate = "PUBLISHED" # live\n\n# endpoints\n[endpoints]\nproduction = "http://h/"\n';
  t.equal(withState(text, 'DEPRECATED'), text.replace('state = "PUBLISHED" # live', 'state = "DEPRECATED"'));
  const none = '# c\nname = "A"\n\n# the backends\n[endpoints]\nproduction = "http://h/"\n';
  t.equal(withState(none, 'BLOCKED'), '# c\nname = "A"\nstate = "BLOCKED"\n\n# the backends\n[endpoints]\nproduction = "http://h/"\n');
  t.equal(withState(text, 'CREATED'), text.replace('state = "PUBLISHED" # live\n', ''));
  t.equal(
    withState('[endpoints]\nstate = "x"\n', 'RETIRED'),
    'state = "RETIRED"\n[endpoints]\nstate = "x"\n',
    'a key of a table is not the state',
  );
});

t.test('lifecycle table: every state known, RETIRED final, CREATED only by demotion', async (t) => {
  for (const s of CONSOLE_STATES) for (const n of TRANSITIONS[s]) t.ok(CONSOLE_STATES.includes(n), `${s} -> ${n}`);
  t.same(TRANSITIONS.RETIRED, []);
  t.ok(TRANSITIONS.DEPRECATED.includes('RETIRED'));
  t.same(TRANSITIONS.CREATED, ['PUBLISHED', 'PROTOTYPED']);
  t.equal(fileNameFor('Pizza Shack!', '1.0.0'), 'pizza-shack--1.0.0.toml');
  t.equal(fileNameFor('../../etc', 'x'), 'etc-x.toml', 'no path out of the directory');
});

t.test('sessions: bounded in all, per user and per address, idle-expired', async (t) => {
  let now = 1_000_000;
  const s = new Sessions(() => now);
  const user = (n: number): { username: string; roles: string[] } => ({ username: `user${n}`, roles: [] });
  const req = (id: string): never => ({ headers: { cookie: `other=1; tw_portal=${id}` } }) as never;
  const first = s.create(user(0), '192.0.2.1');
  t.equal(s.find(req(first.id)), first);
  // Many users from many addresses: the bound in all, least recently used first.
  for (let i = 0; i < MAX_SESSIONS; i++) s.create(user(i + 1), `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  t.equal(s.size, MAX_SESSIONS, 'never more than MAX_SESSIONS');
  t.equal(s.find(req(first.id)), undefined, 'the least recently used went first');

  const t2 = new Sessions(() => now);
  const mine = t2.create(user(1), '192.0.2.9');
  const others = Array.from({ length: MAX_SESSIONS_PER_USER + 1 }, () => t2.create(user(2), '192.0.2.2'));
  t.equal(t2.find(req((others[0] as { id: string }).id)), undefined, "a user signing in once more than the bound drops that user's oldest");
  t.ok(t2.find(req((others[1] as { id: string }).id)), 'and keeps the rest');
  for (let i = 0; i < MAX_SESSIONS_PER_ADDRESS + 5; i++) t2.create(user(100 + i), '2001:db8:1:2::7');
  t.equal(t2.find(req(mine.id)), mine, "sign-ins from one address drop only that address's sessions");
  t.equal(
    t2.size,
    1 + MAX_SESSIONS_PER_USER + MAX_SESSIONS_PER_ADDRESS,
    'one address holds at most MAX_SESSIONS_PER_ADDRESS (its /64 counted as one)',
  );
  now += IDLE_TTL;
  t.equal(t2.find(req(mine.id)), undefined, 'idle too long');
});

t.test("the sealed sign-in cookie opens only unchanged, unexpired, under this process's key", async (t) => {
  let now = 5_000_000;
  const seal = new SignInSeal(() => now);
  const value = seal.seal({ state: 'st', verifier: 'ver', back: '/publisher' });
  const req = (v: string): never => ({ headers: { cookie: `tw_portal=x; ${SIGNIN_COOKIE}=${v}` } }) as never;
  t.match(seal.open(req(value)), { state: 'st', verifier: 'ver', back: '/publisher' });
  t.notMatch(Buffer.from(value, 'base64url').toString('latin1'), /ver|publisher/, 'the verifier is not readable in the cookie');
  const raw = Buffer.from(value, 'base64url');
  raw[raw.length - 1] = (raw[raw.length - 1] as number) ^ 1;
  t.equal(seal.open(req(raw.toString('base64url'))), undefined, 'a changed byte opens to nothing');
  t.equal(new SignInSeal(() => now).open(req(value)), undefined, "another process's key opens nothing");
  t.equal(seal.open(req('x'.repeat(5000))), undefined, 'too long');
  now += SIGNIN_TTL;
  t.equal(seal.open(req(value)), undefined, 'expired after SIGNIN_TTL');
});

t.test('a sign-in returns only to a page of the consoles', async (t) => {
  for (const ok of ['/devportal', '/publisher', '/devportal/applications', '/publisher/apis/x%20y'])
    t.equal(safeBack(ok), ok, `kept: ${ok}`);
  t.equal(safeBack('/devportal/./applications'), '/devportal/applications', 'dot segments resolved as a browser does');
  t.equal(safeBack('/publisher/apis'), '/publisher/apis');
  t.equal(safeBack('/admin'), '/admin', 'the admin console');
  t.equal(safeBack('/admin/v1/users'), '/devportal', 'never the JSON admin API');
  for (const bad of [
    '//evil.example',
    '/\\evil.example',
    '\\/evil.example',
    'https://evil.example/devportal',
    'javascript:alert(1)',
    '/oauth2/authorize',
    '/devportal/../oauth2/token',
    '/devportal/%2e%2e/oauth2/token',
    '/devportal/%2E%2e/admin/v1/users',
    '/devportal/..%2foauth2',
    '/devportal/%5c..%5coauth2',
    '/devportal//evil',
    '/devportalx',
    '/devportal?x=1',
    '/devportal#x',
    '/devportal/\t/x',
    'devportal',
    '',
    `/devportal/${'a'.repeat(2100)}`,
  ]) {
    t.equal(safeBack(bad), '/devportal', `refused: ${JSON.stringify(bad.slice(0, 40))}`);
  }
  t.equal(safeBack(null), '/devportal');
});

t.test('fault codes of a gateway fault body', async (t) => {
  t.equal(faultCode('{"fault":{"code":900908,"message":"x"}}'), 900908);
  t.equal(faultCode('{"fault":{"code":"900901"}}'), 900901);
  t.equal(faultCode('[1]'), undefined);
  t.equal(faultCode('not json'), undefined);
});

t.test('OpenAPI 3 import: resources by path and scopes, info and servers where the form is empty', async (t) => {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '2.1', description: 'Pets' },
    servers: [{ url: '/relative' }, { url: 'http://pets.example:8080/v2' }],
    security: [{ oauth: ['read'] }],
    paths: {
      '/pets': { get: {}, post: { security: [{ oauth: ['write', 'read'] }] } },
      '/pets/{id}': { get: {}, delete: { security: [] }, parameters: [] },
      'no-slash': { get: {} },
    },
  };
  const r = importOpenApi(JSON.stringify(doc), emptyForm());
  if ('error' in r) throw new Error(r.error);
  t.equal(r.resources, 4);
  t.equal(r.form.resources, 'GET /pets read\nPOST /pets write read\nGET /pets/{id} read\nDELETE /pets/{id}');
  t.equal(r.form.name, 'Petstore');
  t.equal(r.form.version, '2.1');
  t.equal(r.form.production, 'http://pets.example:8080/v2', 'the first absolute server URL');
  const checked = checkForm({ ...r.form, context: '/pets' }, '', {});
  t.same(checked.errors, {}, 'the imported form validates');
  t.equal(parseApiText(checked.text, '').api?.resources.length, 4);
  const kept = importOpenApi(JSON.stringify(doc), { ...emptyForm(), name: 'Mine', production: 'http://mine/' });
  t.match(kept, { form: { name: 'Mine', production: 'http://mine/' } }, 'filled fields are kept');
  t.match(importOpenApi('{"openapi": 3', emptyForm()), { error: /^not JSON/ });
  t.match(importOpenApi('openapi: 3.0.0', emptyForm()), { error: /no paths/ }, 'YAML is read');
  t.match(importOpenApi('openapi: 3.0.0\npaths: [\n', emptyForm()), { error: /^not YAML/ });
  t.match(importOpenApi('openapi: 3.0.0\nopenapi: 3.0.1\npaths: {}\n', emptyForm()), { error: /^not YAML.*unique/ }, 'a key written twice');
  const laughs = [
    'a: &a [x, x, x, x, x, x, x, x, x, x]',
    ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
  ].join('\n');
  t.match(importOpenApi(laughs, emptyForm()), { error: /at most 100 aliases/ }, 'aliases are bounded: no billion laughs');
  t.match(importOpenApi('{"swagger":"2.0","paths":{}}', emptyForm()), { error: /not an OpenAPI 3 document/ });
  t.match(importOpenApi('{"openapi":"3.1.0","paths":{}}', emptyForm()), { error: /no paths/ });
  t.match(importOpenApi('x'.repeat(300 * 1024), emptyForm()), { error: /larger than/ });
});

t.test('OpenAPI import reads a YAML document', async (t) => {
  const yaml = [
    'openapi: 3.0.3',
    'info:',
    '  title: Weather',
    '  version: "2.0"',
    'servers:',
    '  - url: http://weather.example/v1',
    'security:',
    '  - oauth: [forecast]',
    'paths:',
    '  /forecast:',
    '    get: {}',
    '    post:',
    '      security:',
    '        - oauth: [admin]',
    "  '/stations/{id}':",
    '    get: {}',
    '',
  ].join('\n');
  const r = importOpenApi(yaml, emptyForm());
  if ('error' in r) throw new Error(r.error);
  t.equal(r.resources, 3);
  t.equal(r.form.resources, 'GET /forecast forecast\nPOST /forecast admin\nGET /stations/{id} forecast');
  t.equal(r.form.name, 'Weather');
  t.equal(r.form.version, '2.0', 'a quoted version stays a string');
  t.equal(r.form.production, 'http://weather.example/v1');
});

t.test('try-it: the call goes under the gateway base path; the body is bounded; a fault is decoded', async (t) => {
  const http = await import('node:http');
  const { tryCall, MAX_SHOWN } = await import('../../lib/portal/tryit');
  const seen: { url: string; auth: string }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', auth: req.headers.authorization ?? '' });
    if (req.url?.endsWith('/big')) {
      res.end('x'.repeat(MAX_SHOWN * 2));
      return;
    }
    res.writeHead(403, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ fault: { code: 900908, message: 'Resource forbidden' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const target = (base: string, api: string, rest: string): URL => {
    const r = tryTarget(base, api, rest);
    if ('code' in r) throw new Error(r.message);
    return r.url;
  };
  const r = await tryCall({
    url: target(`http://127.0.0.1:${port}/edge/`, '/shop/1', '/menu?x=1'),
    method: 'GET',
    token: 'tok',
    body: undefined,
    contentType: undefined,
  });
  t.same(seen[0], { url: '/edge/shop/1/menu?x=1', auth: 'Bearer tok' });
  t.equal(r.status, 403);
  t.equal(r.fault?.code, 900908);
  t.equal(r.fault?.def?.message, 'Resource forbidden', 'explained from the fault table');
  const big = await tryCall({
    url: target(`http://127.0.0.1:${port}`, '/big', '/'),
    method: 'GET',
    token: undefined,
    body: undefined,
    contentType: undefined,
  });
  t.equal(big.body.length, MAX_SHOWN);
  t.equal(big.truncated, true);
  t.equal(seen[1]?.auth, '', 'no token, no Authorization');
});

t.test('try-it targets stay inside the API: dot segments, encoded or not, backslashes and // refused', async (t) => {
  t.equal(removeDotSegments('/a/b/c/./../../g'), '/a/g', 'RFC 3986 §5.2.4 example');
  t.equal(removeDotSegments('/mid/content=5/../6'), '/mid/6');
  t.equal(removeDotSegments('/../..'), '/');
  const ok = (rest: string): string => {
    const r = tryTarget('http://gw:8280', '/shop/1.0.0', rest);
    return 'code' in r ? r.code : r.url.toString();
  };
  t.equal(ok('/'), 'http://gw:8280/shop/1.0.0');
  t.equal(ok('/menu/1?x=%2e%2e/a'), 'http://gw:8280/shop/1.0.0/menu/1?x=%2e%2e/a', 'the query is not a path');
  t.equal(ok('/menu/./1'), 'http://gw:8280/shop/1.0.0/menu/1');
  t.equal(ok('/menu/%7Ea/../b'), 'http://gw:8280/shop/1.0.0/menu/b', 'unreserved octets decoded');
  t.equal(ok('/a%20b'), 'http://gw:8280/shop/1.0.0/a%20b', 'other octets stay encoded');
  const edge = tryTarget('http://gw:8280/edge/', '/shop/1.0.0', '/x');
  t.equal('url' in edge ? edge.url.toString() : edge.code, 'http://gw:8280/edge/shop/1.0.0/x', 'a base path is kept');
  for (const bad of [
    '/%2e%2e/%2e%2e/other/1.0.0/x',
    '/%2E%2e/token',
    '/..%2f..%2ftoken',
    '/.%2E/.%2e/token',
    '/../1.0.1/x',
    '/x/../../../token',
    '/%2e%2e',
    '/%2e%2e%2f%2e%2e%2fother',
  ])
    t.equal(ok(bad), 'TRY_PATH_OUTSIDE_API', `outside: ${bad}`);
  for (const bad of [
    '\\..\\token',
    '/\\..\\..\\token',
    '/%5c..%5ctoken',
    '//gw2/x',
    '/a//b',
    '/a/%2f/b',
    'menu',
    '/a b',
    '/a#b',
    '/a%00b',
    `/${'a'.repeat(2050)}`,
  ])
    t.equal(ok(bad), 'TRY_PATH_INVALID', `invalid: ${JSON.stringify(bad.slice(0, 30))}`);
  const out = tryTarget('http://gw:8280/edge', '/shop/1.0.0', '/../../token');
  t.equal('code' in out ? out.code : '', 'TRY_PATH_OUTSIDE_API', "a virtual host's base path is part of the prefix");
});
