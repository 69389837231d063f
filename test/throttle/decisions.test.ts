/**
 * Throttle decisions (counter_store = "traffic-manager"; lib/throttle/decisions.ts, lib/scale/traffic-manager.ts)
 * without Redis, with a fake clock: the gateway store's batches and decisions, the traffic manager's sums,
 * and two engines exchanging batches through one aggregator within the stated overshoot bound. The store
 * and the aggregator over real Redis: test/scale/traffic-manager.test.ts.
 */
import t from 'tap';
import { BlockingConditions } from '../../lib/throttle/blocking';
import { decodeData, decodeDecisions, DecisionCounterStore, encodeData, encodeDecisions } from '../../lib/throttle/decisions';
import { ThrottleEngine } from '../../lib/throttle/engine';
import { parsePolicies } from '../../lib/throttle/policies';
import { DecisionAggregator } from '../../lib/scale/traffic-manager';
import { loadConfig } from '../../lib/config/load';
import { call } from './helpers';

const MIN = 60_000;
const T0 = 1_800_000_000_000; // a multiple of a minute: the window [T0, T0 + 1 min)

t.test('the gateway store counts exactly and batches what it counted since the last batch', async (t) => {
  const s = new DecisionCounterStore({ maxCounters: 100, clock: () => T0 });
  t.teardown(() => s.close());
  t.equal(s.add('k', 1, MIN, T0 + 10, 100), 1);
  t.equal(s.add('k', 2, MIN, T0 + 20, 100), 3);
  s.add('j', 5, 1000, T0 + 20, 7);
  t.same(s.takeBatch(T0 + 30), [
    { key: 'k', windowStart: T0, windowMs: MIN, count: 3, limit: 100 },
    { key: 'j', windowStart: T0, windowMs: 1000, count: 5, limit: 7 },
  ]);
  t.same(s.takeBatch(T0 + 40), [], 'nothing new: an empty batch');
  t.equal(s.peek('k', MIN, T0 + 40), 3, 'the local count stays');
  s.add('k', 1, MIN, T0 + 50, 120);
  t.same(
    s.takeBatch(T0 + 60),
    [{ key: 'k', windowStart: T0, windowMs: MIN, count: 1, limit: 120 }],
    'only the new call, with the limit applied to it',
  );
  s.add('k', 4, MIN, T0 + MIN + 5, 100);
  t.same(
    s.takeBatch(T0 + MIN + 6),
    [{ key: 'k', windowStart: T0 + MIN, windowMs: MIN, count: 4, limit: 100 }],
    'the next window starts from its own calls',
  );
  t.equal(s.peek('k', MIN, T0 + MIN + 6), 4);
});

t.test('a decision refuses its key in its window until `until`, and nothing else', async (t) => {
  const s = new DecisionCounterStore({ maxCounters: 100 });
  t.teardown(() => s.close());
  s.add('k', 3, MIN, T0 + 1);
  s.decide({ key: 'k', windowStart: T0, until: T0 + MIN, limit: 100 }, T0 + 2);
  t.equal(s.peek('k', MIN, T0 + 3), 100, 'at least the limit while the decision holds');
  t.equal(s.peek('other', MIN, T0 + 3), 0, 'another key is not refused');
  t.equal(s.peek('k', MIN, T0 + MIN - 1), 100, 'until the last millisecond before `until`');
  t.equal(s.peek('k', MIN, T0 + MIN), 0, 'expired at `until`: the new window counts from zero');
  t.equal(s.held, 0, 'and the expired decision is dropped');

  // A decision whose `until` lies beyond the window it names refuses only in that window.
  s.decide({ key: 'x', windowStart: T0 + MIN, until: T0 + 2 * MIN, limit: 10 }, T0 + 5);
  t.equal(s.peek('x', MIN, T0 + 6), 0, 'a decision for another window does not refuse');
  t.equal(s.peek('x', MIN, T0 + MIN + 1), 10, 'it does in its own window');
  s.decide({ key: 'y', windowStart: T0 - MIN, until: T0, limit: 10 }, T0 + 5);
  t.equal(s.held, 1, 'a decision already over when it arrives is not kept');
  s.add('z', 50, MIN, T0 + 1);
  s.decide({ key: 'z', windowStart: T0, until: T0 + MIN, limit: 10 }, T0 + 2);
  t.equal(s.peek('z', MIN, T0 + 3), 50, 'a local count above the limit is reported as it is');
});

