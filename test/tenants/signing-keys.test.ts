/**
 * Each tenant signs with its own key ring (docs/tenants.md, "Signing keys"), on SQLite always and
 * PostgreSQL when reachable (test/store/backends.ts): a key manager listening on loopback with a gateway in
 * the same process. A tenant made by POST /admin/v1/tenants has its key at once; its tokens name a kid of
 * /t/<domain>/oauth2/jwks (not of /oauth2/jwks) and its issuer; the super tenant's are as before; the
 * tenant discovery documents name the tenant's issuer and key set; an unknown or deactivated tenant's key
 * set is 103010 (404); a tenant admin's rotation changes its ring only; a token signed by acme.test's key
 * naming beta.test's application is refused by introspection and by the gateway (900901). Then a
 * gateway-worker process verifies a tenant's token, and one signed after a rotation, with the keys it
 * pulls; and the worker's link reads the tenants' keys at most once per interval however many unknown
 * kids it is asked for.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, type JWK } from 'jose';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { createKeyManager, type KeyManager } from '../../lib/keymanager';
import { ControlPlane } from '../../lib/scale/control-plane';
import { keyManagerLink } from '../../lib/security';
import { ensureSuperAdmin, openDatabase, storeOver } from '../../lib/store/open';
import type { Store } from '../../lib/store/types';
import { echoBackend, HOST, memoryLogger, request, until, type EchoBackend, type Response } from '../gateway/helpers';
import { ADMIN, baseOffset, http as call, nodeToml, securedApi, spawnNode, started } from '../scale/helpers';
import { postgresBackend, sqliteBackend, type Backend } from '../store/backends';

const ISSUER = 'https://localhost:9443/oauth2/token';
const ACME_ISSUER = 'https://localhost:9443/t/acme.test/oauth2/token';
const POLICIES = `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[application]]\nname = "Unlimited"\nunlimited = true\n`;

function apiFile(endpoint: string): string {
  return `name = "Pizza"\ncontext = "/pizza"\nversion = "1.0.0"\n[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

interface Client {
  readonly consumerKey: string;
  readonly consumerSecret: string;
}

interface Node {
  readonly km: KeyManager;
  readonly store: Store;
  readonly url: string;
  readonly backend: EchoBackend;
  gateway(p: string, token: string): Promise<Response>;
  close(): Promise<void>;
}

async function startNode(backend: Backend): Promise<Node | string> {
  const opened = await backend.open();
  if ('reason' in opened) return opened.reason;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tenant-keys-'));
  const echo = await echoBackend();
  for (const d of ['acme.test', 'beta.test']) fs.mkdirSync(path.join(dir, 'apis', 't', d), { recursive: true });
  fs.writeFileSync(path.join(dir, 'apis', 'pizza.toml'), apiFile(`http://${HOST}:${echo.port}/super`));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'acme.test', 'pizza.toml'), apiFile(`http://${HOST}:${echo.port}/acme`));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'beta.test', 'pizza.toml'), apiFile(`http://${HOST}:${echo.port}/beta`));
  fs.writeFileSync(path.join(dir, 'policies.toml'), POLICIES);
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const logger = memoryLogger();
  const store = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  await ensureSuperAdmin(store, loaded.config);
  const bus = createEventBus();
  const km = await createKeyManager({ loaded, store, bus, logger });
  const a = await km.listen(0, HOST);
  const gw = createGateway({ loaded, logger, cwd: dir, keyManager: keyManagerLink(km), events: bus, tenants: km.tenants, watch: false });
  const g = await gw.listen({ port: 0, host: HOST });
  await gw.security.ready;
  return {
    km,
    store,
    url: `http://${HOST}:${a.port}`,
    backend: echo,
    gateway: (p, token) => request(g.port, p, { headers: { Authorization: `Bearer ${token}` } }),
    async close() {
      await gw.close();
      await km.close();
      await store.close();
      await echo.close();
      await opened.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const kidOf = (jwt: string): string => String(decodeProtectedHeader(jwt).kid);
const kids = (r: { body: Record<string, unknown> }): string[] => ((r.body.keys ?? []) as JWK[]).map((k) => String(k.kid));
const faultCode = (r: { body: Record<string, unknown> }): number | undefined => (r.body.fault as { code?: number } | undefined)?.code;
const gatewayCode = (r: Response): string => `${r.status} ${(r.json() as { fault?: { code: number } }).fault?.code ?? ''}`;

/** An application of `admin`'s tenant with keys, subscribed to its tenant's /pizza (or the super tenant's). */
async function appOf(url: string, admin: { user: string; password: string }, name: string, api: string): Promise<Client> {
  t.equal((await call(`${url}/admin/v1/applications`, { json: { name }, auth: admin })).status, 201);
  const keys = await call(`${url}/admin/v1/applications/${name}/keys`, { json: {}, auth: admin });
  const sub = await call(`${url}/admin/v1/subscriptions`, { json: { application: name, api, version: '1.0.0' }, auth: admin });
  t.equal(sub.status, 201, sub.text);
  return { consumerKey: String(keys.body.consumerKey), consumerSecret: String(keys.body.consumerSecret) };
}

