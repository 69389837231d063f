/**
 * Where a transport-only throughway spends its CPU under load (one scenario, default small GET, 64 conns).
 *
 *   npm run -s build && node dist/bench/profile.js [--mode perf|cpu-prof|both] [--scenario small|64k|post1m|ka1000]
 *        [--duration S] [--warmup S] [--connections N] [--tool wrk|autocannon] [--top N]
 *
 * perf: throughway runs with --perf-basic-prof (JIT code named in /tmp/perf-<pid>.map); after a warm-up,
 *   `perf record -g -p <pid>` samples it while the load runs; prints the top of
 *   `perf report --no-children --sort dso,sym` and the samples grouped as kernel / V8 builtins / V8 runtime
 *   and GC / JIT-compiled JS / wasm / Node C++ / libuv / libc, scaled to µs per request with the
 *   process's own utime+stime over the same window. perf counts CPU time: use it for the split.
 * cpu-prof: throughway runs with --cpu-prof; prints the top JavaScript functions by self time. V8's
 *   profiler samples wall time, so on a loaded machine time preempted inside a syscall is billed to the
 *   JavaScript that made it: use it for JS hot spots, not for the kernel/user split.
 * Needs /usr/bin/perf (Debian's linux-perf) and permission to profile (root, or perf_event_paranoid ≤ 1).
 * Artefacts (perf.data, the .cpuprofile, logs) stay in the printed directory.
 */
import autocannon = require('autocannon');
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  runWrk,
  type WrkResult,
  CLK_TCK,
  HOST,
  SCENARIOS,
  WORK_DIR,
  bodyFile,
  fmt,
  freePort,
  hasCommand,
  installExitHandlers,
  log,
  procTicks,
  sanity,
  startBackend,
  startThroughway,
  stopAll,
  stopProc,
  uploadBody,
  type Proc,
  type Scenario,
} from './common';

type Mode = 'perf' | 'cpu-prof';

interface Options {
  modes: Mode[];
  scenario: Scenario;
  duration: number;
  warmup: number;
  connections: number | undefined;
  tool: 'wrk' | 'autocannon';
  top: number;
}

/** The transport scenarios: this profiles the transport-only throughway, which has no gateway routes. */
const PROFILED = SCENARIOS.filter((s) => !s.targets.includes('gateway'));

const USAGE = `usage: node dist/bench/profile.js [--mode perf|cpu-prof|both] [--scenario ${PROFILED.map((s) => s.name).join('|')}]
       [--duration S (10)] [--warmup S (3)] [--connections N] [--tool wrk|autocannon] [--top N (30)]`;

function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    modes: ['perf', 'cpu-prof'],
    scenario: PROFILED[0] as Scenario,
    duration: 10,
    warmup: 3,
    connections: undefined,
    tool: hasCommand('wrk') ? 'wrk' : 'autocannon',
    top: 30,
  };
  const bad = (m: string): never => {
    process.stderr.write(`${m}\n${USAGE}\n`);
    process.exit(2);
  };
  const num = (v: string | undefined, min: number, max: number): number => {
    const n = Number(v);
    return v !== undefined && Number.isFinite(n) && n >= min && n <= max ? n : bad(`expected a number in [${min}, ${max}], got ${v}`);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--mode') {
      const m = argv[++i];
      o.modes = m === 'both' ? ['perf', 'cpu-prof'] : m === 'perf' || m === 'cpu-prof' ? [m] : bad(`unknown mode ${m}`);
    } else if (a === '--scenario') {
      const n = argv[++i];
      o.scenario = PROFILED.find((s) => s.name === n) ?? bad(`unknown scenario ${n}`);
    } else if (a === '--duration') o.duration = num(argv[++i], 1, 300);
    else if (a === '--warmup') o.warmup = num(argv[++i], 0, 60);
    else if (a === '--connections') o.connections = Math.floor(num(argv[++i], 1, 10_000));
    else if (a === '--top') o.top = Math.floor(num(argv[++i], 1, 500));
    else if (a === '--tool') {
      const t = argv[++i];
      o.tool = t === 'wrk' || t === 'autocannon' ? t : bad(`unknown tool ${t}`);
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    } else bad(`unknown option ${a}`);
  }
  return o;
}

// ------------------------------------------------------------------ load

