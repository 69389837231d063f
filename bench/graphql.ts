/**
 * The GraphQL scenario (docs/graphql.md, docs/performance.md "GraphQL"): the gateway's CPU per request for
 * a small GraphQL query POSTed to a GraphQL API (body gathered, parsed, validated against the schema,
 * depth and complexity measured, then forwarded) next to a plain JSON POST of the same size to an HTTP API
 * (streamed through), both auth = "none", on one gateway. Run by `npm run bench -- --graphql [--duration S]
 * [--warmup S] [--rounds N] [--write]` (bench/run.ts); measurement only.
 *
 * The gateway runs as a child process (this file with GRAPHQL_GATEWAY=1) in front of bench/backend.ts,
 * whose POST /upload answers both (`{"bytes":N}`): the backend is not a GraphQL server, because what is
 * measured is the gateway's side. CPU per request: the gateway process's utime+stime from
 * /proc/<pid>/stat over the cell, divided by the requests completed.
 */
import autocannon = require('autocannon');
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CLK_TCK, HOST, WORK_DIR, fmt, freePort, log, procTicks, startBackend, startProc, stopAll, waitPort, serveGateway } from './common';

export interface GraphqlRow {
  readonly name: string;
  readonly label: string;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Gateway CPU (utime+stime) per completed request, µs. */
  readonly cpuUs: number;
  readonly non2xx: number;
  readonly errors: number;
}

export interface GraphqlRun {
  readonly date: string;
  readonly command: string;
  readonly duration: number;
  readonly warmup: number;
  readonly rounds: number;
  readonly bytes: number;
  readonly rows: readonly GraphqlRow[];
}

export const GRAPHQL_BEGIN = '<!-- graphql:begin -->';
export const GRAPHQL_END = '<!-- graphql:end -->';

const SDL = 'type Query { user(id: ID!): User }\ntype User { id: ID! name: String friends: [User] }\n';
/** The small query: 3 levels, 5 fields, one variable. */
export const QUERY_BODY = JSON.stringify({
  query: 'query Q($id: ID!) { user(id: $id) { id name friends { name } } }',
  operationName: 'Q',
  variables: { id: '1' },
});

/** A JSON body of exactly `size` bytes that is not GraphQL. */
export function plainBody(size: number): string {
  const head = '{"data":"';
  return head + 'x'.repeat(size - head.length - 2) + '"}';
}

function run(o: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(o, (err: Error | null, r: autocannon.Result) => (err ? reject(err) : resolve(r)));
  });
}

export async function runGraphqlBench(opts: {
  readonly duration: number;
  readonly warmup: number;
  readonly rounds: number;
}): Promise<GraphqlRow[]> {
  const backendPort = await freePort();
  const port = await freePort();
  await startBackend(backendPort);
  const gw = startProc('gateway-graphql', [process.execPath, __filename], {
    GRAPHQL_GATEWAY: '1',
    PORT: String(port),
    BACKEND_PORT: String(backendPort),
  });
  await waitPort(port, 20_000, gw);
  const plain = plainBody(Buffer.byteLength(QUERY_BODY));
  const cells = [
    {
      name: 'graphql',
      label: `POST a small GraphQL query (${Buffer.byteLength(QUERY_BODY)} bytes) to a GraphQL API`,
      path: '/gql/1.0.0',
      body: QUERY_BODY,
    },
    { name: 'plain', label: `POST a JSON body of the same size to an HTTP API`, path: '/plain/1.0.0/upload', body: plain },
  ];
  const rows: GraphqlRow[][] = cells.map(() => []);
  try {
    for (let round = 0; round < opts.rounds; round++) {
      for (let i = 0; i < cells.length; i++) {
        const c = cells[(i + round) % cells.length] as (typeof cells)[number];
        const o: autocannon.Options = {
          url: `http://${HOST}:${port}${c.path}`,
          method: 'POST',
          body: c.body,
          headers: { 'content-type': 'application/json' },
          connections: 32,
        };
        log(`graphql ${c.name}: warm-up ${opts.warmup}s`);
        await run({ ...o, duration: opts.warmup });
        log(`graphql ${c.name}: ${opts.duration}s (round ${round + 1})`);
        const t0 = procTicks(gw.pid) ?? 0;
        const r = await run({ ...o, duration: opts.duration });
        const t1 = procTicks(gw.pid) ?? 0;
        const done = Math.max(1, r.requests.total);
        (rows[cells.indexOf(c)] as GraphqlRow[]).push({
          name: c.name,
          label: c.label,
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          cpuUs: (((t1 - t0) / CLK_TCK) * 1e6) / done,
          non2xx: r.non2xx,
          errors: r.errors,
        });
      }
    }
  } finally {
    await stopAll();
  }
  // Medians over the rounds.
  return rows.map((rs) => {
    const mid = <K extends keyof GraphqlRow>(k: K): number => {
      const v = rs.map((x) => x[k] as number).sort((a, b) => a - b);
      return v[Math.floor(v.length / 2)] as number;
    };
    const first = rs[0] as GraphqlRow;
    return {
      name: first.name,
      label: first.label,
      rps: mid('rps'),
      p50: mid('p50'),
      p99: mid('p99'),
      cpuUs: mid('cpuUs'),
      non2xx: rs.reduce((a, x) => a + x.non2xx, 0),
      errors: rs.reduce((a, x) => a + x.errors, 0),
    };
  });
}

