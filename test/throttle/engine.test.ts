/**
 * The throttle engine with a fake clock: each level's code at exactly its limit (N allowed, N+1 refused),
 * window reset, the reference's order, burst control, condition groups behind their switches, custom
 * policies, Unlimited, the unauthenticated tier, the hard limit, blocking conditions.
 */
import t from 'tap';
import { auth, call, rig, run, tally } from './helpers';
import { MemoryCounterStore } from '../../lib/throttle/counters';

const T0 = 1_800_000_000_000; // a whole minute and second
const MIN = 60_000;

t.test('subscription tiers: Gold, Silver, Bronze at exactly the limit (900804), reset with the window', async (t) => {
  for (const [tier, n] of [
    ['Gold', 5000],
    ['Silver', 2000],
    ['Bronze', 1000],
  ] as const) {
    const r = rig();
    const c = call({ auth: auth({ subscriptionTier: tier }) });
    t.same(tally(run(r, c, n + 1, T0 + 5)), { allowed: n, refused: [900804] }, `${tier}: ${n} allowed, then 900804`);
    const v = r.engine.check(c, T0 + 10_000);
    t.equal(v.code, 900804);
    t.equal(v.retryAfterMs, MIN - 10_000, 'retry when the minute window ends');
    t.equal(r.engine.check(c, T0 + MIN).code, 0, 'next window: allowed again');
  }
});

t.test('application tiers at exactly the limit (900803), per application and end user', async (t) => {
  for (const [tier, n] of [
    ['10PerMin', 10],
    ['20PerMin', 20],
    ['50PerMin', 50],
  ] as const) {
    const r = rig();
    const c = call({ auth: auth({ applicationTier: tier }) });
    t.same(tally(run(r, c, n + 1, T0)), { allowed: n, refused: [900803] }, tier);
    t.equal(
      r.engine.check(call({ auth: auth({ applicationTier: tier, endUser: 'bob' }) }), T0).code,
      0,
      'another end user has its own count',
    );
    t.equal(r.engine.check(c, T0 + MIN - 1).code, 900803, 'still refused at the last ms of the window');
    t.equal(r.engine.check(c, T0 + MIN).code, 0, 'window reset');
  }
});

t.test(
  'application level: identities made apart (one per token and API) with the same application and end user share one count',
  async (t) => {
    const r = rig();
    // The key is kept per identity object; two objects with equal fields must still count together.
    const first = call({ auth: auth({ applicationTier: '10PerMin' }) });
    const second = call({ auth: auth({ applicationTier: '10PerMin' }) });
    t.not(first.auth, second.auth, 'two identity objects');
    t.same(tally(run(r, first, 6, T0)), { allowed: 6, refused: [] });
    t.same(tally(run(r, second, 5, T0)), { allowed: 4, refused: [900803] }, 'the second identity finds six calls counted');
    // The application level is per application and end user, whatever the API: one identity on another API path counts on.
    t.same(
      tally(run(r, { ...second, apiPath: '/other/1.0.0' }, 1, T0)),
      { allowed: 0, refused: [900803] },
      'the same identity on another API',
    );
    t.same(
      tally(run(r, call({ auth: auth({ applicationTier: '10PerMin' }), apiPath: '/other/1.0.0' }), 1, T0)),
      { allowed: 0, refused: [900803] },
      'an identity first seen on another API',
    );
    // An unlimited application tier counts nothing.
    const free = rig();
    t.same(tally(run(free, call({ auth: auth({ applicationTier: 'Unlimited' }) }), 30, T0)), { allowed: 30, refused: [] });
  },
);

