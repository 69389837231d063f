/**
 * docs/performance.md from a bench run's raw results (bench/run.ts): pure functions of the cells, the
 * options they were measured with and the machine lines, so `--from` renders an earlier run again and
 * test/bench/render.test.ts renders a fake run without measuring. Every figure in the document comes
 * from a cell here, the peers harness's results (bench/run.ts) or a mediation run's rows: none is
 * written by hand (docs/performance.md), the way pino's docs/benchmarks.md is produced by its
 * benchmarks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fmt, log, median, PERF_DOC, range, type Scenario, type TargetName } from './common';

/** One measured window: a scenario on one target in one round. */
export interface Cell {
  round: number;
  scenario: string;
  target: TargetName;
  conns: number;
  ok: boolean;
  error?: string;
  requests: number;
  durationS: number;
  rps: number;
  /** req/s ÷ the direct cell's req/s of the same scenario and round. */
  ratio: number;
  p50: number;
  p99: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** CPU µs per request of the process under test (throughway or gateway); null for direct. */
  proxyUs: number | null;
  backendUs: number;
  clientUs: number;
  otherCores: number;
  preBusyCores: number;
}

export interface RenderOptions {
  readonly scenarios: readonly Scenario[];
  readonly rounds: number;
  readonly warmup: number;
  readonly duration: number;
  readonly connections: number | undefined;
}

export const PEERS_BEGIN = '<!-- peers:begin -->';
export const PEERS_END = '<!-- peers:end -->';
/** The mediation run's section (`--mediation --write`), kept by the main run's --write like the peers'. */
export const MEDIATION_BEGIN = '<!-- mediation:begin -->';
export const MEDIATION_END = '<!-- mediation:end -->';
/** Cluster mode, workers = 1 vs 2 (`--workers --write`), kept by the other runs' --write. */
export const WORKERS_BEGIN = '<!-- workers:begin -->';
export const WORKERS_END = '<!-- workers:end -->';
/** Throttle counters in memory vs Redis (`--redis-counting --write`), kept likewise. */
export const COUNTING_BEGIN = '<!-- redis-counting:begin -->';
export const COUNTING_END = '<!-- redis-counting:end -->';

const TARGET_LABEL: Readonly<Record<TargetName, string>> = {
  direct: 'direct',
  throughway: 'throughway (transport only)',
  'throughway-same': "throughway (transport only), the gateway's request",
  'gateway-open': 'gateway, open route',
  gateway: 'gateway',
};

/** The target a scenario is about: the full gateway's route for the feature scenarios, else the transport. */
export function mainTarget(sc: Scenario): TargetName {
  return sc.targets.includes('gateway') ? 'gateway' : 'throughway';
}

/** A measured (ok) cell of scenario `sc` and target `target`. */
function isCell(c: Cell, sc: string, target: TargetName): boolean {
  return c.scenario === sc && c.target === target && c.ok;
}

function okCells(cells: readonly Cell[], sc: string, target: TargetName): Cell[] {
  return cells.filter((c) => isCell(c, sc, target));
}

/** Per round, `target` req/s ÷ the gateway's open route req/s (the feature's own cost). */
export function vsOpen(cells: readonly Cell[], sc: string, target: TargetName = 'gateway'): number[] {
  return perRound(
    cells,
    (c) => isCell(c, sc, 'gateway-open'),
    (c) => isCell(c, sc, target),
    (c) => c.rps,
  );
}

function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  let s = 0;
  for (const x of xs) s += f(x);
  return s;
}

function connsLabel(sc: Scenario, o: RenderOptions): string {
  const base = sc.label.replace(/, [\d,]+ (keep-alive )?conns$/, '');
  return `${base}, ${(o.connections ?? sc.conns).toLocaleString('en-US')} ${sc.name === 'ka1000' ? 'keep-alive ' : ''}conns`;
}

