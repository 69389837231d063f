/**
 * `npm run bench -- --many-clients`: what 1,000 keep-alive clients cost per request against 64, for the
 * transport-only throughway and for nginx beside it (docs/performance.md, "Many keep-alive clients"). The
 * ratio compares one proxy with itself, so it says how much of the growth is the proxy's and how much the
 * machine's: the kernel's per-socket work and the caches, which every proxy meets.
 *
 * nginx is the peers harness's nginx-1w-tuned (../shared/peers/nginx-tuned.conf, one worker) with one
 * change: its upstream keeps up to `clients + 24` idle connections instead of 64, so that, like throughway,
 * it keeps a backend connection per busy client; with 64 it opens and closes backend connections all the
 * time at 1,000 clients, which measures its configuration rather than its cost. Each round measures the
 * four cells (two proxies × two client counts) in turn, in the opposite order in the next round, all
 * with `wrk -t1` against the bench backend (bench/backend.ts, /small: 96 bytes); CPU per request is the
 * proxy's utime+stime (for nginx its worker's) over the measured window ÷ the requests wrk completed,
 * also kept split into user space and the kernel (stime), so the section can say how much of each
 * proxy's growth is the kernel's. Measurement only; `--write` replaces the section.
 *
 *   npm run bench -- --many-clients [--clients N (1000)] [--rounds R (8)] [--duration S (4)] [--write] [--from FILE]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  CLK_TCK,
  fmt,
  freePort,
  hasCommand,
  HOST,
  log,
  machineLines,
  median,
  procSplit,
  range,
  rawRun,
  ROOT,
  runWrk,
  sleep,
  startBackend,
  startProc,
  startThroughway,
  stopAll,
  waitPort,
  WORK_DIR,
} from './common';
import { writeSection } from './render';

export const CLIENTS_BEGIN = '<!-- many-clients:begin -->';
export const CLIENTS_END = '<!-- many-clients:end -->';

/** docs/performance.md's target: with 1,000 keep-alive clients at most this times the 64-client CPU per request. */
export const TARGET_GROWTH = 1.2;
/** The client count every ratio is taken against. */
export const BASE_CLIENTS = 64;

export type ProxyName = 'throughway' | 'nginx';

export interface ClientsCell {
  readonly round: number;
  readonly proxy: ProxyName;
  readonly conns: number;
  readonly usPerReq: number;
  /** The kernel's part of usPerReq (stime); absent from runs recorded before it was kept. */
  readonly kernelUsPerReq?: number;
  readonly reqPerS: number;
  /** wrk's socket errors and non-2xx answers. */
  readonly errors: number;
}

export interface ClientsRun {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly clients: number;
  readonly rounds: number;
  readonly durationS: number;
  /** nginx -v's version line. */
  readonly nginx: string;
  readonly cells: readonly ClientsCell[];
}

/** The peers' tuned nginx configuration this bench starts from. */
export const PEERS_NGINX_CONF = path.join(ROOT, '..', 'shared', 'peers', 'nginx-tuned.conf');

/**
 * The peers' nginx-tuned.conf with its listen port, upstream server and upstream keepalive replaced.
 * Throws, naming the line it looked for, when the file no longer has exactly one of each.
 */
export function nginxConf(template: string, listenPort: number, backendPort: number, keepalive: number): string {
  const swaps: [RegExp, string, string][] = [
    [/^(\s*listen\s+127\.0\.0\.1:)\d+/m, `$1${listenPort}`, 'listen 127.0.0.1:<port>'],
    [/^(\s*server\s+127\.0\.0\.1:)\d+;/m, `$1${backendPort};`, 'server 127.0.0.1:<port>; (the upstream)'],
    [/^(\s*keepalive\s+)\d+;/m, `$1${keepalive};`, 'keepalive <n>; (the upstream)'],
  ];
  let out = template;
  for (const [re, to, what] of swaps) {
    const all = new RegExp(re.source, 'gm');
    const n = template.match(all)?.length ?? 0;
    if (n !== 1) throw new Error(`${PEERS_NGINX_CONF}: expected one line "${what}", found ${n}`);
    out = out.replace(re, to);
  }
  return out;
}

/** The directories a configuration's `*_temp_path` lines name (relative to nginx's prefix). */
export function tempPaths(conf: string): string[] {
  return [...conf.matchAll(/^\s*[a-z_]+_temp_path\s+([^\s;]+)/gm)].map((m) => m[1] as string);
}

