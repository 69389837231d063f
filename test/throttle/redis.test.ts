/**
 * The Redis counter store. Without Redis: a store whose Redis is unreachable keeps counting locally and
 * warns once. With THROUGHWAY_TEST_REDIS_URL (skipped with the reason when unset or unreachable): two
 * stores as two nodes share their counts through batches, within the documented overshoot bound.
 */
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { RedisCounterStore } from '../../lib/throttle/redis';
import { BlockingConditions } from '../../lib/throttle/blocking';
import { ThrottleEngine } from '../../lib/throttle/engine';
import { parsePolicies } from '../../lib/throttle/policies';
import { closedPort, memoryLogger } from '../gateway/helpers';
import { auth, call } from './helpers';

const T0 = 1_800_000_000_000;

/** The machine's Redis (THROUGHWAY_TEST_REDIS_URL) and a connection to inspect it; undefined after a skip with the reason printed. */
async function sharedRedis(t: Test): Promise<{ url: string; probe: Redis } | undefined> {
  const url = process.env.THROUGHWAY_TEST_REDIS_URL;
  if (url === undefined || url === '') {
    t.skip('THROUGHWAY_TEST_REDIS_URL is not set', () => undefined);
    return undefined;
  }
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    t.skip(`Redis at ${url} is unreachable: ${(err as Error).message}`, () => undefined);
    probe.disconnect();
    return undefined;
  }
  return { url, probe };
}

t.test('Redis unreachable: decisions go on with local counts, one warning', async (t) => {
  const logger = memoryLogger();
  const s = new RedisCounterStore({
    url: `redis://127.0.0.1:${await closedPort()}`,
    syncInterval: 10_000,
    maxCounters: 100,
    publish: true,
    read: true,
    persistence: false,
    logger,
    clock: () => T0,
  });
  t.teardown(() => s.close());
  t.equal(s.add('k', 1, 60_000, T0), 1);
  t.equal(s.add('k', 2, 60_000, T0), 3);
  await s.sync();
  await s.sync();
  t.equal(s.peek('k', 60_000, T0), 3, 'the unsent counts are kept');
  t.same(
    logger.lines.filter((l) => String(l.event).startsWith('throttle_redis')).map((l) => l.event),
    ['throttle_redis_unavailable'],
    'warned once',
  );
});

t.test('two nodes share counts through Redis', async (t) => {
  const redis = await sharedRedis(t);
  if (redis === undefined) return;
  const { url, probe } = redis;
  const prefix = `tw:test:${process.pid}:${Date.now()}:`;
  t.teardown(async () => {
    const keys = await probe.keys(`${prefix}*`);
    if (keys.length > 0) await probe.del(...keys);
    probe.disconnect();
  });
  const logger = memoryLogger();
  const now = Date.now();
  const opts = {
    url,
    syncInterval: 60_000,
    maxCounters: 1000,
    publish: true,
    read: true,
    persistence: false,
    logger,
    prefix,
    clock: () => now,
  };
  const a = new RedisCounterStore(opts);
  const b = new RedisCounterStore(opts);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  t.ok((await a.ready(5000)) && (await b.ready(5000)), 'both connected');
  a.add('k', 5, 60_000, now);
  await a.sync();
  t.equal(b.peek('k', 60_000, now), 0, 'b has not synchronised yet');
  b.add('k', 1, 60_000, now);
  await b.sync();
  t.equal(b.peek('k', 60_000, now), 6, "b sees a's five and its own one");
  t.equal(a.peek('k', 60_000, now), 5, 'a before its next batch: its own five');
  await a.sync();
  t.equal(a.peek('k', 60_000, now), 6, "a sees b's one");
  const fresh = new RedisCounterStore(opts);
  t.teardown(() => fresh.close());
  t.ok(await fresh.ready(5000));
  t.equal(fresh.peek('k', 60_000, now), 0, 'a third node that has not counted the key');
  await fresh.sync();
  t.equal(fresh.peek('k', 60_000, now), 6, 'reads the shared total at its next batch');
  const ttl = await probe.pttl(`${prefix}k@${now - (now % 60_000)}`);
  t.ok(ttl > 0 && ttl <= 60_000, `the window key expires with the window (${ttl} ms)`);

  // Two engines, limit 10, each sees the other only through batches: the overshoot stays within the bound.
  const policies = parsePolicies('[[subscription]]\nname = "Ten"\nrequest_count = 10\n', '').policies!;
  const ea = new ThrottleEngine({
    policies,
    counters: a,
    blocking: new BlockingConditions(),
    switches: { headerConditions: false, queryConditions: false, claimConditions: false },
    blockingEnabled: true,
  });
  const eb = new ThrottleEngine({
    policies,
    counters: b,
    blocking: new BlockingConditions(),
    switches: { headerConditions: false, queryConditions: false, claimConditions: false },
    blockingEnabled: true,
  });
  const c = call({ auth: auth({ subscriptionTier: 'Ten', applicationId: `app-${Date.now()}` }) });
  let allowed = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 3; i++) if (ea.check(c, now).code === 0) allowed++;
    for (let i = 0; i < 3; i++) if (eb.check(c, now).code === 0) allowed++;
    await a.sync();
    await b.sync();
  }
  t.ok(allowed >= 10 && allowed <= 13, `10 allowed plus at most one batch of the other node (3): ${allowed}`);
});

