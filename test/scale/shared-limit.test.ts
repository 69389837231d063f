/**
 * One limit across two gateway processes (docs/scale-out.md, : "a limit of 100/min is enforced across both
 * gateways within the stated overshoot"): one api-key-manager process, two gateway-worker processes, all
 * with `[throughway.throttling] counter_store = "redis"` on THROUGHWAY_TEST_REDIS_URL (skipped with the
 * reason when unset or unreachable).
 *
 * The limit is an API-level advanced policy of 100 per minute (fault 900800) on an open API
 * (`auth = "none"`, `unauthenticated_policy = "Unlimited"`): its counter is keyed by the API alone
 * (`p|<context>/<version>`, lib/throttle/engine.ts), so every call of both gateways counts against the
 * same shared counter and no token, application or client IP takes part. A subscription tier would need
 * tokens from the key manager and count per application: more moving parts for the same counter logic.
 * The store's key prefix is not configurable (lib/throttle/index.ts), so each run uses fresh API
 * contexts: its Redis keys are its own.
 *
 * Overshoot bound (lib/throttle/redis.ts, docs/throttling.md): with K nodes a limit N is exceeded by at
 * most (K - 1) x (calls one node admits while its view is stale: sync_interval + RTT), and never by more
 * than (K - 1) x N, since each node counts its own calls exactly.
 *
 *  (a) calls alternated between the gateways, one at a time; near the limit each call waits until both
 *      gateways know the total (`settled` below): exactly N. A counter at half its limit or more is read
 *      back at every batch, used or not since the last one (lib/throttle/redis.ts), so each decision knows
 *      every call before it. (Before that rule the measured result was N + 1: a node read a counter back
 *      only in the batch after it used it, and missed the other gateway's call since.) The wait is observed,
 *      not timed: a fixed 200 ms pause once fell short under a loaded suite (a batch came back late, the
 *      node still predicted the other's calls, and refused a call near the 91st).
 *  (b) 300 calls at once, 150 at each gateway: N <= allowed <= N + (K - 1) x N; the refused ones answer
 *      429 900800 with Retry-After; Redis holds the allowed total; the measured overshoot is printed. The
 *      time term of the bound is a rate (a timing on a shared machine), so only the cap is asserted. The
 *      burst reaches each gateway before its first read of the counter comes back; until that read each
 *      gateway predicts the others' calls (lib/throttle/redis.ts), so together they admit about N in that time.
 *      Measured: 26 to 99 over the limit in six runs (72 to 99 before the prediction); the figure is printed.
 *      Calls one at a time after the burst, each waiting as in (a), are admitted up to N in all.
 *  (c) the same two gateways with counter_store = "memory": each admits N of its own, 200 in all: the
 *      shared store is what enforces the limit across them.
 *
 * "Both gateways know the total" is read off Redis itself: MONITOR lists the commands in the order Redis
 * ran them, with each client's address. The test reads the counter with GETRANGE (a command the gateways
 * never send), so its place in that list marks the moment Redis held the expected total; a node starts a
 * batch only once the last batch's replies are applied (`syncing` in lib/throttle/redis.ts), so its second
 * GET or INCRBY on the key after that mark proves its view holds the total.
 *
 * Windows are fixed minutes aligned to the epoch: the cases start only when at least 25 s of the current
 * minute remain.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Redis } from 'ioredis';
import t from 'tap';
import { echoBackend, roomInWindow, sleep, until } from '../gateway/helpers';
import { baseOffset, nodeToml, redisReachable, spawnNode, started, type Proc } from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;
const N = 100;
const K = 2;
/** ms; small so that case (b) runs on views a few ms old. */
const SYNC_INTERVAL = 20;
/** The longest wait for both gateways to learn a total: generous, the machine is shared. */
const SETTLE_MS = 20_000;
const THROTTLED_OUT = '900800';

const repoRoot = path.join(__dirname, '..', '..', '..');

/** The default policies plus an API tier of N per minute. */
function policiesFile(dir: string): string {
  const file = path.join(dir, 'policies.toml');
  const defaults = fs.readFileSync(path.join(repoRoot, 'conf', 'policies.toml'), 'utf8');
  fs.writeFileSync(file, `${defaults}\n[[api]]\nname = "Hundred"\nrequest_count = ${N}\nunit_time = 1\ntime_unit = "min"\n`);
  return file;
}

