/**
 * Tenants' blocking conditions on a gateway-worker process (docs/tenants.md, "Blocking conditions";
 * docs/scale-out.md): an api-key-manager serving the super tenant's /shop and acme.test's
 * apis/t/acme.test/shop.toml, each with an application subscribed and its token, and a gateway-worker on
 * the Redis event hub (THROUGHWAY_TEST_REDIS_URL; skipped with the reason when unset or unreachable).
 * A condition acme.test's admin added before the worker started reaches it in the first pull, one added
 * afterwards in its event: each blocks acme.test's call (900805) and not the super tenant's, by the same
 * IP; removed, acme.test is served again.
 */
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { ADMIN, baseOffset, http, nodeToml, redisReachable, securedApi, spawnNode, started } from '../scale/helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;
const channel = `tw-test-tenant-blocking-${process.pid}`;

t.test("a gateway-worker applies each tenant's blocking conditions to its own calls only", async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(44);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const end = `http://127.0.0.1:${backend.port}`;
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel, redis: REDIS }), {
    'shop.toml': securedApi(`${end}/super`),
    't/acme.test/shop.toml': securedApi(`${end}/acme`),
  });
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const added = await http(`${km}/admin/v1/tenants`, { json: { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, auth: ADMIN });
  t.equal(added.status, 201, added.text);
  const bossy = { user: 'bossy@acme.test', password: 'acme-pw-1' };

  /** An application of the caller's tenant subscribed to `api`, and its client_credentials token. */
  const tokenOf = async (auth: { user: string; password: string }, api: string): Promise<string> => {
    t.equal((await http(`${km}/admin/v1/applications`, { json: { name: 'ShopApp' }, auth })).status, 201);
    const keys = await http(`${km}/admin/v1/applications/ShopApp/keys`, { json: {}, auth });
    t.equal((await http(`${km}/admin/v1/subscriptions`, { json: { application: 'ShopApp', api, version: '1.0.0' }, auth })).status, 201);
    const tok = await http(`${km}/oauth2/token`, {
      form: { grant_type: 'client_credentials' },
      auth: { user: String(keys.body.consumerKey), password: String(keys.body.consumerSecret) },
    });
    t.equal(tok.status, 200, tok.text);
    return String(tok.body.access_token);
  };
  const acmeToken = await tokenOf(bossy, '/t/acme.test/shop');
  const superToken = await tokenOf(ADMIN, '/shop');
  // Before the worker starts: acme.test's IP condition, which it must get in its first pull.
  const first = await http(`${km}/admin/v1/blocking-conditions`, { json: { type: 'IP', value: '127.0.0.1' }, auth: bossy });
  t.match(first.body, { tenant: 'acme.test', type: 'IP', value: '127.0.0.1' }, first.text);

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort, redis: REDIS }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, /1 blocking conditions/);
  const gp = 8280 + base + 1;
  const call = async (): Promise<string> => {
    const a = await http(`http://127.0.0.1:${gp}/t/acme.test/shop/1.0.0/items`, { bearer: acmeToken });
    const s = await http(`http://127.0.0.1:${gp}/shop/1.0.0/items`, { bearer: superToken });
    const code = (r: { status: number; text: string }): string =>
      `${r.status}${r.status === 200 ? '' : ` ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? ''}`}`;
    return `acme ${code(a)}, super ${code(s)}`;
  };
  t.equal(await call(), 'acme 429 900805, super 200', "the pulled condition is acme.test's: its call blocked, the super tenant's served");

  t.equal((await http(`${km}/admin/v1/blocking-conditions/${String(first.body.id)}`, { method: 'DELETE', auth: bossy })).status, 200);
  t.ok(await until(async () => (await call()) === 'acme 200, super 200', 10_000, 50), `removed: served again\n${gw.err.slice(-1500)}`);

  // After start: the condition arrives as an event, with its tenant.
  const second = await http(`${km}/admin/v1/blocking-conditions`, { json: { type: 'IP_RANGE', value: '127.0.0.0/8' }, auth: bossy });
  t.equal(second.status, 201, second.text);
  t.ok(
    await until(async () => (await call()) === 'acme 429 900805, super 200', 10_000, 50),
    `the event's condition: acme.test's only\n${gw.err.slice(-1500)}`,
  );
  // The super tenant's own condition blocks the super tenant's call only.
  const superOwn = await http(`${km}/admin/v1/blocking-conditions`, { json: { type: 'API', value: '/shop' }, auth: ADMIN });
  t.match(superOwn.body, { tenant: 'carbon.super' }, superOwn.text);
  t.equal((await http(`${km}/admin/v1/blocking-conditions/${String(second.body.id)}`, { method: 'DELETE', auth: bossy })).status, 200);
  t.ok(
    await until(async () => (await call()) === 'acme 200, super 429 900805', 10_000, 50),
    `the super tenant's condition\n${gw.err.slice(-1500)}`,
  );
});
