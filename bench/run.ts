/**
 * `npm run bench`: autocannon (programmatic, what users run) against the backend directly, through a
 * transport-only throughway and, for the auth, throttling, full and traced scenarios, through a full gateway (phase
 * chain and key manager in one process, bench/start-gateway.ts), all started here as child processes,
 * with one progress line per cell. Measurement only: nothing here passes or fails.
 *
 *   npm run bench -- [--duration S] [--warmup S] [--connections N] [--scenarios small,64k,post1m,auth,throttling,ka1000,full,traced]
 *                    [--rounds N] [--compare] [--peers-results FILE] [--write] [--from FILE]
 *   npm run bench -- --mediation [--duration S] [--warmup S] [--write] [--from FILE]
 *   npm run bench -- --redis-counting [--duration S] [--warmup S] [--rounds N] [--connections N] [--write] [--from FILE]
 *   npm run bench -- --workers [...]   (bench/workers.ts)
 *   npm run bench -- --h2 [--duration S] [--warmup S] [--rounds N] [--connections N] [--write] [--from FILE]   (bench/h2.ts)
 *   npm run bench -- --idle [--clients N] [--write] [--from FILE]   (bench/idle.ts)
 *   npm run bench -- --instructions [--requests N] [--rounds R] [--warm N] [--traced] [--plugin] [--node|--node-only] [--node-bodies] [--h2c] [--keep]   (bench/instructions.ts)
 *   npm run bench -- --many-clients [--clients N] [--rounds R] [--duration S] [--write] [--from FILE]   (bench/clients.ts)
 *   npm run bench -- --cache-misses [--clients N] [--requests N] [--rounds R] [--ll BYTES]   (bench/cache.ts)
 *   npm run bench -- --tenants [--tenant-count N] [--apis M] [--requests R]   (bench/tenants.ts)
 *
 * Per cell (scenario × target × round): req/s, ratio to direct in the same round, p50/p99, errors and
 * non-2xx, and CPU time per completed request of the proxy, the backend and this process (the client),
 * from /proc/<pid>/stat (utime+stime, CLK_TCK from getconf). Targets alternate within a round and each
 * cell has a warm-up, so ratios within one run are what counts on a shared machine. The auth and
 * throttling scenarios add the gateway's open route as a target, so the feature's own cost is a ratio
 * within one round too (docs/security.md: within 15 %; docs/throttling.md: at most 10 %).
 *
 * --compare also runs ../shared/peers/run.sh with throughway as its extra target (its knobs ROUNDS,
 * DURATION, WARMUP, TOOLS, SCENARIOS, TARGETS pass through from the environment) and checks docs/performance.md's
 * targets against nginx-1w-tuned and node-http-proxy from the same run. --peers-results FILE does the
 * same from an earlier harness run's raw JSON. --write regenerates docs/performance.md (bench/render.ts);
 * --from FILE renders an earlier run's raw results again (after a change to the document's text) without
 * measuring. --mediation runs bench/mediation.ts instead; its --write replaces only the document's
 * mediation section, which the main run's --write keeps (like the peers section). --redis-counting
 * measures the throttled route of two full gateways, counter_store = "memory" vs "redis", and its --write
 * replaces only its own section; --workers (bench/workers.ts) likewise for the cluster-mode section.
 */
import autocannon = require('autocannon');
import { execFileSync, spawn } from 'node:child_process';
import { runMediationBench } from './mediation';
import { GRAPHQL_BEGIN, GRAPHQL_END, renderGraphql, renderGraphqlTable, runGraphqlBench, QUERY_BODY, type GraphqlRun } from './graphql';
import { Redis } from 'ioredis';
import {
  COUNTING_BEGIN,
  COUNTING_END,
  MEDIATION_BEGIN,
  MEDIATION_END,
  PEERS_BEGIN,
  PEERS_END,
  renderDoc,
  renderFeatures,
  renderMediation,
  renderMediationTable,
  renderOwn,
  renderCounting,
  renderCountingTable,
  WORKERS_BEGIN,
  WORKERS_END,
  writeSection,
  type CountingRun,
  type Cell,
  type MediationRun,
} from './render';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as toml from 'toml';
import {
  CLK_TCK,
  COUNTING,
  DIST_BENCH,
  HOST,
  ROOT,
  SCENARIOS,
  WORK_DIR,
  sendsGatewayRequest,
  targetPath,
  fmt,
  freePort,
  installExitHandlers,
  log,
  machineLines,
  machineTicks,
  median,
  PERF_DOC,
  procTicks,
  rawRun,
  sanity,
  sleep,
  startBackend,
  startProc,
  startThroughway,
  stopAll,
  traceparents,
  uploadBody,
  waitPort,
  waitQuiet,
  type GatewayKind,
  type Proc,
  type Scenario,
  type TargetName,
} from './common';
import { runWorkersBench } from './workers';
import { runH2Bench } from './h2';
import { runIdleBench } from './idle';
import { runClientsBench } from './clients';
import { runInstructionsBench } from './instructions';
import { runCacheBench } from './cache';

/** Used when conf/ has no demo API to read the URL from. */
const DEMO_URL_FALLBACK = 'http://127.0.0.1:8280/<context>/<version>/<resource>';

// ------------------------------------------------------------------ options

interface Options {
  duration: number;
  warmup: number;
  connections: number | undefined;
  scenarios: Scenario[];
  rounds: number;
  compare: boolean;
  peersResults: string | undefined;
  from: string | undefined;
  peersDir: string;
  write: boolean;
  quietMaxS: number;
  quietCores: number;
  /**
   * Run the mediation scenarios (bench/mediation.ts) instead of the main ones. They stay a run of their
   * own: a gateway configured differently (force_json_validation on), and rows that are not
   * direct-vs-throughway cells (two of them load the gateway at the same time).
   */
  mediation: boolean;
  /** Measure the throttled route with counter_store = "memory" vs "redis" instead (its own section). */
  redisCounting: boolean;
  /** A small GraphQL query vs a plain JSON POST of the same size, gateway CPU per request (bench/graphql.ts). */
  graphql: boolean;
}

