/**
 * Counting modes across gateways (docs/throttling.md, "Counting modes"): three gateway instances share one
 * private Redis (a redis-server this test starts on a free loopback port below 32768; skipped with the
 * reason when redis-server is not installed). An API-level policy of 100 per minute (fault 900800) on an
 * open API counts every call of the three gateways against one counter.
 *
 *  - bursts of 300 concurrent calls, 100 at each gateway, each burst in a window of its own (the gateways
 *    share a fake clock, moved a minute per burst): exactly 100 admitted in every burst with `exact` and
 *    `leased`; the `async` mode's (counter_store = "redis") admitted count is printed, only its cap asserted;
 *  - Redis killed (SIGKILL) in the middle of a burst: every call is answered, none with a 5xx, and each
 *    gateway admits at most 100 / 3; Redis started again: the calls admitted meanwhile are added to its
 *    count, and the window then admits up to the limit in all;
 *  - a 3-node Redis Cluster carrying the counters: exactly 100 again;
 *  - without Redis at all (a closed port): a gateway admits its share and a fail = "closed" policy refuses.
 */
import * as http from 'node:http';
import t, { type Test } from 'tap';
import { Redis, Cluster } from 'ioredis';
import {
  BASE_TOML,
  apiToml,
  closedPort,
  echoBackend,
  request,
  startGateway,
  until,
  type EchoBackend,
  type TestGateway,
} from '../gateway/helpers';
import { parsePolicies } from '../../lib/throttle/policies';
import { privateRedis, redisServerMissing, startCluster } from './redis-server';

const T0 = 1_800_000_000_000;
const N = 100;
const K = 3;
const BURST = 300;

const POLICIES = `
[[subscription]]
name = "Unlimited"
unlimited = true
[[api]]
name = "HundredAsync"
request_count = ${N}
counting = "async"
[[api]]
name = "HundredExact"
request_count = ${N}
counting = "exact"
[[api]]
name = "HundredLeased"
request_count = ${N}
counting = "leased"
[[api]]
name = "HundredClosed"
request_count = ${N}
counting = "exact"
fail = "closed"
`;

const MODES = ['async', 'exact', 'leased'] as const;
const policyOf = { async: 'HundredAsync', exact: 'HundredExact', leased: 'HundredLeased', closed: 'HundredClosed' } as const;

interface Rig {
  readonly gws: TestGateway[];
  readonly clock: { now: number };
  readonly agents: http.Agent[];
}

function apis(backend: EchoBackend): Record<string, string> {
  const ep = `http://127.0.0.1:${backend.port}`;
  return Object.fromEntries(
    Object.entries(policyOf).map(([mode, policy]) => [
      mode,
      apiToml({ name: `L${mode}`, context: `/${mode}`, endpoint: ep, resources: [['/*', ['GET']]], extra: `policy = "${policy}"` }),
    ]),
  );
}

/** Three gateways on one Redis (or Cluster), one fake clock. */
async function gateways(t: Test, throttling: string, backend: EchoBackend): Promise<Rig> {
  const clock = { now: T0 };
  const gws: TestGateway[] = [];
  for (let i = 0; i < K; i++)
    gws.push(
      await startGateway(
        `${BASE_TOML}[throughway.throttling]\n${throttling}`,
        apis(backend),
        { 'policies.toml': POLICIES },
        { throttling: { now: () => clock.now } },
      ),
    );
  const agents = gws.map(() => new http.Agent({ keepAlive: true, maxSockets: 50 }));
  t.teardown(async () => {
    for (const a of agents) a.destroy();
    for (const g of gws) await g.close();
  });
  return { gws, clock, agents };
}

/** Until every gateway counts K members in Redis (its share while Redis is away is limit / K). */
async function membersSeen(t: Test, r: Rig): Promise<void> {
  const ok = await until(() => r.gws.every((g) => g.gw.throttle.shared?.link.nodes === K && g.gw.throttle.shared.link.isUp), 15_000, 20);
  t.ok(ok, `every gateway sees ${K} gateways in the membership set`);
}

interface Answer {
  readonly gateway: number;
  readonly status: number;
  readonly code: number | undefined;
}