/** The main table (direct vs throughway per scenario), its note, and one detail table per scenario. */
export function renderOwn(cells: readonly Cell[], o: RenderOptions): string {
  const L: string[] = [];
  L.push(
    '| scenario | direct req/s | throughway req/s | vs direct | p99 ms direct / throughway | proxy CPU µs/req | backend µs/req | errors / non-2xx |',
  );
  L.push('|---|---|---|---|---|---|---|---|');
  for (const sc of o.scenarios) {
    const main = mainTarget(sc);
    const d = okCells(cells, sc.name, 'direct');
    const t = okCells(cells, sc.name, main);
    L.push(
      `| ${connsLabel(sc, o)}${main === 'gateway' ? ' (full gateway)' : ''} | ${fmt(median(d.map((c) => c.rps)))} | ${fmt(median(t.map((c) => c.rps)))} | ${fmt(median(t.map((c) => c.ratio)), 2)} | ` +
        `${fmt(median(d.map((c) => c.p99)), 0)} / ${fmt(median(t.map((c) => c.p99)), 0)} | ${fmt(median(t.map((c) => c.proxyUs ?? NaN)), 1)} | ` +
        `${fmt(median(t.map((c) => c.backendUs)), 1)} | ${sum(t, (c) => c.errors + c.timeouts)} / ${sum(t, (c) => c.non2xx)} |`,
    );
  }
  L.push('');
  const other = median(cells.map((c) => c.otherCores));
  L.push(
    `Values are medians over ${o.rounds} round${o.rounds > 1 ? 's' : ''} (min–max in the detail tables) of ${o.warmup} s warm-up + ${o.duration} s measured per cell; ` +
      '"vs direct" is req/s ÷ the backend\'s own req/s in the same round; latency has autocannon\'s 1 ms resolution. ' +
      'Rows marked "full gateway" go through the whole phase chain (bench/start-gateway.ts); the others through the transport only.' +
      (other > 0.3
        ? ` Other work used a median ${fmt(other, 2)} cores of this machine during the measured windows: ` +
          'req/s and p99 reflect when each process got a core more than the proxy itself; CPU µs per request holds best.'
        : ''),
  );
  const more = renderVsScenario(cells, o);
  if (more !== undefined) L.push('', more);
  for (const sc of o.scenarios) {
    L.push('');
    L.push(`#### ${sc.label}${o.connections !== undefined ? ` (run with ${o.connections} conns)` : ''}`);
    L.push('');
    L.push(
      '| target | req/s | vs direct | p50 ms | p99 ms | proxy CPU µs/req | backend µs/req | client µs/req | other cores | errors / timeouts / non-2xx |',
    );
    L.push('|---|---|---|---|---|---|---|---|---|---|');
    for (const target of sc.targets) {
      const all = cells.filter((c) => c.scenario === sc.name && c.target === target);
      const ok = all.filter((c) => c.ok);
      if (all.length === 0) continue;
      const label =
        target === 'gateway'
          ? `gateway, ${sc.gatewayPath ?? ''}`
          : target === 'gateway-open'
            ? `gateway, open route`
            : TARGET_LABEL[target];
      if (ok.length === 0) {
        L.push(`| ${label} | failed: ${all[0]?.error ?? '?'} |||||||||`);
        continue;
      }
      const col = (f: (c: Cell) => number, d: number): string => fmt(median(ok.map(f)), d) + range(ok.map(f), d);
      L.push(
        `| ${label} | ${col((c) => c.rps, 0)} | ${target === 'direct' ? '1' : col((c) => c.ratio, 2)} | ${col((c) => c.p50, 0)} | ${col((c) => c.p99, 0)} | ` +
          `${target === 'direct' ? '—' : col((c) => c.proxyUs ?? NaN, 1)} | ${col((c) => c.backendUs, 1)} | ${col((c) => c.clientUs, 1)} | ` +
          `${col((c) => c.otherCores, 2)} | ${sum(ok, (c) => c.errors)} / ${sum(ok, (c) => c.timeouts)} / ${sum(ok, (c) => c.non2xx)}` +
          `${all.length > ok.length ? ` (${all.length - ok.length} cells failed)` : ''} |`,
      );
    }
  }
  return L.join('\n');
}

/**
 * Per round, a target's CPU µs/req in scenario `sc` ÷ its own in scenario `base` (paired by round): the
 * proxy's for a proxy target, the backend's for `direct` (what more connections cost a node:http server
 * with nothing in front of it).
 */
export function cpuVsScenario(cells: readonly Cell[], sc: string, base: string, target: TargetName = 'throughway'): number[] {
  const us = (c: Cell): number => (target === 'direct' ? c.backendUs : (c.proxyUs ?? NaN));
  return perRound(
    cells,
    (c) => isCell(c, base, target),
    (c) => isCell(c, sc, target),
    us,
  );
}

/**
 * The scenarios with a vsScenario target whose base ran too: the transport's CPU per request against the
 * base scenario's. Undefined when there are none, or when --connections gave every scenario the same count.
 */