/**
 * The help: a text file, so that `npm run bench -- --help` answers without compiling (bench/run.sh prints
 * it; test/bench/usage.test.ts checks that it names every scenario).
 */
const USAGE = fs.readFileSync(path.join(ROOT, 'bench', 'usage.txt'), 'utf8').trimEnd();

function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    duration: 10,
    warmup: 2,
    connections: undefined,
    scenarios: [...SCENARIOS],
    rounds: 1,
    compare: false,
    peersResults: undefined,
    from: undefined,
    peersDir: path.resolve(ROOT, '..', 'shared', 'peers'),
    write: false,
    quietMaxS: 6,
    quietCores: 0.25,
    mediation: false,
    redisCounting: false,
    graphql: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--duration':
        o.duration = num(a, argv[++i], 1, 600);
        break;
      case '--warmup':
        o.warmup = num(a, argv[++i], 0, 120);
        break;
      case '--connections':
        o.connections = Math.floor(num(a, argv[++i], 1, 10_000));
        break;
      case '--rounds':
        o.rounds = Math.floor(num(a, argv[++i], 1, 20));
        break;
      case '--scenarios': {
        const names = (argv[++i] ?? '').split(',').filter(Boolean);
        const picked: Scenario[] = [];
        for (const n of names) {
          const sc = SCENARIOS.find((s) => s.name === n);
          if (!sc) usage(`unknown scenario ${n}`);
          picked.push(sc);
        }
        if (picked.length === 0) usage('--scenarios needs at least one name');
        o.scenarios = picked;
        break;
      }
      case '--compare':
        o.compare = true;
        break;
      case '--peers-results':
        o.peersResults = path.resolve(argv[++i] ?? usage('--peers-results needs a file'));
        break;
      case '--from':
        o.from = path.resolve(argv[++i] ?? usage('--from needs a file'));
        break;
      case '--peers-dir':
        o.peersDir = path.resolve(argv[++i] ?? usage('--peers-dir needs a directory'));
        break;
      case '--write':
        o.write = true;
        break;
      case '--auth':
      case '--throttling':
        o.scenarios = SCENARIOS.filter((s) => s.name === a.slice(2));
        break;
      case '--mediation':
        o.mediation = true;
        break;
      case '--graphql':
        o.graphql = true;
        break;
      case '--redis-counting':
        o.redisCounting = true;
        break;
      case '--quiet-max':
        o.quietMaxS = num(a, argv[++i], 0, 60);
        break;
      case '--quiet-cores':
        o.quietCores = num(a, argv[++i], 0, 64);
        break;
      case '--help':
      case '-h':
        process.stdout.write(USAGE + '\n');
        process.exit(0);
        break;
      default:
        usage(`unknown option ${a}`);
    }
  }
  if (o.compare && o.peersResults) usage('--compare and --peers-results exclude each other');
  if (o.compare && o.from) usage('--compare and --from exclude each other');
  if (o.mediation && (o.compare || o.peersResults !== undefined)) usage('--mediation runs on its own: no --compare or --peers-results');
  if (o.redisCounting && (o.compare || o.peersResults !== undefined || o.mediation))
    usage('--redis-counting runs on its own: no --compare, --peers-results or --mediation');
  return o;
}

/** An option's number, within [min, max], or usage(). */
function num(name: string, v: string | undefined, min: number, max: number): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n < min || n > max) usage(`${name} needs a number in [${min}, ${max}]`);
  return n;
}

function usage(msg: string): never {
  process.stderr.write(`${msg}\n${USAGE}\n`);
  process.exit(2);
}

// ------------------------------------------------------------------ measuring

function runAutocannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const inst = autocannon(opts, (err, result) => {
      settled = true;
      clearTimeout(guard);
      if (err) reject(err);
      else resolve(result);
    });
    // autocannon stops itself after `duration`; this is the bound if it does not.
    const guard = setTimeout(
      () => {
        if (!settled) inst.stop();
      },
      ((opts.duration ?? 10) + 30) * 1000,
    );
  });
}

type GatewayTarget = { readonly proc: Proc; readonly port: number; readonly token: string };

/** Where a target listens, and the bearer token of each full gateway (for the auth scenarios' routes). */
interface Targets {
  readonly backend: Proc;
  readonly backendPort: number;
  readonly proxy: Proc;
  readonly proxyPort: number;
  /** The full gateways the selected scenarios need, by kind (Scenario.gateway, default `features`). */
  readonly gateways: Partial<Record<GatewayKind, GatewayTarget>>;
}

/** Autocannon's request list for a scenario with traceSampled: 100 requests cycled per connection (common.ts traceparents()). */
function tracedRequests(fraction: number, headers: Record<string, string>): NonNullable<autocannon.Options['requests']> {
  return traceparents(fraction).map((traceparent) => ({ headers: { ...headers, traceparent } }));
}

function acOptions(
  port: number,
  urlPath: string,
  sc: Scenario,
  headers: Record<string, string>,
  conns: number,
  seconds: number,
  body: Buffer,
  target?: TargetName,
): autocannon.Options {
  const o: autocannon.Options = {
    url: `http://${HOST}:${port}${urlPath}`,
    connections: conns,
    duration: seconds,
    timeout: 10,
    method: sc.method,
    headers,
  };
  if (sc.method === 'POST') {
    o.body = body;
    o.headers = { ...headers, 'content-type': 'application/octet-stream' };
  }
  // Only the cells that send the scenario's gateway request are traced; the others get the plain request.
  if (sc.traceSampled !== undefined && target !== undefined && sendsGatewayRequest(target))
    o.requests = tracedRequests(sc.traceSampled, o.headers ?? {});
  return o;
}

function gatewayOf(sc: Scenario, t: Targets): GatewayTarget {
  const kind = sc.gateway ?? 'features';
  const g = t.gateways[kind];
  if (g === undefined) throw new Error(`scenario ${sc.name} needs the ${kind} gateway, which was not started`);
  return g;
}