export function renderGraphqlTable(rows: readonly GraphqlRow[]): string {
  const L = ['| scenario | req/s | p50 ms | p99 ms | gateway CPU µs/req | non-2xx | errors |', '|---|---:|---:|---:|---:|---:|---:|'];
  for (const r of rows)
    L.push(`| ${r.label} | ${fmt(r.rps, 0)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.cpuUs, 1)} | ${r.non2xx} | ${r.errors} |`);
  return L.join('\n');
}

/** The section of docs/performance.md, with its markers. */
export function renderGraphql(run: GraphqlRun): string {
  const g = run.rows.find((r) => r.name === 'graphql');
  const p = run.rows.find((r) => r.name === 'plain');
  const extra =
    g !== undefined && p !== undefined
      ? `\n\nThe GraphQL query costs the gateway ${fmt(g.cpuUs - p.cpuUs, 1)} µs of CPU more per request than the plain POST (${fmt(g.cpuUs / Math.max(1e-9, p.cpuUs), 2)}×). That is the cost of gathering the body, reading its JSON and finding the query in the API's analysis cache, because the bench repeats one query. A query seen for the first time is parsed and validated: graphql 16's validate() sets up its rules on every call, about 0.75 ms on this machine (an earlier run of this scenario without the cache measured 326 µs per request). The plain POST is streamed through without being read.`
      : '';
  return [
    GRAPHQL_BEGIN,
    '## GraphQL (docs/graphql.md)',
    '',
    `One gateway (auth = "none", no throttling) in front of bench/backend.ts. The GraphQL API checks each query (\`${QUERY_BODY}\`) against a two-type schema, its depth and complexity before forwarding it: parsed and validated once, then from the API's analysis cache (docs/graphql.md). The HTTP API streams a JSON body of the same ${run.bytes} bytes. 32 connections, ${run.duration} s per cell after ${run.warmup} s of warm-up, ${run.rounds} round(s), medians; ${run.date}, \`${run.command}\`. The machine is a shared 2-core VM, and other engineers' builds and tests ran at the same time. Compare the rows with each other, not with other runs.`,
    '',
    renderGraphqlTable(run.rows) + extra,
    GRAPHQL_END,
  ].join('\n');
}

/** The child: one gateway with a GraphQL API and an HTTP API in front of the bench backend. */
async function gatewayChild(): Promise<void> {
  fs.mkdirSync(WORK_DIR, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK_DIR, 'graphql-'));
  fs.mkdirSync(path.join(dir, 'apis'));
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    '[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n[throughway]\nlog_level = "warn"\n',
  );
  fs.writeFileSync(path.join(dir, 'apis', 'schema.graphql'), SDL);
  const common = `auth = "none"\n# the gateway's cost is measured, not the Unauthenticated tier (500/min per client IP)\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://${HOST}:${process.env.BACKEND_PORT}/upload"\n`;
  fs.writeFileSync(
    path.join(dir, 'apis', 'gql.toml'),
    `name = "Gql"\ncontext = "/gql"\nversion = "1.0.0"\ntype = "GRAPHQL"\n${common}[graphql]\nschema = "schema.graphql"\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'apis', 'plain.toml'),
    `name = "Plain"\ncontext = "/plain"\nversion = "1.0.0"\n${common.replace('/upload"', '"')}[[resources]]\npath = "/*"\nmethods = ["POST"]\n`,
  );
  await serveGateway(dir, 'GraphQL');
}

if (require.main === module && process.env.GRAPHQL_GATEWAY === '1') {
  gatewayChild().catch((err: unknown) => {
    process.stderr.write(`gateway child failed: ${String(err)}\n`);
    process.exit(1);
  });
}