t.test("the engine refuses a decided key with the level's code and passes the limit to the store", async (t) => {
  const policies = parsePolicies('[[api]]\nname = "Hundred"\nrequest_count = 100\n', 'p.toml').policies!;
  const s = new DecisionCounterStore({ maxCounters: 100 });
  t.teardown(() => s.close());
  const e = new ThrottleEngine({
    policies,
    counters: s,
    blocking: new BlockingConditions(),
    switches: { headerConditions: false, queryConditions: false, claimConditions: false },
    blockingEnabled: true,
  });
  const c = call({ apiPolicy: 'Hundred', unauthenticatedPolicy: 'Unlimited' });
  t.equal(e.check(c, T0 + 1).code, 0);
  const [d] = s.takeBatch(T0 + 2);
  t.same(
    d,
    { key: 'p|/pizzashack/1.0.0', windowStart: T0, windowMs: MIN, count: 1, limit: 100 },
    'the API-level key, its window and the limit applied',
  );
  s.decide({ key: 'p|/pizzashack/1.0.0', windowStart: T0, until: T0 + MIN, limit: 100 }, T0 + 3);
  const v = e.check(c, T0 + 4);
  t.equal(v.code, 900800, 'refused as the API level refuses (900800)');
  t.equal(v.retryAfterMs, MIN - 4, 'until the window ends');
  t.equal(e.check(c, T0 + MIN).code, 0, 'the next window is open again');
});

t.test('the traffic manager sums batches across gateways and decides once per key and window', async (t) => {
  const a = new DecisionAggregator(1000);
  t.same(a.receive([{ key: 'k', windowStart: T0, windowMs: MIN, count: 40, limit: 100 }], T0 + 100), [], 'gateway 1: 40');
  t.same(
    a.receive(
      [
        { key: 'k', windowStart: T0, windowMs: MIN, count: 50, limit: 100 },
        { key: 'j', windowStart: T0, windowMs: MIN, count: 5, limit: 100 },
      ],
      T0 + 150,
    ),
    [],
    'gateway 2: 50',
  );
  t.equal(a.total('k', T0), 90);
  t.same(
    a.receive([{ key: 'k', windowStart: T0, windowMs: MIN, count: 12, limit: 100 }], T0 + 200),
    [{ key: 'k', windowStart: T0, until: T0 + MIN, limit: 100 }],
    'gateway 1 again: 102 >= 100, one decision until the window ends',
  );
  t.same(
    a.receive([{ key: 'k', windowStart: T0, windowMs: MIN, count: 3, limit: 100 }], T0 + 250),
    [],
    'no second decision for the same key and window',
  );
  t.equal(a.total('k', T0), 105, 'counts after the decision are still added up');
  t.same(
    a.receive([{ key: 'k', windowStart: T0 + MIN, windowMs: MIN, count: 100, limit: 100 }], T0 + MIN + 1),
    [{ key: 'k', windowStart: T0 + MIN, until: T0 + 2 * MIN, limit: 100 }],
    'the next window is decided on its own',
  );
  t.same(
    a.receive([{ key: 'q', windowStart: T0, windowMs: MIN, count: 500, limit: 100 }], T0 + MIN + 2),
    [],
    'counts of a window that ended are not counted',
  );
  t.equal(a.late, 500);
  t.equal(a.sweep(T0 + MIN + 3), 2, 'ended windows are swept (k and j of the first minute)');
  t.equal(a.size, 1);
  t.same([a.batches, a.counted, a.decisions], [6, 210, 2]);
});

t.test("the traffic manager's memory is bounded", async (t) => {
  const a = new DecisionAggregator(100);
  for (let i = 0; i < 1000; i++) a.receive([{ key: `k${i}`, windowStart: T0, windowMs: MIN, count: 1, limit: 10 }], T0);
  t.ok(a.size <= 100, `at most 100 windows (${a.size})`);
  t.ok(a.evicted >= 900, 'the oldest were evicted');
});

