/**
 * Tenants at scale (docs/performance.md, "Tenants"; docs/tenants.md): one gateway process with
 * --tenant-count tenants (1000) of --apis API files each (10), beside the super tenant's one API, against
 * the same gateway with no tenant. For each: the time from createGateway() to listening with every API
 * deployed, the RSS and heap after a full GC, the CPU the gateway process spends per routed request
 * (process.cpuUsage() of the gateway process over --requests keep-alive GETs, 8 at a time, to an API
 * without authentication whose backend runs in this process), and its CPU while idle (the tenant list is
 * read from the store every 500 ms, as a key manager's is).
 *
 *   npm run bench -- --tenants [--tenant-count N] [--apis M] [--requests R]
 *   npm run -s build && node dist/bench/tenants.js [same options]
 *
 * The gateway runs in a forked child (fresh heap, measured alone); the tenants are rows of its SQLite
 * store (tw_tenant, inserted straight, without admin users: the admin's scrypt hash is what creating a
 * tenant costs, not what serving it costs), the API files files of apis/t/<domain>/.
 */
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../lib/config/load';
import { createGateway } from '../lib/embed';
import { createLogger } from '../lib/log';
import { openDatabase, storeOver } from '../lib/store/open';
import { tenantSettings, Tenants } from '../lib/tenants';

const HOST = '127.0.0.1';

interface Options {
  readonly tenants: number;
  readonly apis: number;
  readonly requests: number;
}

function parse(argv: readonly string[]): Options {
  const val = (name: string, dflt: number, max: number): number => {
    const i = argv.indexOf(name);
    if (i < 0) return dflt;
    const n = Number(argv[i + 1]);
    if (!Number.isInteger(n) || n < 0 || n > max) {
      process.stderr.write(`${name} needs a whole number from 0 to ${max}\n`);
      process.exit(2);
    }
    return n;
  };
  return { tenants: val('--tenant-count', 1000, 100_000), apis: val('--apis', 10, 1000), requests: val('--requests', 5000, 1_000_000) };
}

const domainOf = (i: number): string => `tenant-${i}.test`;