t.test("the others' calls are predicted between batches, and counters near the limit are read back unused", async (t) => {
  const redis = await sharedRedis(t);
  if (redis === undefined) return;
  const { url, probe } = redis;
  const prefix = `tw:test:share:${process.pid}:${Date.now()}:`;
  t.teardown(async () => {
    const keys = await probe.keys(`${prefix}*`);
    if (keys.length > 0) await probe.del(...keys);
    probe.disconnect();
  });
  const now = Date.now();
  const opts = {
    url,
    syncInterval: 60_000,
    maxCounters: 1000,
    publish: true,
    read: true,
    persistence: false,
    logger: memoryLogger(),
    prefix,
    clock: () => now,
  };
  const a = new RedisCounterStore(opts);
  const b = new RedisCounterStore(opts);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  t.ok((await a.ready(5000)) && (await b.ready(5000)), 'both connected');
  await a.heartbeat();
  await b.heartbeat();
  await a.heartbeat();
  t.same([a.nodes, b.nodes], [2, 2], 'each node counts the nodes registered under its prefix');

  // Before either has read the other's counts, each weighs its own calls twice: 5 + 5 of a limit of 10.
  const admit = (s: RedisCounterStore, key: string, limit: number, n: number): number => {
    let ok = 0;
    for (let i = 0; i < n; i++) {
      if (s.peek(key, 60_000, now) >= limit) continue;
      s.add(key, 1, 60_000, now, limit);
      ok++;
    }
    return ok;
  };
  t.equal(admit(a, 'burst', 10, 8) + admit(b, 'burst', 10, 8), 10, 'a burst reaching both before any batch: 10 of 10 admitted, not 16');
  await a.sync();
  await b.sync();
  await a.sync();
  t.equal(Number(await probe.get(`${prefix}burst@${now - (now % 60_000)}`)), 10, 'Redis holds the 10');

  // The share is learned: b made 3 calls per call of a in the last interval, so a predicts them.
  // (Each interval: b's batch first, then a's, so a's reply holds exactly b's calls of that interval.)
  admit(a, 'learn', 1000, 2);
  admit(b, 'learn', 1000, 2);
  await b.sync();
  await a.sync();
  admit(a, 'learn', 1000, 1);
  admit(b, 'learn', 1000, 3);
  await b.sync();
  await a.sync();
  t.equal(a.peek('learn', 60_000, now), 8, 'a knows the total (8)');
  admit(a, 'learn', 1000, 1);
  t.equal(a.peek('learn', 60_000, now), 8 + 1 * (1 + 3), 'one more call of a counts with the 3 b is predicted to make meanwhile');

  // Near the limit a counter is read back at every batch, used since the last one or not.
  a.add('near', 6, 60_000, now, 10);
  await a.sync();
  b.add('near', 3, 60_000, now, 10);
  await b.sync();
  await a.sync();
  t.equal(a.peek('near', 60_000, now), 9, "a, untouched since its batch at 6 of 10, read b's 3 back");
});

t.test('a gateway with counter_store = "redis" counts through Redis', async (t) => {
  const redis = await sharedRedis(t);
  if (redis === undefined) return;
  const { url, probe } = redis;
  t.teardown(() => probe.disconnect());
  const { BASE_TOML, apiToml, echoBackend, request, roomInWindow, startGateway } = await import('../gateway/helpers');
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const context = `/r${process.pid}x${Date.now()}`;
  const g = await startGateway(`${BASE_TOML}[throughway.throttling]\ncounter_store = "redis"\nredis_url = "${url}"\nsync_interval = 20\n`, {
    a: apiToml({ context, endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]], unauthenticatedPolicy: 'Bronze' }),
  });
  t.ok(g.gw.throttle.counters instanceof RedisCounterStore);
  // Bronze counts per minute and its key expires at the minute's end: the calls and the read stay in one.
  await roomInWindow(10_000);
  for (let i = 0; i < 3; i++) t.equal((await request(g.port, `${context}/1.0.0/r`)).status, 200);
  await g.close();
  const keys = await probe.keys(`tw:thr:u|${context}/1.0.0|*`);
  t.equal(keys.length, 1, 'one shared counter: the per-IP subscription key of this API');
  t.equal(await probe.get(keys[0] as string), '3', 'holding the three calls');
  await probe.del(...keys);
});