t.test('API tiers: API level 900800 over every caller, resource level 900802 per resource', async (t) => {
  const r = rig('[[api]]\nname = "3PerMin"\nrequest_count = 3\n');
  const a = call({ apiPolicy: '3PerMin', unauthenticatedPolicy: 'Unlimited' });
  t.same(
    tally([...run(r, { ...a, ip: '1.1.1.1' }, 2, T0), ...run(r, { ...a, ip: '2.2.2.2', resourceKey: '/order' }, 2, T0)]),
    { allowed: 3, refused: [900800] },
    'callers and resources share the API count',
  );
  const res = call({ resourcePolicy: '3PerMin', unauthenticatedPolicy: 'Unlimited' });
  t.same(tally(run(r, res, 4, T0)), { allowed: 3, refused: [900802] });
  t.equal(r.engine.check({ ...res, resourceKey: '/order' }, T0).code, 0, 'another resource has its own count');
  t.equal(r.engine.check({ ...res, apiPolicy: 'Unlimited' }, T0).code, 0, 'an API policy replaces the resource policies');
  const big = rig();
  t.same(
    tally(run(big, call({ apiPolicy: '10KPerMin', unauthenticatedPolicy: 'Unlimited' }), 10_001, T0)),
    { allowed: 10_000, refused: [900800] },
    '10KPerMin',
  );
  // Two APIs' API-level counters called in turn (the engine keeps the last API-level key by API path).
  const two = rig('[[api]]\nname = "3PerMin"\nrequest_count = 3\n');
  const turns: number[] = [];
  for (let i = 0; i < 4; i++) for (const apiPath of ['/a/1', '/b/1']) turns.push(two.engine.check({ ...a, apiPath }, T0).code);
  t.same(turns, [0, 0, 0, 0, 0, 0, 900800, 900800], 'two APIs in turn: three each, on counters of their own');
});

t.test(
  'the reference order: API/resource before subscription before burst before application before custom before hard limit',
  async (t) => {
    const r = rig(
      '[[api]]\nname = "1"\nrequest_count = 1\n[[subscription]]\nname = "Sub1"\nrequest_count = 1\nburst = { limit = 1 }\n[[application]]\nname = "App1"\nrequest_count = 1\n[[custom]]\nname = "C1"\nkey_template = "$userId"\nrequest_count = 1\n',
    );
    const everything = call({
      apiPolicy: '1',
      auth: auth({ subscriptionTier: 'Sub1', applicationTier: 'App1' }),
      maxTps: 1,
      endpointKey: 'ep',
    });
    t.equal(r.engine.check(everything, T0).code, 0, 'first call passes every level');
    t.equal(r.engine.check(everything, T0).code, 900800, 'every level is full: the API level answers');
    t.equal(r.engine.check({ ...everything, apiPolicy: undefined }, T0).code, 900804, 'then subscription');
    const noQuota = rig(
      '[[subscription]]\nname = "Burst1"\nunlimited = true\nburst = { limit = 1 }\n[[application]]\nname = "App1"\nrequest_count = 1\n[[custom]]\nname = "C1"\nkey_template = "$userId"\nrequest_count = 1\n',
    );
    const c2 = call({ auth: auth({ subscriptionTier: 'Burst1', applicationTier: 'App1' }), maxTps: 1, endpointKey: 'ep' });
    t.equal(noQuota.engine.check(c2, T0).code, 0);
    t.equal(noQuota.engine.check(c2, T0).code, 900807, 'burst before application');
    t.equal(
      noQuota.engine.check({ ...c2, auth: auth({ subscriptionTier: 'Unlimited', applicationTier: 'App1' }) }, T0).code,
      900803,
      'application before custom',
    );
    t.equal(
      noQuota.engine.check({ ...c2, auth: auth({ subscriptionTier: 'Unlimited', applicationTier: 'Unlimited' }) }, T0).code,
      900806,
      'custom before the hard limit',
    );
    t.equal(
      noQuota.engine.check({ ...c2, auth: auth({ subscriptionTier: 'Unlimited', applicationTier: 'Unlimited', endUser: 'other' }) }, T0)
        .code,
      900801,
      'hard limit last',
    );
  },
);

t.test('a refused call uses up no level', async (t) => {
  const r = rig('[[subscription]]\nname = "S2"\nrequest_count = 2\n[[application]]\nname = "A1"\nrequest_count = 1\n');
  const c = call({ auth: auth({ subscriptionTier: 'S2', applicationTier: 'A1' }) });
  t.same(run(r, c, 3, T0), [0, 900803, 900803]);
  t.equal(
    r.engine.check(call({ auth: auth({ subscriptionTier: 'S2', applicationTier: 'Unlimited', endUser: 'bob' }) }), T0).code,
    0,
    'the subscription counted one call, not three',
  );
});