function renderVsScenario(cells: readonly Cell[], o: RenderOptions): string | undefined {
  if (o.connections !== undefined) return undefined;
  const rows = o.scenarios.flatMap((sc) => {
    const base = o.scenarios.find((b) => b.name === sc.vsScenario?.base);
    return sc.vsScenario === undefined || base === undefined ? [] : [{ sc, base, v: sc.vsScenario }];
  });
  if (rows.length === 0) return undefined;
  const L: string[] = [];
  L.push(
    "More connections, the same request: the transport's CPU µs per request in the scenario ÷ its CPU µs per request in the " +
      'base scenario in the same round. "backend\'s own" divides the direct backend\'s CPU per request the same way: what the ' +
      'same connections cost a node:http server with no proxy in front of it.',
  );
  L.push('');
  L.push(
    "| scenario | base scenario | throughway µs/req | in the base scenario | CPU vs base (per round) | target | in this run | backend's own (per round) |",
  );
  L.push('|---|---|---|---|---|---|---|---|');
  for (const { sc, base, v } of rows) {
    const ratios = cpuVsScenario(cells, sc.name, v.base);
    L.push(
      `| ${connsLabel(sc, o)} | ${connsLabel(base, o)} | ${proxyUsText(cells, sc.name, 'throughway')} | ${proxyUsText(cells, v.base, 'throughway')} | ` +
        `${ratiosText(ratios)} | ≤ ${fmt(v.max, 2)} (${v.issue}) | ${atMost(median(ratios), v.max)} | ${ratiosText(cpuVsScenario(cells, sc.name, v.base, 'direct'))} |`,
    );
  }
  return L.join('\n');
}

/**
 * The feature scenarios (those with a budget) against the gateway's open route: the cost of the feature
 * alone, by req/s in the same round and by gateway CPU per request, with the issue's budget; then the
 * scenarios with every feature on against the bare transport. Undefined when the run had neither.
 */
export function renderFeatures(cells: readonly Cell[], o: RenderOptions): string | undefined {
  const parts = [renderBudgets(cells, o), renderVsTransport(cells, o)].filter((x): x is string => x !== undefined);
  return parts.length === 0 ? undefined : parts.join('\n\n');
}

/** Per-round ratios as a table cell: the median, then each round's when there are several. */
export const ratiosText = (rs: readonly number[]): string =>
  `${fmt(median(rs), 3)}${rs.length > 1 ? ` (${rs.map((r) => fmt(r, 3)).join(', ')})` : ''}`;

/** `req/s · µs/req`, medians of a target's cells in one scenario. */
function rpsAndUs(cells: readonly Cell[], sc: string, t: TargetName): string {
  return `${fmt(median(okCells(cells, sc, t).map((c) => c.rps)))} · ${proxyUsText(cells, sc, t)}`;
}

/** The median of a target's proxy CPU µs/req in one scenario, to one decimal. */
function proxyUsText(cells: readonly Cell[], sc: string, t: TargetName): string {
  return fmt(median(okCells(cells, sc, t).map((c) => c.proxyUs ?? NaN)), 1);
}

/** The verdict on a median ratio against a target that is a maximum: '—' when no round gave a ratio. */
function atMost(m: number, max: number): string {
  return Number.isFinite(m) ? (m <= max ? 'within' : '**over**') : '—';
}

/**
 * Per round, the `gateway` target's CPU µs/req ÷ the transport-only throughway's (the whole chain's cost):
 * by default against the transport handed the same request (`throughway-same`), or against `base`.
 */
export function cpuVsTransport(cells: readonly Cell[], sc: string, base: TargetName = 'throughway-same'): number[] {
  return perRound(
    cells,
    (c) => isCell(c, sc, base),
    (c) => isCell(c, sc, 'gateway'),
    (c) => c.proxyUs ?? NaN,
  );
}

/**
 * The scenarios with every feature on at once (those with a vsTransport target): the gateway's CPU per
 * request against the bare transport's in the same round. Undefined when the run had none.
 */
function renderVsTransport(cells: readonly Cell[], o: RenderOptions): string | undefined {
  const full = o.scenarios.filter((sc) => sc.vsTransport !== undefined);
  if (full.length === 0) return undefined;
  const L: string[] = [];
  L.push('## The full gateway against the bare transport');
  L.push('');
  L.push(
    'A gateway with everything on at once (`bench/start-gateway.ts` with `ACCESS_LOG=1`, route `/full/1/small`): a bearer token ' +
      "on a warm token cache, the subscription tier's request count and burst counters and a resource policy (three counters per " +
      'call), and the access log written to a file in the format `npm start` writes. The traced row runs another such gateway ' +
      'that also sends its spans to a Zipkin sink in the backend process (`TRACER_PORT`), and every request carries a ' +
      "`traceparent` whose sampled flag is on for 1 in 100 (docs/tracing.md: the gateway honours the caller's flag). " +
      '"CPU vs transport" is the gateway\'s CPU µs per request ÷ the transport-only throughway\'s in the same round, the ' +
      'transport handed the very request the gateway gets (the ~1 KB bearer token, and the traceparents of the traced row): ' +
      'what the gateway adds to a request. "vs plain GET" divides by the transport\'s cell without the token in the same ' +
      "round, so it also counts parsing and copying the token's bytes, which any proxy in front of such clients pays.",
  );
  L.push('');
  L.push(
    '| scenario | transport only req/s · µs/req | the same request through the transport req/s · µs/req | gateway req/s · µs/req | CPU vs transport (per round) | target | in this run | CPU vs plain GET (per round) |',
  );
  L.push('|---|---|---|---|---|---|---|---|');
  for (const sc of full) {
    const pair = (t: TargetName): string => rpsAndUs(cells, sc.name, t);
    const ratios = cpuVsTransport(cells, sc.name);
    const target = sc.vsTransport as NonNullable<Scenario['vsTransport']>;
    const verdict = atMost(median(ratios), target.max);
    L.push(
      `| ${sc.name}: ${sc.label} | ${pair('throughway')} | ${pair('throughway-same')} | ${pair('gateway')} | ` +
        `${ratiosText(ratios)} | ≤ ${fmt(target.max, 2)} (${target.issue}) | ${verdict} | ${ratiosText(cpuVsTransport(cells, sc.name, 'throughway'))} |`,
    );
  }
  return L.join('\n');
}

