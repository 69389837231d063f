/**
 * `npm run bench -- --h2`: HTTP/2 to clients and gRPC (docs/http2.md, docs/grpc.md) measured with h2load
 * (Debian's nghttp2-client) against the deployed node (`throughway start` with an API file, as
 * bench/start-node.ts writes it, plus a gRPC API) and against nginx with `http2` on, in the same run:
 *
 * - a small GET (the 96-byte /small of bench/backend.ts, an HTTP/1.1 backend) over TLS with ALPN h2, at 1,
 *   10 and 100 streams per connection (h2load -m);
 * - a gRPC unary call (`/bench.Echo/Get` of bench/grpc-backend.ts, an h2c backend) through the node's gRPC
 *   relay and through nginx's `grpc_pass`, and straight to the backend (no proxy: its req/s only).
 *
 * Both proxies present the node's own sample certificate (lib/tls/sample.ts; RSA 2048), so the handshakes
 * are alike; nginx runs one worker with the buffers of ../shared/peers/nginx-tuned.conf and no access log,
 * as the peers' nginx-1w-tuned does. Per cell (scenario × target × round): h2load's succeeded requests and
 * req/s, and the proxy's CPU (utime + stime from /proc, nginx's master and worker together) per succeeded
 * request. Targets alternate within a round and each cell has its own warm-up run, so ratios within one
 * run are what counts on a shared machine (docs/performance.md). Measurement only: nothing passes or fails.
 *
 *   npm run bench -- --h2 [--duration S] [--warmup S] [--rounds N] [--connections N] [--cpu-prof DIR] [--write] [--from FILE]
 *
 * The raw rows are kept in WORK_DIR/h2-<date>.json; --write replaces the document's HTTP/2 section, --from
 * FILE renders an earlier run again without measuring.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CLK_TCK,
  DIST_BENCH,
  fmt,
  freePort,
  hasCommand,
  HOST,
  log,
  machineLines,
  median,
  procTicks,
  rawRun,
  ROOT,
  sleep,
  startBackend,
  startProc,
  stopAll,
  waitPort,
  type Proc,
} from './common';
import { writeSection } from './render';
import { apiToml, deploymentToml } from './start-node';

export const H2_BEGIN = '<!-- h2:begin -->';
export const H2_END = '<!-- h2:end -->';

const PREFIX = '/bench/1.0.0';
const GRPC_PATH = '/bench.Echo/Get';
/** The proto of the gRPC API (docs/grpc.md: its services and methods are all the gateway reads of it). */
const PROTO = `syntax = "proto3";
package bench;
service Echo { rpc Get(Ask) returns (Reply) {} }
message Ask { string name = 1; }
message Reply { string text = 1; }
`;
/** One gRPC request message: Ask{name: "bench"}, length-prefixed. */
const GRPC_REQUEST = Buffer.from([0, 0, 0, 0, 7, 0x0a, 0x05, 0x62, 0x65, 0x6e, 0x63, 0x68]);

interface Scenario {
  readonly name: string;
  readonly label: string;
  /** Streams per connection (h2load -m). */
  readonly streams: number;
  readonly grpc: boolean;
  /** HTTP/1.1 over TLS on the same listeners (h2load --h1): what the same request costs without HTTP/2. */
  readonly h1?: boolean;
}

const SCENARIO_LIST: readonly Scenario[] = [
  { name: 'get-m1', label: 'GET /small (96 B) over h2, 1 stream per connection', streams: 1, grpc: false },
  { name: 'get-m10', label: 'GET /small (96 B) over h2, 10 streams per connection', streams: 10, grpc: false },
  { name: 'get-m100', label: 'GET /small (96 B) over h2, 100 streams per connection', streams: 100, grpc: false },
  {
    name: 'get-h1-tls',
    label: 'GET /small (96 B) over HTTP/1.1 with TLS on the same listener (h2load --h1), keep-alive, 10 pipelined per connection',
    streams: 10,
    grpc: false,
    h1: true,
  },
  { name: 'grpc-unary', label: 'gRPC unary call (12 B request, 9 B reply), 10 streams per connection', streams: 10, grpc: true },
];

/** direct: the gRPC backend with no proxy; floor: bench/h2-floor.ts, Node's http2 answering by itself. */
type Target = 'throughway' | 'nginx' | 'direct' | 'floor';

