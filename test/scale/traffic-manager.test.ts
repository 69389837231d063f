/**
 * Throttle decisions across processes (docs/scale-out.md: a `traffic-manager` publishes decisions; spec 002
 * part 6): one traffic-manager process (also the gateways' control plane) and two gateway-worker processes
 * with `counter_store = "traffic-manager"`, real Redis (THROUGHWAY_TEST_REDIS_URL; skipped with the reason
 * when unset or unreachable).
 *
 *  - an API-level policy of 100 per minute on an open resource, calls spread over both gateways: at least
 *    100 and at most 100 + what the gateways admitted between the limit-th call and the decision (one sync
 *    interval + one round trip; docs/throttling.md) are allowed, far below the 200 of two nodes counting
 *    alone; the others are 429 with 900800; the traffic manager's /metrics counts the decision;
 *  - the traffic manager stopped: both gateways keep serving on their own exact counts (100 each, then
 *    900800), log the outage once, and their health check says so;
 *  - in one process, on a private redis-server: the gateway store and the traffic manager started while
 *    Redis is away count and wait, warn once each, report DOWN, and work once Redis is there.
 *
 * Windows are fixed minutes aligned to the epoch: each part starts in a minute with at least 25 s left.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { Redis } from 'ioredis';
import { echoBackend, memoryLogger, until } from '../gateway/helpers';
import { baseOffset, http, nodeToml, ownRedisOrSkip, redisReachable, spawnNode, started } from './helpers';
import { DecisionCounterStore, decodeDecisions, throttleChannels, type Decision } from '../../lib/throttle/decisions';
import { TrafficManager } from '../../lib/scale/traffic-manager';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;
const MIN = 60_000;
const SYNC = 100;
/** ms between two calls of one gateway's client: 200 calls/s over both, so the overshoot stays readable. */
const PACE = 8;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits for the next minute when fewer than `left` ms remain in this one. */
async function freshWindow(left = 25_000): Promise<void> {
  const rest = MIN - (Date.now() % MIN);
  if (rest < left) await sleep(rest + 250);
}

function openApi(context: string, endpoint: string): string {
  return `name = "Open${context.slice(1)}"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\npolicy = "Hundred"\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

interface Outcome {
  readonly gateway: number;
  readonly sentAt: number;
  readonly doneAt: number;
  readonly status: number;
  readonly code: string;
}

async function hit(port: number, p: string, gateway: number): Promise<Outcome> {
  const sentAt = Date.now();
  const r = await http(`http://127.0.0.1:${port}${p}`);
  return { gateway, sentAt, doneAt: Date.now(), status: r.status, code: /\b(9\d{5})\b/.exec(r.text)?.[1] ?? '-' };
}

/** One client per gateway, one call in flight, PACE ms apart, until it has seen `refusals` refusals (at most `max` calls). */
async function load(ports: readonly number[], p: string, refusals: number, max: number): Promise<Outcome[]> {
  const all: Outcome[] = [];
  await Promise.all(
    ports.map(async (port, g) => {
      let refused = 0;
      for (let i = 0; i < max && refused < refusals; i++) {
        const started = Date.now();
        const o = await hit(port, p, g);
        all.push(o);
        if (o.status !== 200) refused++;
        const wait = PACE - (Date.now() - started);
        if (wait > 0) await sleep(wait);
      }
    }),
  );
  return all.sort((a, b) => a.doneAt - b.doneAt);
}

