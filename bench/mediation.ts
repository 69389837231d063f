/**
 * Mediation scenarios (docs/mediation.md): requests/s through a gateway with force_json_validation on for
 * 1 KiB, 64 KiB and 1 MiB JSON bodies, and the p99 of small GETs on other connections while 1 MiB bodies
 * are validated (large bodies go to the worker pool, so they must not stall the event loop), next to the
 * same GETs alone. Run by `npm run bench -- --mediation [--duration S] [--write]` (bench/run.ts);
 * measurement only. These rows stay a run of their own rather than main scenarios: the gateway is
 * configured differently (force_json_validation on for every API) and the last two rows load it at the
 * same time, which the direct-vs-throughway cells of the main run cannot express.
 *
 * The gateway runs as a child process (this file with MEDIATION_GATEWAY=1): loadConfig on a generated
 * deployment.toml, one API in front of bench/backend.ts, the mediation pool at its spec defaults.
 */
import autocannon = require('autocannon');
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HOST, WORK_DIR, fmt, freePort, log, sleep, startBackend, startProc, stopAll, waitPort, serveGateway } from './common';
import type { MediationRow } from './render';

export interface MediationBenchOptions {
  readonly duration: number;
  readonly warmup: number;
}

type Row = MediationRow;

/** A JSON document of about `size` bytes (an array of small objects, like an order list). */
export function jsonBody(size: number): Buffer {
  const items: string[] = [];
  let n = 2;
  for (let i = 0; n < size; i++) {
    const item = `{"id":${i},"name":"item ${i}","price":${(i % 97) + 0.5},"ok":true}`;
    items.push(item);
    n += item.length + 1;
  }
  return Buffer.from(`[${items.join(',')}]`);
}

function run(url: string, o: Omit<autocannon.Options, 'url'>): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ ...o, url }, (err: Error | null, r: autocannon.Result) => (err ? reject(err) : resolve(r)));
  });
}

function row(name: string, label: string, r: autocannon.Result): Row {
  return { name, label, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

async function startGateway(port: number, backendPort: number): Promise<ReturnType<typeof startProc>> {
  const p = startProc('gateway-mediation', [process.execPath, __filename], {
    MEDIATION_GATEWAY: '1',
    PORT: String(port),
    BACKEND_PORT: String(backendPort),
  });
  await waitPort(port, 20_000, p);
  return p;
}

/** Measures the rows; bench/run.ts keeps them as raw JSON and renders them (bench/render.ts). */
export async function runMediationBench(opts: MediationBenchOptions): Promise<Row[]> {
  const backendPort = await freePort();
  const gatewayPort = await freePort();
  await startBackend(backendPort);
  await startGateway(gatewayPort, backendPort);
  const base = `http://${HOST}:${gatewayPort}/bench/1.0.0`;
  const rows: Row[] = [];
  const post = (body: Buffer): autocannon.Options => ({
    url: `${base}/upload`,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
  try {
    for (const [name, size, conns] of [
      ['json1k', 1024, 64],
      ['json64k', 64 * 1024, 32],
      ['json1m', 1024 * 1024, 8],
    ] as const) {
      const o = { ...post(jsonBody(size)), connections: conns };
      log(`mediation ${name}: warm-up ${opts.warmup}s`);
      await run(`${base}/upload`, { ...o, duration: opts.warmup });
      log(`mediation ${name}: ${opts.duration}s`);
      rows.push(
        row(
          name,
          `POST ${fmt(size / 1024, 0)} KiB JSON, validation on, ${conns} conns`,
          await run(`${base}/upload`, { ...o, duration: opts.duration }),
        ),
      );
    }
    log('mediation small GETs alone');
    rows.push(row('small-alone', 'GET /small, 32 conns, alone', await run(`${base}/small`, { connections: 32, duration: opts.duration })));
    log('mediation small GETs while 1 MiB bodies are validated');
    const big = run(`${base}/upload`, { ...post(jsonBody(1024 * 1024)), connections: 8, duration: opts.duration + 1 });
    await sleep(500);
    const small = await run(`${base}/small`, { connections: 32, duration: opts.duration });
    const bigResult = await big;
    rows.push(row('small-during-1m', 'GET /small, 32 conns, while 1 MiB JSON is validated on 8 others', small));
    rows.push(row('1m-during-small', 'POST 1 MiB JSON (validated), 8 conns, during the GETs', bigResult));
  } finally {
    await stopAll();
  }
  return rows;
}

/** The child: a gateway with JSON validation on, in front of the bench backend. */
async function gatewayChild(): Promise<void> {
  fs.mkdirSync(WORK_DIR, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK_DIR, 'mediation-'));
  fs.mkdirSync(path.join(dir, 'apis'));
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    '[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n[passthru_http]\nforce_json_validation = true\n[throughway]\nlog_level = "warn"\n',
  );
  fs.writeFileSync(
    path.join(dir, 'apis', 'bench.toml'),
    `name = "Bench"\ncontext = "/bench"\nversion = "1.0.0"\nauth = "none"\n# mediation is measured, not the Unauthenticated tier (500/min per client IP)\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://${HOST}:${process.env.BACKEND_PORT}"\n[[resources]]\npath = "/*"\nmethods = ["GET", "POST"]\n`,
  );
  await serveGateway(dir, 'validation on');
}

if (require.main === module && process.env.MEDIATION_GATEWAY === '1') {
  gatewayChild().catch((err: unknown) => {
    process.stderr.write(`gateway child failed: ${String(err)}\n`);
    process.exit(1);
  });
}
