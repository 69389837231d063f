/**
 * Tenants at the gateway (docs/tenants.md), on SQLite always and PostgreSQL when reachable
 * (test/store/backends.ts): the super tenant and two tenants side by side, the same context served to three
 * backends (/pizza, /t/acme.test/pizza, /t/beta.test/pizza) from apis/ and apis/t/<domain>/, default
 * versions, a token of one tenant refused on another's API (900908), an unknown tenant (103010), throttling
 * counted per tenant, and a deactivated tenant's APIs (103011), tokens and sign-ins refused at once; then
 * cross-tenant subscriptions with [apim.devportal] enable_cross_tenant_subscriptions.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { createKeyManager, type KeyManager } from '../../lib/keymanager';
import { keyManagerLink } from '../../lib/security';
import { ensureSuperAdmin, openDatabase, storeOver } from '../../lib/store/open';
import { echoBackend, HOST, memoryLogger, request, type EchoBackend, type Response } from '../gateway/helpers';
import { postgresBackend, sqliteBackend, type Backend } from '../store/backends';

const POLICIES = `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[application]]\nname = "Unlimited"\nunlimited = true\n[[api]]\nname = "Two"\nrequest_count = 2\nunit_time = 1\ntime_unit = "min"\n`;

function apiFile(name: string, context: string, endpoint: string, extra = ''): string {
  return `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\ndefault_version = true\n${extra}[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

interface Node {
  readonly km: KeyManager;
  readonly port: number;
  readonly backends: Record<'super' | 'acme' | 'beta', EchoBackend>;
  call(p: string, token?: string): Promise<Response>;
  token(
    app: { consumerKey: string; consumerSecret: string },
    user?: { username: string; password: string },
  ): Promise<{ status: number; token: string; error: string }>;
  app(tenant: string, owner: string, subscribe: readonly string[]): Promise<{ consumerKey: string; consumerSecret: string; name: string }>;
  close(): Promise<void>;
}

async function startNode(backend: Backend, toml = ''): Promise<Node | string> {
  const opened = await backend.open();
  if ('reason' in opened) return opened.reason;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tenants-'));
  const backends = { super: await echoBackend(), acme: await echoBackend(), beta: await echoBackend() };
  const url = (k: keyof typeof backends): string => `http://${HOST}:${backends[k].port}/${k}`;
  fs.mkdirSync(path.join(dir, 'apis', 't', 'acme.test'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'apis', 't', 'beta.test'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'apis', 't', 'ghost.test'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'apis', 'pizza.toml'), apiFile('Pizza', '/pizza', url('super')));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'acme.test', 'pizza.toml'), apiFile('Pizza', '/pizza', url('acme')));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'beta.test', 'pizza.toml'), apiFile('Pizza', '/pizza', url('beta')));
  fs.writeFileSync(
    path.join(dir, 'apis', 't', 'acme.test', 'counted.toml'),
    apiFile('Counted', '/counted', url('acme'), 'policy = "Two"\n'),
  );
  fs.writeFileSync(
    path.join(dir, 'apis', 't', 'beta.test', 'counted.toml'),
    apiFile('Counted', '/counted', url('beta'), 'policy = "Two"\n'),
  );
  fs.writeFileSync(path.join(dir, 'apis', 't', 'ghost.test', 'pizza.toml'), apiFile('Pizza', '/pizza', url('super')));
  fs.writeFileSync(path.join(dir, 'policies.toml'), POLICIES);
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n${toml}`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const logger = memoryLogger();
  const store = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  await ensureSuperAdmin(store, loaded.config);
  const bus = createEventBus();
  const km = await createKeyManager({ loaded, store, bus, logger });
  await km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const gw = createGateway({ loaded, logger, cwd: dir, keyManager: keyManagerLink(km), events: bus, tenants: km.tenants, watch: false });
  const a = await gw.listen({ port: 0, host: HOST });
  await gw.security.ready;
  let n = 0;
  return {
    km,
    port: a.port,
    backends,
    call: (p, token) => request(a.port, p, { headers: token !== undefined ? { Authorization: `Bearer ${token}` } : {} }),
    async token(app, user) {
      const form = new URLSearchParams(
        user !== undefined
          ? { grant_type: 'password', username: user.username, password: user.password }
          : { grant_type: 'client_credentials' },
      );
      try {
        const r = await km.oauth.token(`Basic ${Buffer.from(`${app.consumerKey}:${app.consumerSecret}`).toString('base64')}`, form);
        return { status: 200, token: r.access_token, error: '' };
      } catch (err) {
        return { status: (err as { status?: number }).status ?? 500, token: '', error: (err as Error).message };
      }
    },
    async app(tenant, owner, subscribe) {
      const m = km.manager.forTenant(tenant);
      const name = `App${++n}`;
      const created = await m.createApplication({ name, owner });
      const keys = await m.generateKeys(created.id);
      for (const c of subscribe) await m.addSubscription({ application: created.id, apiContext: c, apiVersion: '1.0.0' });
      return { consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret, name };
    },
    async close() {
      await gw.close();
      await km.close();
      await store.close();
      for (const b of Object.values(backends)) await b.close();
      await opened.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const codeOf = (r: Response): number => (r.json() as { fault: { code: number } }).fault.code;
const servedBy = (r: Response): string => String((r.json() as { url: string }).url).split('/')[1] ?? '';

for (const backend of [sqliteBackend, postgresBackend]) {
  t.test(`${backend.name}: three tenants, one context`, async (t) => {
    const node = await startNode(backend);
    if (typeof node === 'string') {
      t.skip(`${backend.name}: ${node}`, () => undefined);
      return;
    }
    t.teardown(() => node.close());
    const superApp = await node.app('carbon.super', 'admin', ['/pizza']);
    await node.km.manager.forTenant('acme.test').addUser({ username: 'jane', password: 'jane-pw-1' });
    const acmeApp = await node.app('acme.test', 'jane', ['/t/acme.test/pizza', '/t/acme.test/counted']);
    const betaApp = await node.app('beta.test', 'chief', ['/t/beta.test/pizza', '/t/beta.test/counted']);
    const superToken = (await node.token(superApp)).token;
    const acme = await node.token(acmeApp, { username: 'jane@acme.test', password: 'jane-pw-1' });
    t.equal(acme.status, 200, `a tenant user signs in as name@domain: ${acme.error}`);
    const betaToken = (await node.token(betaApp)).token;
    t.match(
      await node.token(superApp, { username: 'jane@acme.test', password: 'jane-pw-1' }),
      { status: 400, error: /not a user of the client's tenant carbon.super/ },
      "a tenant user gets no token from another tenant's client",
    );

    // The same context, three backends; the super tenant's URL unchanged.
    const s = await node.call('/pizza/1.0.0/menu', superToken);
    t.same([s.status, servedBy(s)], [200, 'super']);
    const a = await node.call('/t/acme.test/pizza/1.0.0/menu', acme.token);
    t.same([a.status, servedBy(a)], [200, 'acme']);
    const ad = await node.call('/t/acme.test/pizza/menu', acme.token);
    t.same([ad.status, servedBy(ad)], [200, 'acme'], "a tenant API's default version");
    const b = await node.call('/t/beta.test/pizza/1.0.0/menu', betaToken);
    t.same([b.status, servedBy(b)], [200, 'beta']);
    t.equal(node.backends.acme.seen.length, 2);
    t.equal(node.backends.beta.seen.length, 1);

    // Another tenant's token: refused with the spec's 900908, naming both tenants.
    const cross = await node.call('/t/beta.test/pizza/1.0.0/menu', acme.token);
    t.same([cross.status, codeOf(cross)], [403, 900908]);
    t.match(cross.json(), { fault: { description: /tenant acme.test .* tenant beta.test: cross-tenant subscriptions are off/ } });
    const toSuper = await node.call('/pizza/1.0.0/menu', acme.token);
    t.same([toSuper.status, codeOf(toSuper)], [403, 900908], "a tenant token on the super tenant's API");
    const superToTenant = await node.call('/t/acme.test/pizza/1.0.0/menu', superToken);
    t.same([superToTenant.status, codeOf(superToTenant)], [403, 900908], "a super tenant token on a tenant's API");

    // Unknown tenants: a domain no tenant has, with or without a folder of API files.
    for (const p of ['/t/nope.test/pizza/1.0.0/menu', '/t/ghost.test/pizza/1.0.0/menu', '/t/nope.test']) {
      const r = await node.call(p, acme.token);
      t.same([r.status, codeOf(r)], [404, 103010], `unknown tenant: ${p}`);
    }
    const noApi = await node.call('/t/acme.test/none/1.0.0', acme.token);
    t.same([noApi.status, codeOf(noApi)], [404, 103005], 'a tenant without that API');

    // Throttling counts per tenant: the same policy name (Two, 2 per minute) in two tenants, two counts.
    t.equal((await node.call('/t/acme.test/counted/1.0.0/x', acme.token)).status, 200);
    t.equal((await node.call('/t/acme.test/counted/1.0.0/x', acme.token)).status, 200);
    const third = await node.call('/t/acme.test/counted/1.0.0/x', acme.token);
    t.same([third.status, codeOf(third)], [429, 900800], 'acme.test used up its count');
    t.equal((await node.call('/t/beta.test/counted/1.0.0/x', betaToken)).status, 200, 'beta.test counts on its own');

    // Deactivated: its APIs answer 103011, its clients and users get no token; the others are served.
    await node.km.tenants.setActive('acme.test', false);
    const off = await node.call('/t/acme.test/pizza/1.0.0/menu', acme.token);
    t.same([off.status, codeOf(off)], [503, 103011], 'the next call after deactivation');
    t.match(off.json(), { fault: { message: 'Tenant inactive', description: 'tenant acme.test is deactivated' } });
    t.match(await node.token(acmeApp), { status: 401, error: /tenant acme.test is not active/ }, 'no token for its clients');
    t.match(await node.token(acmeApp, { username: 'jane@acme.test', password: 'jane-pw-1' }), { status: 401 }, 'no sign-in');
    t.equal((await node.call('/t/beta.test/pizza/1.0.0/menu', betaToken)).status, 200, 'another tenant is served');
    t.equal((await node.call('/pizza/1.0.0/menu', superToken)).status, 200, 'the super tenant is served');
    await node.km.tenants.setActive('acme.test', true);
    t.equal((await node.call('/t/acme.test/pizza/1.0.0/menu', acme.token)).status, 200, 'served again once activated');
  });
}

t.test('cross-tenant subscriptions: refused when off; when on, only for subscribed applications', async (t) => {
  const offNode = await startNode(sqliteBackend);
  if (typeof offNode === 'string') throw new Error(offNode);
  t.teardown(() => offNode.close());
  await t.rejects(
    offNode.app('acme.test', 'bossy', ['/t/beta.test/pizza']),
    { error: 'access_denied', message: /cross-tenant subscriptions are off/ },
    'the key manager refuses the subscription',
  );

  const node = await startNode(sqliteBackend, '[apim.devportal]\nenable_cross_tenant_subscriptions = true\n');
  if (typeof node === 'string') throw new Error(node);
  t.teardown(() => node.close());
  const unsubscribed = await node.app('acme.test', 'bossy', []);
  const tok = (await node.token(unsubscribed)).token;
  const r = await node.call('/t/beta.test/pizza/1.0.0/menu', tok);
  t.same([r.status, codeOf(r)], [403, 900908], 'not subscribed');
  const subscribed = await node.app('acme.test', 'bossy', ['/t/beta.test/pizza']);
  const tok2 = (await node.token(subscribed)).token;
  const ok = await node.call('/t/beta.test/pizza/1.0.0/menu', tok2);
  t.same([ok.status, servedBy(ok)], [200, 'beta'], 'subscribed across tenants');
  // The token's tenant deactivated: the token stops, though the API's tenant is active.
  await node.km.tenants.setActive('acme.test', false);
  const stopped = await node.call('/t/beta.test/pizza/1.0.0/menu', tok2);
  t.same([stopped.status, codeOf(stopped)], [401, 900901]);
  t.match(stopped.json(), { fault: { description: "the access token's tenant acme.test is not active" } });
});
