/**
 * `npm run bench -- --cache-misses [--clients N] [--requests N] [--rounds R] [--ll BYTES]`: simulated cache
 * misses per request of the bare transport with 64 and with N persistent keep-alive connections
 * (docs/performance.md, "Changes that moved the figures", the paragraph of 2026-11-29 10:50 UTC).
 *
 * CPU per request grows with the number of connections (the many-clients section of that page) while the
 * instructions per request do not: each connection's objects are out of the caches when its next request
 * comes. A real CPU's miss counters are not readable in these guests (`perf stat -e cache-misses`: not
 * supported), so the transport runs under valgrind's callgrind with its cache simulation
 * (`--cache-sim=yes`): a first-level data cache as the CPU reports it, and a last level of `--ll` bytes
 * (512 KiB by default, about an AMD EPYC core's L2) whose misses are what an L3 or memory access costs.
 * The counts are those of the simulated caches and cover user space only: the kernel's part of the growth
 * (stime in the many-clients section) is not in them. They repeat for one build up to the JIT's choices and
 * to work driven by the clock: the transport's timeout sweep (every 250 ms at most, over every connection)
 * falls on more requests when the process runs slower, so run it on an otherwise idle machine (with a CI
 * run beside it, 3,000 requests per cell counted 124 misses per request at 64 connections against 90).
 *
 * One client process keeps `64` and `N` connections open for the whole run; a cell sends `--requests`
 * requests over one of the two sets, every connection sending its next request when its answer has come,
 * so the transport serves the connections in turn as wrk's do. Counting is on only around a cell
 * (callgrind_control), the cells alternate, `--rounds` times each. Prints; writes nothing to docs/.
 */
import * as fs from 'node:fs';
import { fmt, freePort, hasCommand, HOST, log, median, range, startBackend, stopAll, stopProc, waitPort, WORK_DIR } from './common';
import { BASE_CLIENTS } from './clients';
import {
  connectionSet,
  countAround,
  dumps,
  numberArg,
  parseCallgrindEvents,
  startCounted,
  symbolize,
  type ConnectionSet,
  type Counted,
} from './instructions';

/** The events a cell keeps, per request: instructions, first-level data read misses, last-level data read misses. */
export const KEPT_EVENTS = ['Ir', 'D1mr', 'DLmr'] as const;
export type KeptEvent = (typeof KEPT_EVENTS)[number];
export type EventCounts = Readonly<Record<KeptEvent, number>>;

export interface MissCell {
  readonly conns: number;
  readonly round: number;
  /** Per request, the whole process (GC and compiler included). */
  readonly total: EventCounts;
  /** Per request, by function (symbolized), only functions with at least 0.01 last-level misses per request. */
  readonly byFunction: Readonly<Record<string, EventCounts>>;
}

export interface MissRun {
  readonly date: string;
  readonly clients: number;
  readonly requests: number;
  readonly rounds: number;
  /** The simulated last level, in bytes. */
  readonly llBytes: number;
  readonly cells: readonly MissCell[];
}

/** The base connection count every cell is compared against: the many-clients bench's. */
const BASE_CONNS = BASE_CLIENTS;

/** Per-request counts of the kept events, from a callgrind dump's self costs, in total and by function. */
export function missesOf(
  text: string,
  symbolizeName: (raw: string) => string,
  requests: number,
): { total: EventCounts; byFunction: Record<string, EventCounts> } {
  const { events, self } = parseCallgrindEvents(text);
  const col = KEPT_EVENTS.map((e) => events.indexOf(e));
  const missing = KEPT_EVENTS.filter((_, i) => (col[i] as number) < 0);
  if (missing.length > 0)
    throw new Error(`callgrind's dump has no ${missing.join(', ')} (events: ${events.join(' ')}): was --cache-sim=yes given?`);
  const sum: number[] = [0, 0, 0];
  const by = new Map<string, number[]>();
  for (const [raw, costs] of self) {
    const name = symbolizeName(raw);
    const acc = by.get(name) ?? [0, 0, 0];
    col.forEach((c, i) => {
      const v = costs[c] ?? 0;
      acc[i] = (acc[i] as number) + v;
      sum[i] = (sum[i] as number) + v;
    });
    by.set(name, acc);
  }
  const per = (xs: readonly number[]): EventCounts => ({
    Ir: (xs[0] as number) / requests,
    D1mr: (xs[1] as number) / requests,
    DLmr: (xs[2] as number) / requests,
  });
  const byFunction: Record<string, EventCounts> = {};
  for (const [name, xs] of by) if ((xs[2] as number) / requests >= 0.01) byFunction[name] = per(xs);
  return { total: per(sum), byFunction };
}

