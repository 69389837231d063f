/**
 * Routing through the gateway on real sockets: context and version, exact / longest prefix / template
 * resources, default version, 404 / 405 / 900906, query strings untouched, backend URL = endpoint +
 * resource path, dot segments refused, absolute-form targets.
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, rawRequest, request, startGateway, type EchoBackend, type TestGateway } from './helpers';
import { compileApi, Match, matchResource, methodsFor, RouteTable, type MatchTarget } from '../../lib/gateway/router';
import { validateApi, type ApiDefinition } from '../../lib/gateway/apis';
import { CorsPolicy, DEFAULT_CORS } from '../../lib/gateway/cors';

let backend: EchoBackend;
let g: TestGateway;

t.before(async () => {
  backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  g = await startGateway(BASE_TOML, {
    shop: apiToml({
      name: 'Shop',
      context: '/shop',
      version: 'v1',
      endpoint: `${ep}/base`,
      resources: [
        ['/menu', ['GET']],
        ['/menu/*', ['GET']],
        ['/menu/special/*', ['GET']],
        ['/orders/{orderId}', ['GET', 'DELETE']],
        ['/orders/{orderId}/items/{itemId}', ['GET']],
        ['/orders/latest', ['GET']],
        ['/upload', ['POST']],
      ],
    }),
    shop2: apiToml({
      name: 'Shop',
      context: '/shop',
      version: 'v2',
      defaultVersion: true,
      endpoint: `${ep}/two`,
      resources: [['/menu', ['GET']]],
    }),
    catchall: apiToml({ name: 'All', context: '/all', version: '1', endpoint: ep, resources: [['/*', ['GET', 'POST']]] }),
    placed: apiToml({
      name: 'Placed',
      context: '/{version}/placed',
      version: 'v3',
      defaultVersion: true,
      endpoint: ep,
      resources: [['/x', ['GET']]],
    }),
    nested: apiToml({ name: 'Nested', context: '/shop/v1/deeper', version: '9', endpoint: `${ep}/nested`, resources: [['/x', ['GET']]] }),
  });
});

t.teardown(async () => {
  await g.close();
  await backend.close();
});

async function backendUrl(path: string, method = 'GET'): Promise<{ status: number; url: string | undefined; code: number | undefined }> {
  const before = backend.seen.length;
  const r = await request(g.port, path, { method });
  const url = backend.seen.length > before ? backend.seen[backend.seen.length - 1]?.url : undefined;
  let code: number | undefined;
  if (r.status >= 400 && r.headers['content-type']?.includes('json') === true && url === undefined)
    code = (r.json() as { fault: { code: number } }).fault.code;
  return { status: r.status, url, code };
}

t.test('exact resource; backend URL is the endpoint path + resource path; query passes untouched', async (t) => {
  t.same(await backendUrl('/shop/v1/menu'), { status: 200, url: '/base/menu', code: undefined });
  t.same(await backendUrl('/shop/v1/menu?size=L&x=%20y&&z'), { status: 200, url: '/base/menu?size=L&x=%20y&&z', code: undefined });
});

t.test('exact beats prefix; longest prefix wins', async (t) => {
  t.equal((await backendUrl('/shop/v1/menu/pizza')).url, '/base/menu/pizza');
  t.equal((await backendUrl('/shop/v1/menu/special/today/1')).url, '/base/menu/special/today/1');
  t.equal((await backendUrl('/shop/v1/menu/special')).url, '/base/menu/special', 'a prefix matches its own path');
});

t.test('templates bind whole segments; literal beats template', async (t) => {
  t.equal((await backendUrl('/shop/v1/orders/42')).url, '/base/orders/42');
  t.equal((await backendUrl('/shop/v1/orders/42', 'DELETE')).url, '/base/orders/42');
  t.equal((await backendUrl('/shop/v1/orders/42/items/7')).url, '/base/orders/42/items/7');
  t.equal((await backendUrl('/shop/v1/orders/latest')).url, '/base/orders/latest');
  t.equal((await backendUrl('/shop/v1/orders/42/')).url, '/base/orders/42/', 'a trailing slash is tolerated');
  const tooDeep = await backendUrl('/shop/v1/orders/42/items');
  t.same([tooDeep.status, tooDeep.code], [403, 900906], 'a template does not match a shorter or longer path');
});

t.test('default version routes without the version segment; other versions keep theirs', async (t) => {
  t.equal((await backendUrl('/shop/menu')).url, '/two/menu');
  t.equal((await backendUrl('/shop/v2/menu')).url, '/two/menu');
  t.equal((await backendUrl('/shop/v1/menu')).url, '/base/menu');
  t.equal((await backendUrl('/v3/placed/x')).url, '/x', '{version} placed inside the context');
  t.equal((await backendUrl('/placed/x')).url, '/x', 'default path of a {version} context');
});

t.test('the longest context wins at a segment boundary', async (t) => {
  t.equal((await backendUrl('/shop/v1/deeper/9/x')).url, '/nested/x');
  const r = await backendUrl('/shopping/v1/menu');
  t.same([r.status, r.code], [404, 103005], '/shopping is not /shop');
});

t.test('a /* resource takes every path, and the API root', async (t) => {
  t.equal((await backendUrl('/all/1/a/b/c?q=1')).url, '/a/b/c?q=1');
  t.equal((await backendUrl('/all/1')).url, '/', 'empty resource path with an endpoint without path');
  t.equal((await backendUrl('/all/1', 'POST')).url, '/');
});

t.test('unknown context: 404 with the fault shape', async (t) => {
  const r = await request(g.port, '/nothing/here');
  t.equal(r.status, 404);
  t.same(r.json(), {
    fault: {
      code: 103005,
      type: 'Status report',
      message: 'No matching API',
      description: 'No API is deployed at the requested context and version',
    },
  });
  const v = await request(g.port, '/shop/v9/menu');
  t.equal(v.status, 403, 'unknown version of a default-version API routes to the default, whose resources do not match');
  t.equal(v.json().fault.code, 900906);
});

t.test('path matched, method not: 405 with Allow; nothing matched: 900906 (403)', async (t) => {
  const r = await request(g.port, '/shop/v1/menu', { method: 'POST' });
  t.equal(r.status, 405);
  t.equal(r.json().fault.code, 103006);
  t.equal(r.headers.allow, 'GET, HEAD');
  const o = await request(g.port, '/shop/v1/orders/1', { method: 'PUT' });
  t.equal(o.status, 405);
  t.equal(o.headers.allow, 'GET, DELETE, HEAD');
  const n = await request(g.port, '/shop/v1/nope');
  t.equal(n.status, 403);
  t.same(n.json(), {
    fault: {
      code: 900906,
      type: 'Status report',
      message: 'No matching resource found in the API for the given request',
      description: 'The API has no resource matching the request path',
    },
  });
});

t.test('HEAD is served wherever GET is', async (t) => {
  const r = await request(g.port, '/shop/v1/menu', { method: 'HEAD' });
  t.equal(r.status, 200);
  t.equal(backend.seen[backend.seen.length - 1]?.method, 'HEAD');
});

t.test('dot segments are refused (103009, 400), also percent-encoded', async (t) => {
  for (const p of ['/shop/v1/menu/../../admin', '/shop/v1/menu/./x', '/shop/v1/menu/%2e%2E/secret', '/shop/v1/menu/..']) {
    const r = await rawRequest(g.port, `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    t.equal(r.status, 400, p);
    t.equal(r.json().fault.code, 103009, p);
  }
  const ok = await rawRequest(g.port, 'GET /shop/v1/menu/a..b/.c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.equal(ok.status, 200, 'dots inside a segment are fine');
});

t.test('a dot segment after dots inside segments is refused too; a query is not looked at', async (t) => {
  // The route phase looks for dot segments only when the path holds "/." or "%" (lib/gateway/phases/route.ts).
  for (const p of ['/shop/v1/menu/a.b/../c', '/shop/v1/menu/x.y/.', '/shop/v1/menu/v1.0/%2e%2e']) {
    const r = await rawRequest(g.port, `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    t.equal(r.status, 400, p);
    t.equal(r.json().fault.code, 103009, p);
  }
  const q = await rawRequest(g.port, 'GET /shop/v1/menu/a.b?next=/../x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.equal(q.status, 200, 'a "/.." in the query is the query');
});

t.test('absolute-form targets are routed by their path (RFC 9112 §3.2.2)', async (t) => {
  const before = backend.seen.length;
  const r = await rawRequest(g.port, `GET http://example.com/shop/v1/menu?a=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n`);
  t.equal(r.status, 200);
  t.equal(backend.seen[before]?.url, '/base/menu?a=1');
  const star = await rawRequest(g.port, 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.equal(star.status, 400);
});

// --- the compiled structures, without sockets ---

function compiled(raw: Record<string, unknown>): ReturnType<typeof compileApi> {
  const r = validateApi(
    { name: 'X', context: '/x', version: '1', auth: 'none', endpoints: { production: 'http://127.0.0.1:1' }, ...raw },
    '',
  );
  if (r.api === undefined) throw new Error(JSON.stringify(r.diagnostics));
  return compileApi(r.api as ApiDefinition, {
    cors: new CorsPolicy(DEFAULT_CORS),
    production: undefined,
    sandbox: undefined,
    withDefault: true,
  });
}

t.test('matchResource: order, methods and bound variables', async (t) => {
  const api = compiled({
    resources: [
      { path: '/a/{x}', methods: ['GET'] },
      { path: '/a/{x}/b/{y}', methods: ['GET'] },
      { path: '/a/fixed', methods: ['POST'] },
      { path: '/a/*', methods: ['PUT'] },
      { path: '/t/{id}/*', methods: ['GET'] },
    ],
  });
  const out = (): MatchTarget => ({ resource: undefined, params: undefined });
  let o = out();
  t.equal(matchResource(api, '/a/42', 'GET', o), Match.OK);
  t.same(o.params, { x: '42' });
  t.equal(o.resource?.kind, 'template');
  o = out();
  t.equal(matchResource(api, '/a/4%202/b/z', 'GET', o), Match.OK);
  t.same(o.params, { x: '4%202', y: 'z' }, 'raw, percent-encoded as sent');
  o = out();
  t.equal(matchResource(api, '/a/fixed', 'GET', o), Match.OK, 'exact has no GET, the prefix has none, the template has');
  t.equal(o.resource?.kind, 'template');
  o = out();
  t.equal(matchResource(api, '/a/fixed', 'PUT', o), Match.OK);
  t.equal(o.resource?.kind, 'prefix');
  t.equal(matchResource(api, '/a/fixed', 'DELETE', out()), Match.METHOD);
  t.equal(matchResource(api, '/b', 'GET', out()), Match.NONE);
  t.equal(matchResource(api, '/a/', 'GET', out()), Match.METHOD, '/a/* matches /a/ for PUT only; {x} needs a non-empty segment');
  o = out();
  t.equal(matchResource(api, '/t/9/more/segments', 'GET', o), Match.OK, 'an open template takes the rest');
  t.same(o.params, { id: '9' });
  t.same(methodsFor(api, '/a/fixed').sort(), ['GET', 'HEAD', 'POST', 'PUT']);
});

t.test('matchResource: the remembered exact match answers only its own path and method', async (t) => {
  const api = compiled({
    resources: [
      { path: '/a/fixed', methods: ['POST'] },
      { path: '/a/other', methods: ['POST'] },
      { path: '/a/{x}', methods: ['GET'] },
      { path: '/a/*', methods: ['PUT'] },
    ],
  });
  const out = (): MatchTarget => ({ resource: undefined, params: undefined });
  let o = out();
  t.equal(matchResource(api, '/a/fixed', 'POST', o), Match.OK);
  const fixed = o.resource;
  t.equal(fixed?.kind, 'exact');
  o = out();
  t.equal(matchResource(api, '/a/fixed', 'POST', o), Match.OK, 'the same path and method again');
  t.equal(o.resource, fixed, 'the same resource');
  o = out();
  t.equal(matchResource(api, '/a/fixed', 'GET', o), Match.OK, 'the same path, another method: not the remembered one');
  t.equal(o.resource?.kind, 'template');
  t.same(o.params, { x: 'fixed' });
  o = out();
  t.equal(matchResource(api, '/a/fixed', 'PUT', o), Match.OK);
  t.equal(o.resource?.kind, 'prefix');
  t.equal(matchResource(api, '/a/fixed', 'DELETE', out()), Match.METHOD, 'a method no resource has');
  o = out();
  t.equal(matchResource(api, '/a/other', 'POST', o), Match.OK, 'another exact path');
  t.not(o.resource, fixed);
  t.equal(o.resource?.def.path, '/a/other');
  o = out();
  t.equal(matchResource(api, '/a/fixed/', 'POST', o), Match.OK, 'with a trailing slash');
  t.equal(o.resource, fixed);
  o = out();
  t.equal(matchResource(api, '/a/fixe', 'POST', o), Match.METHOD, 'a prefix of the remembered path is not it');
  t.equal(matchResource(api, '/a/fixed', 'POST', out()), Match.OK);
  const other = compiled({ resources: [{ path: '/a/fixed', methods: ['GET'] }] });
  t.equal(matchResource(other, '/a/fixed', 'POST', out()), Match.METHOD, 'another API does not share the remembered match');
});

t.test('RouteTable: longest context first, segment boundaries, default path', async (t) => {
  const a = compiled({ context: '/x', version: '1', default_version: true, resources: [{ path: '/*', methods: ['GET'] }] });
  const b = compiled({ context: '/x/1/y', version: '2', resources: [{ path: '/*', methods: ['GET'] }] });
  const table = new RouteTable([a, b]);
  t.equal(table.lookup('/x/1/y/2/z')?.api, b);
  t.equal(table.lookup('/x/1/z')?.api, a);
  t.equal(table.lookup('/x/1')?.api, a);
  t.equal(table.lookup('/x/z')?.viaDefault, true);
  t.equal(table.lookup('/xx/1'), undefined);
  t.equal(table.lookup('/'), undefined);
});

t.test('RouteTable: the last lookup, taken again for an equal path, never answers another path', async (t) => {
  const a = compiled({ context: '/x', version: '1', default_version: true, resources: [{ path: '/*', methods: ['GET'] }] });
  const b = compiled({ context: '/x/1/y', version: '2', resources: [{ path: '/*', methods: ['GET'] }] });
  const c = compiled({ context: '/other', version: '1', resources: [{ path: '/*', methods: ['GET'] }] });
  const table = new RouteTable([a, b, c]);
  // Each path differs from the one before or repeats it (the same string, or a new one of the same text);
  // every answer is compared with a table that has never looked anything up.
  const same = '/x/1/y/2/z';
  const paths = [
    same,
    same,
    ['/x/1/y', '2/z'].join('/'),
    '/x/1/z',
    '/x/1/z',
    '/xx/1',
    '/xx/1',
    same,
    '/other/1/r',
    '/x/z',
    '/',
    '/',
    '/other/1/r',
    '/x/1',
    '/x/1/y',
    '/x/1/y/',
  ];
  for (const p of paths) {
    const fresh = new RouteTable([a, b, c]).lookup(p);
    const got = table.lookup(p);
    t.equal(got?.api, fresh?.api, `${p}: the API a fresh table finds`);
    t.equal(got?.path, fresh?.path, `${p}: the same context`);
    t.equal(got?.viaDefault, fresh?.viaDefault, `${p}: the same default-version flag`);
  }
  t.equal(table.lookup(same)?.api, b);
  t.equal(table.lookup('/nothing'), undefined, 'a path nothing serves, right after one that is served');
  t.equal(table.lookup(same)?.api, b, 'and the served one again, right after the miss');
});