function runLoad(opts: Options, port: number, seconds: number, outDir: string): Promise<WrkResult> {
  const sc = opts.scenario;
  const conns = opts.connections ?? sc.conns;
  const url = `http://${HOST}:${port}${sc.path}`;
  if (opts.tool === 'autocannon') {
    return new Promise((resolve, reject) => {
      const o: autocannon.Options = { url, connections: conns, duration: seconds, timeout: 10, method: sc.method };
      if (sc.method === 'POST') {
        o.body = uploadBody();
        o.headers = { 'content-type': 'application/octet-stream' };
      }
      const inst = autocannon(o, (err, r) => {
        clearTimeout(guard);
        if (err) return reject(err);
        const requests = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
        resolve({ requests, rps: requests / r.duration, errors: r.errors + r.timeouts, non2xx: r.non2xx });
      });
      const guard = setTimeout(() => inst.stop(), (seconds + 30) * 1000);
    });
  }
  let script: string | undefined;
  if (sc.method === 'POST') {
    script = path.join(outDir, 'post.lua');
    fs.writeFileSync(
      script,
      'local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))\nwrk.body = f:read("*a")\nf:close()\n' +
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/octet-stream"\n',
    );
  }
  return runWrk(url, conns, seconds, script, { WRK_BODY_FILE: bodyFile() });
}

/** Load for `seconds` while measuring the proxy's CPU; `during` runs alongside (perf record). */
async function measuredLoad(
  opts: Options,
  port: number,
  proxy: Proc,
  outDir: string,
  during?: () => Promise<void>,
): Promise<WrkResult & { usPerReq: number }> {
  const t0 = procTicks(proxy.pid) ?? NaN;
  const [r] = await Promise.all([runLoad(opts, port, opts.duration, outDir), during ? during() : Promise.resolve()]);
  const t1 = procTicks(proxy.pid) ?? NaN;
  const usPerReq = r.requests > 0 ? (((t1 - t0) / CLK_TCK) * 1e6) / r.requests : NaN;
  return { ...r, usPerReq };
}

function runCmd(cmd: string, args: readonly string[], limitS: number, outFile?: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('timeout', ['-k', '5', String(limitS), cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      const out = Buffer.concat(chunks).toString();
      if (outFile) fs.writeFileSync(outFile, out);
      resolve({ code, out: code === 0 ? out : out + err });
    });
  });
}

// ------------------------------------------------------------------ perf

interface PerfRow {
  pct: number;
  dso: string;
  sym: string;
}

function category(r: PerfRow): string {
  const { dso, sym } = r;
  if (dso.includes('kernel') || dso.startsWith('[k')) return 'kernel';
  if (/wasm-to-js|js-to-wasm/.test(sym)) return 'wasm <-> JS transitions';
  if (/wasm-function|^wasm/.test(sym)) return 'wasm (llhttp)';
  if (dso.startsWith('[JIT]') || /^perf-\d+\.map$/.test(dso)) {
    if (/^(Builtin|BytecodeHandler|Stub|RegExp):/.test(sym)) return 'V8 builtins / interpreter';
    if (sym.includes('/lib/transport/') || sym.includes('/lib/observability/')) return 'JIT JS: throughway';
    if (/ node:/.test(sym)) return 'JIT JS: Node internals (net, streams)';
    return 'JIT JS: other';
  }
  if (dso === 'node' || dso.endsWith('/node')) {
    if (/^Builtins_/.test(sym)) return 'V8 builtins / interpreter';
    if (/^uv_|^uv__/.test(sym)) return 'libuv';
    if (/^node::|^napi_|^node_/.test(sym)) return 'Node C++';
    if (/Heap|Scavenge|MarkCompact|Sweeper|GC|Marking|Evacuat|Mark|Sweep/.test(sym)) return 'V8 GC';
    if (/^v8::|^Builtin|^Runtime_|^std::/.test(sym)) return 'V8 runtime (C++)';
    return 'node binary, other';
  }
  if (/^libc[.-]/.test(dso) || dso.startsWith('libc.so')) return 'libc';
  if (/libstdc\+\+|libgcc/.test(dso)) return 'C++ runtime';
  if (dso === '[vdso]') return 'vdso';
  if (dso === '[unknown]') return 'unknown';
  return 'other: ' + dso;
}