t.test('two engines through one aggregator: the overshoot stays within one sync interval of calls', async (t) => {
  // The fake network: every "sync interval" each gateway sends its batch; decisions reach both at once.
  const policies = parsePolicies('[[api]]\nname = "Hundred"\nrequest_count = 100\n', 'p.toml').policies!;
  const tm = new DecisionAggregator();
  const stores = [new DecisionCounterStore({ maxCounters: 1000 }), new DecisionCounterStore({ maxCounters: 1000 })];
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  const engines = stores.map(
    (counters) =>
      new ThrottleEngine({
        policies,
        counters,
        blocking: new BlockingConditions(),
        switches: { headerConditions: false, queryConditions: false, claimConditions: false },
        blockingEnabled: true,
      }),
  );
  const c = call({ apiPolicy: 'Hundred', unauthenticatedPolicy: 'Unlimited' });
  const perInterval = 7; // calls each gateway admits per sync interval
  let allowed = 0;
  let now = T0;
  for (let round = 0; round < 40; round++) {
    for (let i = 0; i < perInterval; i++) for (const e of engines) if (e.check(c, now).code === 0) allowed++;
    now += 100;
    const decisions = stores.flatMap((s) => tm.receive(s.takeBatch(now), now));
    // Over the wire and back, as Redis carries them.
    for (const s of stores) for (const d of decodeDecisions(encodeDecisions(decisions)) ?? []) s.decide(d, now);
  }
  const bound = 2 * perInterval;
  t.ok(allowed >= 100 && allowed <= 100 + bound, `100 allowed plus at most what both admit in one interval (${bound}): ${allowed}`);
  t.ok(allowed < 200, 'well below what two nodes counting alone admit (200)');
  t.equal(tm.decisions, 1);
});

t.test('wire formats round-trip and refuse malformed messages', async (t) => {
  const data = [{ key: 'p|/a/1', windowStart: T0, windowMs: MIN, count: 3, limit: 9 }];
  t.same(decodeData(encodeData(data)), data);
  t.same(decodeDecisions(encodeDecisions([{ key: 'k', windowStart: T0, until: T0 + MIN, limit: 9 }])), [
    { key: 'k', windowStart: T0, until: T0 + MIN, limit: 9 },
  ]);
  for (const bad of ['', 'null', '{"d":1}', '{"d":[["k",1,0,1,1]]}', '{"d":[[1,1,1,1,1]]}', '{"d":[["k","1",1,1,1]]}'])
    t.equal(decodeData(bad), undefined, bad);
  t.equal(decodeDecisions('{"d":[["k",1,2]]}'), undefined);
});

t.test('counter_store = "traffic-manager" without a redis:// URL is a configuration error at the key', async (t) => {
  const text = '[server]\nhostname = "localhost"\n[throughway.throttling]\ncounter_store = "traffic-manager"\n';
  const r = loadConfig({ text, file: undefined });
  t.notOk(r.ok);
  const d = r.diagnostics.find((x) => x.code === 'CONFIG_REQUIRED' && x.key === 'throughway.throttling.counter_store');
  t.ok(d, JSON.stringify(r.diagnostics));
  t.equal(d?.line, 4, 'the line of counter_store');
  t.match(d?.message ?? '', /throttle_decision_endpoints/);
  const ok = loadConfig({ text: `${text}[apim.throttling]\nthrottle_decision_endpoints = ["tcp://tm:5672", "redis://127.0.0.1:6379"]\n` });
  t.notOk(
    ok.diagnostics.some((x) => x.key === 'throughway.throttling.counter_store'),
    'a redis:// URL among the JMS ones satisfies it',
  );
  const hub = loadConfig({ text: `${text}[apim.event_hub]\nevent_listening_endpoints = ["redis://127.0.0.1:6379"]\n` });
  t.notOk(
    hub.diagnostics.some((x) => x.key === 'throughway.throttling.counter_store'),
    "so does the event hub's",
  );
});
