/**
 * Throttling with tokens the built-in key manager issues, through sockets (integration of Steps 5 and 6):
 * the security phase fills the AuthContext's applicationTier and subscriptionTier from the application
 * and the subscription, and the throttling phase counts against exactly those tiers of a policies file:
 * 900804 at the subscription's request count, 900807 at its burst, 900803 at the application's tier,
 * each on the first call past the limit, with the IETF RateLimit fields. The throttle's clock is fixed
 * (windows are clock-aligned; a real clock could cross a minute mid-test). The component metrics read the
 * same counters (throttled by level, token cache hits).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { Metrics } from '../../lib/observability/metrics';
import { registerComponentMetrics } from '../../lib/observability/components';
import { parseMetrics } from '../observability/node-helpers';
import { api, code, startNode, type Node } from '../security/helpers';

const POLICIES = `
[[subscription]]
name = "Five"
request_count = 5
unit_time = 1
time_unit = "min"

[[subscription]]
name = "Burst3"
request_count = 100
unit_time = 1
time_unit = "min"
burst = { limit = 3, time_unit = "min" }

[[application]]
name = "10PerMin"
request_count = 10
unit_time = 1
time_unit = "min"
`;

// Mid-minute, so every call of the test falls in one window of every level.
const FIXED = Date.UTC(2026, 10, 24, 12, 0, 30);
let node: Node;
let dir: string;

t.before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-thr-tok-'));
  const file = path.join(dir, 'policies.toml');
  fs.writeFileSync(file, POLICIES);
  node = await startNode(
    (port) => [api('five', {}, undefined, port), api('burst', {}, undefined, port), api('app', {}, undefined, port)],
    `[throughway.throttling]\npolicies_file = "${file}"\n`,
    { throttling: { now: () => FIXED } },
  );
});
t.teardown(async () => {
  await node.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Calls until the first refusal (at most `max`); the statuses in order and the refusal. */
async function until(
  pathname: string,
  token: string,
  max: number,
): Promise<{ ok: number; refused: Awaited<ReturnType<Node['call']>> | undefined; remaining: string[] }> {
  const remaining: string[] = [];
  for (let i = 0; i < max; i++) {
    const r = await node.call(pathname, token);
    if (r.status !== 200) return { ok: i, refused: r, remaining };
    remaining.push(r.headers['ratelimit-remaining'] ?? '');
  }
  return { ok: max, refused: undefined, remaining };
}

async function appWith(name: string, appTier: string, subscription: { api: string; tier: string }): Promise<string> {
  const created = await node.km.manager.createApplication({ name, owner: 'admin', tier: appTier });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({
    application: created.id,
    apiContext: `/${subscription.api}`,
    apiVersion: '1',
    tier: subscription.tier,
  });
  return node.token({ consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret });
}

t.test('the tiers reach the AuthContext the throttling phase counts with', async (t) => {
  const token = await appWith('TierProbe', '10PerMin', { api: 'five', tier: 'Five' });
  const seen: { applicationTier: string; subscriptionTier: string }[] = [];
  const r = await node.call('/five/1/x', token);
  t.equal(r.status, 200, r.body);
  // The cache entry's per-API context is what the phases read (docs/security.md).
  for (const cached of [node.gw.security.cache.get(token, Date.now())]) {
    for (const v of cached?.perApi.values() ?? []) {
      const auth = (v as { auth?: { applicationTier: string; subscriptionTier: string } }).auth;
      if (auth !== undefined) seen.push({ applicationTier: auth.applicationTier, subscriptionTier: auth.subscriptionTier });
    }
  }
  t.same(seen, [{ applicationTier: '10PerMin', subscriptionTier: 'Five' }]);
});

t.test('subscription tier: 900804 on the 6th call of a 5/min subscription, with RateLimit fields', async (t) => {
  const token = await appWith('SubApp', 'Unlimited', { api: 'five', tier: 'Five' });
  const r = await until('/five/1/x', token, 20);
  t.equal(r.ok, 5, 'exactly the request count passes');
  t.same(r.remaining, ['4', '3', '2', '1', '0'], 'RateLimit-Remaining counts down to 0');
  const f = r.refused;
  t.equal(f?.status, 429);
  t.equal(f !== undefined ? code(f) : 0, 900804);
  t.equal(f?.headers['ratelimit-limit'], '5');
  t.equal(f?.headers['ratelimit-remaining'], '0');
  t.equal(f?.headers['ratelimit-reset'], '30', 'the window ends at the next minute');
  t.equal(f?.headers['retry-after'], '30');
});

t.test('burst control of the subscription tier: 900807 on the 4th call', async (t) => {
  const token = await appWith('BurstApp', 'Unlimited', { api: 'burst', tier: 'Burst3' });
  const r = await until('/burst/1/x', token, 20);
  t.equal(r.ok, 3);
  t.equal(r.refused?.status, 429);
  t.equal(r.refused !== undefined ? code(r.refused) : 0, 900807);
  t.equal(r.refused?.headers['ratelimit-limit'], '3', 'the burst is the most restrictive limit');
});

t.test('application tier 10PerMin: 900803 on the 11th call, across two APIs of the application', async (t) => {
  const created = await node.km.manager.createApplication({ name: 'TenApp', owner: 'admin', tier: '10PerMin' });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/app', apiVersion: '1', tier: 'Unlimited' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/burst', apiVersion: '1', tier: 'Unlimited' });
  const token = await node.token({ consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret });
  const first = await until('/app/1/x', token, 6);
  t.equal(first.ok, 6);
  const second = await until('/burst/1/x', token, 20);
  t.equal(second.ok, 4, 'the application quota is shared by its APIs');
  t.equal(second.refused?.status, 429);
  t.equal(second.refused !== undefined ? code(second.refused) : 0, 900803);
  t.equal(second.refused?.headers['ratelimit-limit'], '10');
});

t.test('the component metrics read the same counters: throttled by level, token cache hits', async (t) => {
  const m = new Metrics({ processMetrics: false });
  registerComponentMetrics(m, () => node.gw);
  const s = parseMetrics(await m.text());
  t.equal(s.value('throughway_throttled_requests_total', { level: 'subscription', code: '900804' }), 1);
  t.equal(s.value('throughway_throttled_requests_total', { level: 'burst', code: '900807' }), 1);
  t.equal(s.value('throughway_throttled_requests_total', { level: 'application', code: '900803' }), 1);
  const hits = s.value('throughway_token_cache_lookups_total', { result: 'hit' }) ?? 0;
  const misses = s.value('throughway_token_cache_lookups_total', { result: 'miss' }) ?? 0;
  // 22 calls with 4 tokens, and the first test's own look-up: each token validated once, then cached.
  t.equal(misses, 4, 'one miss per new token');
  t.equal(hits, 19, `every other look-up a hit (${hits})`);
  t.equal(s.value('throughway_token_cache_hit_ratio'), hits / (hits + misses));
  t.equal(s.value('throughway_worker_pool_queue'), 0);
  t.same(
    s.samples.filter((x) => x.name === 'throughway_tracing_spans_total'),
    [],
    'tracing off: no span samples',
  );
});