t.test('burst control: per second and per minute (900807)', async (t) => {
  const r = rig(
    '[[subscription]]\nname = "B"\nrequest_count = 100\nburst = { limit = 5, time_unit = "sec" }\n[[subscription]]\nname = "BM"\nrequest_count = 100\nburst = { limit = 7, time_unit = "min" }\n',
  );
  const c = call({ auth: auth({ subscriptionTier: 'B' }) });
  t.same(tally(run(r, c, 6, T0)), { allowed: 5, refused: [900807] });
  t.equal(r.engine.check(c, T0 + 999).retryAfterMs, 1, 'the second ends in 1 ms');
  t.same(tally(run(r, c, 6, T0 + 1000)), { allowed: 5, refused: [900807] }, 'next second');
  const m = call({ auth: auth({ subscriptionTier: 'BM' }) });
  t.same(tally(run(r, m, 8, T0 + 10)), { allowed: 7, refused: [900807] });
});

t.test('stop_on_quota_reach = false counts the quota but lets calls through', async (t) => {
  const r = rig('[[subscription]]\nname = "Soft"\nrequest_count = 2\nstop_on_quota_reach = false\n');
  t.same(tally(run(r, call({ auth: auth({ subscriptionTier: 'Soft' }) }), 5, T0)), { allowed: 5, refused: [] });
});

t.test('bandwidth quotas count request body bytes', async (t) => {
  const r = rig('[[subscription]]\nname = "1KB"\ndata_amount = 1\ndata_unit = "KB"\n');
  const c = call({ auth: auth({ subscriptionTier: '1KB' }), bytes: 400 });
  t.same(run(r, c, 4, T0), [0, 0, 0, 900804], '400 + 400 + 400 passes the 1024-byte quota on the third; the fourth is refused');
  t.equal(r.engine.check(c, T0 + MIN).code, 0, 'next window');
});

t.test('the unauthenticated tier: 500 per minute per client IP; unauthenticated_policy overrides it', async (t) => {
  const r = rig();
  t.same(tally(run(r, call(), 501, T0)), { allowed: 500, refused: [900804] });
  t.equal(r.engine.check(call({ ip: '10.0.0.2' }), T0).code, 0, 'another IP has its own count');
  t.equal(r.engine.check(call({ auth: auth({ kind: 'none' }) }), T0).code, 900804, 'auth kind none is unauthenticated too');
  t.same(tally(run(r, call({ unauthenticatedPolicy: 'Unlimited' }), 2000, T0)), { allowed: 2000, refused: [] }, 'Unlimited');
  t.same(
    tally(run(r, call({ unauthenticatedPolicy: 'Bronze', ip: '10.0.0.9' }), 1001, T0)),
    { allowed: 1000, refused: [900804] },
    'another tier',
  );
});

t.test('Unlimited: nothing counted, no rate-limit numbers', async (t) => {
  const r = rig();
  const c = call({ auth: auth() });
  t.same(tally(run(r, c, 20_000, T0)), { allowed: 20_000, refused: [] });
  t.equal(r.engine.check(c, T0).limit, -1);
  t.equal(r.counters.size, 0, 'no counter kept');
});

t.test('rate-limit numbers: the most restrictive level', async (t) => {
  const r = rig('[[application]]\nname = "A3"\nrequest_count = 3\n');
  const c = call({ auth: auth({ subscriptionTier: 'Gold', applicationTier: 'A3' }) });
  const v = r.engine.check(c, T0 + 15_000);
  t.same([v.limit, v.remaining, v.resetMs], [3, 2, 45_000]);
  r.engine.check(c, T0 + 15_000);
  r.engine.check(c, T0 + 15_000);
  const refused = r.engine.check(c, T0 + 15_000);
  t.same([refused.code, refused.limit, refused.remaining, refused.resetMs], [900803, 3, 0, 45_000]);
});

