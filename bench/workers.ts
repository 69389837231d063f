/**
 * `npm run bench -- --workers`: throughput with [throughway.cluster] workers = 2 vs 1 (issue 10, "Speed";
 * docs/scale-out.md). For each count, one node as `npm start` runs it (a temporary copy of conf/ with a
 * random server.offset and the cluster key set), then autocannon on the demo API's 96-byte resource
 * (auth = "none"). Rounds alternate the two nodes; the table shows medians. Measurement only.
 *
 *   npm run bench -- --workers [--duration S] [--warmup S] [--connections N] [--rounds N]
 */
import autocannon = require('autocannon');
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fmt, HOST, log, median, ROOT, sleep } from './common';

const CLI = path.join(ROOT, 'dist', 'lib', 'cli.js');

function parse(argv: readonly string[]): { duration: number; warmup: number; connections: number; rounds: number } {
  const o = { duration: 10, warmup: 3, connections: 64, rounds: 3 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
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

async function startNode(workers: number): Promise<{ port: number; stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `throughway-bench-workers-${workers}-`));
  fs.cpSync(path.join(ROOT, 'conf'), path.join(dir, 'conf'), { recursive: true });
  const offset = 20000 + Math.floor(Math.random() * 9000);
  const toml = path.join(dir, 'conf', 'deployment.toml');
  fs.writeFileSync(toml, `${fs.readFileSync(toml, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`)}\n[throughway.cluster]\nworkers = "${workers}"\n`);
  const child: ChildProcess = spawn(process.execPath, [CLI, 'start'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  const marker = workers > 1 ? 'workers ready' : 'Try:';
  const deadline = Date.now() + 30_000;
  while (!out.includes(marker) && child.exitCode === null && Date.now() < deadline) await sleep(50);
  if (!out.includes(marker)) throw new Error(`the node (${workers} workers) did not start:\n${out}`);
  return {
    port: 8280 + offset,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await sleep(1000);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function runWorkersBench(argv: readonly string[]): Promise<void> {
  const o = parse(argv);
  const counts = [1, 2];
  const rps: number[][] = counts.map(() => []);
  const p99: number[][] = counts.map(() => []);
  for (let round = 1; round <= o.rounds; round++) {
    for (let i = 0; i < counts.length; i++) {
      const n = await startNode(counts[i] as number);
      try {
        const url = `http://${HOST}:${n.port}/pizzashack/1.0.0/small`;
        await cannon(url, o.connections, o.warmup);
        const r = await cannon(url, o.connections, o.duration);
        if (r.non2xx > 0 || r.errors > 0) log(`${counts[i]} worker(s): ${r.non2xx} non-2xx, ${r.errors} errors`);
        rps[i]?.push(r.requests.average);
        p99[i]?.push(r.latency.p99);
        log(`round ${round}, ${counts[i]} worker(s): ${fmt(r.requests.average)} req/s, p99 ${fmt(r.latency.p99)} ms`);
      } finally {
        await n.stop();
      }
    }
  }
  const one = median(rps[0] ?? []);
  const two = median(rps[1] ?? []);
  process.stdout.write(
    `\n# workers bench: GET /small (96 B), ${o.connections} conns, ${o.rounds} rounds of ${o.duration} s, medians\n\n` +
      `| [throughway.cluster] workers | req/s | p99 ms |\n|---|---|---|\n` +
      `| 1 | ${fmt(one)} | ${fmt(median(p99[0] ?? []))} |\n` +
      `| 2 | ${fmt(two)} | ${fmt(median(p99[1] ?? []))} |\n\n` +
      `2 / 1: ${fmt(two / one, 3)} (the load generator shares the machine's cores)\n`,
  );
}