async function tokenOf(url: string, c: Client, form: Record<string, string> = { grant_type: 'client_credentials' }) {
  const r = await call(`${url}/oauth2/token`, { form, auth: { user: c.consumerKey, password: c.consumerSecret } });
  t.equal(r.status, 200, r.text);
  return r.body as { access_token: string; id_token?: string };
}

/** A token shaped as the key manager's, signed with `tenant`'s stored private key (no signing_key_secret: stored in clear). */
async function forged(store: Store, tenant: string, iss: string, client: string, appId: string): Promise<string> {
  const k = (await store.listSigningKeys(tenant)).find((x) => x.retiredAt === null);
  if (k === undefined) throw new Error(`no key of ${tenant}`);
  const key = await importJWK(JSON.parse(k.privateJwk) as JWK, k.alg);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    client_id: client,
    azp: client,
    scope: 'default',
    keytype: 'PRODUCTION',
    aut: 'APPLICATION',
    application: { id: appId, name: 'BetaApp', owner: 'chief@beta.test', tier: 'Unlimited' },
  })
    .setProtectedHeader({ alg: k.alg, kid: k.kid, typ: 'at+jwt' })
    .setIssuer(iss)
    .setSubject('chief@beta.test')
    .setAudience(client)
    .setJti(`forged-${now}`)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + 600)
    .sign(key);
}

