/**
 * The boot entry point of a throughway node: `throughway start` loads deployment.toml and hands the
 * frozen result here. This is where the node for `server.server_role` (spec 000, part 1.1) is assembled:
 * the demo backend when [throughway.demo] enable is true, then the gateway (the pass-through transport
 * with the API router) on the gateway HTTP port (spec 002 part 4: 8280 + server.offset), and the key
 * manager on the management HTTP port (9763 + offset; lib/keymanager) over the store [database.apim_db]
 * names. Every role runs the key manager; its events reach the gateway through `events`.
 *
 * Signals: SIGHUP re-reads the API definitions and fault templates; SIGTERM and SIGINT (handled by the
 * CLI) call close(), which stops accepting, lets in-flight calls finish within [throughway]
 * shutdown_timeout and closes idle keep-alive connections.
 */
import type { LoadResult } from './config/load';
import { LISTENING_PORTS, portOpened } from './config/ports';
import { createLogger, type LogLevel } from './observability/log';
import { createGateway, type Gateway } from './gateway';
import { createDemoBackend, type DemoBackend } from './demo/backend';
import { defaultPath, versionedPath } from './gateway/apis';
import { createEventBus, type EventBus } from './events/bus';
import { createKeyManager, type KeyManager } from './keymanager';
import { openStore } from './store/open';
import type { Store } from './store/types';

export interface RunningNode {
  /** The gateway, when this role runs one. */
  readonly gateway: Gateway | undefined;
  /** The key manager (token endpoint, DCR, admin API) on the management port. */
  readonly keyManager: KeyManager | undefined;
  /** Key manager events (token revoked, applications, subscriptions, policies): docs/events.md. */
  readonly events: EventBus;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where start-up lines go (default: process.stdout). */
  readonly log?: (line: string) => void;
}

/** Roles that run the gateway; the others arrive with the key manager and traffic manager steps. */
const GATEWAY_ROLES = new Set(['default', 'gateway-worker']);

export async function startNode(loaded: LoadResult, options: StartOptions = {}): Promise<RunningNode> {
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').length;
    throw new Error(`configuration has ${errors} error(s); run \`throughway config check\``);
  }
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const config = loaded.config;
  const ports = loaded.ports;
  const role = config.server.server_role;
  log(`throughway node: role ${role}, host ${config.server.hostname}, offset ${ports.offset}`);
  const logger = createLogger(config.throughway.log_level as LogLevel, process.stderr);

  let demo: DemoBackend | undefined;
  let gateway: Gateway | undefined;
  let store: Store | undefined;
  let keyManager: KeyManager | undefined;
  const events = createEventBus((err, event) => logger.log('error', 'event_subscriber_failed', { event: event.name, message: (err as Error).message }));
  const close = async (): Promise<void> => {
    process.removeListener('SIGHUP', onHup);
    await gateway?.close();
    await keyManager?.close();
    await store?.close();
    await demo?.close();
  };
  const onHup = (): void => {
    if (gateway === undefined) return;
    const r = gateway.reload();
    log(`reloaded: ${r.deployed.length} API(s) deployed`);
  };

  try {
    if (config.throughway.demo.enable) {
      demo = createDemoBackend({ port: ports.demo });
      const a = await demo.listen();
      log(`  ${'demo backend'.padEnd(18)} port ${a.port} (127.0.0.1)`);
    }
    // The key manager first: once the gateway says it listens, tokens can be had.
    store = await openStore(config, process.cwd());
    keyManager = await createKeyManager({
      loaded,
      store,
      bus: events,
      logger,
      apiScopes: () => (gateway?.states() ?? []).flatMap((s) => (s.api?.resources ?? []).flatMap((r) => r.scopes)),
    });
    const km = await keyManager.listen();
    log(`  ${'management HTTP'.padEnd(18)} port ${km.port} (key manager, ${store.description})`);
    if (GATEWAY_ROLES.has(role) && config.transport.passthru_http.listener.enable) {
      // Blocking conditions in force at start, then kept current by the key manager's events (900805).
      gateway = createGateway({ loaded, logger, events, throttling: { blocking: await store.listBlockingConditions() } });
      const a = await gateway.listen();
      log(`  ${'gateway HTTP'.padEnd(18)} port ${a.port}`);
      process.on('SIGHUP', onHup);
    } else {
      log(`  the gateway does not run for role ${role}${GATEWAY_ROLES.has(role) ? ' (transport.passthru_http.listener.enable = false)' : ''}`);
    }
  } catch (err) {
    await close();
    throw err;
  }

  for (const spec of LISTENING_PORTS) {
    if (spec.name === 'passthruHttp' || spec.name === 'demo' || spec.name === 'managementHttp') continue;
    if (portOpened(config, spec)) log(`  ${spec.title.padEnd(18)} port ${ports[spec.name]} (not opened yet by this version)`);
  }

  if (keyManager !== undefined) {
    // No secret is printed: keys are generated by the command and shown by it once.
    const km = keyManager.settings.baseUrl;
    log(`Key manager: ${km}/oauth2/token (docs/key-manager.md). Get keys, then a token:`);
    log(`  npm run -s throughway -- apps create MyApp --url ${km}`);
    log(`  npm run -s throughway -- keys generate --app MyApp --url ${km}`);
    log(`  then: curl -u <consumer key>:<consumer secret> -d grant_type=client_credentials ${km}/oauth2/token`);
  }

  if (gateway !== undefined) {
    const deployed = gateway.deployed();
    const states = gateway.states();
    log(`APIs: ${deployed.length} deployed from ${gateway.settings.apisDir}${states.length > deployed.length ? `, ${states.length - deployed.length} not deployed (see the log, or \`throughway apis list\`)` : ''}`);
    const base = `http://${config.server.hostname}:${ports.passthruHttp}`;
    const tries: string[] = [];
    for (const s of states) {
      const api = s.api;
      if (api === undefined || (s.status !== 'deployed' && s.status !== 'kept-previous')) continue;
      const p = versionedPath(api);
      log(`  ${api.name} ${api.version}  ${base}${p}  (${api.state})`);
      const get = api.resources.find((r) => r.methods.includes('GET') && !r.path.includes('{') && !r.path.includes('*'));
      const post = api.resources.find((r) => r.methods.includes('POST') && !r.path.includes('{') && !r.path.includes('*'));
      if (get !== undefined) tries.push(`curl ${base}${p}${get.path}`);
      if (get !== undefined && s.defaultRouting) tries.push(`curl ${base}${defaultPath(api)}${get.path}`);
      if (post !== undefined) tries.push(`curl -X POST -H 'Content-Type: application/json' -d '{"pizza":"Margherita"}' ${base}${p}${post.path}`);
    }
    if (tries.length > 0) {
      log('Try:');
      for (const t of tries.slice(0, 6)) log(`  ${t}`);
    }
  }
  return { gateway, keyManager, events, close };
}
