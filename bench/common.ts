/**
 * Shared by bench/run.ts and bench/profile.ts: child processes (started and stopped by their own pids
 * only), CPU accounting from /proc, ports, the bench scenarios, and small statistics.
 * Only 127.0.0.1 is ever used; every wait has a deadline.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export const HOST = '127.0.0.1';
/** Repository root (this file runs from dist/bench/). */
export const ROOT = path.resolve(__dirname, '..', '..');
export const DIST_BENCH = __dirname;
export const WORK_DIR = path.join(os.tmpdir(), 'throughway-bench');
export const BODY_SIZE = 1_048_576;
/** The document every --write regenerates, whole (the main run) or one section of it. */
export const PERF_DOC = path.join(ROOT, 'docs', 'performance.md');

export const CLK_TCK = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * What a cell loads: the backend itself, the transport-only throughway (bench/start-throughway.ts) with
 * the plain GET (`throughway`) or with the very request the scenario's gateway gets (`throughway-same`:
 * its bearer token and traceparents), or the full gateway (bench/start-gateway.ts: phase chain and key
 * manager) on its reference route (`gateway-open`: no auth, no throttling) or on the scenario's own route
 * (`gateway`).
 */
export type TargetName = 'direct' | 'throughway' | 'throughway-same' | 'gateway-open' | 'gateway';

export interface Scenario {
  readonly name: string;
  readonly label: string;
  readonly method: 'GET' | 'POST';
  /** The backend's path (direct and throughway targets). */
  readonly path: string;
  readonly conns: number;
  /** Targets measured for this scenario, in run order (alternating within each round). */
  readonly targets: readonly TargetName[];
  /**
   * The gateway route of the `gateway` target, and the header the scenario's gateway request carries (a
   * bearer token for auth; sendsGatewayRequest says which targets send that request).
   */
  readonly gatewayPath?: string;
  readonly auth?: boolean;
  /** The issue's budget for `gateway` req/s ÷ `gateway-open` req/s in the same round, e.g. 0.85. */
  readonly budget?: { readonly min: number; readonly issue: string };
  /**
   * Which full gateway serves the `gateway` target: the features one (default; no access log, no
   * tracing), `full` (access log on) or `traced` (access log on and spans to the backend's Zipkin sink).
   */
  readonly gateway?: GatewayKind;
  /**
   * A `traceparent` on every request, with the sampled flag (W3C Trace Context §3.2.2.5) set on this
   * fraction of them: the caller's sampling decision, which the gateway honours (docs/tracing.md).
   */
  readonly traceSampled?: number;
  /**
   * The target for the `gateway` target's CPU µs/req ÷ `throughway-same`'s in the same round, e.g. 1.10:
   * what the gateway adds to the same request (its ~1 KB bearer token costs the bare transport too).
   */
  readonly vsTransport?: { readonly max: number; readonly issue: string };
  /**
   * The target for the transport's CPU µs/req in this scenario ÷ its CPU µs/req in scenario `base` in the
   * same round, e.g. 1,000 keep-alive clients against 64: what more connections cost each request.
   */
  readonly vsScenario?: { readonly base: string; readonly max: number; readonly issue: string };
}

export type GatewayKind = 'features' | 'full' | 'traced';

/** The full gateway's reference route (bench/start-gateway.ts): auth = "none", nothing counted. */
export const GATEWAY_OPEN_PATH = '/plain/1/small';

const TRANSPORT: readonly TargetName[] = ['direct', 'throughway'];
const FEATURE: readonly TargetName[] = ['direct', 'throughway', 'gateway-open', 'gateway'];
const FULL: readonly TargetName[] = ['direct', 'throughway', 'throughway-same', 'gateway'];
/** The full gateway's route with every feature at once (bench/start-gateway.ts). */
const FULL_PATH = '/full/1/small';