/** The budget scenarios against the gateway's open route; undefined when the run had none. */
function renderBudgets(cells: readonly Cell[], o: RenderOptions): string | undefined {
  const features = o.scenarios.filter((sc) => sc.budget !== undefined);
  if (features.length === 0) return undefined;
  const L: string[] = [];
  L.push("## The gateway's features: authentication and throttling");
  L.push('');
  L.push(
    'The full gateway (`bench/start-gateway.ts`: the phase chain and the key manager in one process, one application with a ' +
      'client-credentials token) serves three routes to the same backend `/small`: an open one (`auth = "none"`, nothing counted), ' +
      'a protected one (`auth = "oauth2"`; the warm-up fills the token cache, so cells measure the warm path: cache look-up, ' +
      'subscription and scope checks) and a throttled one (a resource policy, the per-IP subscription tier and burst control: three ' +
      'counters per call with limits no run reaches). "vs open" is the route\'s req/s ÷ the open route\'s in the same round; ' +
      "the CPU figures are the gateway's per request, the steadier measure on a shared machine.",
  );
  L.push('');
  L.push(
    '| scenario | transport only req/s · µs/req | gateway open route req/s · µs/req | gateway req/s · µs/req | vs open (per round) | CPU µs/req vs open | budget | in this run |',
  );
  L.push('|---|---|---|---|---|---|---|---|');
  for (const sc of features) {
    const pair = (t: TargetName): string => rpsAndUs(cells, sc.name, t);
    const ratios = vsOpen(cells, sc.name);
    const m = median(ratios);
    const openUs = median(okCells(cells, sc.name, 'gateway-open').map((c) => c.proxyUs ?? NaN));
    const gwUs = median(okCells(cells, sc.name, 'gateway').map((c) => c.proxyUs ?? NaN));
    const cpu =
      Number.isFinite(openUs) && Number.isFinite(gwUs) && openUs > 0
        ? `${gwUs >= openUs ? '+' : ''}${fmt((gwUs / openUs - 1) * 100, 0)} %`
        : '—';
    const budget = sc.budget as NonNullable<Scenario['budget']>;
    const verdict = Number.isFinite(m) ? (m >= budget.min ? 'within' : '**over**') : '—';
    L.push(
      `| ${sc.name}: ${sc.label} | ${pair('throughway')} | ${pair('gateway-open')} | ${pair('gateway')} | ` +
        `${ratiosText(ratios)} | ${cpu} | ≥ ${fmt(budget.min, 2)} (${budget.issue}) | ${verdict} |`,
    );
  }
  return L.join('\n');
}

/** One row of a mediation run (bench/mediation.ts). */
export interface MediationRow {
  readonly name: string;
  readonly label: string;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
}

/** What `--mediation` leaves in WORK_DIR/mediation-<date>.json; `--mediation --from FILE --write` renders it again. */
export interface MediationRun {
  readonly date: string;
  readonly command: string;
  readonly duration: number;
  readonly warmup: number;
  readonly rows: readonly MediationRow[];
}

export function renderMediationTable(rows: readonly MediationRow[]): string {
  const L = ['| scenario | req/s | p50 ms | p99 ms | errors | non-2xx |', '|---|---|---|---|---|---|'];
  for (const r of rows) L.push(`| ${r.label} | ${fmt(r.rps, 0)} | ${fmt(r.p50, 0)} | ${fmt(r.p99, 0)} | ${r.errors} | ${r.non2xx} |`);
  return L.join('\n');
}

