/**
 * `npm run soak` (not in CI): the reliability soak of docs/performance.md ("Reliability (soak)").
 *
 *   npm run soak -- [--requests 1000000] [--idle 10000] [--seconds 0] [--concurrency 64]
 *
 * About a million requests through the full gateway (bench/soak-gateway.ts, a child process) over
 * keep-alive and fresh connections, with the backend injecting resets, stalls, garbage, slow bodies and
 * closes at every protocol state (bench/soak-core.ts lists them), clients aborting at random points, and
 * idle keep-alive clients held meanwhile. Prints descriptors, RSS, heap, pool sizes and p99 at the start,
 * the middle and the end, and exits 1 when any grows beyond its bound or any request hangs:
 *
 *   descriptors  end <= start + BOUND_FDS                  (the pool may open up to its max meanwhile)
 *   RSS          end <= start * 1.5 + 64 MB
 *   heap         end <= start * 1.5 + 32 MB                (after a full GC in the gateway)
 *   pools        end open <= max per route, waiting = 0; gateway sources <= idle held + BOUND_FDS
 *   p99          end <= max(5 * start, start + 250 ms)     (plain GETs; the machine's load moves it)
 *   hangs        0 (every client request has a 20 s deadline; stalls end at the 1.5 s socket timeout)
 *   closed       0 (the gateway never closes a connection without a byte of answer to a request it read)
 *
 * The descriptor limit: each idle client costs a descriptor here and one in the gateway; when
 * `ulimit -n` is too low for --idle, the run scales --idle down and says so.
 */
import { formatOutcomes, formatSnapshot, plainGet, runSoak, type Snapshot } from './soak-core';

const BOUND_FDS = 64;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} needs a number`);
  return v;
}

function fdLimit(): number {
  try {
    const text = require('node:fs').readFileSync('/proc/self/limits', 'utf8') as string;
    const m = /Max open files\s+(\d+)/.exec(text);
    return m !== null ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

/** The bounds above, checked; one line per violation. */
export function checkBounds(start: Snapshot, end: Snapshot, idleHeld: number, poolMax: number): string[] {
  const bad: string[] = [];
  const MB = 1048576;
  if (end.fds > start.fds + BOUND_FDS) bad.push(`descriptors grew from ${start.fds} to ${end.fds} (bound: +${BOUND_FDS})`);
  if (end.rss > start.rss * 1.5 + 64 * MB)
    bad.push(`RSS grew from ${(start.rss / MB).toFixed(1)} to ${(end.rss / MB).toFixed(1)} MB (bound: x1.5 + 64 MB)`);
  if (end.heapUsed > start.heapUsed * 1.5 + 32 * MB)
    bad.push(`heap grew from ${(start.heapUsed / MB).toFixed(1)} to ${(end.heapUsed / MB).toFixed(1)} MB (bound: x1.5 + 32 MB)`);
  if (end.poolOpen > poolMax) bad.push(`pool open ${end.poolOpen} over its max ${poolMax}`);
  if (end.poolWaiting !== 0) bad.push(`${end.poolWaiting} exchanges still waiting for a pooled connection`);
  if (end.sources > idleHeld + BOUND_FDS)
    bad.push(`${end.sources} client connections open with ${idleHeld} idle held (bound: +${BOUND_FDS})`);
  if (end.p99 > Math.max(5 * start.p99, start.p99 + 250))
    bad.push(`p99 grew from ${start.p99.toFixed(1)} to ${end.p99.toFixed(1)} ms (bound: max(x5, +250 ms))`);
  return bad;
}

async function main(): Promise<void> {
  const requests = arg('requests', 1_000_000);
  let idle = arg('idle', 10_000);
  const seconds = arg('seconds', 0);
  const concurrency = arg('concurrency', 64);
  const limit = fdLimit();
  // Here: idle + concurrency + backend side of the pool; the gateway (same limit): idle + 2 per exchange.
  const needed = idle + 4 * concurrency + 1024;
  if (needed > limit) {
    const scaled = Math.max(0, limit - 4 * concurrency - 1024);
    process.stdout.write(
      `soak: the descriptor limit (ulimit -n) is ${limit}, ${needed} needed for --idle ${idle}; raise it (ulimit -n ${needed}) or accept --idle ${scaled} (scaled down for this run)\n`,
    );
    idle = scaled;
  }
  process.stdout.write(
    `soak: ${requests} requests, ${idle} idle keep-alive clients, ${concurrency} client loops${seconds > 0 ? `, at most ${seconds} s` : ''}\n`,
  );
  const r = await runSoak({
    requests,
    idle,
    seconds,
    concurrency,
    faultShare: 0.1,
    abortShare: 0.03,
    progress: (l) => process.stdout.write(`soak: ${l}\n`),
  });
  const stats = await r.gateway.stats();
  const poolMax = stats.pools.reduce((a, p) => a + p.max, 0);
  const after = await plainGet(r.gateway.port);
  const [start, , end] = r.snapshots as [Snapshot, Snapshot, Snapshot];
  const bad = checkBounds(start, end, r.idleHeld, poolMax);
  const hangs = r.outcomes.get('hang') ?? 0;
  const closed = r.outcomes.get('closed') ?? 0;
  if (hangs > 0) bad.push(`${hangs} requests hung past the deadline`);
  if (closed > 0) bad.push(`${closed} requests closed without a byte of answer`);
  if (after !== 200) bad.push(`a normal request after the run got ${after}`);
  await r.stop();
  process.stdout.write(`soak: ${r.issued} requests in ${(r.elapsedMs / 1000).toFixed(1)} s, ${r.idleHeld} idle held at the end\n`);
  for (const s of r.snapshots) process.stdout.write(`soak: ${formatSnapshot(s)}\n`);
  process.stdout.write(`soak: outcomes ${formatOutcomes(r.outcomes)}\n`);
  if (bad.length > 0) {
    for (const b of bad) process.stdout.write(`soak: FAIL ${b}\n`);
    process.exit(1);
  }
  process.stdout.write('soak: PASS every figure within its bound, no hang\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
