/**
 * The leased mode's own rules (lib/throttle/shared.ts; docs/throttling.md, "Counting modes"), on two
 * SharedQuotas over a private redis-server (skipped with the reason when redis-server is missing):
 *  - the block a gateway asks for follows its share of the window's grants;
 *  - unspent quota goes back to Redis when the window ends;
 *  - a Redis that lost its scripts (SCRIPT FLUSH, a restart) still counts: NOSCRIPT falls back to EVAL.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { QuotaLink, type ScriptName } from '../../lib/throttle/quota-link';
import { SharedQuotas, Take } from '../../lib/throttle/shared';
import type { Quota } from '../../lib/throttle/policies';
import { silentLogger } from '../../lib/log';
import { until } from '../gateway/helpers';
import { privateRedis } from './redis-server';

const T0 = 1_800_000_000_000;
const MINUTE = 60_000;

interface Gateway {
  readonly link: QuotaLink;
  readonly sq: SharedQuotas;
  /** The `want` (block) of each lease this gateway asked for, in order. */
  readonly wants: number[];
  /** Names of the scripts it ran. */
  readonly ran: ScriptName[];
}

function gateway(url: string, prefix: string, clock: { now: number }): Gateway {
  const link = new QuotaLink({ url, clusterNodes: [], commandTimeout: 5000, logger: silentLogger, prefix });
  const wants: number[] = [];
  const ran: ScriptName[] = [];
  const run = link.run.bind(link);
  link.run = (name, key, args) => {
    ran.push(name);
    if (name === 'lease') wants.push(Number(args[0]));
    return run(name, key, args);
  };
  return { link, sq: new SharedQuotas({ link, maxCounters: 100, clock: () => clock.now }), wants, ran };
}

/** No lease under way in any window (a prefetch may still be running after the last call). */
function settled(g: Gateway): boolean {
  const map = (g.sq as unknown as { map: Map<string, { leasing: unknown }> }).map;
  return [...map.values()].every((e) => e.leasing === undefined);
}

async function takeMany(g: Gateway, mode: 'exact' | 'leased', key: string, q: Quota, n: number, now: number): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < n; i++) if ((await g.sq.take(mode, key, q, 1, now)) === Take.ADMITTED) admitted++;
  return admitted;
}

t.test('leased: block sizes follow the share, unspent quota goes back at the window end, NOSCRIPT falls back', async (t) => {
  const redis = await privateRedis(t);
  if (redis === undefined) return;
  const clock = { now: T0 + 1000 };
  const a = gateway(redis.url, 'tw:lt:', clock);
  const b = gateway(redis.url, 'tw:lt:', clock);
  t.teardown(async () => {
    await a.sq.close();
    await b.sq.close();
  });
  const probe = new Redis(redis.url);
  t.teardown(() => probe.disconnect());
  t.ok(
    await until(() => a.link.isUp && b.link.isUp && a.link.nodes === 2 && b.link.nodes === 2, 10_000, 20),
    'both gateways up, each seeing 2 members',
  );

  // limit 800 over 2 gateways: the first block is 800 / 2 / 8 = 50.
  const q: Quota = { kind: 'requests', limit: 800, windowMs: MINUTE, counting: 'leased' };
  t.equal(await takeMany(a, 'leased', 'k1', q, 400, clock.now), 400, 'A admitted its 400 calls');
  t.equal(await takeMany(b, 'leased', 'k1', q, 60, clock.now), 60, 'B admitted its 60 calls');
  t.equal(a.wants[0], 50, 'A first asked for the first block, limit / nodes / 8');
  t.equal(b.wants[0], 50, 'B first asked for the first block too');
  const lastA = a.wants[a.wants.length - 1] as number;
  const lastB = b.wants[b.wants.length - 1] as number;
  t.ok(
    lastA > 50 && lastB < 50,
    `A, with most of the window's grants, asks for more than the first block, B less (A ${a.wants.join(',')}; B ${b.wants.join(',')})`,
  );

  // Window end: what A and B hold unspent goes back; the ended window's count falls to what was spent.
  t.ok(await until(() => settled(a) && settled(b), 5000, 10), 'no lease under way');
  const k1 = a.link.key('k1', T0);
  const before = Number(await probe.get(k1));
  t.ok(before > 460, `Redis counts the grants of the window (${before} granted, 460 spent)`);
  clock.now = T0 + MINUTE + 1000;
  t.equal(await a.sq.take('leased', 'k1', q, 1, clock.now), Take.ADMITTED, 'A admits the first call of the next window');
  t.equal(await b.sq.take('leased', 'k1', q, 1, clock.now), Take.ADMITTED, 'B too');
  t.ok(
    await until(async () => Number(await probe.get(k1)) === 460, 5000, 20),
    `the ended window's unspent quota went back: ${Number(await probe.get(k1))} (460 spent)`,
  );

  // The scripts flushed: the next lease and take still count, through EVAL.
  await probe.script('FLUSH');
  const q2: Quota = { kind: 'requests', limit: 5, windowMs: MINUTE, counting: 'exact' };
  t.equal(await takeMany(a, 'exact', 'k2', q2, 7, clock.now), 5, 'exact after SCRIPT FLUSH: exactly the limit admitted');
  t.equal(Number(await probe.get(a.link.key('k2', T0 + MINUTE))), 5, 'and counted in Redis');
  t.ok(a.ran.filter((n) => n === 'take').length >= 7, 'each call ran the take script');
});