/** The mediation section between its markers. */
export function renderMediation(run: MediationRun): string {
  const alone = run.rows.find((r) => r.name === 'small-alone');
  const during = run.rows.find((r) => r.name === 'small-during-1m');
  const share = alone !== undefined && during !== undefined && alone.rps > 0 ? during.rps / alone.rps : NaN;
  return [
    MEDIATION_BEGIN,
    '## Mediation: JSON validation (docs/mediation.md)',
    '',
    `Run of ${run.date} (${run.warmup} s warm-up + ${run.duration} s per row), produced by \`${run.command}\`: a gateway with ` +
      '`force_json_validation = true` and the mediation pool at its defaults (docs/mediation.md) in front of the bench backend. ' +
      'These rows are not direct-vs-throughway cells: the last two run at the same time, to show that large bodies validated in ' +
      'worker threads leave the event loop serving small requests, so they stay a run of their own.',
    '',
    renderMediationTable(run.rows),
    '',
    `Small GETs while 1 MiB bodies are validated ran at ${fmt(share, 2)} of their rate alone.`,
    MEDIATION_END,
  ].join('\n');
}

/** One measured window of `--workers`: one node with `workers` gateway processes, in one round. */
export interface WorkersRow {
  readonly round: number;
  readonly workers: number;
  readonly rps: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
  /** CPU µs per request of all the node's processes, of its busiest process, and how many there were (absent in runs before these were measured). */
  readonly cpuUs?: number;
  readonly busiestUs?: number;
  readonly processes?: number;
}

/** What `--workers` leaves in WORK_DIR/workers-<date>.json; `--workers --from FILE --write` renders it again. */
export interface WorkersRun {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly url: string;
  readonly duration: number;
  readonly warmup: number;
  readonly connections: number;
  readonly rounds: number;
  readonly rows: readonly WorkersRow[];
}

/**
 * Per round, `f` of the item of `b` ÷ that of `a` in the same round, in b's order; a round without both, or
 * where a's figure is not positive or b's not a number (a proxy's CPU of a cell that measured none), has none.
 */
function perRound<T extends { readonly round: number }>(
  xs: readonly T[],
  a: (x: T) => boolean,
  b: (x: T) => boolean,
  f: (x: T) => number,
): number[] {
  const out: number[] = [];
  for (const x of xs.filter(b)) {
    const ref = xs.find((y) => a(y) && y.round === x.round);
    if (ref !== undefined && f(ref) > 0 && Number.isFinite(f(x))) out.push(f(x) / f(ref));
  }
  return out;
}

export function renderWorkersTable(run: WorkersRun): string {
  const cpu = run.rows.some((r) => r.cpuUs !== undefined);
  const L = cpu
    ? [
        '| [throughway.cluster] workers | req/s | p99 ms | node CPU µs/req (all processes) | busiest process µs/req | req/s bound with a core per process | errors / non-2xx |',
        '|---|---|---|---|---|---|---|',
      ]
    : ['| [throughway.cluster] workers | req/s | p99 ms | errors / non-2xx |', '|---|---|---|---|'];
  for (const n of [...new Set(run.rows.map((r) => r.workers))].sort((a, b) => a - b)) {
    const rows = run.rows.filter((r) => r.workers === n);
    const col = (f: (r: WorkersRow) => number, d = 0): string => fmt(median(rows.map(f)), d) + range(rows.map(f), d);
    const tail = `${sum(rows, (r) => r.errors)} / ${sum(rows, (r) => r.non2xx)} |`;
    if (cpu) {
      const busiest = median(rows.map((r) => r.busiestUs ?? NaN));
      L.push(
        `| ${n} | ${col((r) => r.rps)} | ${col((r) => r.p99)} | ${col((r) => r.cpuUs ?? NaN, 1)} | ${col((r) => r.busiestUs ?? NaN, 1)} | ${fmt(1e6 / busiest)} | ${tail}`,
      );
    } else {
      L.push(`| ${n} | ${col((r) => r.rps)} | ${col((r) => r.p99)} | ${tail}`);
    }
  }
  const ratios = perRound(
    run.rows,
    (r) => r.workers === 1,
    (r) => r.workers === 2,
    (r) => r.rps,
  );
  L.push('');
  L.push(`2 workers ÷ 1, req/s in the same round: ${ratiosText(ratios)}${ratios.length > 1 ? ' (median, then each round)' : ''}.`);
  return L.join('\n');
}