/** Port, path, headers and process under test of one target in one scenario. */
function targetOf(
  sc: Scenario,
  target: TargetName,
  t: Targets,
): { port: number; path: string; headers: Record<string, string>; proc: Proc | undefined } {
  if (target === 'direct') return { port: t.backendPort, path: targetPath(sc, target), headers: {}, proc: undefined };
  if (target === 'throughway') return { port: t.proxyPort, path: targetPath(sc, target), headers: {}, proc: t.proxy };
  const g = gatewayOf(sc, t);
  const headers: Record<string, string> = sendsGatewayRequest(target) && sc.auth === true ? { authorization: `Bearer ${g.token}` } : {};
  // The same-request cell: the gateway's request, token included, through the bare transport (the backend ignores the token).
  if (target === 'throughway-same') return { port: t.proxyPort, path: targetPath(sc, target), headers, proc: t.proxy };
  return { port: g.port, path: targetPath(sc, target), headers, proc: g.proc };
}

function measureCell(round: number, sc: Scenario, target: TargetName, targets: Targets, opts: Options, body: Buffer): Promise<Cell> {
  return measureAt(round, sc, target, targetOf(sc, target, targets), targets.backend, opts, body);
}

/** One cell on a resolved target: `proxy` is the process whose CPU is charged per request. */
async function measureAt(
  round: number,
  sc: Scenario,
  target: TargetName,
  at: ReturnType<typeof targetOf>,
  backend: Proc,
  opts: Options,
  body: Buffer,
): Promise<Cell> {
  const conns = opts.connections ?? sc.conns;
  const { port, path: urlPath, headers, proc: proxy } = at;
  const quiet = await waitQuiet(opts.quietMaxS, opts.quietCores);
  // The warm-up also fills the gateway's token cache: the auth cells measure the warm path.
  if (opts.warmup > 0) await runAutocannon(acOptions(port, urlPath, sc, headers, conns, opts.warmup, body, target));
  const ncpu = os.cpus().length || 1;
  const m0 = machineTicks();
  const p0 = proxy ? procTicks(proxy.pid) : undefined;
  const b0 = procTicks(backend.pid);
  const c0 = procTicks('self');
  const r = await runAutocannon(acOptions(port, urlPath, sc, headers, conns, opts.duration, body, target));
  const p1 = proxy ? procTicks(proxy.pid) : undefined;
  const b1 = procTicks(backend.pid);
  const c1 = procTicks('self');
  const m1 = machineTicks();
  const requests = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
  const usPer = (a: number | undefined, b: number | undefined): number =>
    a === undefined || b === undefined || requests === 0 ? NaN : (((b - a) / CLK_TCK) * 1e6) / requests;
  const ours = (p1 ?? 0) - (p0 ?? 0) + ((b1 ?? 0) - (b0 ?? 0)) + ((c1 ?? 0) - (c0 ?? 0));
  const wall = (m1.total - m0.total) / ncpu;
  const cell: Cell = {
    round,
    scenario: sc.name,
    target,
    conns,
    ok: requests > 0,
    requests,
    durationS: r.duration,
    rps: requests / r.duration,
    ratio: NaN,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    proxyUs: proxy ? usPer(p0, p1) : null,
    backendUs: usPer(b0, b1),
    clientUs: usPer(c0, c1),
    otherCores: wall > 0 ? (m1.busy - m0.busy - ours) / wall : NaN,
    preBusyCores: quiet.busyCores,
  };
  if (!cell.ok) cell.error = `no completed requests (errors=${r.errors} timeouts=${r.timeouts})`;
  return cell;
}

// ------------------------------------------------------------------ peers

interface PeerRecord {
  round: number;
  scenario: string;
  tool: string;
  target: string;
  ok: boolean;
  rps: number;
  ratio: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  proxyUsPerReq: number | null;
  backendUsPerReq: number | null;
  otherCores?: number;
}

interface PeerRun {
  meta: {
    date: string;
    cfg: { rounds: number; duration: number; warmup: number; tools: string[]; scenarios: string[]; wrkThreads: number };
    versions: Record<string, string>;
    targets: { name: string; port: number; cmd: string | null }[];
  };
  results: PeerRecord[];
}

interface PeersReport {
  renderSummary(results: PeerRecord[], names: string[], meta: PeerRun['meta']): string;
  renderTables(results: PeerRecord[], names: string[], meta: PeerRun['meta']): string;
}

const THROUGHWAY = 'throughway';
const NGINX = 'nginx-1w-tuned';
const HTTP_PROXY = 'http-proxy';

async function runPeers(opts: Options): Promise<string> {
  const runSh = path.join(opts.peersDir, 'run.sh');
  if (!fs.existsSync(runSh)) throw new Error(`${runSh} not found (--peers-dir)`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    EXTRA_CMD: `${process.execPath} ${path.join(ROOT, 'dist', 'bench', 'start-throughway.js')}`,
    EXTRA_PORT: process.env.EXTRA_PORT ?? '8280',
    EXTRA_NAME: THROUGHWAY,
  };
  delete env.EXTRA_PREFIX;
  delete env.EXTRA_HEADERS;
  // Bound: every cell is bounded by the harness (load tool -d plus timeout(1)); this bounds the whole run.
  const rounds = Number(env.ROUNDS ?? 3);
  const cellS = Number(env.DURATION ?? 8) + Number(env.WARMUP ?? 2) + Number(env.QUIET_MAX_S ?? 6) + 40;
  const tools = (env.TOOLS ?? 'wrk,autocannon').split(',').filter(Boolean).length;
  const scen = (env.SCENARIOS ?? 'small,64k,post1m').split(',').filter(Boolean).length;
  const limitS = rounds * tools * scen * 10 * cellS + 900;
  log(`peers: ${runSh} with throughway as extra target (bounded at ${Math.round(limitS / 60)} min)`);
  const child = spawn('bash', [runSh], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      log('peers run exceeded its bound; stopping it');
      if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
    }, limitS * 1000);
    child.on('close', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  const m = /^raw: (.*\.json)\s*$/m.exec(out);
  if (code !== 0 || !m || !m[1]) throw new Error(`peers run failed (exit ${code}); its output ends: ${out.slice(-500)}`);
  return m[1];
}

function loadPeersReport(opts: Options, resultsFile: string): PeersReport | undefined {
  for (const dir of [path.dirname(path.dirname(resultsFile)), opts.peersDir]) {
    const f = path.join(dir, 'report.js');
    if (fs.existsSync(f)) return require(f) as PeersReport;
  }
  return undefined;
}