function openApi(context: string, backend: number): string {
  return `name = "Lim${context.replace(/\W/g, '')}"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\nunauthenticated_policy = "Unlimited"\npolicy = "Hundred"\n[endpoints]\nproduction = "http://127.0.0.1:${backend}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

interface Outcome {
  readonly status: number;
  /** The fault code of a refusal ("-" for none). */
  readonly code: string;
  readonly retryAfter: string | null;
}

async function call(port: number, context: string): Promise<Outcome> {
  const res = await fetch(`http://127.0.0.1:${port}${context}/1.0.0/x`);
  const text = await res.text();
  return { status: res.status, code: /"code":(\d+)/.exec(text)?.[1] ?? '-', retryAfter: res.headers.get('retry-after') };
}

/** A command Redis ran on one of the run's counter keys, as MONITOR reports it. */
interface Ran {
  readonly cmd: string;
  readonly key: string;
  /** The client's address (ip:port): one per gateway's counter connection. */
  readonly source: string;
}

/** Redis's MONITOR stream, kept for the keys under `tw:thr:p|` of this run's contexts. */
interface Watch {
  readonly ran: Ran[];
  close(): void;
}

async function watchRedis(url: string, marker: string): Promise<Watch> {
  const conn = new Redis(url, { maxRetriesPerRequest: 1 });
  const monitor = await conn.monitor();
  const ran: Ran[] = [];
  monitor.on('monitor', (_time: string, args: unknown[], source: string) => {
    const key = args[1];
    if (typeof key === 'string' && key.includes(marker)) ran.push({ cmd: String(args[0]).toLowerCase(), key, source });
  });
  return {
    ran,
    close: () => {
      monitor.disconnect();
      conn.disconnect();
    },
  };
}

/**
 * Waits until Redis holds `expected` calls for the API at `context` and each of the `nodes` gateways that
 * count it has run two batches on its key since (see the header). Resolves with a reason when it does not
 * happen within SETTLE_MS, or undefined.
 */
async function settled(watch: Watch, probe: Redis, context: string, expected: number, nodes: number): Promise<string | undefined> {
  const end = Date.now() + SETTLE_MS;
  const prefix = `tw:thr:p|${context}/`;
  let mark = -1;
  let last = 'no key';
  while (mark < 0 && Date.now() < end) {
    const keys = await probe.keys(`${prefix}*`);
    if (keys.length === 1) {
      const key = keys[0] as string;
      const from = watch.ran.length;
      const value = await probe.getrange(key, 0, -1);
      last = `${key} = ${value}`;
      if (Number(value) === expected) {
        // The probe's GETRANGE reaches the monitor's stream a moment after its reply.
        const mine = (): number => {
          for (let i = from; i < watch.ran.length; i++) if (watch.ran[i]?.cmd === 'getrange' && watch.ran[i]?.key === key) return i;
          return -1;
        };
        await until(() => mine() >= 0, 2000, 2);
        mark = mine();
      }
    } else last = `${keys.length} keys`;
    if (mark < 0) await sleep(5);
  }
  if (mark < 0) return `Redis did not reach ${expected} in ${SETTLE_MS} ms (${last})`;
  // One GET or INCRBY per key per batch (PEXPIRE rides with INCRBY).
  const isBatch = (r: Ran): boolean => r.key.startsWith(prefix) && (r.cmd === 'get' || r.cmd === 'incrby');
  const batches = (source: string): number => watch.ran.slice(mark + 1).filter((r) => r.source === source && isBatch(r)).length;
  const sources = (): string[] => [...new Set(watch.ran.filter(isBatch).map((r) => r.source))];
  const ok = await until(() => sources().length >= nodes && sources().every((s) => batches(s) >= 2), Math.max(0, end - Date.now()), 2);
  return ok
    ? undefined
    : `the gateways' batches on ${prefix} since the total: ${
        sources()
          .map((s) => `${s} ${batches(s)}`)
          .join(', ') || 'none'
      }`;
}

/** Fires `each` calls at every port at once. */
async function burst(ports: readonly number[], context: string, each: number): Promise<Outcome[]> {
  return Promise.all(ports.flatMap((p) => Array.from({ length: each }, () => call(p, context))));
}