t.test('hard limit per endpoint (900801): requests per second over every caller', async (t) => {
  const r = rig();
  const c = call({ unauthenticatedPolicy: 'Unlimited', maxTps: 10, endpointKey: 'api:1|PRODUCTION' });
  t.same(tally([...run(r, { ...c, ip: '1.1.1.1' }, 6, T0), ...run(r, { ...c, ip: '2.2.2.2' }, 6, T0)]), { allowed: 10, refused: [900801] });
  t.equal(r.engine.check(c, T0 + 1000).code, 0, 'next second');
});

t.test('custom policies keyed by their template (900806)', async (t) => {
  const r = rig(
    '[[custom]]\nname = "PerUserApi"\nkey_template = "$userId:$apiContext"\nrequest_count = 2\n[[custom]]\nname = "PerIp"\nkey_template = "$clientIp"\nrequest_count = 3\n',
  );
  const alice = call({ auth: auth({ endUser: 'alice' }) });
  t.same(run(r, alice, 3, T0), [0, 0, 900806]);
  t.same(run(r, call({ auth: auth({ endUser: 'bob' }) }), 1, T0), [0], 'bob has his own $userId key, but shares $clientIp with alice');
  t.same(run(r, call({ auth: auth({ endUser: 'carol' }) }), 1, T0), [900806], 'the per-IP policy is used up: 3 calls from 10.0.0.1');
});

t.test('condition groups: IP and range always; header, query and claim only behind their switches', async (t) => {
  const policy = `[[api]]
name = "Cond"
request_count = 100
[[api.condition_group]]
request_count = 1
[[api.condition_group.condition]]
type = "ip"
value = "10.9.9.9"
[[api.condition_group]]
request_count = 2
[[api.condition_group.condition]]
type = "ip_range"
value = "192.168.0.0/16"
[[api.condition_group]]
request_count = 3
[[api.condition_group.condition]]
type = "header"
name = "X-Tier"
value = "gold|silver"
[[api.condition_group]]
request_count = 4
[[api.condition_group.condition]]
type = "query"
name = "plan"
value = "free"
[[api.condition_group]]
request_count = 5
[[api.condition_group.condition]]
type = "claim"
name = "groups"
value = "partner"
[[api.condition_group]]
request_count = 6
[[api.condition_group.condition]]
type = "ip_range"
value = "10.0.0.0-10.0.0.255"
invert = true
[[api.condition_group.condition]]
type = "ip"
value = "172.16.0.1"
`;
  const base = call({ apiPolicy: 'Cond', unauthenticatedPolicy: 'Unlimited' });
  const cases = [
    ['ip', { ip: '10.9.9.9' }, 1],
    ['ip_range', { ip: '192.168.4.4' }, 2],
    ['IPv4-mapped IPv6 address', { ip: '::ffff:192.168.4.5' }, 2],
    ['header', { headers: ['x-tier', 'gold'] }, 3],
    ['query', { query: '?a=1&plan=free' }, 4],
    ['claim', { auth: auth({ claims: { groups: ['staff', 'partner'] } }) }, 5],
    ['inverted range AND ip', { ip: '172.16.0.1' }, 6],
  ] as const;
  for (const on of [true, false]) {
    for (const [what, over, n] of cases) {
      const r = rig(policy, { headerConditions: on, queryConditions: on, claimConditions: on });
      const gated = what === 'header' || what === 'query' || what === 'claim';
      const expect = gated && !on ? 100 : n;
      t.same(
        tally(run(r, { ...base, ...over }, expect + 1, T0)),
        { allowed: expect, refused: [900800] },
        `${what}, switches ${on ? 'on' : 'off'}: limit ${expect}`,
      );
    }
  }
  const r = rig(policy, { headerConditions: true });
  t.same(
    tally(run(r, { ...base, headers: ['X-Tier', 'bronze'] }, 101, T0)),
    { allowed: 100, refused: [900800] },
    'a header value outside the pattern: the policy default',
  );
});