async function perfMode(opts: Options, backendPort: number, outDir: string): Promise<void> {
  const port = await freePort();
  const proxy = await startThroughway(port, backendPort, ['--perf-basic-prof', '--interpreted-frames-native-stack'], 'throughway-perf');
  const mapFile = `/tmp/perf-${proxy.pid}.map`;
  try {
    await sanity(port, uploadBody());
    log(`perf: warm-up ${opts.warmup} s`);
    if (opts.warmup > 0) await runLoad(opts, port, opts.warmup, outDir);
    const data = path.join(outDir, 'perf.data');
    log(`perf: recording pid ${proxy.pid} for ${opts.duration} s under ${opts.tool} (${opts.scenario.label})`);
    let rec: { code: number | null; out: string } = { code: null, out: '' };
    const r = await measuredLoad(opts, port, proxy, outDir, async () => {
      rec = await runCmd(
        'perf',
        ['record', '-g', '-F', '999', '-p', String(proxy.pid), '-o', data, '--', 'sleep', String(opts.duration)],
        opts.duration + 30,
      );
    });
    if (rec.code !== 0) throw new Error(`perf record failed: ${rec.out.slice(-400)}`);
    const rep = await runCmd(
      'perf',
      ['report', '-i', data, '--no-children', '--sort', 'dso,sym', '--stdio', '-g', 'none', '--percent-limit', '0.05'],
      120,
      path.join(outDir, 'perf-report.txt'),
    );
    const rows: PerfRow[] = [];
    for (const line of rep.out.split('\n')) {
      const m = /^\s+([\d.]+)%\s+(.+?)\s+\[(.)\]\s+(.*?)\s*$/.exec(line);
      if (m && m[1] && m[2] && m[4]) rows.push({ pct: Number(m[1]), dso: m[2], sym: m[4] });
    }
    const byDso = await runCmd('perf', ['report', '-i', data, '--no-children', '--sort', 'dso', '--stdio', '-g', 'none'], 120);
    const cats = new Map<string, number>();
    let listed = 0;
    for (const row of rows) {
      const c = category(row);
      cats.set(c, (cats.get(c) ?? 0) + row.pct);
      listed += row.pct;
    }
    const out: string[] = [];
    out.push(`## perf: ${opts.scenario.label}, ${opts.tool}, ${opts.duration} s`);
    out.push('');
    out.push(
      `load: ${fmt(r.rps)} req/s, ${r.requests} requests, errors ${r.errors}, non-2xx ${r.non2xx}; throughway CPU ${fmt(r.usPerReq, 1)} µs/req (utime+stime over the window)`,
    );
    out.push('');
    out.push('### CPU by kind (symbols ≥ 0.05 % each; the rest unlisted), µs/req = share × the measured CPU per request');
    out.push('');
    out.push('| kind | % of samples | ≈ µs/req |');
    out.push('|---|---|---|');
    for (const [c, pct] of [...cats].sort((a, b) => b[1] - a[1]))
      out.push(`| ${c} | ${pct.toFixed(1)} | ${fmt((pct / 100) * r.usPerReq, 1)} |`);
    out.push(
      `| (below 0.05 % each) | ${Math.max(0, 100 - listed).toFixed(1)} | ${fmt((Math.max(0, 100 - listed) / 100) * r.usPerReq, 1)} |`,
    );
    out.push('');
    out.push('### by DSO');
    out.push('');
    out.push('```');
    out.push(
      ...byDso.out
        .split('\n')
        .filter((l) => /%/.test(l) && !l.startsWith('#'))
        .slice(0, 15),
    );
    out.push('```');
    out.push('');
    out.push(`### top ${opts.top}: perf report --no-children --sort dso,sym`);
    out.push('');
    out.push('```');
    for (const row of rows.slice(0, opts.top))
      out.push(`${row.pct.toFixed(2).padStart(6)}%  ${row.dso.padEnd(20)} ${row.sym.slice(0, 110)}   [${category(row)}]`);
    out.push('```');
    process.stdout.write(out.join('\n') + '\n\n');
  } finally {
    await stopProc(proxy);
    try {
      fs.unlinkSync(mapFile);
    } catch {
      // not written
    }
  }
}