export interface H2Cell {
  readonly scenario: string;
  readonly target: Target;
  readonly round: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly rps: number;
  /** -1: h2load did not finish. */
  /** The proxy's CPU µs per succeeded request (the floor server's own for `floor`); null for `direct`. */
  readonly cpuUs: number | null;
}

export interface H2Run {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly h2load: string;
  readonly nginx: string;
  readonly opts: { duration: number; warmup: number; rounds: number; connections: number };
  readonly cells: readonly H2Cell[];
}

interface H2Options {
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  write: boolean;
  from: string | undefined;
  /** --cpu-prof DIR: the throughway node writes a V8 CPU profile there when it stops (node --cpu-prof). */
  cpuProf: string | undefined;
}

function parse(argv: readonly string[]): H2Options {
  const o: H2Options = { duration: 6, warmup: 2, rounds: 3, connections: 8, write: false, from: undefined, cpuProf: undefined };
  const num = (name: string, raw: string | undefined, min: number, max: number): number => {
    const n = Number(raw);
    if (raw === undefined || !Number.isFinite(n) || n < min || n > max) throw new Error(`${name} needs a number from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--write') o.write = true;
    else if (a === '--from') o.from = path.resolve(argv[++i] ?? '');
    else if (a === '--cpu-prof') o.cpuProf = path.resolve(argv[++i] ?? '.');
    else if (a === '--duration') o.duration = num(a, argv[++i], 1, 600);
    else if (a === '--warmup') o.warmup = num(a, argv[++i], 0, 120);
    else if (a === '--rounds') o.rounds = Math.floor(num(a, argv[++i], 1, 20));
    else if (a === '--connections') o.connections = Math.floor(num(a, argv[++i], 1, 1000));
    else throw new Error(`--h2 takes --duration, --warmup, --rounds, --connections, --cpu-prof, --write and --from, not ${String(a)}`);
  }
  return o;
}

// ------------------------------------------------------------------ the proxies

/** nginx with one worker: h2 over TLS to clients, HTTP/1.1 keep-alive to /small's backend, grpc_pass to gRPC's. */
function nginxConf(dir: string, port: number, backendPort: number, grpcPort: number): string {
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path ${dir}/body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    http2_max_concurrent_streams 128;
    upstream backend {
        server ${HOST}:${backendPort};
        keepalive 64;
        keepalive_requests 1000000;
        keepalive_timeout 60s;
    }
    upstream grpcb {
        server ${HOST}:${grpcPort};
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        listen ${HOST}:${port} ssl http2 backlog=4096;
        ssl_certificate ${dir}/cert.pem;
        ssl_certificate_key ${dir}/key.pem;
        location ${PREFIX}/ {
            proxy_pass http://backend/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_max_temp_file_size 0;
            proxy_buffer_size 16k;
            proxy_buffers 8 16k;
            proxy_busy_buffers_size 32k;
        }
        location /bench.Echo/ {
            grpc_pass grpc://grpcb;
        }
    }
}
`;
}

interface Started {
  readonly node: Proc;
  readonly nodePort: number;
  readonly nginx: Proc;
  readonly nginxPort: number;
  readonly grpcPort: number;
  readonly floor: Proc;
  readonly floorPort: number;
}

async function startAll(dir: string, cpuProf: string | undefined): Promise<Started> {
  const [backendPort, grpcPort, gwPort, nodePort, nginxPort, floorPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  await startBackend(backendPort);
  const grpcBackend = startProc('grpc-backend', [process.execPath, path.join(DIST_BENCH, 'grpc-backend.js')], { PORT: String(grpcPort) });
  await waitPort(grpcPort, 10_000, grpcBackend);

  // The deployed node: bench/start-node.ts's starter configuration with its HTTPS listener on nodePort.
  const conf = path.join(dir, 'node', 'conf');
  fs.mkdirSync(path.join(conf, 'apis'), { recursive: true });
  const toml = deploymentToml(gwPort, crypto.randomBytes(18).toString('base64url')).replace(
    '[transport.passthru_https]\nlistener.parameters.port = 0',
    `[transport.passthru_https]\nlistener.parameters.port = ${nodePort}`,
  );
  if (!toml.includes(`listener.parameters.port = ${nodePort}`))
    throw new Error('bench/start-node.ts deploymentToml changed: no HTTPS port to set');
  fs.writeFileSync(path.join(conf, 'deployment.toml'), toml, { mode: 0o600 });
  fs.writeFileSync(path.join(conf, 'apis', 'bench.toml'), apiToml('/bench', '1.0.0', `http://${HOST}:${backendPort}`));
  fs.writeFileSync(path.join(conf, 'apis', 'bench.proto'), PROTO);
  fs.writeFileSync(
    path.join(conf, 'apis', 'echo.toml'),
    `name = "Echo"\ncontext = "/echo"\nversion = "1.0.0"\ntype = "GRPC"\nstate = "PUBLISHED"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n\n` +
      `[grpc]\nproto = ["bench.proto"]\n\n[endpoints]\nproduction = "http://${HOST}:${grpcPort}"\n`,
  );
  const node = startProc(
    'throughway-node',
    [
      process.execPath,
      ...(cpuProf === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`]),
      path.join(ROOT, 'dist', 'lib', 'cli.js'),
      'start',
      '--config',
      path.join(conf, 'deployment.toml'),
    ],
    {},
    path.join(dir, 'node'),
  );
  await waitPort(nodePort, 60_000, node);

  // nginx presents the node's sample certificate (one PEM: the key, then the certificate).
  const pem = fs.readFileSync(path.join(dir, 'node', 'var', 'security', 'throughway-sample.pem'), 'utf8');
  const certAt = pem.indexOf('-----BEGIN CERTIFICATE-----');
  const nginxDir = path.join(dir, 'nginx');
  fs.mkdirSync(nginxDir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(nginxDir, 'key.pem'), pem.slice(0, certAt), { mode: 0o600 });
  fs.writeFileSync(path.join(nginxDir, 'cert.pem'), pem.slice(certAt));
  fs.writeFileSync(path.join(nginxDir, 'nginx.conf'), nginxConf(nginxDir, nginxPort, backendPort, grpcPort));
  const nginx = startProc(
    'nginx-h2',
    ['nginx', '-c', path.join(nginxDir, 'nginx.conf'), '-p', nginxDir, '-e', path.join(nginxDir, 'nginx-error.log')],
    {},
  );
  await waitPort(nginxPort, 10_000, nginx);
  const floor = startProc('h2-floor', [process.execPath, path.join(DIST_BENCH, 'h2-floor.js')], {
    PORT: String(floorPort),
    PEM: path.join(dir, 'node', 'var', 'security', 'throughway-sample.pem'),
  });
  await waitPort(floorPort, 10_000, floor);
  return { node, nodePort, nginx, nginxPort, grpcPort, floor, floorPort };
}

/** One request of each scenario kind through `url`'s origin: the same answer from every target, or a throw. */
async function sanity(origin: string, grpc: boolean): Promise<void> {
  const session = http2.connect(origin, { rejectUnauthorized: false });
  try {
    await new Promise<void>((resolve, reject) => {
      session.once('error', reject);
      const req = session.request(
        grpc
          ? { ':method': 'POST', ':path': GRPC_PATH, 'content-type': 'application/grpc', te: 'trailers' }
          : { ':path': `${PREFIX}/small` },
      );
      let status = 0;
      let grpcStatus: string | undefined;
      const body: Buffer[] = [];
      req.on('response', (h) => {
        status = Number(h[':status']);
        if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
      });
      req.on('trailers', (t) => (grpcStatus = String(t['grpc-status'])));
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => {
        const b = Buffer.concat(body);
        if (status !== 200) return reject(new Error(`${origin}: status ${status}`));
        if (grpc && (grpcStatus !== '0' || b.length !== 9))
          return reject(new Error(`${origin}: grpc-status ${String(grpcStatus)}, ${b.length} bytes`));
        if (!grpc && b.length !== 96) return reject(new Error(`${origin}: ${b.length} bytes`));
        resolve();
      });
      req.on('error', reject);
      req.end(grpc ? GRPC_REQUEST : undefined);
    });
  } finally {
    session.close();
  }
}

// ------------------------------------------------------------------ h2load

interface H2loadResult {
  readonly succeeded: number;
  readonly failed: number;
  readonly rps: number;
}

function h2load(
  url: string,
  o: { connections: number; streams: number; seconds: number; body?: string; h1?: boolean },
): Promise<H2loadResult> {
  const args = ['-t', '1', '-c', String(o.connections), '-m', String(o.streams), '-D', String(o.seconds)];
  if (o.h1 === true) args.push('--h1');
  if (o.body !== undefined) args.push('-d', o.body, '-H', 'content-type: application/grpc', '-H', 'te: trailers');
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn('timeout', ['-k', '5', String(o.seconds + 30), 'h2load', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => {
      const r = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(out);
      const f = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
      if (code !== 0 || r === null || f === null) return reject(new Error(`h2load exited ${String(code)}: ${out.slice(-400)}`));
      resolve({ succeeded: Number(r[1]), failed: Number(r[2]), rps: Number(f[1]) });
    });
  });
}

/** CPU ticks of a process and its direct children (nginx's master and its worker). */
function treeTicks(pid: number): number {
  let sum = procTicks(pid) ?? 0;
  try {
    for (const c of fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
      sum += procTicks(Number(c)) ?? 0;
  } catch {
    // no children file: the process alone
  }
  return sum;
}

async function measure(o: H2Options, command: string): Promise<H2Run> {
  for (const cmd of ['h2load', 'nginx'])
    if (!hasCommand(cmd)) throw new Error(`--h2 needs ${cmd} (Debian's ${cmd === 'h2load' ? 'nghttp2-client' : 'nginx'} package)`);
  const load0 = os.loadavg();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-h2-'));
  const bodyFile = path.join(dir, 'grpc-request.bin');
  fs.writeFileSync(bodyFile, GRPC_REQUEST);
  const cells: H2Cell[] = [];
  try {
    const s = await startAll(dir, o.cpuProf);
    const origins: Record<Target, string> = {
      throughway: `https://${HOST}:${s.nodePort}`,
      nginx: `https://${HOST}:${s.nginxPort}`,
      direct: `http://${HOST}:${s.grpcPort}`,
      floor: `https://${HOST}:${s.floorPort}`,
    };
    for (const t of ['throughway', 'nginx'] as const) {
      await sanity(origins[t], false);
      await sanity(origins[t], true);
    }
    await sanity(origins.direct, true);
    await sanity(origins.floor, false);
    log(`sanity: /small and ${GRPC_PATH} answer alike through throughway, nginx and (gRPC) direct`);
    for (let round = 1; round <= o.rounds; round++) {
      for (const sc of SCENARIO_LIST) {
        const targets: Target[] = sc.grpc
          ? ['throughway', 'nginx', 'direct']
          : sc.h1 === true
            ? ['throughway', 'nginx']
            : ['throughway', 'nginx', 'floor'];
        // Alternate which target goes first, round by round.
        if (round % 2 === 0) targets.reverse();
        for (const target of targets) {
          const url = origins[target] + (sc.grpc ? GRPC_PATH : `${PREFIX}/small`);
          const run = { connections: o.connections, streams: sc.streams, h1: sc.h1 === true, ...(sc.grpc ? { body: bodyFile } : {}) };
          if (o.warmup > 0) await h2load(url, { ...run, seconds: o.warmup }).catch(() => undefined);
          const pid =
            target === 'throughway' ? s.node.pid : target === 'nginx' ? s.nginx.pid : target === 'floor' ? s.floor.pid : undefined;
          const t0 = pid === undefined ? 0 : treeTicks(pid);
          // A cell whose h2load does not finish (its streams unanswered past the time allowed) is recorded
          // as failed, and the run goes on.
          const r = await h2load(url, { ...run, seconds: o.duration }).catch((err: unknown) => {
            log(`round ${round} ${sc.name} ${target}: ${String(err).split('\n')[0] ?? ''}`);
            return { succeeded: 0, failed: -1, rps: 0 };
          });
          const ticks = pid === undefined ? 0 : treeTicks(pid) - t0;
          const cpuUs = pid === undefined || r.succeeded === 0 ? null : ((ticks / CLK_TCK) * 1e6) / r.succeeded;
          cells.push({ scenario: sc.name, target, round, succeeded: r.succeeded, failed: r.failed, rps: r.rps, cpuUs });
          log(
            `round ${round} ${sc.name} ${target}: ${fmt(r.rps)} req/s, ${r.failed} failed, ${cpuUs === null ? '-' : fmt(cpuUs, 1)} µs CPU per request`,
          );
          await sleep(300);
        }
      }
    }
  } finally {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // `nginx -v` prints on standard error, `h2load --version` on standard output.
  const version = (cmd: string, args: string[]): string => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] ?? '?';
  };
  return {
    date: new Date().toISOString(),
    command,
    machine: machineLines(load0, os.loadavg()),
    h2load: version('h2load', ['--version']),
    nginx: version('nginx', ['-v']),
    opts: { duration: o.duration, warmup: o.warmup, rounds: o.rounds, connections: o.connections },
    cells,
  };
}

// ------------------------------------------------------------------ the document

export function renderH2Table(run: H2Run): string {
  const lines = [
    '| scenario | throughway node: req/s · CPU µs per request (rounds) | nginx h2 (1 worker): req/s · CPU µs (rounds) | node:http2 answering itself (floor): req/s · CPU µs (rounds) | direct (no proxy) req/s | throughway ÷ nginx, CPU per request | floor ÷ nginx | target |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const sc of SCENARIO_LIST) {
    const of = (t: Target): H2Cell[] => run.cells.filter((c) => c.scenario === sc.name && c.target === t);
    const cell = (t: Target): string => {
      const cs = of(t);
      if (cs.length === 0) return '–';
      const cpu = cs.map((c) => c.cpuUs ?? NaN);
      const failed = cs.reduce((n, c) => n + Math.max(0, c.failed), 0);
      const unfinished = cs.filter((c) => c.failed < 0).length;
      return `${fmt(median(cs.map((c) => c.rps)))} · ${fmt(median(cpu), 1)} (${cpu.map((x) => fmt(x, 1)).join(', ')})${failed > 0 ? ` · ${failed} failed` : ''}${unfinished > 0 ? ` · ${unfinished} round(s) h2load did not finish` : ''}`;
    };
    const tw = median(of('throughway').map((c) => c.cpuUs ?? NaN));
    const ng = median(of('nginx').map((c) => c.cpuUs ?? NaN));
    const direct = of('direct');
    const ratio = tw / ng;
    const fl = median(of('floor').map((c) => c.cpuUs ?? NaN));
    lines.push(
      `| ${sc.label} | ${cell('throughway')} | ${cell('nginx')} | ${cell('floor')} | ${direct.length > 0 ? fmt(median(direct.map((c) => c.rps))) : '–'} | ${fmt(ratio, 2)}× | ${Number.isFinite(fl) ? `${fmt(fl / ng, 2)}×` : '–'} | ${sc.h1 === true ? 'reference row' : `≤ 1.3× (${Number.isFinite(ratio) && ratio <= 1.3 ? 'met' : 'missed'})`} |`,
    );
  }
  return lines.join('\n');
}

export function renderH2(run: H2Run): string {
  return [
    H2_BEGIN,
    '## HTTP/2 and gRPC against nginx',
    '',
    `Measured ${run.date.slice(0, 16).replace('T', ' ')} UTC with \`${run.command}\` (bench/h2.ts): ${run.h2load}, ${run.nginx}; ` +
      `${run.opts.connections} connections, ${run.opts.rounds} rounds of ${run.opts.duration} s, each cell after a ${run.opts.warmup} s warm-up run, targets alternating. ` +
      'The throughway node is `throughway start` with the starter configuration and two API files (the open REST API of the peers run and a ' +
      '`type = "GRPC"` API with `auth = "none"`), its HTTPS listener offering h2 by ALPN; nginx runs one worker with `listen … ssl http2`, ' +
      "the peers' tuned buffers and no access log, `proxy_pass` over keep-alive HTTP/1.1 for /small and `grpc_pass` for gRPC. Both present the same " +
      "RSA 2048 certificate. CPU is the proxy process's (nginx: master and worker) per succeeded request; on this shared 2-core guest a ratio moves 10–30 % " +
      "from run to run, so each figure is one run's, with its rounds.",
    '',
    renderH2Table(run),
    '',
    ...run.machine,
    H2_END,
  ].join('\n');
}

export async function runH2Bench(argv: readonly string[], command: string): Promise<void> {
  const o = parse(argv);
  const run = await rawRun('h2', 'h2', o.from, () => measure(o, command));
  process.stdout.write(`${renderH2Table(run)}\n`);
  if (o.write) writeSection(H2_BEGIN, H2_END, renderH2(run), 'HTTP/2 and gRPC');
}