/** The cluster-mode section between its markers. */
export function renderWorkers(run: WorkersRun): string {
  return [
    WORKERS_BEGIN,
    '## Cluster mode: workers (docs/scale-out.md)',
    '',
    `Run of ${run.date}, produced by \`${run.command}\` (bench/workers.ts): for each cell a node started as \`npm start\` runs it ` +
      '(a copy of conf/: the demo API, auth = "none", and the demo backend) with `[throughway.cluster] workers = "1"`, then `"2"`, ' +
      `the two alternating within each of ${run.rounds} round${run.rounds > 1 ? 's' : ''}; autocannon \`GET ${run.url}\` (96 bytes), ` +
      `${run.connections} connections, ${run.warmup} s warm-up + ${run.duration} s measured; medians (min–max). With one worker a single ` +
      'process serves the gateway, the key manager and the demo backend; with two, the primary keeps the key manager and the demo ' +
      'backend and two worker processes share the gateway port. autocannon runs in the bench process on the same cores, so on this ' +
      '2-core machine the client, the backend and the workers compete for two cores: the ratio is what this machine allows, not what ' +
      "a second free core would give. The CPU columns do not depend on free cores: the CPU all of the node's processes spend per " +
      'request, and that of its busiest process; "req/s bound" is 10^6 ÷ the busiest process\'s µs per request, the rate at which that ' +
      'process would saturate its own core (a projection, not a measurement). To measure scaling on a larger machine, give the node, ' +
      'the backend and the client cores of their own, e.g. `taskset -c 0-3 npx throughway start` with `workers = "4"`, the backend ' +
      'on `taskset -c 4-5` and `taskset -c 6-7 wrk -t2 -c128 -d10s URL`, and compare with `workers = "1"` on the same cores.',
    '',
    ...run.machine,
    '',
    renderWorkersTable(run),
    WORKERS_END,
  ].join('\n');
}

/** What `--redis-counting` leaves in WORK_DIR/redis-counting-<date>.json; `--from FILE --write` renders it again. */
export interface CountingRun {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly redisUrl: string;
  readonly duration: number;
  readonly warmup: number;
  readonly connections: number;
  readonly rounds: number;
  /** Cells of the scenarios `counting-memory` and `counting-redis` (bench/common.ts COUNTING), target `gateway`. */
  readonly cells: readonly Cell[];
}

export function renderCountingTable(run: CountingRun): string {
  const L = [
    '| counter_store | req/s | vs memory (per round) | p50 ms | p99 ms | gateway CPU µs/req | CPU vs memory | other cores | errors / timeouts / non-2xx |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const ok = (store: string): Cell[] => run.cells.filter((c) => c.scenario === `counting-${store}` && c.ok);
  const memUs = median(ok('memory').map((c) => c.proxyUs ?? NaN));
  for (const store of ['memory', 'redis']) {
    const cells = ok(store);
    const failed = run.cells.filter((c) => c.scenario === `counting-${store}`).length - cells.length;
    const col = (f: (c: Cell) => number, d: number): string => fmt(median(cells.map(f)), d) + range(cells.map(f), d);
    const us = median(cells.map((c) => c.proxyUs ?? NaN));
    const vs =
      store === 'memory'
        ? '1'
        : ratiosText(
            perRound(
              run.cells.filter((c) => c.ok),
              (c) => c.scenario === 'counting-memory',
              (c) => c.scenario === 'counting-redis',
              (c) => c.rps,
            ),
          );
    const cpu =
      store === 'memory' ? '—' : Number.isFinite(us) && memUs > 0 ? `${us >= memUs ? '+' : ''}${fmt((us / memUs - 1) * 100, 0)} %` : '—';
    L.push(
      `| ${store} | ${col((c) => c.rps, 0)} | ${vs} | ${col((c) => c.p50, 0)} | ${col((c) => c.p99, 0)} | ${col((c) => c.proxyUs ?? NaN, 1)} | ${cpu} | ${col((c) => c.otherCores, 2)} | ` +
        `${sum(cells, (c) => c.errors)} / ${sum(cells, (c) => c.timeouts)} / ${sum(cells, (c) => c.non2xx)}${failed > 0 ? ` (${failed} cells failed)` : ''} |`,
    );
  }
  return L.join('\n');
}

/** The Redis counting section between its markers. */
export function renderCounting(run: CountingRun): string {
  return [
    COUNTING_BEGIN,
    '## Throttle counters in Redis (docs/scale-out.md)',
    '',
    `Run of ${run.date}, produced by \`${run.command}\`: two full gateways (\`bench/start-gateway.ts\`) identical but for ` +
      '`[throughway.throttling] counter_store`: "memory" and "redis" (Redis at ' +
      `${run.redisUrl}, \`sync_interval\` at its default of 100 ms), each loaded on its throttled route \`/limited/1/small\` (three counters ` +
      'per call: the resource policy, the per-IP subscription tier and its burst control, limits never reached). The two alternate within ' +
      `each of ${run.rounds} round${run.rounds > 1 ? 's' : ''}, the order swapped every round; ${run.connections} connections, ` +
      `${run.warmup} s warm-up + ${run.duration} s measured per cell; medians (min–max). "vs memory" is req/s ÷ the memory gateway's in ` +
      "the same round; the CPU figure is the gateway process's own per request (the batches it sends; the Redis server's CPU is not in it), " +
      'the steadier figure on a shared machine; "other cores" is what other tenants used meanwhile (as in the main table).',
    '',
    ...run.machine,
    '',
    renderCountingTable(run),
    COUNTING_END,
  ].join('\n');
}

/** Replaces the block between `begin` and `end` in `doc`, or inserts it before `before` (or at the end). */
export function replaceSection(doc: string, begin: string, end: string, block: string, before: string): string {
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a >= 0 && b > a) return doc.slice(0, a) + block + doc.slice(b + end.length);
  const at = doc.indexOf(before);
  if (at >= 0) return `${doc.slice(0, at)}${block}\n\n${doc.slice(at)}`;
  return `${doc.replace(/\n*$/, '\n\n')}${block}\n`;
}