interface Check {
  readonly what: string;
  readonly ours: string;
  readonly theirs: string;
  readonly value: string;
  readonly target: string;
  readonly met: boolean | undefined;
  readonly perRound: string;
}

function peerChecks(run: PeerRun, tool: string): Check[] {
  const rs = run.results.filter((r) => r.tool === tool && r.ok);
  const of = (target: string, sc: string): PeerRecord[] => rs.filter((r) => r.target === target && r.scenario === sc);
  const paired = (sc: string, other: string, f: (r: PeerRecord) => number, op: (a: number, b: number) => number, d: number): string => {
    const vals: number[] = [];
    for (const r of of(THROUGHWAY, sc)) {
      const o = of(other, sc).find((x) => x.round === r.round);
      if (o) vals.push(op(f(r), f(o)));
    }
    return vals.length > 1 ? vals.map((v) => fmt(v, d)).join(', ') : '—';
  };
  const checks: Check[] = [];
  const cpu = (sc: string, label: string, limit: number): void => {
    const ours = median(of(THROUGHWAY, sc).map((r) => r.proxyUsPerReq ?? NaN));
    const theirs = median(of(NGINX, sc).map((r) => r.proxyUsPerReq ?? NaN));
    const ratio = ours / theirs;
    checks.push({
      what: `proxy CPU µs/req, ${label}`,
      ours: fmt(ours, 1),
      theirs: `${fmt(theirs, 1)} (${NGINX})`,
      value: `${fmt(ratio, 2)}×`,
      target: `≤ ${limit}×`,
      met: Number.isFinite(ratio) ? ratio <= limit : undefined,
      perRound: paired(
        sc,
        NGINX,
        (r) => r.proxyUsPerReq ?? NaN,
        (a, b) => a / b,
        2,
      ),
    });
  };
  // The performance targets (docs/performance.md, "Targets"): CPU per request against nginx, one worker, tuned.
  cpu('small', 'GET 96 B', 1.35);
  cpu('64k', 'GET 64 KiB', 1.15);
  cpu('post1m', 'POST 1 MiB', 1.0);
  {
    const ours = median(of(THROUGHWAY, 'small').map((r) => r.rps));
    const theirs = median(of(HTTP_PROXY, 'small').map((r) => r.rps));
    const ratio = ours / theirs;
    checks.push({
      what: 'req/s, GET 96 B',
      ours: fmt(ours),
      theirs: `${fmt(theirs)} (node-http-proxy)`,
      value: `${fmt(ratio, 2)}×`,
      target: '≥ 3×',
      met: Number.isFinite(ratio) ? ratio >= 3 : undefined,
      perRound: paired(
        'small',
        HTTP_PROXY,
        (r) => r.rps,
        (a, b) => a / b,
        2,
      ),
    });
  }
  for (const [sc, label] of [
    ['small', 'GET 96 B'],
    ['64k', 'GET 64 KiB'],
    ['post1m', 'POST 1 MiB'],
  ] as const) {
    const ours = median(of(THROUGHWAY, sc).map((r) => r.p99));
    const theirs = median(of(NGINX, sc).map((r) => r.p99));
    const diff = ours - theirs;
    checks.push({
      what: `p99 ms, ${label}`,
      ours: fmt(ours, 2),
      theirs: `${fmt(theirs, 2)} (${NGINX})`,
      value: `${diff >= 0 ? '+' : ''}${fmt(diff, 2)} ms`,
      target: '≤ +1 ms',
      met: Number.isFinite(diff) ? diff <= 1 : undefined,
      perRound: paired(
        sc,
        NGINX,
        (r) => r.p99,
        (a, b) => a - b,
        1,
      ),
    });
  }
  return checks;
}

function renderPeers(resultsFile: string, opts: Options, command: string): string {
  const run = JSON.parse(fs.readFileSync(resultsFile, 'utf8')) as PeerRun;
  const names = run.meta.targets.map((t) => t.name);
  const L: string[] = [];
  const c = run.meta.cfg;
  L.push(PEERS_BEGIN);
  L.push('## Against the peers (the peers harness, wrk/autocannon, one shared backend)');
  L.push('');
  L.push(
    `Run of ${run.meta.date} (${c.rounds} round${c.rounds > 1 ? 's' : ''} of ${c.warmup} s warm-up + ${c.duration} s per cell, tools ${c.tools.join(', ')}; ` +
      `targets interleaved within each round), produced by \`${command}\`.`,
  );
  L.push('');
  L.push(
    'Versions: ' +
      Object.entries(run.meta.versions)
        .map(([k, v]) => `${k} ${v}`)
        .join('; ') +
      '.',
  );
  const others = run.results
    .filter((r) => r.ok)
    .map((r) => r.otherCores ?? NaN)
    .filter(Number.isFinite);
  if (others.length > 0) {
    L.push('');
    L.push(
      `Other tenants' CPU during the measured windows (machine busy CPU minus client + proxy + backend): median ${fmt(median(others), 2)} cores, ` +
        `max ${fmt(Math.max(...others), 2)} of ${os.cpus().length}. ` +
        (median(others) > 0.3
          ? 'Other work competed for the CPUs throughout this run, so req/s and above all p99 reflect when each process got a core ' +
            '(compare the per-round column); CPU µs per request is the figure to trust.'
          : 'The machine was mostly quiet during this run.'),
    );
  }
  const tool = c.tools.includes('wrk') ? 'wrk' : (c.tools[0] ?? 'wrk');
  const have = (n: string): boolean => names.includes(n);
  L.push('');
  L.push(`### Targets for the transport (${tool}, medians over rounds)`);
  L.push('');
  if (!have(THROUGHWAY)) {
    L.push('throughway was not among the targets of this run.');
  } else {
    const checks = peerChecks(run, tool);
    L.push('| check | throughway | reference | throughway vs reference | target | met | per round |');
    L.push('|---|---|---|---|---|---|---|');
    for (const k of checks) {
      L.push(
        `| ${k.what} | ${k.ours} | ${k.theirs} | ${k.value} | ${k.target} | ${k.met === undefined ? 'not measured' : k.met ? '**met**' : '**not met**'} | ${k.perRound} |`,
      );
    }
    const met = checks.filter((k) => k.met === true).map((k) => k.what);
    const missed = checks.filter((k) => k.met === false).map((k) => k.what);
    const unmeasured = checks.filter((k) => k.met === undefined).map((k) => k.what);
    L.push('');
    L.push(
      `In this run: met — ${met.length ? met.join('; ') : 'none'}. Not met — ${missed.length ? missed.join('; ') : 'none'}.` +
        (unmeasured.length ? ` Not measured — ${unmeasured.join('; ')}.` : ''),
    );
  }
  const report = loadPeersReport(opts, resultsFile);
  if (report) {
    L.push('');
    L.push('### Tables');
    L.push('');
    L.push(report.renderSummary(run.results, names, run.meta));
    L.push('');
    L.push(report.renderTables(run.results, names, run.meta));
  }
  L.push(PEERS_END);
  return L.join('\n');
}