for (const backend of [sqliteBackend, postgresBackend]) {
  t.test(`${backend.name}: each tenant signs and is verified with its own ring`, async (t) => {
    const node = await startNode(backend);
    if (typeof node === 'string') {
      t.skip(`${backend.name}: ${node}`, () => undefined);
      return;
    }
    t.teardown(() => node.close());
    const { url, store } = node;
    const superJwks = await call(`${url}/oauth2/jwks`);
    const superKid = node.km.keys.current().kid;
    t.same(kids(superJwks), [superKid], "the super tenant's key set is its one key");

    for (const [domain, admin] of [
      ['acme.test', 'bossy'],
      ['beta.test', 'chief'],
      ['gamma.test', 'gammy'],
    ] as const) {
      const r = await call(`${url}/admin/v1/tenants`, { json: { domain, admin, password: `${admin}-pw-1` }, auth: ADMIN });
      t.equal(r.status, 201, r.text);
      t.equal((await store.listSigningKeys(domain)).length, 1, `${domain}'s first key is made with the tenant`);
    }
    const bossy = { user: 'bossy@acme.test', password: 'bossy-pw-1' };
    const chief = { user: 'chief@beta.test', password: 'chief-pw-1' };
    const acmeJwks = await call(`${url}/t/acme.test/oauth2/jwks`);
    t.equal(acmeJwks.status, 200, acmeJwks.text);
    const acmeKid = String((await store.listSigningKeys('acme.test'))[0]?.kid);
    t.same(kids(acmeJwks), [acmeKid], "/t/acme.test/oauth2/jwks is acme.test's stored key");
    const betaKid = kids(await call(`${url}/t/beta.test/oauth2/jwks`))[0] ?? '';
    t.not(betaKid, acmeKid, 'two tenants, two keys');
    t.same(kids(await call(`${url}/oauth2/jwks`)), [superKid], "the super tenant's key set does not list a tenant's");

    // Tokens: the super tenant's as before, a tenant's with its kid and its issuer.
    const superApp = await appOf(url, ADMIN, 'SuperApp', '/pizza');
    const superToken = (await tokenOf(url, superApp)).access_token;
    t.equal(kidOf(superToken), superKid);
    t.equal(decodeJwt(superToken).iss, ISSUER, "the super tenant's issuer");
    t.equal((await call(`${url}/admin/v1/users`, { json: { username: 'janey', password: 'jane-pw-1' }, auth: bossy })).status, 201);
    const acmeApp = await appOf(url, bossy, 'AcmeApp', '/t/acme.test/pizza');
    const acme = await tokenOf(url, acmeApp, {
      grant_type: 'password',
      username: 'janey@acme.test',
      password: 'jane-pw-1',
      scope: 'openid',
    });
    t.equal(kidOf(acme.access_token), acmeKid, "acme.test's token names acme.test's kid");
    t.notOk(kids(superJwks).includes(kidOf(acme.access_token)), "a kid the super tenant's key set does not list");
    t.equal(decodeJwt(acme.access_token).iss, ACME_ISSUER, "acme.test's issuer");
    t.equal(kidOf(String(acme.id_token)), acmeKid, 'its ID token too');
    t.equal(decodeJwt(String(acme.id_token)).iss, ACME_ISSUER);
    const betaApp = await appOf(url, chief, 'BetaApp', '/t/beta.test/pizza');
    const betaToken = (await tokenOf(url, betaApp)).access_token;
    t.equal(kidOf(betaToken), betaKid);

    // The gateway verifies each with its tenant's key.
    t.equal((await node.gateway('/pizza/1.0.0/x', superToken)).status, 200);
    t.equal((await node.gateway('/t/acme.test/pizza/1.0.0/x', acme.access_token)).status, 200);
    t.equal((await node.gateway('/t/beta.test/pizza/1.0.0/x', betaToken)).status, 200);
    t.equal(
      gatewayCode(await node.gateway('/t/beta.test/pizza/1.0.0/x', acme.access_token)),
      '403 900908',
      "acme.test's token on beta.test's API",
    );

    // Introspection, userinfo and revocation verify a tenant's token with its ring.
    const introspect = (token: string) => call(`${url}/oauth2/introspect`, { form: { token }, auth: ADMIN });
    t.match((await introspect(acme.access_token)).body, { active: true, iss: ACME_ISSUER });
    const info = await fetch(`${url}/oauth2/userinfo`, { headers: { Authorization: `Bearer ${acme.access_token}` } });
    t.equal(info.status, 200, 'userinfo takes a tenant user token');

    // A token signed with acme.test's key naming beta.test's application: refused everywhere.
    const betaAppId = String((await store.getClient(betaApp.consumerKey))?.applicationId);
    const forgedAcmeIss = await forged(store, 'acme.test', ACME_ISSUER, betaApp.consumerKey, betaAppId);
    const forgedBetaIss = await forged(
      store,
      'acme.test',
      'https://localhost:9443/t/beta.test/oauth2/token',
      betaApp.consumerKey,
      betaAppId,
    );
    const forgedSuperIss = await forged(store, 'acme.test', ISSUER, betaApp.consumerKey, betaAppId);
    for (const [what, token] of [
      ["acme.test's issuer", forgedAcmeIss],
      ["beta.test's issuer", forgedBetaIss],
      ["the super tenant's issuer", forgedSuperIss],
    ] as const) {
      t.same((await introspect(token)).body, { active: false }, `introspection: forged with ${what}`);
      const r = await node.gateway('/t/beta.test/pizza/1.0.0/x', token);
      t.equal(gatewayCode(r), '401 900901', `the gateway: forged with ${what}`);
    }
    t.match((await node.gateway('/t/beta.test/pizza/1.0.0/x', forgedAcmeIss)).json(), {
      fault: { description: /signed by a key of tenant acme.test and names an application of tenant beta.test/ },
    });

    // Discovery: the tenant's issuer and key set.
    for (const p of [
      '/t/acme.test/oauth2/token/.well-known/openid-configuration',
      '/t/acme.test/.well-known/openid-configuration',
      '/t/acme.test/oauth2/oidcdiscovery/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server/t/acme.test/oauth2/token',
    ]) {
      const d = await call(`${url}${p}`);
      t.match(
        d,
        { status: 200, body: { issuer: ACME_ISSUER, jwks_uri: `${url}/t/acme.test/oauth2/jwks`, token_endpoint: `${url}/oauth2/token` } },
        p,
      );
    }
    const superDoc = await call(`${url}/oauth2/token/.well-known/openid-configuration`);
    t.match(superDoc.body, { issuer: ISSUER, jwks_uri: `${url}/oauth2/jwks` }, "the super tenant's document unchanged");

    // No such tenant, or a deactivated one: 103010.
    t.equal((await call(`${url}/admin/v1/tenants/gamma.test/deactivate`, { method: 'POST', auth: ADMIN })).status, 200);
    for (const p of [
      '/t/nope.test/oauth2/jwks',
      '/t/gamma.test/oauth2/jwks',
      '/t/nope.test/oauth2/token/.well-known/openid-configuration',
    ]) {
      const r = await call(`${url}${p}`);
      t.equal(r.status, 404, p);
      t.equal(faultCode(r), 103010, `${p}: ${r.text}`);
    }

    // Rotation by a tenant's admin: its own ring only.
    const acmeBefore = kids(await call(`${url}/admin/v1/signing-keys`, { auth: bossy }));
    t.same(acmeBefore, [acmeKid], "acme.test's admin sees its ring");
    const rotated = await call(`${url}/admin/v1/signing-keys/rotate`, { method: 'POST', auth: chief });
    t.match(rotated, { status: 200, body: { tenant: 'beta.test' } }, rotated.text);
    const newBeta = String(rotated.body.kid);
    t.same(
      kids(await call(`${url}/admin/v1/signing-keys`, { auth: chief })).sort(),
      [newBeta, betaKid].sort(),
      'the old key stays published',
    );
    t.same(kids(await call(`${url}/admin/v1/signing-keys`, { auth: bossy })), [acmeKid], "acme.test's ring unchanged");
    t.same(kids(await call(`${url}/oauth2/jwks`)), [superKid], "the super tenant's unchanged");
    t.equal(node.km.keys.current().kid, superKid);
    const betaAfter = (await tokenOf(url, betaApp)).access_token;
    t.equal(kidOf(betaAfter), newBeta, "beta.test's next token names its new key");
    t.equal((await node.gateway('/t/beta.test/pizza/1.0.0/x', betaAfter)).status, 200);
    t.equal((await node.gateway('/t/beta.test/pizza/1.0.0/y', betaToken)).status, 200, 'a token of the retired key stays valid');
    t.equal((await call(`${url}/admin/v1/signing-keys?tenant=acme.test`, { auth: chief })).status, 404, "another tenant's ring: 404");
    const all = await call(`${url}/admin/v1/signing-keys?tenant=*`, { auth: ADMIN });
    const sets = all.body.tenants as { tenant: string; keys: JWK[] }[];
    t.same(
      sets.map((s) => s.tenant).sort(),
      ['acme.test', 'beta.test', 'gamma.test'],
      "the super admin's ?tenant=* lists every tenant's ring",
    );

    // Revocation of a tenant's access token by its client.
    const revoked = await call(`${url}/oauth2/revoke`, {
      form: { token: acme.access_token, token_type_hint: 'access_token' },
      auth: { user: acmeApp.consumerKey, password: acmeApp.consumerSecret },
    });
    t.equal(revoked.status, 200);
    t.same((await introspect(acme.access_token)).body, { active: false }, 'revoked');
  });
}