/** Replaces one section of docs/performance.md (the runs that own one: mediation, workers, Redis counting). */
export function writeSection(begin: string, end: string, block: string, what: string): void {
  const doc = fs.existsSync(PERF_DOC) ? fs.readFileSync(PERF_DOC, 'utf8') : '# Performance\n';
  fs.writeFileSync(PERF_DOC, replaceSection(doc, begin, end, block, HOW_TO_REPRODUCE));
  log(`wrote the ${what} section of ${path.relative(process.cwd(), PERF_DOC) || PERF_DOC}`);
}

export interface DocParts {
  readonly date: string;
  readonly command: string;
  /** Machine, versions and load lines (bench/run.ts machineLines). */
  readonly machine: readonly string[];
  readonly own: string;
  readonly features: string | undefined;
  /** The peers section with its markers (this run's, or the document's current one). */
  readonly peers: string | undefined;
  /** The mediation section with its markers (the document's current one). */
  readonly mediation: string | undefined;
  /** The cluster-mode and Redis counting sections with their markers (the document's current ones). */
  readonly workers?: string | undefined;
  readonly counting?: string | undefined;
  /** The document's other marked sections (soak, import, ...), kept as they are, before "How to reproduce". */
  readonly others?: readonly string[];
  readonly workDir: string;
  readonly demo: { readonly url: string; readonly fromConf: boolean };
}

export const HOW_TO_REPRODUCE = '## How to reproduce';