/** The run's table: medians per connection count, and the functions whose last-level misses grow most. */
export function renderMisses(run: MissRun, top = 12): string {
  const at = (conns: number): MissCell[] => run.cells.filter((c) => c.conns === conns);
  const base = at(BASE_CONNS);
  const many = at(run.clients);
  const med = (cs: readonly MissCell[], e: KeptEvent): number => median(cs.map((c) => c.total[e]));
  const n = run.clients.toLocaleString('en-US');
  const L: string[] = [];
  L.push(
    `Simulated cache misses per request of the transport (callgrind --cache-sim=yes, last level ${run.llBytes / 1024} KiB), ${run.rounds} round(s) of ${run.requests} requests per cell, medians (min–max):`,
  );
  L.push('');
  L.push('| connections | instructions | first-level data read misses | last-level data read misses |');
  L.push('|---:|---:|---:|---:|');
  const cell = (cs: readonly MissCell[], e: KeptEvent, d: number): string =>
    `${fmt(med(cs, e), d)}${range(
      cs.map((c) => c.total[e]),
      d,
    )}`;
  for (const [label, cs] of [
    [String(BASE_CONNS), base],
    [n, many],
  ] as const)
    L.push(`| ${label} | ${cell(cs, 'Ir', 0)} | ${cell(cs, 'D1mr', 1)} | ${cell(cs, 'DLmr', 1)} |`);
  L.push('');
  L.push(
    `Last-level misses per request, ${n} ÷ ${BASE_CONNS}: ${fmt(med(many, 'DLmr') / med(base, 'DLmr'), 2)}×; instructions ${fmt(med(many, 'Ir') / med(base, 'Ir'), 3)}×.`,
  );
  L.push('');
  L.push(
    `The ${top} functions whose last-level misses per request grow most (medians; a function's misses are those of the objects it touches first):`,
  );
  L.push('');
  L.push(`| function | ${BASE_CONNS} | ${n} | difference |`);
  L.push('|---|---:|---:|---:|');
  const names = new Set<string>();
  for (const c of run.cells) for (const k of Object.keys(c.byFunction)) names.add(k);
  const per = (cs: readonly MissCell[], name: string): number => median(cs.map((c) => c.byFunction[name]?.DLmr ?? 0));
  const rows = [...names]
    .map((name) => ({ name, a: per(base, name), b: per(many, name) }))
    .sort((x, y) => y.b - y.a - (x.b - x.a) || x.name.localeCompare(y.name));
  for (const r of rows.slice(0, top))
    L.push(`| ${r.name.replace(/\|/g, '\\|')} | ${fmt(r.a, 2)} | ${fmt(r.b, 2)} | ${r.b - r.a >= 0 ? '+' : ''}${fmt(r.b - r.a, 2)} |`);
  return L.join('\n') + '\n';
}

async function countCell(c: Counted, set: ConnectionSet, conns: number, round: number, requests: number): Promise<MissCell> {
  // A few requests per connection first, uncounted: the connection is warm in the transport's own sense.
  if ((await set.send(4 * conns)) > 0) throw new Error(`${c.proc.name}: answers other than 200 while warming up (log: ${c.proc.logFile})`);
  const { text, map } = await countAround(c, () => set.send(requests));
  return { conns, round, ...missesOf(text, (raw) => symbolize(raw, map), requests) };
}

