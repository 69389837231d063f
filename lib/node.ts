/**
 * The boot entry point of a throughway node: `throughway start` loads deployment.toml and hands the
 * frozen result here. This is where the node for `server.server_role` (spec 000, part 1.1) is assembled:
 * the demo backend when [throughway.demo] enable is true, then the gateway (the pass-through transport
 * with the API router) on the gateway HTTP port (spec 002 part 4: 8280 + server.offset), and the key
 * manager on the management HTTP port (9763 + offset; lib/keymanager) over the store [database.apim_db]
 * names. Every role runs the key manager; its events reach the gateway through `events`. With TLS
 * (docs/tls.md): the management HTTPS port (9443), the gateway HTTPS listener (8243) and, when enabled,
 * WS (9099) and WSS (8099), from the [transport.passthru_https] listener stores or the sample key pair.
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
import { listenerTlsSettings, serverOptions, watchCertificates } from './tls/settings';
import { ensureSampleKeystore } from './tls/sample';
import type * as tls from 'node:tls';

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

/** Ports this version opens (the others are accepted and announced as not opened yet). */
const OPENED = new Set(['passthruHttp', 'passthruHttps', 'ws', 'wss', 'demo', 'managementHttp', 'managementHttps']);

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
  let stopWatching = (): void => undefined;
  const close = async (): Promise<void> => {
    stopWatching();
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
    // TLS (docs/tls.md): the HTTPS and WSS listeners and the management HTTPS server share the
    // [transport.passthru_https] listener stores; without a key store, the sample key pair (made once).
    const tlsSettings = listenerTlsSettings(config, process.cwd());
    let sampleFile: string | undefined;
    if (tlsSettings.keyStore === undefined && tlsSettings.profileFile === undefined) {
      const sample = ensureSampleKeystore(process.cwd(), config.server.hostname);
      sampleFile = sample.file;
      if (sample.created) log(`  generated the sample key pair ${sample.file} (self-signed; configure listener.key_store for real use)`);
    }
    const tlsOptions = serverOptions(tlsSettings, sampleFile);
    const kmTls = await keyManager.listenHttps({ ...tlsOptions, requestCert: false, rejectUnauthorized: false });
    log(`  ${'management HTTPS'.padEnd(18)} port ${(kmTls.address() as { port: number }).port}`);
    const runsGateway = GATEWAY_ROLES.has(role);
    if (runsGateway && config.transport.passthru_http.listener.enable) {
      gateway = createGateway({ loaded, logger });
      const a = await gateway.listen();
      log(`  ${'gateway HTTP'.padEnd(18)} port ${a.port}`);
      process.on('SIGHUP', onHup);
    }
    if (gateway !== undefined) {
      const tlsServers: tls.Server[] = [];
      const bind = config.transport.passthru_https.listener.parameters['bind-address'] ?? config.transport.passthru_http.listener['bind-address'] ?? '0.0.0.0';
      if (config.transport.passthru_https.listener.enable) {
        const s = await gateway.listenTls({ port: ports.passthruHttps, host: bind }, tlsOptions);
        tlsServers.push(s);
        log(`  ${'gateway HTTPS'.padEnd(18)} port ${ports.passthruHttps}${tlsSettings.verifyClient === 'require' ? ' (mutual TLS)' : ''}`);
      }
      if (config.transport.ws.sender.enable) {
        await gateway.listen({ port: ports.ws });
        log(`  ${'gateway WS'.padEnd(18)} port ${ports.ws}`);
      }
      if (config.transport.wss.sender.enable) {
        tlsServers.push(await gateway.listenTls({ port: ports.wss, host: bind }, tlsOptions));
        log(`  ${'gateway WSS'.padEnd(18)} port ${ports.wss}`);
      }
      stopWatching = watchCertificates(tlsServers, tlsSettings, sampleFile, logger);
    } else {
      log(`  the gateway does not run for role ${role}${GATEWAY_ROLES.has(role) ? ' (transport.passthru_http.listener.enable = false)' : ''}`);
    }
  } catch (err) {
    await close();
    throw err;
  }

  for (const spec of LISTENING_PORTS) {
    if (OPENED.has(spec.name)) continue;
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