function peersCommand(resultsFile: string): string {
  const run = JSON.parse(fs.readFileSync(resultsFile, 'utf8')) as PeerRun;
  const c = run.meta.cfg;
  const extra = run.meta.targets.find((t) => t.name === THROUGHWAY);
  const cmd = extra?.cmd?.replace(/^bash -c exec /, '') ?? '';
  const all = ['direct', 'nginx-1w', 'nginx-2w', 'nginx-1w-tuned', 'http-proxy', 'fastify-proxy', 'naive-node', 'cluster-2w'];
  const builtIns = run.meta.targets.map((t) => t.name).filter((n) => n !== THROUGHWAY);
  const targets = all.every((n) => builtIns.includes(n)) ? '' : ` TARGETS=${builtIns.join(',')}`;
  return (
    `cd ../shared/peers && EXTRA_CMD='${cmd}' EXTRA_PORT=${extra?.port ?? 8280} EXTRA_NAME=${THROUGHWAY} ` +
    `ROUNDS=${c.rounds} DURATION=${c.duration} WARMUP=${c.warmup} TOOLS=${c.tools.join(',')} SCENARIOS=${c.scenarios.join(',')}${targets} ./run.sh`
  );
}

// ------------------------------------------------------------------ the document

function shellQuote(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

function benchCommand(argv: readonly string[], compare: boolean): string {
  const env = compare
    ? ['ROUNDS', 'DURATION', 'WARMUP', 'TOOLS', 'SCENARIOS', 'TARGETS', 'QUIET_MAX_S', 'QUIET_CORES']
        .filter((k) => process.env[k] !== undefined)
        .map((k) => `${k}=${shellQuote(process.env[k] ?? '')}`)
    : [];
  return [...env, 'npm run bench', ...(argv.length ? ['--', ...argv.map(shellQuote)] : [])].join(' ');
}

/**
 * The URL of the demo API's 96-byte resource as `npm start` serves it: context and version from
 * conf/apis/demo.toml, the port from conf/deployment.toml (listener port + server.offset).
 */
function demoUrl(): { url: string; fromConf: boolean } {
  try {
    const api = toml.parse(fs.readFileSync(path.join(ROOT, 'conf', 'apis', 'demo.toml'), 'utf8')) as {
      context?: string;
      version?: string;
      resources?: { path?: string; methods?: string[] }[];
    };
    const dep = toml.parse(fs.readFileSync(path.join(ROOT, 'conf', 'deployment.toml'), 'utf8')) as {
      server?: { offset?: number };
      transport?: { passthru_http?: { listener?: { parameters?: { port?: number } } } };
    };
    if (typeof api.context !== 'string' || typeof api.version !== 'string') return { url: DEMO_URL_FALLBACK, fromConf: false };
    const port = (dep.transport?.passthru_http?.listener?.parameters?.port ?? 8280) + (dep.server?.offset ?? 0);
    const gets = (api.resources ?? []).filter(
      (r) => (r.methods ?? []).includes('GET') && typeof r.path === 'string' && !r.path.includes('{'),
    );
    const res = gets.find((r) => r.path === '/small') ?? gets[0];
    if (!res?.path) return { url: DEMO_URL_FALLBACK, fromConf: false };
    return { url: `http://127.0.0.1:${port}${api.context.replace(/\/+$/, '')}/${api.version}${res.path}`, fromConf: true };
  } catch {
    return { url: DEMO_URL_FALLBACK, fromConf: false };
  }
}

/** A block of the current document between two markers (kept when the document is written again). */
function existingSection(begin: string, end: string): string | undefined {
  try {
    const doc = fs.readFileSync(PERF_DOC, 'utf8');
    const a = doc.indexOf(begin);
    const b = doc.indexOf(end);
    if (a >= 0 && b > a) return doc.slice(a, b + end.length);
  } catch {
    // no document yet
  }
  return undefined;
}

/**
 * Every other marked section of the current document (`<!-- name:begin -->` … `<!-- name:end -->`: the soak
 * run's, the import figures, ...), in document order: a main run's --write keeps them as they are.
 */
function otherSections(known: readonly string[]): string[] {
  let doc: string;
  try {
    doc = fs.readFileSync(PERF_DOC, 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  const begin = /<!-- ([a-z0-9-]+):begin -->/g;
  for (let m = begin.exec(doc); m !== null; m = begin.exec(doc)) {
    if (known.includes(m[0])) continue;
    const end = `<!-- ${m[1]}:end -->`;
    const b = doc.indexOf(end, m.index);
    if (b < 0) continue;
    out.push(doc.slice(m.index, b + end.length));
    begin.lastIndex = b + end.length;
  }
  return out;
}

// ------------------------------------------------------------------ main

/** What a run leaves in WORK_DIR/run-<date>.json; --from renders a document from it again. */
interface RawRun {
  date: string;
  command: string;
  load0: number[];
  load1: number[];
  opts: { duration: number; warmup: number; rounds: number; connections: number | undefined; scenarios: string[] };
  clkTck: number;
  cells: Cell[];
  /** The peers harness's raw results, and whether this run produced them (--compare). */
  peersFile: string | undefined;
  peersFromCompare: boolean;
}

/**
 * bench/start-gateway.ts's environment per gateway kind: `full` writes the access log, `traced` also
 * sends its spans to the backend's Zipkin sink (bench/backend.ts, POST /api/v2/spans).
 */
const GATEWAY_ENV: Readonly<Record<GatewayKind, (backendPort: number) => Record<string, string>>> = {
  features: () => ({}),
  full: () => ({ ACCESS_LOG: '1' }),
  traced: (backendPort) => ({ ACCESS_LOG: '1', TRACER_PORT: String(backendPort) }),
};

/** Starts the full gateway (bench/start-gateway.ts) and reads the access token it issued. */
async function startGateway(backendPort: number, name = 'gateway', env: Record<string, string> = {}): Promise<GatewayTarget> {
  const port = await freePort();
  const tokenFile = path.join(WORK_DIR, `token-${process.pid}-${name}`);
  fs.rmSync(tokenFile, { force: true });
  const proc = startProc(name, [process.execPath, path.join(DIST_BENCH, 'start-gateway.js')], {
    ...env,
    PORT: String(port),
    UPSTREAM: `http://${HOST}:${backendPort}`,
    TOKEN_FILE: tokenFile,
  });
  await waitPort(port, 30_000, proc);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  fs.rmSync(tokenFile, { force: true });
  return { proc, port, token };
}

/** Every route a gateway target of the selected scenarios requests answers 200 with the backend's 96 bytes. */
async function gatewaySanity(opts: Options, t: Targets): Promise<void> {
  for (const sc of opts.scenarios) {
    for (const target of sc.targets.filter((x) => x === 'gateway' || x === 'gateway-open')) {
      const { port, path: p, headers } = targetOf(sc, target, t);
      const r = await fetch(`http://${HOST}:${port}${p}`, { headers });
      const b = await r.arrayBuffer();
      if (r.status !== 200 || b.byteLength !== 96)
        throw new Error(`gateway ${p} -> ${r.status} len=${b.byteLength}: ${Buffer.from(b).toString().slice(0, 200)}`);
    }
    if (sc.auth === true) {
      // Without the token the protected route must refuse: else the auth cells would measure nothing.
      const r = await fetch(`http://${HOST}:${gatewayOf(sc, t).port}${targetPath(sc, 'gateway')}`);
      await r.arrayBuffer();
      if (r.status !== 401) throw new Error(`gateway ${targetPath(sc, 'gateway')} without a token -> ${r.status}, expected 401`);
    }
  }
}

async function measure(opts: Options): Promise<Cell[]> {
  const body = uploadBody();
  const backendPort = await freePort();
  const backend = await startBackend(backendPort);
  const twPort = await freePort();
  const proxy = await startThroughway(twPort, backendPort);
  const gateways: Partial<Record<GatewayKind, GatewayTarget>> = {};
  for (const sc of opts.scenarios) {
    const kind = sc.gateway ?? 'features';
    if (gateways[kind] !== undefined || !sc.targets.some((x) => x === 'gateway' || x === 'gateway-open')) continue;
    gateways[kind] = await startGateway(backendPort, kind === 'features' ? 'gateway' : `gateway-${kind}`, GATEWAY_ENV[kind](backendPort));
  }
  const targets: Targets = { backend, backendPort, proxy, proxyPort: twPort, gateways };
  await sanity(backendPort, body);
  await sanity(twPort, body);
  await gatewaySanity(opts, targets);
  log(
    `backend pid ${backend.pid} on ${HOST}:${backendPort}; throughway pid ${proxy.pid} on ${HOST}:${twPort}` +
      Object.entries(gateways)
        .map(([k, g]) => `; gateway (${k}) pid ${g.proc.pid} on ${HOST}:${g.port}`)
        .join(''),
  );

  const cells: Cell[] = [];
  const total = opts.rounds * opts.scenarios.reduce((n, sc) => n + sc.targets.length, 0);
  log(`${total} cells of ${opts.warmup} s warm-up + ${opts.duration} s (+ up to ${opts.quietMaxS} s waiting for a quiet machine each)`);
  const procs = [backend, proxy, ...Object.values(gateways).map((g) => g.proc)];
  let n = 0;
  for (let round = 1; round <= opts.rounds; round++) {
    for (const sc of opts.scenarios) {
      log(
        `-- round ${round}/${opts.rounds}: ${sc.name}: ${sc.label}${opts.connections !== undefined ? ` (with ${opts.connections} conns)` : ''}`,
      );
      let directRps = NaN;
      let openRps = NaN;
      for (const target of sc.targets) {
        n++;
        const gone = procs.find((p) => p.exited);
        if (gone !== undefined) throw new Error(`${gone.name} exited; see ${gone.logFile}`);
        const c = await measureCell(round, sc, target, targets, opts, body);
        if (target === 'direct') directRps = c.rps;
        if (target === 'gateway-open') openRps = c.rps;
        c.ratio = c.rps / directRps;
        cells.push(c);
        log(
          `[${n}/${total}] r${round} ${sc.name} ${target}: ${fmt(c.rps)} req/s` +
            (target === 'direct'
              ? ''
              : ` (${fmt(c.ratio, 2)} of direct${target === 'gateway' && Number.isFinite(openRps) ? `, ${fmt(c.rps / openRps, 3)} of the open route` : ''})`) +
            ` p50=${fmt(c.p50)} p99=${fmt(c.p99)} ms proxy=${fmt(c.proxyUs, 1)} backend=${fmt(c.backendUs, 1)} client=${fmt(c.clientUs, 1)} µs/req` +
            ` other=${fmt(c.otherCores, 2)} cores err=${c.errors} timeouts=${c.timeouts} non2xx=${c.non2xx}${c.ok ? '' : ' FAILED: ' + (c.error ?? '')}`,
        );
      }
    }
  }
  await stopAll();
  const twLog = fs.readFileSync(proxy.logFile, 'utf8').trim().split('\n').pop() ?? '';
  log(`throughway: ${twLog}`);
  return cells;
}

/**
 * `--mediation`: measures (or, with --from, reads) a mediation run, prints its table, keeps its raw
 * rows, and with --write replaces only the mediation section of docs/performance.md.
 */
async function mediation(opts: Options, argv: readonly string[]): Promise<void> {
  const run = await rawRun<MediationRun>('mediation', 'mediation', opts.from, async () => {
    const date = new Date().toISOString();
    const rows = await runMediationBench(opts);
    return { date, command: benchCommand(argv, opts.compare), duration: opts.duration, warmup: opts.warmup, rows };
  });
  process.stdout.write(`# throughway mediation bench — ${run.date}\n\n${renderMediationTable(run.rows)}\n`);
  if (opts.write) {
    writeSection(MEDIATION_BEGIN, MEDIATION_END, renderMediation(run), 'mediation');
  }
}

/** `--graphql`: measures (or, with --from, reads) the GraphQL run; with --write replaces its section of docs/performance.md. */
async function graphql(opts: Options, argv: readonly string[]): Promise<void> {
  const run = await rawRun<GraphqlRun>('graphql', 'graphql', opts.from, async () => {
    const date = new Date().toISOString();
    const rows = await runGraphqlBench(opts);
    return {
      date,
      command: benchCommand(argv, opts.compare),
      duration: opts.duration,
      warmup: opts.warmup,
      rounds: opts.rounds,
      bytes: Buffer.byteLength(QUERY_BODY),
      rows,
    };
  });
  process.stdout.write(`# throughway GraphQL bench — ${run.date}\n\n${renderGraphqlTable(run.rows)}\n`);
  if (opts.write) writeSection(GRAPHQL_BEGIN, GRAPHQL_END, renderGraphql(run), 'GraphQL');
}

/** The Redis of --redis-counting: the tests' (THROUGHWAY_TEST_REDIS_URL) or the machine's default. */
const COUNTING_REDIS =
  process.env.THROUGHWAY_TEST_REDIS_URL !== undefined && process.env.THROUGHWAY_TEST_REDIS_URL !== ''
    ? process.env.THROUGHWAY_TEST_REDIS_URL
    : 'redis://127.0.0.1:6379';

/**
 * Measures the throttled route on a memory-counting and a Redis-counting gateway, alternating within each
 * round (the order swapped every round). Before measuring, one call on the Redis gateway must leave its
 * counters in Redis: else the Redis cells would measure memory counting.
 */
async function measureCounting(opts: Options): Promise<Cell[]> {
  const probe = new Redis(COUNTING_REDIS, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    probe.disconnect();
    throw new Error(`--redis-counting needs Redis at ${COUNTING_REDIS} (THROUGHWAY_TEST_REDIS_URL): ${(err as Error).message}`);
  }
  try {
    const body = uploadBody();
    const backendPort = await freePort();
    const backend = await startBackend(backendPort);
    const gateways = {
      memory: await startGateway(backendPort, 'gateway-memory', { COUNTER_STORE: 'memory' }),
      redis: await startGateway(backendPort, 'gateway-redis', { COUNTER_STORE: 'redis', REDIS_URL: COUNTING_REDIS }),
    };
    const route = targetPath(COUNTING.redis, 'gateway');
    for (const g of Object.values(gateways)) {
      const r = await fetch(`http://${HOST}:${g.port}${route}`);
      const b = await r.arrayBuffer();
      if (r.status !== 200 || b.byteLength !== 96) throw new Error(`gateway ${route} -> ${r.status} len=${b.byteLength}`);
    }
    await sleep(500);
    const keys = await probe.keys(`tw:thr:*${route.slice(0, route.lastIndexOf('/'))}*`);
    if (keys.length === 0) throw new Error(`the Redis-counting gateway left no counters in ${COUNTING_REDIS} after a call to ${route}`);
    log(
      `backend pid ${backend.pid}; gateway-memory pid ${gateways.memory.proc.pid}; gateway-redis pid ${gateways.redis.proc.pid} (${keys.length} counters in Redis)`,
    );
    const cells: Cell[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 === 1 ? (['memory', 'redis'] as const) : (['redis', 'memory'] as const);
      for (const store of order) {
        const g = gateways[store];
        if (g.proc.exited) throw new Error(`${g.proc.name} exited; see ${g.proc.logFile}`);
        const sc = COUNTING[store];
        const c = await measureAt(round, sc, 'gateway', { port: g.port, path: route, headers: {}, proc: g.proc }, backend, opts, body);
        cells.push(c);
        log(
          `r${round} counter_store=${store}: ${fmt(c.rps)} req/s p50=${fmt(c.p50)} p99=${fmt(c.p99)} ms gateway=${fmt(c.proxyUs, 1)} µs/req err=${c.errors} non2xx=${c.non2xx}${c.ok ? '' : ' FAILED: ' + (c.error ?? '')}`,
        );
      }
    }
    return cells;
  } finally {
    probe.disconnect();
    await stopAll();
  }
}

/** `--redis-counting`: measures (or, with --from, reads) the run, prints its table, with --write replaces its section. */
async function counting(opts: Options, argv: readonly string[]): Promise<void> {
  const run = await rawRun<CountingRun>('Redis counting', 'redis-counting', opts.from, async () => {
    const date = new Date().toISOString();
    const load0 = os.loadavg();
    const cells = await measureCounting(opts);
    return {
      date,
      command: benchCommand(argv, false),
      machine: machineLines(load0, os.loadavg()),
      redisUrl: COUNTING_REDIS,
      duration: opts.duration,
      warmup: opts.warmup,
      connections: opts.connections ?? COUNTING.redis.conns,
      rounds: opts.rounds,
      cells,
    };
  });
  process.stdout.write(`# throughway Redis counting bench — ${run.date}\n\n${renderCountingTable(run)}\n`);
  if (opts.write) writeSection(COUNTING_BEGIN, COUNTING_END, renderCounting(run), 'Redis counting');
}

/**
 * `--counting-modes`: bench/throttling.ts (latency and gateway CPU per call of no policy, local, exact and
 * leased counting; docs/performance.md, "Counting modes") in its own process, with --requests N (calls per
 * API per round, 4000), --rounds R (5) and --connections C (8). It prints; the document's section is
 * written by hand from its output.
 */
function runCountingModes(argv: readonly string[]): Promise<void> {
  const opt = (name: string, dflt: number, max: number): number => {
    const i = argv.indexOf(name);
    return i < 0 ? dflt : num(name, argv[i + 1], 1, max);
  };
  const args = [String(opt('--requests', 4000, 10_000_000)), String(opt('--rounds', 5, 100)), String(opt('--connections', 8, 1000))];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--requests' || a === '--rounds' || a === '--connections') i++;
    else usage(`--counting-modes takes --requests, --rounds and --connections, not ${a}`);
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'throttling.js'), ...args], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bench/throttling.ts exited with ${code}`))));
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--workers'))
    return runWorkersBench(
      argv.filter((a) => a !== '--workers'),
      benchCommand(argv, false),
    );
  if (argv.includes('--h2')) {
    installExitHandlers();
    return runH2Bench(
      argv.filter((a) => a !== '--h2'),
      benchCommand(argv, false),
    );
  }
  if (argv.includes('--idle')) {
    installExitHandlers();
    return runIdleBench(
      argv.filter((a) => a !== '--idle'),
      benchCommand(argv, false),
    );
  }
  if (argv.includes('--many-clients')) {
    installExitHandlers();
    return runClientsBench(
      argv.filter((a) => a !== '--many-clients'),
      benchCommand(argv, false),
    );
  }
  if (argv.includes('--cache-misses')) {
    installExitHandlers();
    return runCacheBench(argv.filter((a) => a !== '--cache-misses'));
  }
  if (argv.includes('--counting-modes')) return runCountingModes(argv.filter((a) => a !== '--counting-modes'));
  if (argv.includes('--tenants')) {
    // bench/tenants.ts runs on its own (it forks its gateway process): same options, without the flag.
    execFileSync(process.execPath, [path.join(DIST_BENCH, 'tenants.js'), ...argv.filter((a) => a !== '--tenants')], { stdio: 'inherit' });
    return;
  }
  if (argv.includes('--instructions')) {
    installExitHandlers();
    return runInstructionsBench(argv.filter((a) => a !== '--instructions'));
  }
  const opts = parseArgs(argv);
  installExitHandlers();
  fs.mkdirSync(WORK_DIR, { recursive: true });
  if (opts.mediation) return mediation(opts, argv);
  if (opts.graphql) return graphql(opts, argv);
  if (opts.redisCounting) return counting(opts, argv);

  let raw: RawRun;
  if (opts.from !== undefined) {
    raw = JSON.parse(fs.readFileSync(opts.from, 'utf8')) as RawRun;
    opts.duration = raw.opts.duration;
    opts.warmup = raw.opts.warmup;
    opts.rounds = raw.opts.rounds;
    opts.connections = raw.opts.connections ?? undefined;
    opts.scenarios = SCENARIOS.filter((s) => raw.opts.scenarios.includes(s.name));
    if (opts.peersResults !== undefined) {
      raw.peersFile = opts.peersResults;
      raw.peersFromCompare = false;
    }
    if (raw.peersFile !== undefined && !fs.existsSync(raw.peersFile)) {
      log(`peers results ${raw.peersFile} are gone; keeping the document's current peers section`);
      raw.peersFile = undefined;
    }
    log(`rendering the run of ${raw.date} from ${opts.from} (nothing measured)`);
  } else {
    const date = new Date().toISOString();
    const load0 = os.loadavg();
    const command = benchCommand(argv, opts.compare);
    const cells = await measure(opts);
    let peersFile = opts.peersResults;
    if (opts.compare) {
      const f = renderFeatures(cells, opts);
      process.stdout.write(`# throughway bench — ${date}\n\n${renderOwn(cells, opts)}\n${f !== undefined ? `\n${f}\n` : ''}\n`);
      await sleep(1000);
      peersFile = await runPeers(opts);
    }
    raw = {
      date,
      command,
      load0,
      load1: os.loadavg(),
      opts: {
        duration: opts.duration,
        warmup: opts.warmup,
        rounds: opts.rounds,
        connections: opts.connections,
        scenarios: opts.scenarios.map((s) => s.name),
      },
      clkTck: CLK_TCK,
      cells,
      peersFile,
      peersFromCompare: opts.compare,
    };
    const rawFile = path.join(WORK_DIR, `run-${date.replace(/[:.]/g, '-')}.json`);
    fs.writeFileSync(rawFile, JSON.stringify(raw, null, 1));
    log(`raw results: ${rawFile} (node dist/bench/run.js --from ${rawFile} --write renders them again)`);
  }

  const own = renderOwn(raw.cells, opts);
  const features = renderFeatures(raw.cells, opts);
  if (!opts.compare) process.stdout.write(`# throughway bench — ${raw.date}\n\n${own}\n${features !== undefined ? `\n${features}\n` : ''}`);
  let peers: string | undefined;
  if (raw.peersFile !== undefined) {
    const cmd = raw.peersFromCompare ? raw.command : peersCommand(raw.peersFile);
    peers = renderPeers(raw.peersFile, opts, cmd);
    process.stdout.write('\n' + peers.replace(PEERS_BEGIN + '\n', '').replace('\n' + PEERS_END, '') + '\n');
  }
  if (opts.write) {
    const doc = renderDoc({
      date: raw.date,
      command: raw.command,
      machine: machineLines(raw.load0, raw.load1),
      own,
      features,
      peers: peers ?? existingSection(PEERS_BEGIN, PEERS_END),
      mediation: existingSection(MEDIATION_BEGIN, MEDIATION_END),
      workers: existingSection(WORKERS_BEGIN, WORKERS_END),
      counting: existingSection(COUNTING_BEGIN, COUNTING_END),
      others: otherSections([PEERS_BEGIN, MEDIATION_BEGIN, WORKERS_BEGIN, COUNTING_BEGIN]),
      workDir: WORK_DIR,
      demo: demoUrl(),
    });
    fs.mkdirSync(path.dirname(PERF_DOC), { recursive: true });
    fs.writeFileSync(PERF_DOC, doc);
    log(`wrote ${path.relative(process.cwd(), PERF_DOC) || PERF_DOC}`);
  }
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await stopAll();
    process.exit(1);
  },
);
