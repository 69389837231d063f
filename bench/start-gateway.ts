/**
 * A gateway (the whole phase chain) for the throttling benchmark (`npm run bench -- --throttling`): two
 * APIs in front of one upstream, identical but for throttling.
 *
 *   PORT=8280 UPSTREAM=http://127.0.0.1:8100 node dist/bench/start-gateway.js
 *
 *   /plain/1/small      unauthenticated_policy = "Unlimited": no level counts anything
 *   /limited/1/small    a resource policy and the per-IP subscription tier with burst control: three
 *                       counters per call, with limits no benchmark reaches (the cost of counting, not
 *                       of refusing)
 *
 * Until authentication (Step 5) sets a token's context, the subscription level is the unauthenticated
 * tier per client IP, and the application level (one counter per application and user) is stood in for
 * by burst control (one counter of the same kind), so the three levels of issue 7's budget cost the
 * same. Custom policies are left out: they apply to every API, the unthrottled route too. Listens on
 * 127.0.0.1 only; no logging.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../lib/config/load';
import { createGateway } from '../lib/gateway';

const port = Number(process.env.PORT ?? 8280);
const upstream = process.env.UPSTREAM ?? 'http://127.0.0.1:8100';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-bench-gw-'));
fs.writeFileSync(
  path.join(dir, 'policies.toml'),
  `[[subscription]]
name = "Unlimited"
unlimited = true
[[subscription]]
name = "BenchTier"
request_count = 1000000000
burst = { limit = 1000000000, time_unit = "sec" }
[[api]]
name = "BenchResource"
request_count = 1000000000
`,
);
const loaded = loadConfig({ text: '[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n', env: {} });
const api = (name: string, extra: Record<string, unknown>, resource: Record<string, unknown>): Record<string, unknown> => ({
  name,
  context: `/${name}`,
  version: '1',
  auth: 'none',
  endpoints: { production: upstream },
  resources: [{ path: '/small', methods: ['GET'], ...resource }],
  ...extra,
});
const gateway = createGateway({
  config: loaded.config,
  dir,
  apis: [api('plain', { unauthenticated_policy: 'Unlimited' }, {}), api('limited', { unauthenticated_policy: 'BenchTier' }, { policy: 'BenchResource' })],
  transport: { shutdownTimeout: 2000 },
});
if (gateway.deployed().length !== 2) {
  process.stderr.write(`start-gateway: ${JSON.stringify(gateway.states().flatMap((s) => s.diagnostics))}\n`);
  process.exit(1);
}
gateway
  .listen({ port, host: '127.0.0.1', backlog: 4096 })
  .then((a) => process.stdout.write(`throughway gateway on 127.0.0.1:${a.port} -> ${upstream} (/plain/1, /limited/1) pid=${process.pid}\n`))
  .catch((err: unknown) => {
    process.stderr.write(`start-gateway: cannot listen on 127.0.0.1:${port}: ${String(err)}\n`);
    process.exit(1);
  });

const stop = (): void => {
  const hard = setTimeout(() => process.exit(0), 4000);
  hard.unref();
  gateway.close().then(
    () => {
      fs.rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    },
    () => process.exit(0),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