/** GET /small on the every-feature route of a gateway of `kind`, held against the bare transport's CPU. */
function fullScenario(
  name: string,
  what: string,
  kind: GatewayKind,
  vsTransport: NonNullable<Scenario['vsTransport']>,
  traceSampled?: number,
): Scenario {
  return {
    name,
    label: `GET /small (96 B JSON), ${what}, 64 conns`,
    method: 'GET',
    path: '/small',
    conns: 64,
    targets: FULL,
    gatewayPath: FULL_PATH,
    auth: true,
    gateway: kind,
    vsTransport,
    ...(traceSampled !== undefined ? { traceSampled } : {}),
  };
}

/**
 * The scenarios, in run order. Names small/64k/post1m match ../shared/peers/harness.js. auth and
 * throttling are the figures issues 6 and 7 set budgets for, on the full gateway next to the same
 * request direct and through the bare transport; full and traced put every feature on at once and are
 * held against the bare transport's CPU per request (the performance issue's 1.10× and 1.12×).
 */
export const SCENARIOS: readonly Scenario[] = Object.freeze([
  { name: 'small', label: 'GET /small (96 B JSON), 64 conns', method: 'GET', path: '/small', conns: 64, targets: TRANSPORT },
  { name: '64k', label: 'GET /64k (64 KiB), 64 conns', method: 'GET', path: '/64k', conns: 64, targets: TRANSPORT },
  { name: 'post1m', label: 'POST /upload (1 MiB body), 16 conns', method: 'POST', path: '/upload', conns: 16, targets: TRANSPORT },
  {
    name: 'auth',
    label: 'GET /small (96 B JSON) with a bearer token (oauth2, warm token cache), 64 conns',
    method: 'GET',
    path: '/small',
    conns: 64,
    targets: FEATURE,
    gatewayPath: '/secured/1/small',
    auth: true,
    budget: { min: 0.85, issue: 'docs/security.md: within 15 %' },
  },
  {
    name: 'throttling',
    label: 'GET /small (96 B JSON) throttled (resource + subscription + burst counters), 64 conns',
    method: 'GET',
    path: '/small',
    conns: 64,
    targets: FEATURE,
    gatewayPath: '/limited/1/small',
    budget: { min: 0.9, issue: 'docs/throttling.md: at most 10 %' },
  },
  {
    name: 'ka1000',
    label: 'GET /small (96 B JSON), 1,000 keep-alive conns',
    method: 'GET',
    path: '/small',
    conns: 1000,
    targets: TRANSPORT,
    vsScenario: { base: 'small', max: 1.2, issue: '1,000 keep-alive clients ≤ 1.2× the 64-client figure' },
  },
  fullScenario('full', 'oauth2 (warm token cache) + three throttle counters + access log', 'full', {
    max: 1.1,
    issue: 'full gateway ≤ 1.10× the bare transport',
  }),
  fullScenario(
    'traced',
    'as full + tracing, 1 % of calls sampled (Zipkin to a local sink)',
    'traced',
    { max: 1.12, issue: 'with tracing sampled at 1 % ≤ 1.12×' },
    0.01,
  ),
]);

/**
 * `--redis-counting` (docs/scale-out.md): the throttling scenario's route on two full gateways that differ
 * only in `[throughway.throttling] counter_store`; one scenario per store, so their cells keep apart.
 */
export const COUNTING: Readonly<Record<'memory' | 'redis', Scenario>> = Object.freeze({
  memory: {
    name: 'counting-memory',
    label: 'GET /small throttled, counter_store = "memory", 64 conns',
    method: 'GET',
    path: '/small',
    conns: 64,
    targets: ['gateway'],
    gatewayPath: '/limited/1/small',
  },
  redis: {
    name: 'counting-redis',
    label: 'GET /small throttled, counter_store = "redis", 64 conns',
    method: 'GET',
    path: '/small',
    conns: 64,
    targets: ['gateway'],
    gatewayPath: '/limited/1/small',
  },
});

/**
 * The targets that send the scenario's gateway request (its bearer token when `auth`, its traceparents when
 * `traceSampled`): the gateway's own route, and the bare transport's same-request cell held against it.
 */
export function sendsGatewayRequest(target: TargetName): boolean {
  return target === 'gateway' || target === 'throughway-same';
}

