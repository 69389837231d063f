/**
 * `npm run bench -- --auth`: the cost of authentication (issue 6, "Speed"). One throughway node as
 * `npm start` runs it (gateway, key manager, demo backend; a temporary copy of conf/ with a random
 * server.offset), an application subscribed to the protected demo API and one access token; then
 * autocannon on the same 96-byte resource through the open API (auth = "none", conf/apis/demo.toml)
 * and the protected one (auth = "oauth2", conf/apis/pizzashack-secured.toml) with the token. Targets
 * alternate within a round; each cell has a warm-up, which also fills the token cache, so the protected
 * cells measure the warm path: the cache look-up, the subscription and scope checks.
 *
 * Issue 6's target: protected throughput within 15% of open. Measurement only: nothing passes or fails.
 *
 *   npm run bench -- --auth [--duration S] [--warmup S] [--connections N] [--rounds N]
 */
import autocannon = require('autocannon');
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { fmt, HOST, log, median, ROOT, sleep } from './common';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'dist', 'lib', 'cli.js');

interface AuthOptions {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
}

function parse(argv: readonly string[]): AuthOptions {
  const o: AuthOptions = { duration: 10, warmup: 3, connections: 64, rounds: 3 };
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

function cannon(url: string, headers: Record<string, string>, connections: number, duration: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections, duration, timeout: 10 }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** Starts the node, gets a token for the protected demo API, measures both routes. */
export async function runAuthBench(argv: readonly string[]): Promise<void> {
  const o = parse(argv);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-bench-auth-'));
  fs.cpSync(path.join(ROOT, 'conf'), path.join(dir, 'conf'), { recursive: true });
  const offset = 20000 + Math.floor(Math.random() * 9000);
  const toml = path.join(dir, 'conf', 'deployment.toml');
  fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`));
  let child: ChildProcess | undefined;
  const stop = (): void => {
    if (child?.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  try {
    child = spawn(process.execPath, [CLI, 'start'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    const deadline = Date.now() + 30_000;
    while (!out.includes('Try:') && child.exitCode === null && Date.now() < deadline) await sleep(50);
    if (!out.includes('Try:')) throw new Error(`the node did not start:\n${out}`);
    let keys = '';
    for (const line of out.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('npm run -s throughway -- '))) {
      keys += (await run(process.execPath, [CLI, ...line.slice('npm run -s throughway -- '.length).split(' ')], { cwd: dir })).stdout;
    }
    const key = /consumer key\s+(\S+)/.exec(keys)?.[1];
    const secret = /consumer secret\s+(\S+)/.exec(keys)?.[1];
    const tokenUrl = /then: curl .*(http:\/\/\S+\/oauth2\/token)/.exec(out)?.[1];
    if (key === undefined || secret === undefined || tokenUrl === undefined) throw new Error(`no keys or token endpoint:\n${out}\n${keys}`);
    const tr = await fetch(tokenUrl, { method: 'POST', headers: { Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
    const token = ((await tr.json()) as { access_token: string }).access_token;
    const port = 8280 + offset;
    const targets = [
      { name: 'auth = "none"', url: `http://${HOST}:${port}/pizzashack/1.0.0/small`, headers: {} as Record<string, string> },
      { name: 'auth = "oauth2"', url: `http://${HOST}:${port}/pizzashack-secured/1.0.0/small`, headers: { authorization: `Bearer ${token}` } },
    ];
    for (const t of targets) {
      const r = await fetch(t.url, { headers: t.headers });
      if (r.status !== 200) throw new Error(`${t.url} answered ${r.status}: ${await r.text()}`);
    }
    const rps: number[][] = [[], []];
    const p99: number[][] = [[], []];
    for (let round = 1; round <= o.rounds; round++) {
      for (let i = 0; i < targets.length; i++) {
        const t = targets[i] as (typeof targets)[number];
        await cannon(t.url, t.headers, o.connections, o.warmup);
        const r = await cannon(t.url, t.headers, o.connections, o.duration);
        if (r.non2xx > 0 || r.errors > 0) log(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        rps[i]?.push(r.requests.average);
        p99[i]?.push(r.latency.p99);
        log(`round ${round} ${t.name}: ${fmt(r.requests.average)} req/s, p99 ${fmt(r.latency.p99)} ms`);
      }
    }
    const open = median(rps[0] ?? []);
    const secured = median(rps[1] ?? []);
    process.stdout.write(
      `\n# auth bench: GET /small (96 B), ${o.connections} conns, ${o.rounds} rounds of ${o.duration} s, medians\n\n` +
        `| route | req/s | p99 ms |\n|---|---|---|\n` +
        `| ${targets[0]?.name} | ${fmt(open)} | ${fmt(median(p99[0] ?? []))} |\n` +
        `| ${targets[1]?.name} (warm token cache) | ${fmt(secured)} | ${fmt(median(p99[1] ?? []))} |\n\n` +
        `oauth2 / none: ${fmt(secured / open, 3)} (issue 6 target: >= 0.85)\n`,
    );
  } finally {
    stop();
    await sleep(500);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
