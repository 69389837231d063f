/**
 * The full gateway for the bench's feature scenarios (`npm run bench -- --scenarios auth,throttling`):
 * the whole phase chain and the key manager in this one process, as `npm start` runs them (the gateway
 * validates the key manager's tokens with its public keys and fills its subscription store from it).
 * Three APIs in front of one upstream, identical but for what is measured:
 *
 *   /plain/1/small      auth = "none", unauthenticated_policy = "Unlimited": no level counts anything
 *                       (the gateway's own cost, the reference for the two below)
 *   /limited/1/small    auth = "none", a resource policy and the per-IP subscription tier with burst
 *                       control: three counters per call, with limits no benchmark reaches (the cost of
 *                       counting, not of refusing; docs/throttling.md budget: at most 10 %)
 *   /secured/1/small    auth = "oauth2", subscription tier "Unlimited": a bearer token on a warm token
 *                       cache, the subscription and scope checks (docs/security.md budget: within 15 %)
 *   /full/1/small       everything at once: auth = "oauth2" on a warm token cache, subscription tier
 *                       "BenchTier" (request count + burst) and the resource policy: three counters per
 *                       call (the "full" and "traced" scenarios, with ACCESS_LOG and TRACER_PORT below)
 *
 *   PORT=8280 UPSTREAM=http://127.0.0.1:8100 [TOKEN_FILE=/tmp/x] [COUNTER_STORE=redis REDIS_URL=redis://...]
 *     [ACCESS_LOG=1] [TRACER_PORT=8100] [NOOP_PLUGIN=1] node dist/bench/start-gateway.js
 *
 * COUNTER_STORE (default memory) and REDIS_URL set [throughway.throttling] counter_store and redis_url:
 * the bench's --redis-counting runs this gateway twice, once per store (docs/throttling.md, "Counting").
 * ACCESS_LOG=1 turns [http_access_log] on, lines written to http_access.log in this gateway's temporary
 * directory (the file and format `npm start` writes: useLogger = false; docs/operations.md). TRACER_PORT
 * turns [apim.open_tracer] remote_tracer on, spans POSTed as Zipkin v2 JSON to 127.0.0.1:TRACER_PORT
 * (bench/backend.ts answers /api/v2/spans with 202 and drops them; docs/tracing.md). NOOP_PLUGIN=1 loads
 * one policy plugin whose phase (after authentication) does nothing, as `[throughway] plugins` would
 * (lib/node/plugins.ts; docs/performance.md, "Policy plugins").
 *
 * The access token (client credentials, one application subscribed to /secured) is issued before the
 * port opens and written to TOKEN_FILE, so a bench that waits for the port can read it; the application is
 * subscribed to /secured ("Unlimited") and /full ("BenchTier"). Custom policies are left out: they apply
 * to every API, the reference route too. Listens on 127.0.0.1 only; no server log.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../lib/config/load';
import { createGateway, type Gateway } from '../lib/embed';
import { createKeyManager, type KeyManager } from '../lib/keymanager';
import { silentLogger } from '../lib/log';
import { keyManagerLink } from '../lib/security';
import { openStore } from '../lib/store/open';
import type { Store } from '../lib/store/types';
import { loadPlugins } from '../lib/node/plugins';

const port = Number(process.env.PORT ?? 8280);
const upstream = process.env.UPSTREAM ?? 'http://127.0.0.1:8100';
const tokenFile = process.env.TOKEN_FILE;
const counterStore = process.env.COUNTER_STORE ?? 'memory';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const accessLog = process.env.ACCESS_LOG === '1';
const tracerPort = process.env.TRACER_PORT;
const noopPlugin = process.env.NOOP_PLUGIN === '1';

const POLICIES = `[[subscription]]
name = "Unlimited"
unlimited = true
[[subscription]]
name = "BenchTier"
request_count = 1000000000
burst = { limit = 1000000000, time_unit = "sec" }
[[api]]
name = "BenchResource"
request_count = 1000000000
`;

const api = (name: string, extra: Record<string, unknown>, resource: Record<string, unknown> = {}): Record<string, unknown> => ({
  name,
  context: `/${name}`,
  version: '1',
  auth: 'none',
  endpoints: { production: upstream },
  resources: [{ path: '/small', methods: ['GET'], ...resource }],
  ...extra,
});

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-bench-gw-'));
  fs.writeFileSync(path.join(dir, 'policies.toml'), POLICIES);
  const text =
    '[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n' +
    `[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "u"\npassword = "p"\n` +
    `[throughway]\naccess_log_file = "${path.join(dir, 'http_access.log')}"\n` +
    `[throughway.throttling]\ncounter_store = "${counterStore}"\nredis_url = "${redisUrl}"\n` +
    (accessLog ? '[http_access_log]\nenabled = true\n' : '') +
    (tracerPort !== undefined
      ? `[apim.open_tracer]\nremote_tracer.enable = true\nremote_tracer.properties.hostname = "127.0.0.1"\nremote_tracer.properties.port = ${Number(tracerPort)}\n`
      : '');
  const loaded = loadConfig({ text, env: {} });
  if (!loaded.ok) throw new Error(`config: ${JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error'))}`);
  let store: Store | undefined;
  let km: KeyManager | undefined;
  let gateway: Gateway | undefined;
  const stop = (): void => {
    const hard = setTimeout(() => process.exit(0), 4000);
    hard.unref();
    (async () => {
      await gateway?.close();
      await km?.close();
      await store?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    })().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  store = await openStore(loaded.config, dir);
  km = await createKeyManager({ loaded, store, logger: silentLogger });
  if (noopPlugin)
    fs.writeFileSync(path.join(dir, 'noop.js'), "exports.phases = [{ after: 'authentication', phase: { name: 'noop', run() {} } }];\n");
  const plugins = noopPlugin ? loadPlugins({ plugins: ['./noop.js'], apiPlugins: [], settings: undefined, dir }, silentLogger) : undefined;
  gateway = createGateway({
    ...(plugins !== undefined ? { phases: plugins.placements, plugins: plugins.catalogue } : {}),
    config: loaded.config,
    dir,
    apis: [
      api('plain', { unauthenticated_policy: 'Unlimited' }),
      api('limited', { unauthenticated_policy: 'BenchTier' }, { policy: 'BenchResource' }),
      api('secured', { auth: 'oauth2' }),
      api('full', { auth: 'oauth2' }, { policy: 'BenchResource' }),
    ],
    logger: silentLogger,
    keyManager: keyManagerLink(km),
    events: km.bus,
    watch: false,
    transport: { shutdownTimeout: 2000 },
  });
  if (gateway.deployed().length !== 4)
    throw new Error(`apis not deployed: ${JSON.stringify(gateway.states().flatMap((s) => s.diagnostics))}`);
  const app = await km.manager.createApplication({ name: 'bench', owner: 'admin' });
  const keys = await km.manager.generateKeys(app.id, { keyType: 'PRODUCTION' });
  await km.manager.addSubscription({ application: app.id, apiContext: '/secured', apiVersion: '1', tier: 'Unlimited' });
  await km.manager.addSubscription({ application: app.id, apiContext: '/full', apiVersion: '1', tier: 'BenchTier' });
  const basic = `Basic ${Buffer.from(`${keys.consumerKey}:${keys.consumerSecret}`).toString('base64')}`;
  const token = (await km.oauth.token(basic, new URLSearchParams({ grant_type: 'client_credentials' }))).access_token;
  await gateway.security.ready;
  // The token is a credential: readable by this user only.
  if (tokenFile !== undefined) fs.writeFileSync(tokenFile, token, { mode: 0o600 });
  const a = await gateway.listen({ port, host: '127.0.0.1', backlog: 4096 });
  process.stdout.write(
    `throughway gateway + key manager on 127.0.0.1:${a.port} -> ${upstream} (/plain/1, /limited/1, /secured/1, /full/1)${accessLog ? ' access log on' : ''}${tracerPort !== undefined ? ` spans to 127.0.0.1:${tracerPort}` : ''}${noopPlugin ? ' one no-op plugin' : ''} pid=${process.pid}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`start-gateway: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
