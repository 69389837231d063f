/**
 * What the counting modes cost per call (docs/throttling.md, "Counting modes"; figures in
 * docs/performance.md, "Counting modes"): one gateway in this process, the backend and a keep-alive client
 * in another (bench/throttling-client.ts), so that this process's CPU time is the gateway's own. Four open
 * APIs, identical but for their API-level policy, each with a limit no run reaches (the cost of counting,
 * not of refusing):
 *
 *   /none     no policy (no level counts anything): the reference for the added latency
 *   /local    counting = "async" with counter_store = "memory" (local counting)
 *   /exact    counting = "exact": one script in Redis per call
 *   /leased   counting = "leased": blocks of quota from Redis, spent locally
 *
 *   npm run -s build && node dist/bench/throttling.js [calls per round] [rounds] [concurrency]
 *
 * Redis: THROUGHWAY_TEST_REDIS_URL, else redis://127.0.0.1:6379 (the keys carry this process's id and
 * expire with their window). Rounds run the four APIs in turn; printed: per API the median over rounds of
 * p50 and p99 latency (ms, client side), the added p50 and p99 against /none, and the gateway's CPU time
 * per call (µs, user + system of this process over the round / calls), and each mode's CPU per call
 * against /local.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { loadConfig } from '../lib/config/load';
import { createGateway } from '../lib/embed';
import { silentLogger } from '../lib/log';

const calls = Number(process.argv[2] ?? 5000);
const rounds = Number(process.argv[3] ?? 5);
const concurrency = Number(process.argv[4] ?? 8);
const redisUrl = process.env.THROUGHWAY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const APIS = ['none', 'local', 'exact', 'leased'] as const;

interface Round {
  readonly p50: number;
  readonly p99: number;
  readonly statuses: Record<string, number>;
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, [path.join(__dirname, 'throttling-client.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const replies = readline.createInterface({ input: child.stdout });
  const waiting: ((line: string) => void)[] = [];
  replies.on('line', (l) => waiting.shift()?.(l));
  const next = (): Promise<string> => new Promise((resolve) => waiting.push(resolve));
  const backend = (JSON.parse(await next()) as { backend: number }).backend;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-throttling-'));
  const big = 1_000_000_000;
  fs.writeFileSync(
    path.join(dir, 'policies.toml'),
    `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[api]]\nname = "Local"\nrequest_count = ${big}\ncounting = "async"\n[[api]]\nname = "Exact"\nrequest_count = ${big}\ncounting = "exact"\n[[api]]\nname = "Leased"\nrequest_count = ${big}\ncounting = "leased"\n`,
  );
  fs.mkdirSync(path.join(dir, 'apis'));
  const policy = { none: undefined, local: 'Local', exact: 'Exact', leased: 'Leased' } as const;
  for (const a of APIS) {
    const p = policy[a];
    fs.writeFileSync(
      path.join(dir, 'apis', `${a}.toml`),
      `name = "B${a}"\ncontext = "/${a}${process.pid}"\nversion = "1"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n${p !== undefined ? `policy = "${p}"\n` : ''}[endpoints]\nproduction = "http://127.0.0.1:${backend}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`,
    );
  }
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n[throughway.throttling]\nredis_url = "${redisUrl}"\n`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const gw = createGateway({ loaded, logger: silentLogger, cwd: dir });
  const { port } = await gw.listen({ port: 0, host: '127.0.0.1' });

  const round = async (api: string, n: number): Promise<Round & { cpuUs: number }> => {
    const c0 = process.cpuUsage();
    child.stdin.write(`${port} /${api}${process.pid}/1/x ${n} ${concurrency}\n`);
    const r = JSON.parse(await next()) as Round;
    const c = process.cpuUsage(c0);
    return { ...r, cpuUs: (c.user + c.system) / n };
  };
  // Warm-up: every route, the Redis link and the JIT.
  for (const a of APIS) await round(a, Math.min(2000, calls));
  const results: Record<string, (Round & { cpuUs: number })[]> = Object.fromEntries(APIS.map((a) => [a, []]));
  for (let r = 0; r < rounds; r++) for (const a of APIS) results[a]?.push(await round(a, calls));
  const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
  const m = (a: string, f: (r: Round & { cpuUs: number }) => number): number => median((results[a] ?? []).map(f));
  const base = { p50: m('none', (r) => r.p50), p99: m('none', (r) => r.p99) };
  const local = m('local', (r) => r.cpuUs);
  console.log(
    `${calls} calls x ${rounds} rounds per API, concurrency ${concurrency}, Redis ${redisUrl}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), node ${process.version}`,
  );
  console.log('| API | p50 ms | p99 ms | added p50 ms | added p99 ms | gateway CPU µs/call | CPU vs local | statuses |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const a of APIS) {
    const p50 = m(a, (r) => r.p50);
    const p99 = m(a, (r) => r.p99);
    const cpu = m(a, (r) => r.cpuUs);
    const statuses = [...new Set((results[a] ?? []).flatMap((r) => Object.keys(r.statuses)))].join(' ');
    console.log(
      `| ${a} | ${p50.toFixed(3)} | ${p99.toFixed(3)} | ${(p50 - base.p50).toFixed(3)} | ${(p99 - base.p99).toFixed(3)} | ${cpu.toFixed(1)} | ${a === 'none' ? '' : `${(((cpu - local) / local) * 100).toFixed(1)} %`} | ${statuses} |`,
    );
  }
  console.log(
    `per round, CPU µs/call: ${APIS.map((a) => `${a} ${(results[a] ?? []).map((r) => r.cpuUs.toFixed(1)).join('/')}`).join('; ')}`,
  );
  child.stdin.end();
  await gw.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