t.test('a limit of 100/min across two gateway processes sharing Redis counters', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const run = `${process.pid}x${Date.now().toString(36)}`;
  const ctx = { a: `/lim${run}a`, b: `/lim${run}b`, c: `/lim${run}c` };
  const channel = `tw-test-limit-${run}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-limit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const policies = policiesFile(dir);
  const throttling = (store: string): string =>
    `[throughway.throttling]\ncounter_store = "${store}"\nredis_url = "${redis}"\nsync_interval = ${SYNC_INTERVAL}\npolicies_file = "${policies}"\n`;
  const apis = { 'a.toml': openApi(ctx.a, backend.port), 'b.toml': openApi(ctx.b, backend.port), 'c.toml': openApi(ctx.c, backend.port) };

  // Node j of attempt a: the offsets of salts 50 + 2a (four nodes) and 51 + 2a (the fifth). Other tests
  // and other checkouts share this machine's ports: a node whose port is taken (EADDRINUSE) exits, and
  // is started again on the next attempt's offset.
  const offsetOf = (j: number, a: number): number => (j < 4 ? baseOffset(50 + 2 * a) + j : baseOffset(51 + 2 * a));
  const up = async (j: number, what: string, marker: RegExp, make: (offset: number) => Proc): Promise<number> => {
    for (let a = 0; ; a++) {
      const p = make(offsetOf(j, a));
      t.teardown(() => p.stop());
      if (await started(p, marker)) return offsetOf(j, a);
      const taken = p.child.exitCode !== null && /EADDRINUSE/.test(p.err);
      if (!taken || a >= 2) {
        t.fail(`${what} did not start:\n${p.out}\n${p.err}`);
        return -1;
      }
      t.comment(`${what}: a port of offset ${offsetOf(j, a)} is taken; another offset`);
      await p.stop();
    }
  };
  const kmOffset = await up(0, 'key manager', /Key manager: /, (offset) =>
    spawnNode(nodeToml({ offset, role: 'api-key-manager', channel, redis, extra: throttling('redis') }), apis),
  );
  if (kmOffset < 0) return;
  const kmPort = 9763 + kmOffset;
  // Two gateways counting in Redis, and two more counting in memory (case c), started at once.
  const gateway = (j: number, store: string): Promise<number> =>
    up(j, `gateway-worker (${store})`, /APIs: 3 deployed/, (offset) =>
      spawnNode(nodeToml({ offset, role: 'gateway-worker', channel, redis, km: kmPort, extra: throttling(store) }), apis),
    );
  const offsets = await Promise.all([gateway(1, 'redis'), gateway(2, 'redis'), gateway(3, 'memory'), gateway(4, 'memory')]);
  if (offsets.includes(-1)) return;
  const [r1, r2, m1, m2] = offsets.map((o) => 8280 + o) as [number, number, number, number];

  const watch = await watchRedis(redis, `p|/lim${run}`);
  t.teardown(() => watch.close());
  const probe = new Redis(redis, { maxRetriesPerRequest: 1 });
  t.teardown(() => probe.disconnect());
  const allowedOf = (seq: readonly Outcome[]): number => seq.filter((o) => o.status === 200).length;

  await roomInWindow(25_000);

  await t.test('(a) sequential calls alternating between the gateways: exactly N', async (t) => {
    const seq: Outcome[] = [];
    // Far from the limit the views' age does not matter: the first 90 calls go without pauses.
    for (let i = 0; i < 90; i++) seq.push(await call(i % 2 === 0 ? r1 : r2, ctx.a));
    // Near it, each gateway has sent its calls and read the total back before the next call.
    for (let i = 90; i < N + 8; i++) {
      const late = await settled(watch, probe, ctx.a, allowedOf(seq), K);
      if (late !== undefined) {
        t.fail(`before call ${i + 1}: ${late}`);
        return;
      }
      seq.push(await call(i % 2 === 0 ? r1 : r2, ctx.a));
    }
    const allowed = allowedOf(seq);
    // Near the limit every batch reads the total back, and each call waited until both views held it.
    t.equal(allowed, N, "exactly N allowed: near the limit each decision knows the other gateway's calls");
    t.same(
      seq.slice(0, allowed).map((o) => o.status),
      Array(allowed).fill(200),
      'every call up to the limit was allowed',
    );
    t.same(
      seq.slice(allowed).map((o) => `${o.status} ${o.code}`),
      Array(seq.length - allowed).fill(`429 ${THROTTLED_OUT}`),
      'every later call is refused, at both gateways',
    );
    t.comment(`(a) sequential: ${allowed} allowed of ${seq.length} (limit ${N}, overshoot ${allowed - N})`);
  });

  await t.test('(b) 300 concurrent calls, 150 at each gateway: within the stated overshoot', async (t) => {
    const all = await burst([r1, r2], ctx.b, 150);
    const allowed = all.filter((o) => o.status === 200).length;
    const refused = all.filter((o) => o.status !== 200);
    // Overshoot <= (K - 1) x (calls one node admits in sync_interval + RTT) <= (K - 1) x N: the first
    // term is a rate (a timing), so the assertion uses the cap it can never pass, each node counting its
    // own calls exactly; the measured overshoot is printed.
    const bound = (K - 1) * N;
    t.ok(allowed <= N + bound, `allowed ${allowed} <= N + (K - 1) x N = ${N + bound}`);
    t.same(
      [...new Set(refused.map((o) => `${o.status} ${o.code}`))],
      [`429 ${THROTTLED_OUT}`],
      'the refused calls are 429 with the API-level code',
    );
    t.ok(
      refused.every((o) => o.retryAfter !== null && Number(o.retryAfter) >= 0 && Number(o.retryAfter) <= 60),
      'each refusal carries Retry-After (seconds to the end of the minute)',
    );
    // Between batches a node predicts the other's calls from the share it learned (lib/throttle/redis.ts):
    // on a loaded machine the burst's two halves do not run at the rates learned in (a), and a node may
    // refuse early (87 of 100 measured at load average 25). That is a transient: once both have read the
    // total back, calls are admitted again until the shared total reaches N, and never past the bound.
    const more: Outcome[] = [];
    for (let i = 0; i < N + 8 && more.filter((o) => o.status !== 200).length < 2; i++) {
      const late = await settled(watch, probe, ctx.b, allowed + allowedOf(more), K);
      if (late !== undefined) {
        t.fail(`before call ${i + 1} after the burst: ${late}`);
        return;
      }
      more.push(await call(i % 2 === 0 ? r1 : r2, ctx.b));
    }
    const total = allowed + allowedOf(more);
    t.ok(total >= N, `the burst and the calls after it were admitted up to the limit (${allowed} + ${total - allowed} >= ${N})`);
    t.ok(total <= N + bound, `and never past the bound (${total} <= ${N + bound})`);
    // Both gateways sent their counts: Redis holds the allowed total, and both now refuse.
    const late = await settled(watch, probe, ctx.b, total, K);
    t.equal(late, undefined, 'both gateways sent their counts and read the total back');
    const keys = await probe.keys(`tw:thr:p|${ctx.b}/*`);
    t.equal(keys.length, 1, `one shared counter in Redis: ${keys.join(', ')}`);
    t.equal(Number(await probe.get(keys[0] as string)), total, 'its total is the calls allowed at both gateways');
    t.same(
      [`${(await call(r1, ctx.b)).status}`, `${(await call(r2, ctx.b)).status}`],
      ['429', '429'],
      'both gateways refuse the next call',
    );
    // The overshoot is the calls a gateway admitted on a stale view with a wrong prediction of the
    // other's calls (lib/throttle/redis.ts): the bound's time term.
    t.comment(
      `(b) concurrent: ${allowed} allowed of ${all.length} (limit ${N}, measured overshoot ${allowed - N}, bound ${bound}; sync_interval ${SYNC_INTERVAL} ms)`,
    );
  });

  await t.test('(c) the same with counter_store = "memory": each gateway admits N, 2N in all', async (t) => {
    const all = await burst([m1, m2], ctx.c, 150);
    const allowed = all.filter((o) => o.status === 200).length;
    t.equal(allowed, K * N, 'each gateway counts alone: K x N allowed');
    t.comment(`(c) memory: ${allowed} allowed of ${all.length}`);
  });
});