export function renderDoc(p: DocParts): string {
  const L: string[] = [];
  L.push('# Performance');
  L.push('');
  L.push(`<!-- Generated by \`npm run bench -- --write\` (bench/run.ts, bench/render.ts); edits are overwritten. -->`);
  L.push('');
  L.push(
    'Measured, never asserted: these are the figures of one run on the machine below, a shared 2-core VM where other ' +
      'builds run at the same time. Requests per second move ±20–40 % between runs there; the CPU time a proxy spends per ' +
      'request (utime+stime from `/proc/<pid>/stat` ÷ completed requests) is the steadiest figure, and ratios between ' +
      "targets measured in the same round are what to compare. Every figure below comes from a bench scenario's raw results.",
  );
  L.push('');
  L.push(`## Machine and run (${p.date})`);
  L.push('');
  L.push(...p.machine);
  L.push(`- Command: \`${p.command}\``);
  L.push('');
  L.push('## throughway vs the backend directly, autocannon');
  L.push('');
  L.push(
    'One single-process node:http backend (`bench/backend.ts`: `/small` 96-byte JSON, `/64k` 65,536 bytes, `POST /upload` → `{"bytes":N}`), ' +
      'one transport-only throughway (`bench/start-throughway.ts`: `createTransport` with one route to the backend, default transport settings, no logging) ' +
      'and, for the auth, throttling, full and traced scenarios, the full gateway (`bench/start-gateway.ts`) run as child processes; autocannon runs inside the bench process, so its CPU is the "client" column. ' +
      '"other cores" is the machine\'s busy CPU minus client + proxy + backend: ≈ 0 when nobody else is working, above 0.3 means another tenant competed during that cell.',
  );
  L.push('');
  L.push(p.own);
  L.push('');
  if (p.features !== undefined) {
    L.push(p.features);
    L.push('');
  }
  L.push(
    p.peers ??
      `${PEERS_BEGIN}\n## Against the peers\n\nNo peers run recorded yet: \`npm run bench -- --compare --write\` adds it.\n${PEERS_END}`,
  );
  L.push('');
  L.push(
    p.mediation ??
      `${MEDIATION_BEGIN}\n## Mediation: JSON validation (docs/mediation.md)\n\nNo mediation run recorded yet: \`npm run bench -- --mediation --write\` adds it.\n${MEDIATION_END}`,
  );
  L.push('');
  L.push(
    p.workers ??
      `${WORKERS_BEGIN}\n## Cluster mode: workers (docs/scale-out.md)\n\nNo workers run recorded yet: \`npm run bench -- --workers --write\` adds it.\n${WORKERS_END}`,
  );
  L.push('');
  L.push(
    p.counting ??
      `${COUNTING_BEGIN}\n## Throttle counters in Redis (docs/scale-out.md)\n\nNo Redis counting run recorded yet: \`npm run bench -- --redis-counting --write\` adds it.\n${COUNTING_END}`,
  );
  L.push('');
  for (const section of p.others ?? []) {
    L.push(section);
    L.push('');
  }
  L.push(HOW_TO_REPRODUCE);
  L.push('');
  L.push('```sh');
  L.push('npm ci');
  L.push('npm run bench                                   # all scenarios, 1 round of 10 s, tables on stdout');
  L.push('npm run bench -- --scenarios small,ka1000 --rounds 3 --duration 8');
  L.push(
    'npm run bench -- --scenarios auth,throttling --rounds 3   # the full gateway: bearer token (docs/security.md: within 15%), throttling (docs/throttling.md: at most 10%)',
  );
  L.push(
    'ROUNDS=3 DURATION=8 TOOLS=wrk npm run bench -- --rounds 3 --compare --write   # everything with the peers; regenerates this file',
  );
  L.push(`node dist/bench/run.js --from ${p.workDir}/run-<date>.json --write   # render a run again, measuring nothing`);
  L.push(
    'npm run bench -- --mediation --write            # JSON validation at 1 KiB/64 KiB/1 MiB; small-GET p99 while 1 MiB bodies are validated',
  );
  L.push(`node dist/bench/run.js --mediation --from ${p.workDir}/mediation-<date>.json --write   # render a mediation run again`);
  L.push(
    'npm run bench -- --workers --rounds 3 --duration 6 --write   # cluster mode: [throughway.cluster] workers = 1 vs 2 on the demo API',
  );
  L.push(
    'npm run bench -- --redis-counting --rounds 3 --duration 6 --write   # throttle counters in memory vs Redis (THROUGHWAY_TEST_REDIS_URL or redis://127.0.0.1:6379)',
  );
  L.push(
    `node dist/bench/run.js --workers --from ${p.workDir}/workers-<date>.json --write   # likewise --redis-counting --from .../redis-counting-<date>.json`,
  );
  L.push(
    'node dist/bench/node-lines.js --node <other node binary> --rounds 3 --write   # the transport on this Node and on another line (bench/node-lines.ts)',
  );
  L.push('node dist/bench/profile.js --mode perf          # where the CPU goes (perf), small GET under wrk');
  L.push(
    'npm run bench -- --instructions --rounds 3        # instructions per request (valgrind callgrind): transport vs full gateway, same request; GC and compiler apart',
  );
  L.push(
    "npm run bench -- --instructions --rounds 3 --traced   # the same with the traced scenario's gateway as a third cell (its 100 traceparents, 1 % sampled, sent to every cell)",
  );
  L.push(
    "node dist/bench/startup.js --runs 5 --write      # require('throughway') and `npm start` to ready: medians of 5, with the load average",
  );
  L.push(
    'npm run bench -- --many-clients --write          # CPU per request at 64 and 1,000 keep-alive clients: throughway and nginx-1w-tuned, each against itself',
  );
  L.push(
    'npm run bench -- --cache-misses                  # simulated cache misses per request (callgrind) of the transport at 64 and 1,000 connections; prints',
  );
  L.push('```');
  L.push('');
  L.push(
    'The peers comparison (`--compare`) runs `../shared/peers/run.sh` with `EXTRA_CMD` pointing at `dist/bench/start-throughway.js`; it installs ' +
      'nginx and wrk with apt when they are missing and takes about 20–30 minutes for three rounds. The transport-only starter can be used alone: ' +
      '`PORT=8280 UPSTREAM=http://127.0.0.1:8100 node dist/bench/start-throughway.js` (`EXTRA_PREFIX=/x` strips a prefix before forwarding); ' +
      'so can the full one: `PORT=8280 UPSTREAM=http://127.0.0.1:8100 TOKEN_FILE=/tmp/token node dist/bench/start-gateway.js`.',
  );
  L.push('');
  L.push(
    `To load the demo API that \`npm start\` serves (the full gateway with its phase chain, not the bare transport) with the ` +
      `autocannon this repository pins` +
      (p.demo.fromConf
        ? ` (URL read from conf/apis/demo.toml and conf/deployment.toml; the demo backend's \`/small\` is 96 bytes of JSON like the bench backend's; ` +
          `when the demo API requires a token, add \`-H 'Authorization: Bearer <token>'\`):`
        : ` — replace the placeholders with the demo API's context, version and a GET resource:`),
  );
  L.push('');
  L.push('```sh');
  L.push(`npm start &   # then, in another terminal:`);
  L.push(`npx autocannon -c 64 -d 10 ${p.demo.url}`);
  L.push('```');
  L.push('');
  return L.join('\n');
}