/** BURST calls at once, round robin over the gateways. */
async function burst(r: Rig, mode: string, from = 0, to = BURST): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: to - from }, async (_, n) => {
      const i = from + n;
      const g = i % r.gws.length;
      const res = await request((r.gws[g] as TestGateway).port, `/${mode}/1.0.0/x`, { agent: r.agents[g] as http.Agent });
      const a: Answer = {
        gateway: g,
        status: res.status,
        code: res.status === 200 ? undefined : (res.json() as { fault?: { code?: number } }).fault?.code,
      };
      return a;
    }),
  );
}

const admitted = (list: readonly Answer[], gateway?: number): number =>
  list.filter((a) => a.status === 200 && (gateway === undefined || a.gateway === gateway)).length;

t.test('the counting key of the policies file', async (t) => {
  const r = parsePolicies(
    `[[api]]\nname = "A"\nrequest_count = 5\ncounting = "leased"\nfail = "closed"\n[[api.condition_group]]\nrequest_count = 9\n[[api.condition_group.condition]]\ntype = "ip"\nvalue = "10.0.0.1"\n[[subscription]]\nname = "S"\nrequest_count = 5\ncounting = "exact"\nburst = { limit = 2 }\n[[application]]\nname = "P"\nrequest_count = 5\n`,
    'p.toml',
  );
  const a = r.policies?.api.get('A');
  t.same(
    [a?.quota.counting, a?.quota.failClosed, a?.groups[0]?.quota.counting, a?.groups[0]?.quota.failClosed],
    ['leased', true, 'leased', true],
    'a condition group counts as its policy',
  );
  const s = r.policies?.subscription.get('S');
  t.same([s?.quota.counting, s?.burst?.counting], ['exact', 'exact'], 'the burst control counts as its tier');
  t.same(
    [r.policies?.application.get('P')?.quota.counting, r.policies?.application.get('P')?.quota.failClosed],
    [undefined, false],
    'unset: the deployment default, fail open',
  );
  const bad = parsePolicies(`[[api]]\nname = "A"\nrequest_count = 5\ncounting = "sometimes"\nfail = "shut"\n`, 'p.toml');
  t.equal(bad.policies, undefined);
  t.same(
    bad.diagnostics.filter((d) => d.level === 'error').map((d) => [d.code, d.field, d.line]),
    [
      ['POLICY_VALUE', 'api[0].counting', 4],
      ['POLICY_VALUE', 'api[0].fail', 5],
    ],
  );
});

t.test('Redis unreachable from the start: the share of one gateway, and fail = "closed"', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const g = await startGateway(
    `${BASE_TOML}[throughway.throttling]\ncounting = "exact"\ncommand_timeout = 100\nredis_url = "redis://127.0.0.1:${await closedPort()}"\n`,
    apis(backend),
    { 'policies.toml': POLICIES },
    { throttling: { now: () => T0 } },
  );
  t.teardown(() => g.close());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
  t.teardown(() => agent.destroy());
  const statuses: number[] = [];
  for (let i = 0; i < N + 5; i++) statuses.push((await request(g.port, '/exact/1.0.0/x', { agent })).status);
  t.equal(statuses.filter((s) => s === 200).length, N, 'alone in the membership it last saw (none: itself), it admits the whole limit');
  t.same([...new Set(statuses.slice(N))], [429], 'then 429');
  const closed = await request(g.port, '/closed/1.0.0/x', { agent });
  t.equal(closed.status, 429, 'fail = "closed" refuses');
  t.same(
    [closed.json().fault.code, closed.json().fault.description],
    [900800, 'The throttle counters are unreachable and this policy fails closed'],
  );
  t.equal(closed.headers['retry-after'], '1', 'try again in a second');
  t.ok(
    g.logger.lines.some((l) => l.event === 'throttle_quota_unavailable' && l.code === 'THROTTLE_QUOTA_DOWN'),
    'warned with its code',
  );
});