t.test("a traffic manager sums two gateways' counts and its decisions hold them to the limit", async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const channel = `tw-test-tm-${process.pid}-${Date.now()}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tm-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const policies = path.join(dir, 'policies.toml');
  fs.writeFileSync(
    policies,
    '[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[api]]\nname = "Hundred"\nrequest_count = 100\nunit_time = 1\ntime_unit = "min"\n',
  );

  // Our own view of the decision channel: when the decision went out, and what it said.
  const watch = new Redis(redis);
  t.teardown(() => watch.disconnect());
  const decisions: { at: number; d: Decision }[] = [];
  watch.on('message', (_c: string, m: string) => {
    for (const d of decodeDecisions(m) ?? []) decisions.push({ at: Date.now(), d });
  });
  await watch.subscribe(`${channel}:throttleData`);

  const base = baseOffset(40);
  const kmPort = 9763 + base;
  const apis = {
    'one.toml': openApi('/one', `http://127.0.0.1:${backend.port}`),
    'two.toml': openApi('/two', `http://127.0.0.1:${backend.port}`),
  };
  const throttling = `[throughway.throttling]\ncounter_store = "traffic-manager"\nsync_interval = ${SYNC}\npolicies_file = "${policies}"\n`;
  const tm = spawnNode(nodeToml({ offset: base, role: 'traffic-manager', channel, redis, extra: throttling }), apis);
  t.teardown(() => tm.stop());
  t.ok(await started(tm, /the gateway does not run for role traffic-manager/), `${tm.out}\n${tm.err}`);
  t.match(tm.out, new RegExp(`throttle decisions\\s+\\S+: data from ${channel}:throttleRequests, decisions on ${channel}:throttleData`));
  const ports: number[] = [];
  const gws = [1, 2].map((i) => {
    const gw = spawnNode(nodeToml({ offset: base + i, role: 'gateway-worker', channel, redis, km: kmPort, extra: throttling }), apis);
    t.teardown(() => gw.stop());
    ports.push(8280 + base + i);
    return gw;
  });
  for (const gw of gws) {
    t.ok(await started(gw, /APIs: 2 deployed/), `${gw.out}\n${gw.err}`);
    t.match(
      gw.out,
      new RegExp(
        `throttle decisions\\s+\\S+: data to ${channel}:throttleRequests every ${SYNC} ms, decisions from ${channel}:throttleData`,
      ),
    );
  }
  // Both gateways' heartbeats reach the traffic manager: their health checks are UP.
  for (const i of [1, 2])
    t.ok(
      await until(
        async () =>
          /"name":"throttle_decisions","order":\d+,"status":"UP"/.test((await http(`http://127.0.0.1:${9763 + base + i}/health`)).text),
        5000,
        100,
      ),
      `gateway ${i}: throttle_decisions UP`,
    );

  await freshWindow();
  const out = await load(ports, '/one/1.0.0/x', 5, 150);
  const allowed = out.filter((o) => o.status === 200);
  const refused = out.filter((o) => o.status !== 200);
  const decision = decisions.find((x) => x.d.key === 'p|/one/1.0.0');
  t.ok(decision, 'the traffic manager published a decision for the API-level key');
  const windowStart = (allowed[0]?.sentAt ?? 0) - ((allowed[0]?.sentAt ?? 0) % MIN);
  t.same(decision?.d, { key: 'p|/one/1.0.0', windowStart, until: windowStart + MIN, limit: 100 }, 'for this window, until its end');
  t.equal(decisions.filter((x) => x.d.key === 'p|/one/1.0.0').length, 1, 'once');
  const hundredth = allowed[99];
  const overshoot = allowed.length - 100;
  // What the gateways admitted between the limit-th call and the decision's arrival (+ 100 ms for the
  // gateways' own delivery): the stated bound, counted on this run's calls.
  const decidedAt = decision?.at ?? 0;
  const inBound = hundredth === undefined ? 0 : out.filter((o) => o.sentAt > hundredth.sentAt && o.sentAt <= decidedAt + 100).length;
  t.comment(
    `allowed ${allowed.length} (overshoot ${overshoot}); limit-th call answered at +0 ms, decision seen at +${hundredth === undefined ? '?' : decidedAt - hundredth.doneAt} ms; calls sent meanwhile ${inBound}; per gateway ${[0, 1].map((g) => allowed.filter((o) => o.gateway === g).length).join(' + ')}`,
  );
  t.ok(allowed.length >= 100, `at least the limit is allowed (${allowed.length})`);
  t.ok(
    overshoot <= inBound,
    `the overshoot (${overshoot}) is within what the gateways admitted before the decision arrived (${inBound} calls sent then)`,
  );
  t.ok(allowed.length < 200, `well below the 200 two nodes counting alone admit (${allowed.length})`);
  t.ok(
    allowed.filter((o) => o.gateway === 0).length < 100 && allowed.filter((o) => o.gateway === 1).length < 100,
    'each gateway refused before its own count reached the limit: the decision refused',
  );
  t.ok(refused.length >= 10, 'both clients saw their refusals');
  t.same([...new Set(refused.map((o) => `${o.status} ${o.code}`))], ['429 900800'], 'refused calls are 429 with the API-level code');
  const late = allowed.filter((o) => o.sentAt > decidedAt + 1000);
  t.equal(late.length, 0, 'nothing sent a second after the decision was allowed');
  const metrics = (await http(`http://127.0.0.1:${kmPort}/metrics`)).text;
  t.match(metrics, /throughway_traffic_manager_decisions_total 1\b/);
  const counted = Number(/throughway_traffic_manager_counts_total (\d+)/.exec(metrics)?.[1] ?? -1);
  t.ok(
    counted >= allowed.length - 2 * 10 && counted <= allowed.length,
    `the traffic manager summed the gateways' counts (${counted} of ${allowed.length} allowed)`,
  );

  // The traffic manager stops: the gateways keep serving on their own exact counts.
  t.equal(await tm.stop(), 0, 'the traffic manager stopped');
  for (const [i, gw] of gws.entries()) {
    t.ok(
      await until(
        async () =>
          /"name":"throttle_decisions","order":\d+,"status":"DOWN","message":"no traffic manager receives the throttle data/.test(
            (await http(`http://127.0.0.1:${9763 + base + i + 1}/health`)).text,
          ),
        5000,
        100,
      ),
      `gateway ${i + 1}: throttle_decisions DOWN`,
    );
    t.equal(gw.err.split('throttle_traffic_manager_unavailable').length - 1, 1, `gateway ${i + 1} logged the outage once`);
  }
  await freshWindow();
  const alone = await load(ports, '/two/1.0.0/x', 1, 130);
  for (const g of [0, 1]) {
    const mine = alone.filter((o) => o.gateway === g);
    t.equal(mine.filter((o) => o.status === 200).length, 100, `gateway ${g + 1} alone: exactly its own 100`);
    t.same(
      mine.filter((o) => o.status !== 200).map((o) => `${o.status} ${o.code}`),
      ['429 900800'],
      'then refused on its own count',
    );
  }
  await sleep(2 * SYNC);
  t.equal(gws[0]?.err.split('throttle_traffic_manager_unavailable').length, 2, 'still one warning for the whole outage');
});