function apiFile(name: string, context: string, backend: number): string {
  return `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://${HOST}:${backend}/b"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

/** What the child reports once it listens. */
interface Ready {
  readonly port: number;
  readonly insertMs: number;
  readonly writeMs: number;
  readonly startMs: number;
  readonly deployed: number;
  readonly rss: number;
  readonly heap: number;
}

type ChildMessage = { ready: Ready } | { cpu: number };

/** The gateway process: sets up its store and files, starts, answers `cpu` with its CPU µs so far. */
async function child(tenantCount: number, apis: number, backend: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-tenants-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const store = await storeOver(await openDatabase('apim_db', loaded.config.database.apim_db, dir));
  let t0 = performance.now();
  for (let i = 0; i < tenantCount; i++)
    await store.addTenant({ domain: domainOf(i), admin: `admin@${domainOf(i)}`, package: '', active: true });
  const insertMs = performance.now() - t0;
  t0 = performance.now();
  fs.mkdirSync(path.join(dir, 'apis'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'apis', 'pizza.toml'), apiFile('Pizza', '/pizza', backend));
  for (let i = 0; i < tenantCount; i++) {
    const d = path.join(dir, 'apis', 't', domainOf(i));
    fs.mkdirSync(d, { recursive: true });
    for (let j = 0; j < apis; j++) fs.writeFileSync(path.join(d, `api-${j}.toml`), apiFile(`Api${j}`, `/api${j}`, backend));
  }
  const writeMs = performance.now() - t0;
  const tenants = await Tenants.open(store, tenantSettings(loaded.config));
  const logger = createLogger('error', { write: () => true });
  t0 = performance.now();
  const gw = createGateway({ loaded, logger, cwd: dir, tenants, watch: false });
  const a = await gw.listen({ port: 0, host: HOST });
  const startMs = performance.now() - t0;
  const deployed = gw.states().filter((s) => s.status === 'deployed').length;
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  const send = (msg: ChildMessage): boolean | undefined => process.send?.(msg);
  send({ ready: { port: a.port, insertMs, writeMs, startMs, deployed, rss: m.rss, heap: m.heapUsed } });
  process.on('message', (msg: string) => {
    if (msg === 'cpu') {
      const u = process.cpuUsage();
      send({ cpu: u.user + u.system });
    } else if (msg === 'stop') {
      void gw.close().then(async () => {
        tenants.close();
        await store.close();
        process.exit(0);
      });
    }
  });
}

interface Row extends Ready {
  readonly tenants: number;
  readonly apis: number;
  /** Gateway CPU µs per request, by path label. */
  readonly perRequest: Record<string, number>;
  /** Gateway CPU ms per second idle. */
  readonly idleMsPerS: number;
}

function backendServer(): Promise<{ port: number; close(): void }> {
  const s = http.createServer((_req, res) => res.end('{"ok":true}'));
  return new Promise((resolve) =>
    s.listen(0, HOST, () => resolve({ port: (s.address() as { port: number }).port, close: () => s.close() })),
  );
}

/** `n` GETs of `p`, 8 at a time on keep-alive connections; every answer must be 200. */
async function load(port: number, p: string, n: number, agent: http.Agent): Promise<void> {
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.get({ host: HOST, port, path: p, agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${p}: HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
    });
  const worker = async (): Promise<void> => {
    while (next++ < n) await one();
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function measure(o: Options, backend: number): Promise<Row> {
  const c = fork(__filename, ['--child', String(o.tenants), String(o.apis), String(backend)], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ChildMessage[] = [];
  const waiters: ((m: ChildMessage) => void)[] = [];
  c.on('message', (m: ChildMessage) => {
    const w = waiters.shift();
    if (w !== undefined) w(m);
    else messages.push(m);
  });
  const nextMessage = (): Promise<ChildMessage> =>
    new Promise((resolve, reject) => {
      const m = messages.shift();
      if (m !== undefined) return resolve(m);
      waiters.push(resolve);
      c.once('exit', (code) => reject(new Error(`the gateway process exited (${code})`)));
    });
  const first = await nextMessage();
  if (!('ready' in first)) throw new Error('the gateway process did not start');
  const ready = first.ready;
  const cpu = async (): Promise<number> => {
    c.send('cpu');
    const m = await nextMessage();
    if (!('cpu' in m)) throw new Error('no CPU answer');
    return m.cpu;
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const paths: Record<string, string> = { 'super tenant': '/pizza/1.0.0/x' };
  if (o.tenants > 0 && o.apis > 0) paths.tenant = `/t/${domainOf(Math.floor(o.tenants / 2))}/api${o.apis - 1}/1.0.0/x`;
  const perRequest: Record<string, number> = {};
  for (const [label, p] of Object.entries(paths)) {
    await load(ready.port, p, Math.min(2000, o.requests), agent); // warm-up: the optimising compiler, the pools
    const before = await cpu();
    await load(ready.port, p, o.requests, agent);
    perRequest[label] = ((await cpu()) - before) / Math.max(1, o.requests);
  }
  agent.destroy();
  const idle0 = await cpu();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 2000));
  // CPU µs over elapsed ms: ms of CPU per second.
  const idleMsPerS = ((await cpu()) - idle0) / (performance.now() - t0);
  c.send('stop');
  await new Promise((r) => c.once('exit', r));
  return { ...ready, tenants: o.tenants, apis: o.apis, perRequest, idleMsPerS };
}

const mib = (b: number): string => (b / 1048576).toFixed(1);

function line(r: Row): string {
  const per = Object.entries(r.perRequest)
    .map(([k, v]) => `${k} ${v.toFixed(1)} µs/request`)
    .join(', ');
  return (
    `${r.tenants} tenants × ${r.apis} APIs (+1 super tenant API): ${r.deployed} APIs deployed; start ${r.startMs.toFixed(0)} ms ` +
    `(createGateway to listening; the tenant rows inserted in ${r.insertMs.toFixed(0)} ms, the files written in ${r.writeMs.toFixed(0)} ms before); ` +
    `RSS ${mib(r.rss)} MiB, heap ${mib(r.heap)} MiB after GC; gateway CPU ${per}; idle ${r.idleMsPerS.toFixed(2)} ms CPU/s`
  );
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') return child(Number(argv[1]), Number(argv[2]), Number(argv[3]));
  const o = parse(argv);
  const backend = await backendServer();
  const load1 = os.loadavg()[0] ?? 0;
  const rows = [await measure({ ...o, tenants: 0 }, backend.port), await measure(o, backend.port)];
  backend.close();
  process.stdout.write(
    `Tenants at scale, node ${process.version}, ${os.cpus().length} CPUs, load average ${load1.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after:\n`,
  );
  for (const r of rows) process.stdout.write(`  ${line(r)}\n`);
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