/** The first child of `pid` (nginx's worker under its master), from /proc. */
function childOf(pid: number): number | undefined {
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

async function measure(clients: number, rounds: number, durationS: number, command: string): Promise<ClientsRun> {
  for (const cmd of ['wrk', 'nginx'])
    if (!hasCommand(cmd)) throw new Error(`--many-clients needs ${cmd}, not found (Debian: apt-get install ${cmd})`);
  if (!fs.existsSync(PEERS_NGINX_CONF))
    throw new Error(`--many-clients starts from the peers' nginx configuration, ${PEERS_NGINX_CONF}: not found`);
  const load0 = os.loadavg();
  const nginxVersion = spawnSync('nginx', ['-v'], { encoding: 'utf8' })
    .stderr.trim()
    .replace(/^nginx version: /, '');
  const backendPort = await freePort();
  const twPort = await freePort();
  const ngPort = await freePort();
  const prefix = path.join(WORK_DIR, 'nginx-many-clients');
  const template = fs.readFileSync(PEERS_NGINX_CONF, 'utf8');
  // nginx refuses to start without its log and temporary directories, which are relative to the prefix.
  for (const d of ['logs', ...tempPaths(template)]) fs.mkdirSync(path.join(prefix, d), { recursive: true });
  const confFile = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(confFile, nginxConf(template, ngPort, backendPort, clients + 24));
  const cells: ClientsCell[] = [];
  try {
    await startBackend(backendPort);
    const tw = await startThroughway(twPort, backendPort);
    const ng = startProc('nginx-many-clients', ['nginx', '-c', confFile, '-p', `${prefix}/`, '-e', 'logs/error.log'], {});
    await waitPort(ngPort, 10_000, ng);
    // The master forks its worker once it listens; give it up to 5 s.
    let worker = childOf(ng.pid);
    for (let i = 0; i < 50 && worker === undefined; i++) {
      await sleep(100);
      worker = childOf(ng.pid);
    }
    if (worker === undefined) throw new Error(`nginx (pid ${ng.pid}) started no worker (log: ${prefix}/logs/error.log)`);
    const pids: Record<ProxyName, number> = { throughway: tw.pid, nginx: worker };
    const ports: Record<ProxyName, number> = { throughway: twPort, nginx: ngPort };
    const url = (port: number): string => `http://${HOST}:${port}/small`;
    const order: [ProxyName, number][] = [
      ['throughway', BASE_CLIENTS],
      ['throughway', clients],
      ['nginx', BASE_CLIENTS],
      ['nginx', clients],
    ];
    // Warm both proxies with the larger client count (code compiled, backend connections opened).
    for (const p of ['throughway', 'nginx'] as const) await runWrk(url(ports[p]), clients, 2);
    for (let round = 1; round <= rounds; round++) {
      const cellsOfRound = round % 2 === 1 ? order : [...order].reverse();
      for (const [proxy, conns] of cellsOfRound) {
        const t0 = procSplit(pids[proxy]);
        const r = await runWrk(url(ports[proxy]), conns, durationS);
        const t1 = procSplit(pids[proxy]);
        if (t0 === undefined || t1 === undefined) throw new Error(`${proxy} exited during the run`);
        const perReq = (ticks: number): number => ((ticks / CLK_TCK) * 1e6) / Math.max(1, r.requests);
        const cell: ClientsCell = {
          round,
          proxy,
          conns,
          usPerReq: perReq(t1.user + t1.kernel - t0.user - t0.kernel),
          kernelUsPerReq: perReq(t1.kernel - t0.kernel),
          reqPerS: r.rps,
          errors: r.errors + r.non2xx,
        };
        cells.push(cell);
        log(
          `[${cells.length}/${rounds * 4}] r${round} ${proxy} ${conns} conns: ${fmt(cell.reqPerS)} req/s, ${fmt(cell.usPerReq, 1)} µs/req, errors ${cell.errors}`,
        );
      }
    }
  } finally {
    await stopAll();
  }
  return {
    date: new Date().toISOString(),
    command,
    machine: machineLines(load0, os.loadavg()),
    clients,
    rounds,
    durationS,
    nginx: nginxVersion,
    cells,
  };
}

/** One figure of one proxy at one client count, per round (round order): CPU µs/req, or its kernel or user-space part. */
function series(run: ClientsRun, proxy: ProxyName, conns: number, part: 'all' | 'kernel' | 'user' = 'all'): number[] {
  const pick = (c: ClientsCell): number =>
    part === 'all' ? c.usPerReq : part === 'kernel' ? (c.kernelUsPerReq ?? NaN) : c.usPerReq - (c.kernelUsPerReq ?? NaN);
  return run.cells
    .filter((c) => c.proxy === proxy && c.conns === conns)
    .sort((a, b) => a.round - b.round)
    .map(pick);
}

/** Whether every cell has its kernel part (runs recorded before it was kept have none). */
function hasSplit(run: ClientsRun): boolean {
  return run.cells.length > 0 && run.cells.every((c) => c.kernelUsPerReq !== undefined);
}

/** Per-round ratios a[i] / b[i] over the rounds both have. */
function ratios(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) out.push((a[i] as number) / (b[i] as number));
  return out;
}