// ------------------------------------------------------------------ --cpu-prof

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function kindOfUrl(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)') return 'native (not JS: C++, syscalls, wasm without frames)';
  if (fn === '(idle)') return 'idle';
  if (url.startsWith('wasm://') || /wasm/.test(fn)) return 'wasm';
  if (url.startsWith('node:')) return 'Node internals (JS)';
  if (url.includes('/lib/transport/')) return 'throughway transport';
  if (url.includes('/dist/')) return 'throughway, other';
  if (url === '') return 'native functions (socket writes etc.; wall time incl. the syscall)';
  return 'other JS';
}

async function cpuProfMode(opts: Options, backendPort: number, outDir: string): Promise<void> {
  const port = await freePort();
  const profDir = path.join(outDir, 'cpuprofile');
  fs.mkdirSync(profDir, { recursive: true });
  const proxy = await startThroughway(
    port,
    backendPort,
    ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-name', 'throughway.cpuprofile'],
    'throughway-cpuprof',
  );
  let r: WrkResult & { usPerReq: number };
  try {
    await sanity(port, uploadBody());
    log(`cpu-prof: warm-up ${opts.warmup} s, then ${opts.duration} s under ${opts.tool}`);
    if (opts.warmup > 0) await runLoad(opts, port, opts.warmup, outDir);
    r = await measuredLoad(opts, port, proxy, outDir);
  } finally {
    await stopProc(proxy, 20_000);
  }
  const file = path.join(profDir, 'throughway.cpuprofile');
  if (!fs.existsSync(file)) throw new Error(`no profile written (${file}); see ${proxy.logFile}`);
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of prof.nodes) byId.set(n.id, n);
  const self = new Map<string, number>();
  const kinds = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const node = byId.get(prof.samples[i] ?? -1);
    const dt = prof.timeDeltas[i + 1] ?? prof.timeDeltas[i] ?? 0;
    if (!node) continue;
    const cf = node.callFrame;
    const kind = kindOfUrl(cf.url, cf.functionName);
    if (kind === 'idle') {
      idleUs += dt;
      continue;
    }
    totalUs += dt;
    const where = cf.url ? ` ${cf.url.replace(/^file:\/\//, '').replace(/^.*\/(dist|node_modules)\//, '$1/')}:${cf.lineNumber + 1}` : '';
    const key = `${cf.functionName || '(anonymous)'}${where}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    kinds.set(kind, (kinds.get(kind) ?? 0) + dt);
  }
  const out: string[] = [];
  out.push(`## --cpu-prof: ${opts.scenario.label}, ${opts.tool}, ${opts.duration} s (+ warm-up; the profile spans the process's life)`);
  out.push('');
  out.push(
    `load: ${fmt(r.rps)} req/s, errors ${r.errors}, non-2xx ${r.non2xx}; throughway CPU ${fmt(r.usPerReq, 1)} µs/req; profile: ${fmt(totalUs / 1e6, 2)} s busy, ${fmt(idleUs / 1e6, 2)} s idle (wall-clock samples)`,
  );
  out.push('');
  out.push('| kind | % of busy samples |');
  out.push('|---|---|');
  for (const [k, us] of [...kinds].sort((a, b) => b[1] - a[1])) out.push(`| ${k} | ${((us / totalUs) * 100).toFixed(1)} |`);
  out.push('');
  out.push(`### top ${opts.top} functions by self time`);
  out.push('');
  out.push('```');
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, opts.top))
    out.push(`${((us / totalUs) * 100).toFixed(2).padStart(6)}%  ${k}`);
  out.push('```');
  out.push(`profile: ${file} (open in Chrome DevTools → Performance, or speedscope)`);
  process.stdout.write(out.join('\n') + '\n\n');
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  installExitHandlers();
  if (opts.modes.includes('perf') && !hasCommand('perf')) throw new Error('perf not found (Debian: apt-get install linux-perf)');
  if (opts.tool === 'wrk' && !hasCommand('wrk')) throw new Error('wrk not found: --tool autocannon, or apt-get install wrk');
  const outDir = path.join(WORK_DIR, `profile-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.mkdirSync(outDir, { recursive: true });
  const backendPort = await freePort();
  const backend = await startBackend(backendPort);
  try {
    for (const m of opts.modes) {
      if (m === 'perf') await perfMode(opts, backendPort, outDir);
      else await cpuProfMode(opts, backendPort, outDir);
    }
  } finally {
    await stopProc(backend);
  }
  process.stdout.write(`artefacts: ${outDir}\n`);
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    process.stderr.write(`profile failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await stopAll();
    process.exit(1);
  },
);