t.test('three gateways, one Redis: bursts of 300 against a limit of 100', async (t) => {
  const redis = await privateRedis(t);
  if (redis === undefined) return;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  // A command timeout far above this shared machine's event-loop stalls under a burst: a spurious timeout
  // would count as an outage (each gateway then admits its share: not exact).
  const r = await gateways(
    t,
    `counter_store = "redis"\nsync_interval = 20\ncommand_timeout = 10000\nredis_url = "${redis.url}"\n`,
    backend,
  );
  await membersSeen(t, r);
  const probe = new Redis(redis.url);
  t.teardown(() => probe.disconnect());
  for (const mode of MODES) {
    const seen: number[] = [];
    for (let b = 0; b < 3; b++) {
      r.clock.now = T0 + (seen.length + MODES.indexOf(mode) * 10) * 60_000 + 1000;
      // The scripts are gone from Redis before the second burst: EVALSHA answers NOSCRIPT, EVAL runs them.
      if (b === 1) await probe.script('FLUSH');
      const answers = await burst(r, mode);
      t.same([...new Set(answers.map((a) => a.status))].sort(), [200, 429], `${mode}: only 200 and 429`);
      t.same([...new Set(answers.filter((a) => a.status === 429).map((a) => a.code))], [900800], `${mode}: refused with 900800`);
      seen.push(admitted(answers));
    }
    if (mode === 'async') {
      t.comment(
        `async (counter_store = "redis", sync_interval 20 ms): admitted ${seen.join(', ')} of ${BURST} in three bursts against ${N}`,
      );
      t.ok(
        seen.every((n) => n >= N && n <= K * N),
        'async: within its bound (N to K x N)',
      );
    } else t.same(seen, [N, N, N], `${mode}: exactly ${N} in every burst`);
  }
  // exact: Redis holds the window's count, under the counter's hash tag.
  const key = `tw:q:{p|/exact/1.0.0}@${T0 + 10 * 60_000}`;
  t.equal(await probe.get(key), String(N), `exact: Redis holds ${N} under ${key}`);

  // leased: a gateway that stops gives its unspent quota back, and the others can spend it.
  r.clock.now = T0 + 40 * 60_000 + 1000;
  const leasedKey = `tw:q:{p|/leased/1.0.0}@${T0 + 40 * 60_000}`;
  const first = await request((r.gws[0] as TestGateway).port, '/leased/1.0.0/x', { agent: r.agents[0] as http.Agent });
  t.equal(first.status, 200);
  t.ok(Number(await probe.get(leasedKey)) > 1, `the first call leased a block (${await probe.get(leasedKey)})`);
  await (r.gws[0] as TestGateway).gw.throttle.close();
  t.equal(await probe.get(leasedKey), '1', 'closed: only the spent call stays counted');
  const rest = await burst({ ...r, gws: r.gws.slice(1), agents: r.agents.slice(1) }, 'leased');
  t.equal(admitted(rest), N - 1, 'the two others admit the other 99');
});