export interface ClientsSummary {
  readonly growth: Record<ProxyName, number[]>;
  /** throughway ÷ nginx per round at BASE_CLIENTS and at the larger count. */
  readonly versusBase: number[];
  readonly versusMany: number[];
  /**
   * Per round, the larger count's figure if only the kernel's part had grown: (CPU at 64 + the kernel's
   * growth) ÷ CPU at 64. Empty for a run without the kernel's part.
   */
  readonly kernelAlone: Record<ProxyName, number[]>;
}

export function summarize(run: ClientsRun): ClientsSummary {
  const s = (p: ProxyName, c: number): number[] => series(run, p, c);
  return {
    growth: {
      throughway: ratios(s('throughway', run.clients), s('throughway', BASE_CLIENTS)),
      nginx: ratios(s('nginx', run.clients), s('nginx', BASE_CLIENTS)),
    },
    versusBase: ratios(s('throughway', BASE_CLIENTS), s('nginx', BASE_CLIENTS)),
    versusMany: ratios(s('throughway', run.clients), s('nginx', run.clients)),
    kernelAlone: { throughway: kernelAlone(run, 'throughway'), nginx: kernelAlone(run, 'nginx') },
  };
}

function kernelAlone(run: ClientsRun, proxy: ProxyName): number[] {
  if (!hasSplit(run)) return [];
  const base = series(run, proxy, BASE_CLIENTS);
  const k0 = series(run, proxy, BASE_CLIENTS, 'kernel');
  const k1 = series(run, proxy, run.clients, 'kernel');
  const out: number[] = [];
  for (let i = 0; i < Math.min(base.length, k0.length, k1.length); i++)
    out.push(((base[i] as number) + (k1[i] as number) - (k0[i] as number)) / (base[i] as number));
  return out;
}

/**
 * Where each proxy's growth goes: user space and the kernel at both client counts (medians over the
 * rounds), and the ratio had only the kernel's part grown. Empty for a run without the kernel's part.
 */
export function renderSplitTable(run: ClientsRun): string {
  if (!hasSplit(run)) return '';
  const sum = summarize(run);
  const n = run.clients.toLocaleString('en-US');
  const part = (p: ProxyName, which: 'user' | 'kernel'): string => {
    const a = median(series(run, p, BASE_CLIENTS, which));
    const b = median(series(run, p, run.clients, which));
    const d = b - a;
    return `${fmt(a, 1)} → ${fmt(b, 1)} (${d >= 0 ? '+' : '−'}${fmt(Math.abs(d), 1)})`;
  };
  const row = (label: string, p: ProxyName): string => {
    const k = sum.kernelAlone[p];
    return `| ${label} | ${part(p, 'user')} | ${part(p, 'kernel')} | ${fmt(median(k), 2)}× | ${k.map((x) => fmt(x, 2)).join(', ')} |`;
  };
  return [
    `| proxy | user space µs/req, ${BASE_CLIENTS} → ${n} conns | kernel µs/req, ${BASE_CLIENTS} → ${n} conns | ${n} ÷ ${BASE_CLIENTS} had only the kernel's part grown | per round |`,
    '|---|---|---|---|---|',
    row('throughway (transport only)', 'throughway'),
    row('nginx-1w-tuned', 'nginx'),
  ].join('\n');
}

