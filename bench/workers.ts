/**
 * `npm run bench -- --workers`: throughput with [throughway.cluster] workers = 2 vs 1 (docs/scale-out.md;
 * docs/scale-out.md). For each count, one node as `npm start` runs it (a temporary copy of conf/ with a
 * random server.offset and the cluster key set), then autocannon on the demo API's 96-byte resource
 * (auth = "none"). Rounds alternate the two nodes; the table shows medians. Measurement only.
 * The raw rows are kept in WORK_DIR/workers-<date>.json; --write replaces the document's cluster-mode
 * section (bench/render.ts renderWorkers), --from FILE renders an earlier run again without measuring.
 *
 *   npm run bench -- --workers [--duration S] [--warmup S] [--connections N] [--rounds N] [--write] [--from FILE]
 */
import autocannon = require('autocannon');
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLK_TCK, fmt, HOST, log, machineLines, rawRun, ROOT, sleep } from './common';
import { renderWorkers, renderWorkersTable, WORKERS_BEGIN, WORKERS_END, writeSection, type WorkersRow, type WorkersRun } from './render';

const CLI = path.join(ROOT, 'dist', 'lib', 'cli.js');

interface WorkersOptions {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  write: boolean;
  from: string | undefined;
}

function parse(argv: readonly string[]): WorkersOptions {
  const o: WorkersOptions = { duration: 10, warmup: 3, connections: 64, rounds: 3, write: false, from: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--write') {
      o.write = true;
      continue;
    }
    if (a === '--from') {
      const f = argv[++i];
      if (f === undefined) throw new Error('--from needs a file');
      o.from = path.resolve(f);
      continue;
    }
    const v = Number(argv[i + 1]);
    if (a === '--duration') o.duration = v;
    else if (a === '--warmup') o.warmup = v;
    else if (a === '--connections') o.connections = v;
    else if (a === '--rounds') o.rounds = v;
    else continue;
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
    i++;
  }
  return o;
}

function cannon(url: string, connections: number, duration: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, timeout: 10 }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

interface Node {
  readonly port: number;
  /** The node's own process id (the primary in cluster mode). */
  readonly pid: number;
  stop(): Promise<void>;
}

/** The process and its descendants (cluster workers), from the parent ids in /proc/<pid>/stat. */
function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
}

/** utime+stime of each process of the tree, in clock ticks (children's own, not their waited-for ones). */
function treeTicks(pids: readonly number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const pid of pids) {
    try {
      const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      m.set(pid, Number(f[11]) + Number(f[12]));
    } catch {
      // exited
    }
  }
  return m;
}

/**
 * A node on a random server.offset; another one when it exits before it is ready (one of its many ports
 * taken by another tenant of this machine: EADDRINUSE), at most three times.
 */
async function startNode(workers: number): Promise<Node> {
  for (let attempt = 1; ; attempt++) {
    const n = await startNodeOnce(workers);
    if (n.ready) return n;
    await n.stop();
    if (!n.exited || attempt >= 3) throw new Error(`the node (${workers} workers) did not start:\n${n.out}`);
    log(`the node (${workers} workers) exited before it was ready; trying another server.offset`);
  }
}

async function startNodeOnce(workers: number): Promise<Node & { ready: boolean; exited: boolean; out: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `throughway-bench-workers-${workers}-`));
  fs.cpSync(path.join(ROOT, 'conf'), path.join(dir, 'conf'), { recursive: true });
  const offset = 20000 + Math.floor(Math.random() * 9000);
  const toml = path.join(dir, 'conf', 'deployment.toml');
  fs.writeFileSync(
    toml,
    `${fs.readFileSync(toml, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`)}\n[throughway.cluster]\nworkers = "${workers}"\n`,
  );
  const child: ChildProcess = spawn(process.execPath, [CLI, 'start'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  const marker = workers > 1 ? 'workers ready' : 'Try:';
  const deadline = Date.now() + 30_000;
  while (!out.includes(marker) && child.exitCode === null && Date.now() < deadline) await sleep(50);
  return {
    ready: out.includes(marker),
    exited: child.exitCode !== null,
    out,
    port: 8280 + offset,
    pid: child.pid ?? 0,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await sleep(1000);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const DEMO_PATH = '/pizzashack/1.0.0/small';

async function measureWorkers(o: WorkersOptions): Promise<WorkersRow[]> {
  const rows: WorkersRow[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    for (const workers of [1, 2]) {
      const n = await startNode(workers);
      try {
        const url = `http://${HOST}:${n.port}${DEMO_PATH}`;
        await cannon(url, o.connections, o.warmup);
        const pids = processTree(n.pid);
        const before = treeTicks(pids);
        const r = await cannon(url, o.connections, o.duration);
        const after = treeTicks(pids);
        if (r.non2xx > 0 || r.errors > 0) log(`${workers} worker(s): ${r.non2xx} non-2xx, ${r.errors} errors`);
        // CPU µs per request: of all the node's processes, and of the busiest one (what bounds req/s when
        // every process has a core of its own).
        const us = (ticks: number): number => (r.requests.total > 0 ? ((ticks / CLK_TCK) * 1e6) / r.requests.total : NaN);
        let total = 0;
        let busiest = 0;
        for (const [pid, t1] of after) {
          const d = t1 - (before.get(pid) ?? t1);
          total += d;
          busiest = Math.max(busiest, d);
        }
        rows.push({
          round,
          workers,
          rps: r.requests.average,
          p99: r.latency.p99,
          errors: r.errors,
          non2xx: r.non2xx,
          cpuUs: us(total),
          busiestUs: us(busiest),
          processes: after.size,
        });
        log(
          `round ${round}, ${workers} worker(s): ${fmt(r.requests.average)} req/s, p99 ${fmt(r.latency.p99)} ms, node CPU ${fmt(us(total), 1)} µs/req (busiest process ${fmt(us(busiest), 1)})`,
        );
      } finally {
        await n.stop();
      }
    }
  }
  return rows;
}

/** `argv`: the options after --workers; `command`: how this run was invoked (for the document). */
export async function runWorkersBench(argv: readonly string[], command: string): Promise<void> {
  const o = parse(argv);
  const run = await rawRun<WorkersRun>('workers', 'workers', o.from, async () => {
    const date = new Date().toISOString();
    const load0 = os.loadavg();
    const rows = await measureWorkers(o);
    return {
      date,
      command,
      machine: machineLines(load0, os.loadavg()),
      url: DEMO_PATH,
      duration: o.duration,
      warmup: o.warmup,
      connections: o.connections,
      rounds: o.rounds,
      rows,
    };
  });
  process.stdout.write(
    `\n# workers bench — ${run.date}: GET ${run.url} (96 B), ${run.connections} conns, ${run.rounds} rounds of ${run.duration} s, medians\n\n${renderWorkersTable(run)}\n`,
  );
  if (o.write) writeSection(WORKERS_BEGIN, WORKERS_END, renderWorkers(run), 'cluster-mode');
}