t.test('blocking conditions (900805) before every limit, each type; the switch turns them off', async (t) => {
  const r = rig();
  const a = auth({ applicationName: 'Shop', applicationId: 'id-9', subscriber: 'carol', endUser: 'dave' });
  const add = (type: 'API' | 'APPLICATION' | 'USER' | 'IP' | 'IP_RANGE', value: string, invert = false): void =>
    r.blocking.add({ id: `${type}-${value}`, type, value, invert });
  const c = call({ auth: a, unauthenticatedPolicy: 'Unlimited' });
  t.equal(r.engine.check(c, T0).code, 0);
  for (const [type, value, over] of [
    ['API', '/pizzashack/1.0.0', {}],
    ['API', '/pizzashack', { apiPath: '/pizzashack/2.0.0', apiVersion: '2.0.0' }],
    ['APPLICATION', 'carol:Shop', {}],
    ['APPLICATION', 'id-9', {}],
    ['USER', 'dave', {}],
    ['IP', '10.0.0.1', {}],
    ['IP_RANGE', '10.0.0.0-10.0.0.10', {}],
    ['IP_RANGE', '10.0.0.0/24', {}],
  ] as const) {
    add(type, value);
    const v = r.engine.check({ ...c, ...over }, T0);
    t.same([v.code, v.blockedBy], [900805, type], `${type} ${value}`);
    r.blocking.remove(`${type}-${value}`);
    t.equal(r.engine.check({ ...c, ...over }, T0).code, 0, `${type} ${value} removed`);
  }
  add('IP', '10.0.0.1', true);
  t.equal(r.engine.check(c, T0).code, 0, 'inverted IP: the listed address passes');
  t.equal(r.engine.check({ ...c, ip: '10.0.0.2' }, T0).code, 900805, 'inverted IP: every other address is blocked');
  const off = rig('', {}, false);
  off.blocking.add({ id: '1', type: 'IP', value: '10.0.0.1', invert: false });
  t.equal(off.engine.check(c, T0).code, 0, 'enable_blacklist_condition = false');
});

t.test('an unknown tier is reported once and not enforced', async (t) => {
  const r = rig();
  const c = call({ auth: auth({ subscriptionTier: 'Platinum', applicationTier: 'Nope' }) });
  t.same(run(r, c, 3, T0), [0, 0, 0]);
  t.same(r.unknown, ['subscription:Platinum', 'application:Nope']);
});

t.test('concurrency: 1,000 calls against a limit of 100 allow exactly 100', async (t) => {
  const r = rig('[[subscription]]\nname = "Hundred"\nrequest_count = 100\n');
  const c = call({ auth: auth({ subscriptionTier: 'Hundred' }) });
  const codes = await Promise.all(Array.from({ length: 1000 }, () => Promise.resolve().then(() => r.engine.check(c, T0).code)));
  t.same(tally(codes), { allowed: 100, refused: [900804] });
});

t.test('one identity object on two APIs: its subscription and burst counters stay per API, resource counters per resource', async (t) => {
  const r = rig('[[subscription]]\nname = "Two"\nrequest_count = 2\nburst = { limit = 100 }\n[[api]]\nname = "Three"\nrequest_count = 3\n');
  const who = auth({ subscriptionTier: 'Two' });
  const a = call({ auth: who, apiPath: '/a/1' });
  const b = call({ auth: who, apiPath: '/b/1' });
  t.same(run(r, a, 3, T0), [0, 0, 900804], 'API /a: the tier allows 2');
  t.same(run(r, b, 3, T0), [0, 0, 900804], 'API /b counts on its own, with the same identity object');
  t.same(run(r, a, 1, T0), [900804], 'and /a is still exhausted');
  t.same([...r.counters.map.keys()].filter((k) => k.startsWith('s|') || k.startsWith('bs|')).sort(), [
    'bs|app-1|/a/1',
    'bs|app-1|/b/1',
    's|app-1|/a/1',
    's|app-1|/b/1',
  ]);
  const open = { unauthenticatedPolicy: 'Unlimited', resourcePolicy: 'Three' };
  t.same(run(r, call({ ...open, resourceKey: 'GET /x' }), 4, T0), [0, 0, 0, 900802], 'resource GET /x: 3 allowed');
  t.same(run(r, call({ ...open, resourceKey: 'GET /y' }), 4, T0), [0, 0, 0, 900802], 'resource GET /y has its own counter');
  t.same(
    run(r, call({ ...open, apiPolicy: 'Three', resourceKey: 'GET /y' }), 4, T0),
    [0, 0, 0, 900800],
    'the API level has its own counter too',
  );
});