export function renderClientsTable(run: ClientsRun): string {
  const sum = summarize(run);
  const n = run.clients.toLocaleString('en-US');
  const row = (label: string, p: ProxyName): string => {
    const a = series(run, p, BASE_CLIENTS);
    const b = series(run, p, run.clients);
    const g = sum.growth[p];
    return `| ${label} | ${fmt(median(a), 1)}${range(a, 1)} | ${fmt(median(b), 1)}${range(b, 1)} | ${fmt(median(g), 2)}× | ${g.map((x) => fmt(x, 2)).join(', ')} |`;
  };
  const errors = run.cells.reduce((a, c) => a + c.errors, 0);
  const g = median(sum.growth.throughway);
  return [
    `| proxy | CPU µs/req, ${BASE_CLIENTS} conns | CPU µs/req, ${n} conns | ${n} ÷ ${BASE_CLIENTS} | per round |`,
    '|---|---|---|---|---|',
    row('throughway (transport only)', 'throughway'),
    row(`nginx-1w-tuned, upstream keepalive ${run.clients + 24}`, 'nginx'),
    '',
    `throughway ÷ nginx in the same round: ${fmt(median(sum.versusBase), 2)}× at ${BASE_CLIENTS} connections${range(sum.versusBase, 2)}, ` +
      `${fmt(median(sum.versusMany), 2)}× at ${n}${range(sum.versusMany, 2)}. ` +
      `Target for throughway (${n} clients ≤ ${TARGET_GROWTH}× its ${BASE_CLIENTS}-client figure): ${g <= TARGET_GROWTH ? '**met**' : '**not met**'} (${fmt(g, 2)}×); ` +
      `nginx's own figure in the same rounds: ${fmt(median(sum.growth.nginx), 2)}×. wrk socket errors and non-2xx answers: ${errors}.`,
  ].join('\n');
}

export function renderClients(run: ClientsRun): string {
  return [
    CLIENTS_BEGIN,
    '## Many keep-alive clients: throughway and nginx against themselves',
    '',
    `Run of ${run.date}, produced by \`${run.command}\` (bench/clients.ts): a transport-only throughway (bench/start-throughway.ts, ` +
      `default settings) and nginx ${run.nginx.replace(/^nginx\//, '')} (the peers' nginx-1w-tuned configuration, one worker, with its upstream keeping up to ` +
      `${run.clients + 24} idle connections instead of 64, so that like throughway it keeps a backend connection per busy client) in front of ` +
      `the bench backend, each driven by \`wrk -t1\` with ${BASE_CLIENTS} and with ${run.clients.toLocaleString('en-US')} keep-alive connections ` +
      `asking for the 96-byte /small; ${run.rounds} rounds of ${run.durationS} s per cell, the four cells of a round in turn and in the ` +
      "opposite order in the next. CPU per request: the proxy's utime+stime (nginx's worker's) over the window ÷ the requests wrk completed; medians over the rounds (min–max).",
    '',
    ...run.machine,
    '',
    renderClientsTable(run),
    '',
    ...(hasSplit(run)
      ? [
          "Where the growth goes: each proxy's CPU per request split into user space (utime) and the kernel (stime), medians over the rounds; " +
            "the fourth column is the larger count's ratio had user space cost per request no more than at 64 connections, the part of the ratio " +
            "the kernel's own growth makes.",
          '',
          renderSplitTable(run),
          '',
        ]
      : []),
    "A proxy's ratio holds what any proxy pays for more sockets as well as its own work: the kernel's work per socket and the " +
      "cache misses on each connection's state, which grow with the number of connections whatever the proxy. nginx's ratio in the " +
      'same rounds is how much of that this machine shows.',
    CLIENTS_END,
  ].join('\n');
}

export async function runClientsBench(argv: readonly string[], command: string): Promise<void> {
  let clients = 1000;
  let rounds = 8;
  let durationS = 4;
  let write = false;
  let from: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--clients') clients = Number(argv[++i]);
    else if (a === '--rounds') rounds = Number(argv[++i]);
    else if (a === '--duration') durationS = Number(argv[++i]);
    else if (a === '--write') write = true;
    else if (a === '--from') from = argv[++i];
    else
      throw new Error(
        `--many-clients: unknown option ${String(a)} (usage: --many-clients [--clients N] [--rounds R] [--duration S] [--write] [--from FILE])`,
      );
  }
  if (!Number.isInteger(clients) || clients <= BASE_CLIENTS) throw new Error(`--clients needs a whole number above ${BASE_CLIENTS}`);
  if (!Number.isInteger(rounds) || rounds <= 0) throw new Error('--rounds needs a positive whole number');
  if (!Number.isInteger(durationS) || durationS <= 0) throw new Error('--duration needs a positive whole number of seconds');
  const run = await rawRun<ClientsRun>('many-clients', 'many-clients', from, () => measure(clients, rounds, durationS, command));
  const split = renderSplitTable(run);
  process.stdout.write(`\n# many keep-alive clients — ${run.date}\n\n${renderClientsTable(run)}\n${split === '' ? '' : `\n${split}\n`}`);
  if (write) writeSection(CLIENTS_BEGIN, CLIENTS_END, renderClients(run), 'many-clients');
}