t.test('a gateway-worker verifies tenant tokens with the keys it pulls, a rotated key included', async (t) => {
  const echo = await echoBackend();
  t.teardown(() => echo.close());
  const channel = `tw-test-tenant-keys-${process.pid}`;
  const base = baseOffset(47);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel }), {
    't/acme.test/shop.toml': securedApi(`http://127.0.0.1:${echo.port}/acme`),
    't/beta.test/shop.toml': securedApi(`http://127.0.0.1:${echo.port}/beta`),
  });
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  for (const [domain, admin] of [
    ['acme.test', 'bossy'],
    ['beta.test', 'chief'],
  ] as const)
    t.equal((await call(`${km}/admin/v1/tenants`, { json: { domain, admin, password: `${admin}-pw-1` }, auth: ADMIN })).status, 201);
  const bossy = { user: 'bossy@acme.test', password: 'bossy-pw-1' };
  const acmeApp = await appOf(km, bossy, 'AcmeApp', '/t/acme.test/shop');
  const token = (await tokenOf(km, acmeApp)).access_token;
  // Made before the worker starts: without an event hub it knows its control plane's state of its start.
  const chief = { user: 'chief@beta.test', password: 'chief-pw-1' };
  const betaApp = await appOf(km, chief, 'BetaApp', '/t/beta.test/shop');
  const betaToken = (await tokenOf(km, betaApp)).access_token;
  t.equal(decodeJwt(token).iss, 'https://localhost:' + String(9443 + base) + '/t/acme.test/oauth2/token');

  const gw = spawnNode(
    nodeToml({
      offset: base + 1,
      role: 'gateway-worker',
      channel,
      km: kmPort,
      extra: '[throughway.security]\njwks_refetch_interval = 200\n',
    }),
  );
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  const gp = 8280 + base + 1;
  const at = async (p: string, bearer: string): Promise<string> => {
    const r = await call(`http://127.0.0.1:${gp}${p}`, { bearer });
    return `${r.status} ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? String((r.body as { url?: string }).url ?? '')}`;
  };
  t.equal(await at('/t/acme.test/shop/1.0.0/a', token), '200 /acme/a', "the worker verifies acme.test's token");

  // A key made after the worker's pull: read again on its unknown kid.
  const rotated = await call(`${km}/admin/v1/signing-keys/rotate`, { method: 'POST', auth: bossy });
  t.equal(rotated.status, 200, rotated.text);
  const next = (await tokenOf(km, acmeApp)).access_token;
  t.equal(kidOf(next), String(rotated.body.kid));
  t.ok(
    await until(async () => (await at('/t/acme.test/shop/1.0.0/b', next)) === '200 /acme/b', 5000, 100),
    'the rotated key, fetched on its kid',
  );

  // acme.test's key, beta.test's application: refused by the worker.
  t.equal(await at('/t/beta.test/shop/1.0.0/c', betaToken), '200 /beta/c', "beta.test's own token");
  const claims = decodeJwt(betaToken) as { application: { id: string } };
  const forgedToken = await forgedWith(kmp.dir, claims.application.id, betaApp.consumerKey, decodeJwt(token).iss as string);
  t.equal(await at('/t/beta.test/shop/1.0.0/d', forgedToken), '401 900901', "a token of acme.test's key naming beta.test's application");
});