t.test('unknown tiers are reported once per kind: the same name as a subscription and as an application tier is two reports', async (t) => {
  const r = rig();
  run(r, call({ auth: auth({ subscriptionTier: 'Nope', applicationTier: 'Nope' }) }), 3, T0);
  t.same(r.unknown, ['subscription:Nope', 'application:Nope']);
});

t.test(
  'a MemoryCounterStore is read once per level and counted in place; an entry evicted during the call is counted in the store',
  async (t) => {
    // 16 entries at most: inserting the 17th makes room by dropping the oldest (counters.ts makeRoom).
    const r = rig('', {}, false, new MemoryCounterStore(16, 0));
    const { engine, counters } = r;
    const apiOnly = call({ auth: auth({ applicationTier: '10PerMin' }) });
    t.equal(engine.check(apiOnly, T0).code, 0);
    t.same([...counters.map.keys()], ['a|app-1|alice'], 'the application counter is the oldest entry');
    for (let i = 0; i < 15; i++) counters.add(`x${i}`, 1, MIN, T0);
    // The next call's first level (the Gold subscription) is new, its second (the application) is the oldest entry.
    const both = call({ auth: auth({ subscriptionTier: 'Gold', applicationTier: '10PerMin' }) });
    t.equal(engine.check(both, T0).code, 0);
    // Each insert into the full store drops the oldest entry: the subscription's dropped the application's, whose
    // insert again dropped the first filler.
    t.equal(counters.evictedLive, 2, 'two live entries evicted');
    t.equal(counters.entry('x0'), undefined);
    t.equal(counters.peek('s|app-1|/pizzashack/1.0.0', MIN, T0), 1, 'the subscription counted');
    t.equal(
      counters.peek('a|app-1|alice', MIN, T0),
      1,
      'the application counted in the store again (the documented under-count), not in the evicted entry',
    );
    // Counted in place: the same entry object goes on counting, exact at the limit.
    const entry = counters.entry('a|app-1|alice');
    t.same(tally(run(r, both, 10, T0 + 1)), { allowed: 9, refused: [900803] });
    t.equal(counters.entry('a|app-1|alice'), entry, 'no new entry was made while the window ran');
    t.equal(entry?.count, 10);
    t.equal(engine.check(both, T0 + MIN).code, 0, 'a new window');
    t.equal(counters.peek('a|app-1|alice', MIN, T0 + MIN), 1);
    // One look-up per level (two here) for a call whose entries are live, not a peek and an add each.
    const get = counters.map.get.bind(counters.map);
    let lookups = 0;
    counters.map.get = (k: string) => {
      lookups++;
      return get(k);
    };
    t.equal(engine.check(both, T0 + MIN + 1).code, 0);
    counters.map.get = get;
    t.equal(lookups, 2, 'two levels, two look-ups');
    t.equal(counters.peek('a|app-1|alice', MIN, T0 + MIN + 1), 2, 'and counted');
  },
);

t.test('a store that extends MemoryCounterStore is asked to peek and add for every level', async (t) => {
  class Watched extends MemoryCounterStore {
    readonly calls: string[] = [];
    override peek(key: string, windowMs: number, now: number): number {
      this.calls.push(`peek ${key}`);
      return super.peek(key, windowMs, now);
    }
    override add(key: string, cost: number, windowMs: number, now: number): number {
      this.calls.push(`add ${key}`);
      return super.add(key, cost, windowMs, now);
    }
  }
  const watched = new Watched(100, 0);
  const { engine } = rig('', {}, false, watched);
  const c = call({ auth: auth({ subscriptionTier: 'Gold', applicationTier: '10PerMin' }) });
  engine.check(c, T0);
  engine.check(c, T0);
  const each = ['peek s|app-1|/pizzashack/1.0.0', 'peek a|app-1|alice', 'add s|app-1|/pizzashack/1.0.0', 'add a|app-1|alice'];
  t.same(watched.calls, [...each, ...each]);
});