t.test('Redis away at the start and in the middle: the store and the traffic manager wait, warn once, and resume', async (t) => {
  const own = await ownRedisOrSkip(t);
  if (own === undefined) return;
  await own.stop();
  const channels = throttleChannels(`tw-test-tm-own-${process.pid}`);
  const tmLog = memoryLogger();
  const gwLog = memoryLogger();
  const tm = new TrafficManager({ url: own.url, channels, maxKeys: 1000, reconnectMin: 50, reconnectMax: 200, logger: tmLog });
  t.teardown(() => tm.close());
  await tm.start(300);
  t.notOk(tm.connected, 'started while Redis is away');
  t.equal((await tm.checker(99).check()).healthy, false, 'its health checker says so');
  const store = new DecisionCounterStore({
    maxCounters: 1000,
    link: { url: own.url, channels, publish: true, subscribe: true, syncInterval: 50, logger: gwLog },
  });
  t.teardown(() => store.close());
  const now = Date.now();
  t.equal(store.add('k', 5, MIN, now, 5), 5, 'counting goes on without Redis');
  t.equal(store.peek('k', MIN, now), 5, 'on the local count: no refusal because Redis is away');
  await sleep(300);
  t.equal((await store.checker(0).check()).healthy, false, "the gateway store's health checker is DOWN");
  t.equal(gwLog.lines.filter((l) => l.event === 'throttle_decisions_unavailable').length, 1, 'the gateway store warned once');
  t.equal(tmLog.lines.filter((l) => l.event === 'traffic_manager_unavailable').length, 1, 'the traffic manager warned once');

  await own.start();
  t.ok(await until(() => tm.connected, 5000, 50), 'the traffic manager reconnects');
  t.ok(
    await until(async () => (await store.checker(0).check()).healthy, 5000, 50),
    'the gateway store is UP again (a heartbeat reached the traffic manager)',
  );
  // Counts of the outage were not sent; a new call in this window is, and the total reaches the limit of 5.
  const w = Date.now();
  store.add('j', 5, MIN, w, 5);
  t.ok(
    await until(() => store.peek('j', MIN, Date.now()) >= 5 && store.held === 1, 3000, 20),
    'the traffic manager subscribed late and its decision arrived',
  );
  t.equal(tm.aggregator.decisions, 1);
  t.equal(gwLog.lines.filter((l) => l.event === 'throttle_decisions_reconnected').length, 1);
});