export async function runCacheBench(argv: readonly string[]): Promise<void> {
  const known = new Set(['--clients', '--requests', '--rounds', '--ll']);
  for (let i = 0; i < argv.length; i += 2) {
    if (!known.has(argv[i] as string))
      throw new Error(
        `--cache-misses: unknown option ${String(argv[i])} (usage: --cache-misses [--clients N] [--requests N] [--rounds R] [--ll BYTES])`,
      );
  }
  const clients = numberArg(argv, '--clients', 1000);
  const requests = numberArg(argv, '--requests', 10_000);
  const rounds = numberArg(argv, '--rounds', 2);
  const llBytes = numberArg(argv, '--ll', 524_288);
  if (clients <= BASE_CONNS) throw new Error(`--clients needs a whole number above ${BASE_CONNS}`);
  if ((llBytes & (llBytes - 1)) !== 0 || llBytes < 65_536)
    throw new Error('--ll needs a power of two of at least 65536 bytes (callgrind simulates such caches only)');
  for (const cmd of ['valgrind', 'callgrind_control'])
    if (!hasCommand(cmd)) throw new Error(`--cache-misses needs ${cmd}, not found (Debian: apt-get install valgrind)`);
  fs.mkdirSync(WORK_DIR, { recursive: true });
  const cells: MissCell[] = [];
  let counted: Counted | undefined;
  const sets: ConnectionSet[] = [];
  try {
    const backendPort = await freePort();
    await startBackend(backendPort);
    log('starting the transport under callgrind with its cache simulation (a minute or so)');
    counted = startCounted('cache-callgrind', 'start-throughway.js', { UPSTREAM: `http://${HOST}:${backendPort}` }, await freePort(), [
      '--cache-sim=yes',
      `--LL=${llBytes},8,64`,
    ]);
    await waitPort(counted.port, 300_000, counted.proc);
    const request = Buffer.from(`GET /small HTTP/1.1\r\nHost: ${HOST}:${counted.port}\r\n\r\n`, 'latin1');
    const base = await connectionSet(counted.port, BASE_CONNS, request);
    const many = await connectionSet(counted.port, clients, request);
    sets.push(base, many);
    log('warming up: 20,000 requests over each set of connections, uncounted');
    for (const s of sets) await s.send(20_000);
    for (let round = 1; round <= rounds; round++) {
      for (const [conns, set] of round % 2 === 1
        ? ([
            [BASE_CONNS, base],
            [clients, many],
          ] as const)
        : ([
            [clients, many],
            [BASE_CONNS, base],
          ] as const)) {
        const cell = await countCell(counted, set, conns, round, requests);
        cells.push(cell);
        log(
          `round ${round}/${rounds}, ${conns} connections: ${fmt(cell.total.Ir)} instructions, ${fmt(cell.total.D1mr, 1)} first-level and ${fmt(cell.total.DLmr, 1)} last-level data read misses per request`,
        );
      }
    }
    for (const s of sets) s.close();
    await stopProc(counted.proc, 20_000);
  } finally {
    for (const s of sets) s.close();
    await stopAll();
    if (counted !== undefined) {
      fs.rmSync(`/tmp/perf-${counted.proc.pid}.map`, { force: true });
      for (const f of [`${counted.out}.${counted.proc.pid}`, ...dumps(counted)]) fs.rmSync(f, { force: true });
    }
  }
  const run: MissRun = { date: new Date().toISOString(), clients, requests, rounds, llBytes, cells };
  fs.writeFileSync(`${WORK_DIR}/cache-misses-${run.date.replace(/[:.]/g, '-')}.json`, JSON.stringify(run, null, 2));
  process.stdout.write(`# throughway cache misses — ${run.date}\n\n${renderMisses(run)}`);
}
