/**
 * The reference's exported projects (test/fixtures/apictl, each with its SOURCE) imported with
 * `throughway import api`, the exported application with `import app`, then deployed by a gateway that
 * reads apis/ as `start` does and called with the imported application's own keys: each call's status
 * and the path the recording backend received are asserted, with the list of fields each import says
 * it did not carry. A second import changes nothing; a differing file needs --force.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as path from 'node:path';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { echoBackend, HOST, request } from '../gateway/helpers';
import { cli, confDir, fixture, paramsFile, snapshot, startNode } from './helpers';

const PROJECTS: readonly [string, string][] = [
  ['PizzaShackAPI-1.0.0', '/v1'],
  ['PizzaShackAPI-2.0.0', '/v2'],
  ['SwaggerPetstore-1.0.5', '/petstore'],
  ['PizzaShackCors-1.0.0', '/cors'],
  ['PizzaShackPolicies-1.0.0', '/policies'],
  ['PizzaShackScopes-1.0.0', '/scopes'],
  ['PizzaShackCerts-1.0.0', '/certs'],
  ['PizzaShackMtls-1.0.0', '/mtls'],
  ['ProductsGraphQL-1.0.0', '/graphql'],
];

t.test('ten projects imported, deployed and called through the gateway', async (t) => {
  const conf = confDir();
  const backend = await echoBackend();
  const wsHandshakes: string[] = [];
  const wsHttp = http.createServer();
  const wss = new WebSocketServer({ server: wsHttp });
  wss.on('connection', (s, req) => {
    wsHandshakes.push(req.url ?? '');
    s.on('message', (m) => s.send(`echo:${String(m)}`));
  });
  await new Promise<void>((r) => wsHttp.listen(0, HOST, () => r()));
  const wsPort = (wsHttp.address() as net.AddressInfo).port;
  t.teardown(async () => {
    await backend.close();
    wss.close();
    wsHttp.close();
    conf.close();
  });

  const reports = new Map<string, string>();
  for (const [name, base] of PROJECTS) {
    const r = await cli(conf, 'import', 'api', fixture(name), '--params', paramsFile(conf, name, `http://${HOST}:${backend.port}${base}`));
    t.equal(r.code, 0, `${name} imported: ${r.err}`);
    reports.set(name, r.out);
  }
  const ws = await cli(
    conf,
    'import',
    'api',
    fixture('OrderEvents-1.0.0'),
    '--params',
    paramsFile(conf, 'OrderEvents', `ws://${HOST}:${wsPort}/events`),
  );
  t.equal(ws.code, 0, ws.err);
  reports.set('OrderEvents-1.0.0', ws.out);

  // The dropped-field lists: what each project's API file cannot hold, with the reason.
  const pizza = reports.get('PizzaShackAPI-1.0.0') ?? '';
  t.match(pizza, /new\s+apis\/PizzaShackAPI-1\.0\.0\.toml/);
  t.match(pizza, /api\.yaml:data\.provider: the API file has no owner/);
  t.match(pizza, /api\.yaml:data\.businessInformation\.businessOwnerEmail: developer portal metadata/);
  t.notMatch(pizza, /data\.displayName/, 'a display name equal to the name is not listed');
  t.notMatch(pizza, /data\.(id|createdTime|lastUpdatedTime|revisionId):/, 'bookkeeping is not listed');
  t.match(
    reports.get('SwaggerPetstore-1.0.5'),
    /Definitions\/swagger\.yaml: written to SwaggerPetstore-1\.0\.5\/swagger\.yaml and not named by the API file: its "openapi" field is null/,
  );
  const policies = reports.get('PizzaShackPolicies-1.0.0') ?? '';
  t.match(
    policies,
    /data\.operations\[1\]\.operationPolicies\.request\[0\]: customAddLogMessage: the reference's operation policies are not run/,
  );
  t.match(policies, /data\.mediationPolicies\[0\]\.name: the reference's mediation sequences are not run/);
  t.match(policies, /Policies\/customAddLogMessage_v1\.j2: the reference's operation policies are not run/);
  t.match(
    reports.get('PizzaShackCerts-1.0.0'),
    /Endpoint-certificates\/alice\.crt: written to PizzaShackCerts-1\.0\.0\/endpoint-certificates\/alice\.crt: add it to the outbound trust store/,
  );
  t.match(
    reports.get('PizzaShackMtls-1.0.0'),
    /Client-certificates\/bob\.crt: written to PizzaShackMtls-1\.0\.0\/client-certificates\/bob\.crt: add it to \[throughway\.security\] client_trust_store/,
  );
  t.match(
    reports.get('OrderEvents-1.0.0'),
    /Definitions\/asyncapi\.yaml: written to OrderEvents-1\.0\.0\/asyncapi\.yaml, not read by the gateway/,
  );

  const files = snapshot(conf.apis);
  t.match(
    files['PizzaShackScopes-1.0.0.toml'],
    /\[\[scopes\]\]\nname = "order:write"\ndescription = "Place and change orders"\nroles = \["admin", "internal\/creator"\]/,
  );
  t.match(files['PizzaShackPolicies-1.0.0.toml'], /path = "\/menu"\nmethods = \["GET"\]\npolicy = "10KPerMin"/);
  t.match(files['PizzaShackAPI-2.0.0.toml'], /default_version = true/);
  t.equal(
    files['PizzaShackCerts-1.0.0/endpoint-certificates/alice.crt'],
    fs.readFileSync(fixture('PizzaShackCerts-1.0.0/Endpoint-certificates/alice.crt'), 'utf8'),
  );

  const app = await cli(conf, 'import', 'app', fixture('admin_MigratedApp'));
  t.equal(app.code, 0, app.err);
  t.match(app.out, /new\s+application MigratedApp of admin/);
  t.match(app.out, /new\s+PRODUCTION client migratedAppProductionKey00001/);
  t.match(app.out, /new\s+subscription to PizzaShackAPI 2\.0\.0 \(\/pizzashack\)/);
  t.match(
    app.out,
    /keyManagerWiseOAuthApp\.SANDBOX\.Resident Key Manager\.clientSecret: the export carries no secret: no client written for migratedAppSandboxKey0000001/,
  );
  t.match(app.out, /applicationInfo\.attributes\.team: application groups, attributes and subscription scopes are not kept/);

  // A second import of the same projects changes nothing.
  const before = snapshot(conf.apis);
  for (const [name, base] of PROJECTS) {
    const r = await cli(conf, 'import', 'api', fixture(name), '--params', paramsFile(conf, name, `http://${HOST}:${backend.port}${base}`));
    t.match(r.out, /nothing to change\n$/, `${name}: a second import writes nothing`);
  }
  t.same(snapshot(conf.apis), before, 'apis/ unchanged by the second import');
  const app2 = await cli(conf, 'import', 'app', fixture('admin_MigratedApp'));
  t.match(
    app2.out,
    /unchanged\s+application MigratedApp of admin[\s\S]*nothing to change\n$/,
    'the application a second time: nothing to change',
  );

  // mutual TLS: the imported client certificate is the trust store the gateway checks the header against.
  fs.appendFileSync(
    conf.file,
    `[apimgt.mutual_ssl]\ncertificate_header = "X-SSL-Client-Cert"\nclient_certificate_encode = true\n[throughway.security]\nclient_trust_store = "${path.join(conf.apis, 'PizzaShackMtls-1.0.0', 'client-certificates', 'bob.crt')}"\n`,
  );
  const node = await startNode(conf);
  t.teardown(() => node.close());
  t.same(
    node.gw
      .states()
      .filter((s) => s.status !== 'deployed')
      .map((s) => s.file),
    [],
    'every imported API file deploys',
  );

  const basic = `Basic ${Buffer.from('migratedAppProductionKey00001:migratedAppProductionSecret-0123456789abcdef').toString('base64')}`;
  const token = async (form: Record<string, string>): Promise<string> =>
    (await node.km.oauth.token(basic, new URLSearchParams(form))).access_token;
  const appToken = await token({ grant_type: 'client_credentials' });
  const call = async (
    p: string,
    o: { token?: string; method?: string; headers?: Record<string, string>; body?: string } = {},
  ): Promise<{ status: number; url: string | undefined; headers: Record<string, string>; body: string }> => {
    const n = backend.seen.length;
    const r = await request(node.port, p, {
      method: o.method ?? 'GET',
      headers: { ...(o.token !== undefined ? { Authorization: `Bearer ${o.token}` } : {}), ...(o.headers ?? {}) },
      ...(o.body !== undefined ? { body: o.body } : {}),
    });
    return {
      status: r.status,
      url: backend.seen.length > n ? backend.seen[backend.seen.length - 1]?.url : undefined,
      headers: r.headers,
      body: r.body,
    };
  };

  t.same(
    await call('/pizzashack/1.0.0/menu', { token: appToken }).then((r) => [r.status, r.url]),
    [200, '/v1/menu'],
    'REST: PizzaShackAPI 1.0.0',
  );
  t.same(
    await call('/pizzashack/1.0.0/order/7', { token: appToken, method: 'DELETE' }).then((r) => [r.status, r.url]),
    [200, '/v1/order/7'],
    'a URI template',
  );
  t.same(
    await call('/pizzashack/2.0.0/menu', { token: appToken }).then((r) => [r.status, r.url]),
    [200, '/v2/menu'],
    'a second version of the API',
  );
  t.same(
    await call('/pizzashack/menu', { token: appToken }).then((r) => [r.status, r.url]),
    [200, '/v2/menu'],
    'its default version, without the version segment',
  );
  t.equal((await call('/pizzashack/1.0.0/menu')).status, 401, 'the imported resources need a token');

  const petToken = await token({ grant_type: 'client_credentials', scope: 'read:pets' });
  t.same(
    await call('/v2/1.0.5/pet/findByStatus?status=sold', { token: petToken }).then((r) => [r.status, r.url]),
    [200, '/petstore/pet/findByStatus?status=sold'],
    'Swagger 2 project: resources from its operations, scope read:pets',
  );
  t.equal((await call('/v2/1.0.5/pet/findByStatus', { token: appToken })).status, 403, 'without the scope: 900910');

  const pre = await call('/pizzashack-cors/1.0.0/menu', {
    method: 'OPTIONS',
    headers: { Origin: 'https://shop.example.com', 'Access-Control-Request-Method': 'GET' },
  });
  t.equal(pre.status, 204, 'CORS: the preflight answered by the gateway');
  t.equal(pre.headers['access-control-allow-origin'], 'https://shop.example.com');
  t.equal(pre.url, undefined, 'the preflight never reaches the backend');
  const cors = await call('/pizzashack-cors/1.0.0/menu', { token: appToken, headers: { Origin: 'https://shop.example.com' } });
  t.same([cors.status, cors.url, cors.headers['access-control-allow-origin']], [200, '/cors/menu', 'https://shop.example.com']);

  t.same(
    await call('/pizzashack-policies/1.0.0/order', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } }).then(
      (r) => [r.status, r.url],
    ),
    [200, '/policies/order'],
    'authType None: no token needed',
  );
  t.same(
    await call('/pizzashack-policies/1.0.0/menu', { token: appToken }).then((r) => [r.status, r.url]),
    [200, '/policies/menu'],
    'the resource with its own policy',
  );

  t.equal(
    (await call('/pizzashack-scopes/1.0.0/order', { token: appToken, method: 'POST', body: '{}' })).status,
    403,
    'scopes: order:write needed',
  );
  await node.km.manager.addUser({ username: 'alice', password: 'alice-pw-1', roles: ['admin'] });
  await node.km.manager.addUser({ username: 'bob', password: 'bob-pw-12', roles: ['guest'] });
  const aliceToken = await token({ grant_type: 'password', username: 'alice', password: 'alice-pw-1', scope: 'order:write' });
  t.same(
    await call('/pizzashack-scopes/1.0.0/order', { token: aliceToken, method: 'POST', body: '{}' }).then((r) => [r.status, r.url]),
    [200, '/scopes/order'],
    'a user with the role bound to the scope',
  );
  const bobToken = await token({ grant_type: 'password', username: 'bob', password: 'bob-pw-12', scope: 'order:write' });
  t.equal(
    (await call('/pizzashack-scopes/1.0.0/order', { token: bobToken, method: 'POST', body: '{}' })).status,
    403,
    'a user without the role is not granted the scope',
  );

  t.same(
    await call('/pizzashack-certs/1.0.0/menu', { token: appToken }).then((r) => [r.status, r.url]),
    [200, '/certs/menu'],
    'the project with endpoint certificates',
  );

  const bob = fs.readFileSync(fixture('PizzaShackMtls-1.0.0/Client-certificates/bob.crt'), 'utf8');
  t.same(
    await call('/pizzashack-mtls/1.0.0/menu', { headers: { 'X-SSL-Client-Cert': encodeURIComponent(bob) } }).then((r) => [r.status, r.url]),
    [200, '/mtls/menu'],
    'mutual TLS: the imported client certificate, no token',
  );
  const noCert = await call('/pizzashack-mtls/1.0.0/menu', { token: appToken });
  t.same([noCert.status, noCert.url, JSON.parse(noCert.body).fault.code], [401, undefined, 900901], 'without the certificate: 900901');

  const gql = await call('/products/1.0.0', {
    token: appToken,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: '{ allProducts { id name } }' }),
  });
  t.same([gql.status, gql.url], [200, '/graphql'], 'GraphQL: a query checked against the imported schema, forwarded');
  const badGql = await call('/products/1.0.0', {
    token: appToken,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: '{ noSuchField }' }),
  });
  t.same([badGql.status, badGql.url], [400, undefined], 'a query the schema does not have is refused by the gateway');

  const sock = new WebSocket(`ws://${HOST}:${node.port}/orderevents/1.0.0/notifications`, {
    headers: { Authorization: `Bearer ${appToken}` },
  });
  const echoed = await new Promise<string>((resolve, reject) => {
    sock.on('open', () => sock.send('hi'));
    sock.on('message', (m) => resolve(String(m)));
    sock.on('error', reject);
  });
  sock.close();
  t.equal(echoed, 'echo:hi', 'WebSocket: tunnelled to the imported ws:// endpoint');
  t.same(wsHandshakes, ['/events/notifications'], 'the backend handshake path');

  // A real project with endpoint security, of the same name and version: not over the first without --force.
  const secParams = paramsFile(conf, 'sec', `http://${HOST}:${backend.port}/secured`);
  const kept = snapshot(conf.apis);
  const refused = await cli(conf, 'import', 'api', fixture('PizzaShackAPI-endpoint-security'), '--params', secParams);
  t.equal(refused.code, 1);
  t.match(
    refused.err,
    /apis\/PizzaShackAPI-1\.0\.0\.toml: IMPORT_EXISTS: exists with other content, not overwritten without --force; nothing written/,
  );
  t.same(snapshot(conf.apis), kept, 'nothing written');
  const dry = await cli(conf, 'import', 'api', fixture('PizzaShackAPI-endpoint-security'), '--params', secParams, '--dry-run', '--force');
  t.match(dry.out, /would be replaced\s+apis\/PizzaShackAPI-1\.0\.0\.toml[\s\S]*dry run: nothing written/);
  t.same(snapshot(conf.apis), kept, '--dry-run writes nothing');
  const forced = await cli(conf, 'import', 'api', fixture('PizzaShackAPI-endpoint-security'), '--params', secParams, '--force');
  t.equal(forced.code, 0, forced.err);
  t.match(forced.out, /replaced\s+apis\/PizzaShackAPI-1\.0\.0\.toml/);
  t.match(
    snapshot(conf.apis)['PizzaShackAPI-1.0.0.toml'],
    /\[endpoints\.production\.security\]\ntype = "basic"\nusername = "admin"\npassword = "admin"/,
  );
  node.gw.reload();
  const sec = await call('/pizzashack/1.0.0/menu', { token: appToken });
  t.same([sec.status, sec.url], [200, '/secured/menu'], 'endpoint security: deployed and called');
  const seen = backend.seen[backend.seen.length - 1];
  const auth = seen?.headers.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization') ?? -1;
  t.equal(
    seen?.headers[auth + 1],
    `Basic ${Buffer.from('admin:admin').toString('base64')}`,
    'the backend gets the exported Basic credentials, not the client token',
  );
});