/** A token signed by acme.test's current key (read from the key manager's SQLite store in `dir`), naming beta.test's client. */
async function forgedWith(dir: string, appId: string, client: string, iss: string): Promise<string> {
  const store = await storeOver(await openDatabase('apim_db', { type: 'h2', url: `jdbc:h2:${path.join(dir, 'var', 'apim_db')}` }, dir));
  try {
    return await forged(store, 'acme.test', iss, client, appId);
  } finally {
    await store.close();
  }
}

t.test("a worker's link reads the tenants' keys again at most once per interval on unknown kids", async (t) => {
  let reads = 0;
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/admin/v1/signing-keys')) reads++;
    const body =
      req.url === '/oauth2/jwks'
        ? { keys: [] }
        : { tenant: 'carbon.super', keys: [], tenants: [{ tenant: 'acme.test', keys: [{ kty: 'RSA', kid: 'k1' }] }] };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const controlPlane = (keyRefetchInterval: number): ControlPlane =>
    new ControlPlane({
      url: `http://${HOST}:${(server.address() as AddressInfo).port}`,
      user: 'admin',
      password: 'x',
      retry: { first: 10, maxRetries: 0, factor: 1 },
      logger: memoryLogger(),
      keyRefetchInterval,
    });
  const cp = controlPlane(60_000);
  await cp.refreshKeys();
  t.equal(reads, 1, 'read with the key set');
  const link = cp.link();
  t.match(await link.tenantKey?.('k1'), { tenant: 'acme.test' }, 'a known kid, from memory');
  const asked = await Promise.all(Array.from({ length: 20 }, (_, i) => link.tenantKey?.(`made-up-${i}`)));
  t.same(
    asked,
    Array.from({ length: 20 }, () => undefined),
  );
  t.equal(reads, 1, 'twenty made-up kids within the interval: no read');
  const eager = controlPlane(0);
  await eager.refreshKeys();
  t.equal(reads, 2);
  await Promise.all(Array.from({ length: 20 }, (_, i) => eager.link().tenantKey?.(`made-up-${i}`)));
  t.equal(reads, 3, 'past the interval, twenty unknown kids at once share one read');
});