/** The path a target requests for a scenario. */
export function targetPath(sc: Scenario, target: TargetName): string {
  if (target === 'gateway-open') return GATEWAY_OPEN_PATH;
  if (target === 'gateway') return sc.gatewayPath ?? GATEWAY_OPEN_PATH;
  return sc.path;
}

/**
 * The traced scenarios' 100 traceparents (version 00, W3C Trace Context §3.2), each its own trace and
 * parent id, the sampled flag on round(100 × fraction) of them; a client cycles through them.
 */
export function traceparents(fraction: number): string[] {
  const sampled = Math.round(100 * fraction);
  return Array.from({ length: 100 }, (_, i) => {
    const id = (i + 1).toString(16).padStart(4, '0');
    return `00-4bf92f3577b34da6a3ce929d0e73${id}-00f067aa0ba9${id}-${i < sampled ? '01' : '00'}`;
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function log(msg: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
}

// ------------------------------------------------------------------ /proc

/** utime+stime+cutime+cstime of one process, in clock ticks; undefined when it is gone. */
export function procTicks(pid: number | 'self'): number | undefined {
  const t = procSplit(pid);
  return t === undefined ? undefined : t.user + t.kernel;
}

/** A process's CPU ticks split into user space (utime + cutime) and the kernel (stime + cstime), from /proc. */
export interface ProcSplit {
  readonly user: number;
  readonly kernel: number;
}

export function procSplit(pid: number | 'self'): ProcSplit | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[11]=utime(14) f[12]=stime(15) f[13]=cutime(16) f[14]=cstime(17)
    return { user: Number(f[11]) + Number(f[13]), kernel: Number(f[12]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

export interface MachineTicks {
  readonly busy: number;
  readonly total: number;
}

/** Machine-wide busy (user+nice+system+irq+softirq) and total ticks from /proc/stat. */
export function machineTicks(): MachineTicks {
  const first = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = first.trim().split(/\s+/).slice(1).map(Number);
  const at = (i: number): number => v[i] ?? 0;
  const busy = at(0) + at(1) + at(2) + at(5) + at(6);
  return { busy, total: busy + at(3) + at(4) + at(7) };
}

/**
 * Other tenants share this machine: before a cell, wait (at most maxS) until the machine's busy CPU over
 * a 0.5 s sample is below `cores`. Our own servers are idle between cells, so this measures the others.
 */
export async function waitQuiet(maxS: number, cores: number): Promise<{ waitedS: number; busyCores: number }> {
  const t0 = Date.now();
  const ncpu = os.cpus().length || 1;
  let busyCores = NaN;
  for (let i = 0; i < 1000; i++) {
    const a = machineTicks();
    await sleep(500);
    const b = machineTicks();
    busyCores = ((b.busy - a.busy) / Math.max(1, b.total - a.total)) * ncpu;
    if (busyCores < cores || (Date.now() - t0) / 1000 >= maxS) break;
  }
  return { waitedS: (Date.now() - t0) / 1000, busyCores };
}

// ------------------------------------------------------------------ processes

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly logFile: string;
  exited: boolean;
}

const started: Proc[] = [];

/** Start a child with stdout/stderr in WORK_DIR/logs/<name>.log, in `cwd` (the checkout by default). */
export function startProc(name: string, argv: readonly string[], env: Record<string, string>, cwd = ROOT): Proc {
  const logDir = path.join(WORK_DIR, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${name}.log`);
  const out = fs.openSync(logFile, 'w');
  const [cmd, ...args] = argv;
  if (cmd === undefined) throw new Error('empty command');
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  if (child.pid === undefined) throw new Error(`could not start ${name}: ${argv.join(' ')}`);
  const p: Proc = { name, child, pid: child.pid, logFile, exited: false };
  child.on('exit', () => {
    p.exited = true;
  });
  started.push(p);
  return p;
}

/** SIGTERM by pid, wait up to graceMs, then SIGKILL that same pid. */
export async function stopProc(p: Proc, graceMs = 5000): Promise<void> {
  const i = started.indexOf(p);
  if (i >= 0) started.splice(i, 1);
  if (p.exited) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  try {
    process.kill(p.pid, 'SIGTERM');
  } catch {
    return;
  }
  await Promise.race([exited, sleep(graceMs)]);
  if (!p.exited) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await Promise.race([exited, sleep(2000)]);
  }
}

export async function stopAll(): Promise<void> {
  for (const p of [...started].reverse()) await stopProc(p);
}

/** Make sure children die with us, whatever the reason we stop. */
export function installExitHandlers(): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`got ${sig}, stopping`);
      stopAll().finally(() => process.exit(130));
    });
  }
  process.on('exit', () => {
    for (const p of started) {
      if (!p.exited) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
}

// ------------------------------------------------------------------ network

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, HOST, () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, HOST);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => {
      s.destroy();
      resolve(false);
    });
  });
}

export async function waitPort(port: number, timeoutMs: number, proc?: Proc): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await portOpen(port)) return;
    if (proc?.exited) throw new Error(`${proc.name} exited before listening; see ${proc.logFile}`);
    await sleep(100);
  }
  throw new Error(`port ${port} not open after ${timeoutMs} ms`);
}

interface Reply {
  readonly status: number;
  readonly body: Buffer;
}

export function request(port: number, method: string, p: string, body?: Buffer): Promise<Reply> {
  const headers: Record<string, string | number> = body
    ? { 'content-type': 'application/octet-stream', 'content-length': body.length }
    : {};
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port, method, path: p, agent: false, timeout: 5000, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The three answers every target must give before it is measured. */
export async function sanity(port: number, uploadBody: Buffer): Promise<void> {
  const a = await request(port, 'GET', '/small');
  if (a.status !== 200 || a.body.length !== 96 || !a.body.toString().startsWith('{"ok":true'))
    throw new Error(`/small -> ${a.status} len=${a.body.length}`);
  const b = await request(port, 'GET', '/64k');
  if (b.status !== 200 || b.body.length !== 65536) throw new Error(`/64k -> ${b.status} len=${b.body.length}`);
  const c = await request(port, 'POST', '/upload', uploadBody);
  if (c.status !== 200 || c.body.toString() !== `{"bytes":${uploadBody.length}}`)
    throw new Error(`/upload -> ${c.status} ${c.body.toString().slice(0, 80)}`);
}

/** The 1 MiB upload body (random bytes, generated once per run). */
export function uploadBody(): Buffer {
  const f = path.join(WORK_DIR, 'body-1m.bin');
  fs.mkdirSync(WORK_DIR, { recursive: true });
  if (!fs.existsSync(f) || fs.statSync(f).size !== BODY_SIZE) {
    fs.writeFileSync(f, randomBytes(BODY_SIZE));
  }
  return fs.readFileSync(f);
}

export function bodyFile(): string {
  uploadBody();
  return path.join(WORK_DIR, 'body-1m.bin');
}

/** Backend and transport-only throughway as children on free ports. */
export async function startBackend(port: number, nodeFlags: readonly string[] = []): Promise<Proc> {
  const p = startProc('backend', [process.execPath, ...nodeFlags, path.join(DIST_BENCH, 'backend.js')], { PORT: String(port) });
  await waitPort(port, 10_000, p);
  return p;
}

export async function startThroughway(
  port: number,
  upstreamPort: number,
  nodeFlags: readonly string[] = [],
  name = 'throughway',
): Promise<Proc> {
  const p = startProc(name, [process.execPath, ...nodeFlags, path.join(DIST_BENCH, 'start-throughway.js')], {
    PORT: String(port),
    UPSTREAM: `http://${HOST}:${upstreamPort}`,
  });
  await waitPort(port, 20_000, p);
  return p;
}

// ------------------------------------------------------------------ statistics and formatting

export const median = (xs: readonly number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
};

export const fmt = (x: number | undefined | null, d = 0): string =>
  x !== undefined && x !== null && Number.isFinite(x) ? x.toFixed(d) : '—';

export const range = (xs: readonly number[], d = 0): string => {
  const f = xs.filter(Number.isFinite);
  return f.length > 1 ? ` (${fmt(Math.min(...f), d)}–${fmt(Math.max(...f), d)})` : '';
};

/** What one wrk run reported. */
export interface WrkResult {
  readonly requests: number;
  readonly rps: number;
  /** Socket errors: connect, read, write and timeout together. */
  readonly errors: number;
  readonly non2xx: number;
}

/**
 * `wrk -t1 -c<conns> -d<seconds>s --timeout 10s [-s script] url`, killed 25 s after its own end at the
 * latest; rejects when wrk fails or prints no request count (bench/profile.ts, bench/clients.ts).
 */
export function runWrk(url: string, conns: number, seconds: number, script?: string, env: Record<string, string> = {}): Promise<WrkResult> {
  const args = ['-k', '5', String(seconds + 25), 'wrk', '-t1', `-c${conns}`, `-d${seconds}s`, '--timeout', '10s'];
  if (script !== undefined) args.push('-s', script);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn('timeout', args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => {
      const m = /(\d+) requests in ([\d.]+)(m?s)/.exec(out);
      if (code !== 0 || m === null) return reject(new Error(`wrk exited ${String(code)}: ${out.slice(-400)}`));
      const requests = Number(m[1]);
      const secs = Number(m[2]) / (m[3] === 'ms' ? 1000 : 1);
      const err = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = err === null ? 0 : Number(err[1]) + Number(err[2]) + Number(err[3]) + Number(err[4]);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      resolve({ requests, rps: requests / secs, errors, non2xx });
    });
  });
}

export function hasCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------ runs that own one section of the document

/**
 * The raw results of a run with its own section (--mediation, --workers, --redis-counting): an earlier
 * run's JSON with --from (nothing measured), else `measure()`'s, kept in WORK_DIR/<stem>-<date>.json.
 */
export async function rawRun<T extends { readonly date: string }>(
  what: string,
  stem: string,
  from: string | undefined,
  measure: () => Promise<T>,
): Promise<T> {
  if (from !== undefined) {
    const run = JSON.parse(fs.readFileSync(from, 'utf8')) as T;
    log(`rendering the ${what} run of ${run.date} from ${from} (nothing measured)`);
    return run;
  }
  const run = await measure();
  fs.mkdirSync(WORK_DIR, { recursive: true });
  const rawFile = path.join(WORK_DIR, `${stem}-${run.date.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(rawFile, JSON.stringify(run, null, 1));
  log(`raw results: ${rawFile} (node dist/bench/run.js --${stem} --from ${rawFile} --write renders them again)`);
  return run;
}

// ------------------------------------------------------------------ the machine, for the document

export function versionOf(pkg: string): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

/** CPU, memory, versions and load average: the machine note of every run in docs/performance.md. */
export function machineLines(load0: number[], load1: number[]): string[] {
  const cpus = os.cpus();
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return [
    `- CPU: ${cpus[0]?.model ?? '?'}, ${cpus.length} cores (shared with other tenants)`,
    `- Memory: ${fmt(os.totalmem() / 2 ** 30, 1)} GiB; kernel ${os.release()}`,
    `- Node ${process.version}; throughway ${pkg.version}; autocannon ${versionOf('autocannon')}; llhttp-wasm ${versionOf('llhttp-wasm')}; typescript ${versionOf('typescript')}`,
    `- Load average (1/5/15 min) at start ${load0.map((x) => x.toFixed(2)).join(' / ')}, at end ${load1.map((x) => x.toFixed(2)).join(' / ')}`,
  ];
}

/**
 * A bench child process: the gateway of `dir`/deployment.toml (its apis/ beside it) on $PORT, until
 * SIGTERM or SIGINT (bench/mediation.ts, bench/graphql.ts).
 */
export async function serveGateway(dir: string, what: string): Promise<void> {
  const { loadConfig } = await import('../lib/config/load');
  const { createGateway } = await import('../lib/embed');
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const gw = createGateway({ loaded, watch: false });
  await gw.listen({ port: Number(process.env.PORT), host: HOST });
  process.stdout.write(`gateway (${what}) on ${HOST}:${process.env.PORT}\n`);
  const stop = (): void => {
    void gw.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