t.test('Redis killed in the middle of a burst, then started again', async (t) => {
  const redis = await privateRedis(t);
  if (redis === undefined) return;
  // Killed after the first 15 calls of the burst were answered, before the other 285 are sent: the
  // outage falls inside the burst whatever the machine's speed (a kill started by the backend's 15th call
  // landed after Redis had admitted the whole burst on a quiet machine).
  const HEAD = 15;
  const backend = await echoBackend(() => false);
  t.teardown(() => backend.close());
  const r = await gateways(t, `counting = "exact"\ncommand_timeout = 200\nredis_url = "${redis.url}"\n`, backend);
  await membersSeen(t, r);
  for (const [i, mode] of (['exact', 'leased'] as const).entries()) {
    if (i > 0) {
      await redis.restart();
      await membersSeen(t, r);
    }
    r.clock.now = T0 + (20 + i) * 60_000 + 1000;
    const key = `tw:q:{p|/${mode}/1.0.0}@${T0 + (20 + i) * 60_000}`;
    const offlineBefore = r.gws.map((g) => g.gw.throttle.shared?.offlineAdmitted ?? 0);
    const head = await burst(r, mode, 0, HEAD);
    await redis.kill();
    const answers = [...head, ...(await burst(r, mode, HEAD, BURST))];
    const offline = r.gws.map((g, n) => (g.gw.throttle.shared?.offlineAdmitted ?? 0) - (offlineBefore[n] as number));
    t.equal(admitted(head), HEAD, `${mode}: the first ${HEAD} calls admitted with Redis up`);
    t.equal(answers.length, BURST, `${mode}: every call answered`);
    t.same(
      [...new Set(answers.map((a) => a.status))].filter((s) => s !== 200 && s !== 429),
      [],
      `${mode}: no status but 200 and 429 (no 5xx)`,
    );
    const per = [0, 1, 2].map((g) => admitted(answers, g));
    t.comment(
      `${mode}: admitted per gateway with Redis killed mid-burst: ${per.join(', ')}; of them while Redis was away: ${offline.join(', ')}`,
    );
    t.ok(
      offline.some((n) => n > 0),
      `${mode}: some calls were admitted while Redis was away (${offline.join(', ')})`,
    );
    t.ok(
      offline.every((n) => n <= Math.floor(N / K)),
      `${mode}: while Redis was away each gateway admitted at most its share, ${Math.floor(N / K)} (${offline.join(', ')})`,
    );
    if (mode === 'exact') {
      t.ok(
        per.every((n) => n <= Math.floor(N / K)),
        `${mode}: each gateway admitted at most ${Math.floor(N / K)} (${per.join(', ')})`,
      );
    } else {
      // Leased: quota Redis granted before the kill is spent as granted (one gateway took 37 of the burst,
      // none of them while Redis was away); the share bounds what each admits while Redis is away (above),
      // so the burst's total is at most each gateway's calls before the outage or its share, whichever is
      // more: the limit can be passed by what the gateways under their share had left of it (103 of 100 in
      // one run: 37, 33, 33). docs/throttling.md, "Redis unreachable".
      const bound = per.reduce((sum, n, g) => sum + Math.max(n - (offline[g] as number), Math.floor(N / K)), 0);
      t.ok(per.reduce((x, y) => x + y, 0) <= bound, `${mode}: at most ${bound} admitted in all (${per.join(', ')})`);
    }
    await redis.restart();
    await membersSeen(t, r);
    const probe = new Redis(redis.url);
    const total = admitted(answers);
    // The append-only file kept what Redis acknowledged before the kill; the gateways add what they admitted
    // since. A call whose script ran but whose reply the kill lost was admitted on the share and is counted
    // twice: the count may pass the admitted calls by those in flight at the kill, never fall short.
    const reconciled = await until(async () => Number(await probe.get(key)) >= total, 10_000, 20);
    const value = Number(await probe.get(key));
    probe.disconnect();
    // A closed connection takes the link down, so its coming back runs the reconciliation on every
    // gateway: before, a reconnect without an error event left the link "up" and Redis counted 43 of 99
    // (exact) and 15 to 71 of 99 (leased).
    t.ok(reconciled, `${mode}: after Redis returns it counts every admitted call (${value} >= ${total})`);
    const backUp = r.gws.map((g) => g.logger.lines.filter((l) => l.event === 'throttle_quota_available').length);
    t.ok(
      backUp.every((n) => n >= i + 1),
      `${mode}: every gateway logged its link back up after each outage (${backUp.join(', ')})`,
    );
    t.comment(`${mode}: ${total} admitted, Redis counts ${value} after the reconciliation`);
    if (mode === 'exact') {
      const after = await burst(r, mode);
      t.equal(
        admitted(after),
        Math.max(0, N - value),
        `exact: the window then admits what Redis has left of the limit (${Math.max(0, N - value)})`,
      );
    }
    await redis.kill();
  }
});

t.test('a 3-node Redis Cluster carries the counters', async (t) => {
  const missing = redisServerMissing();
  if (missing !== undefined) {
    t.skip(missing, () => undefined);
    return;
  }
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const r = await gateways(t, `counting = "exact"\ncommand_timeout = 10000\ncluster_nodes = ${JSON.stringify(cluster.nodes)}\n`, backend);
  await membersSeen(t, r);
  const probe = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })));
  t.teardown(() => probe.disconnect());
  for (const [i, mode] of (['exact', 'leased'] as const).entries()) {
    r.clock.now = T0 + (30 + i) * 60_000 + 1000;
    const answers = await burst(r, mode);
    t.equal(admitted(answers), N, `${mode}: exactly ${N} admitted over the cluster`);
    const key = `tw:q:{p|/${mode}/1.0.0}@${T0 + (30 + i) * 60_000}`;
    const slot = await probe.cluster('KEYSLOT', key);
    const tagSlot = await probe.cluster('KEYSLOT', `p|/${mode}/1.0.0`);
    t.equal(slot, tagSlot, `${mode}: the key hashes by its tag (slot ${slot})`);
    t.equal(await probe.get(key), String(N), `${mode}: the cluster holds ${N}`);
  }
});
