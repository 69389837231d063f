/**
 * The boot entry point of a throughway node: `throughway start` loads deployment.toml and hands the
 * frozen result here. This is where the node for `server.server_role` (spec 000, part 1.1) is assembled:
 * the demo backend when [throughway.demo] enable is true, then the gateway (the pass-through transport
 * with the API router) on the gateway HTTP port (spec 002 part 4: 8280 + server.offset), and the key
 * manager on the management HTTP port (9763 + offset; lib/keymanager) over the store [database.apim_db]
 * names. Roles (docs/scale-out.md, lib/scale/settings.ts ROLE_PARTS): `default` runs both; `api-key-manager`
 * and `traffic-manager` the key manager and store only, `traffic-manager` with the throttle decision
 * service (lib/scale/traffic-manager.ts; so does a `default` node whose counter_store is
 * "traffic-manager"); `gateway-worker` the gateway only, linked to the control plane over HTTP
 * ([apim.key_manager] service_url) and, with a redis:// event hub, its events.
 * API deployments (lib/scale/deployments.ts): a node with the key manager part serves its apis/ and
 * policies file to gateway-workers (GET /admin/v1/deployments, api.* and policies.updated events); a
 * gateway-worker deploys those, for its gateway_labels, instead of its own apis/ and policies file.
 * The key manager's events reach the gateway through `events` (and Redis across nodes). With TLS
 * (docs/tls.md): the management HTTPS port (9443), the gateway HTTPS listener (8243) and, when enabled,
 * WS (9099) and WSS (8099), from the [transport.passthru_https] listener stores or the sample key pair.
 *
 * Operations (lib/observability, docs/operations.md): structured logs at `[throughway] log_level`,
 * `GET /metrics`, `GET /health` (checkers of [server_health_check]) and `GET /health/live` on the
 * management port.
 *
 * Signals: SIGHUP re-reads deployment.toml (when the CLI says how: StartOptions.reload; a configuration
 * with errors is refused and the running one stays), then the throttling policies file (refused with
 * errors, the running policies stay), the TLS listeners' certificates (likewise), the API definitions and
 * fault templates.
 * SIGTERM and SIGINT (handled by the CLI) call close(), which turns /health DOWN, stops accepting, lets
 * in-flight calls finish within [throughway] shutdown_timeout and closes idle keep-alive connections; the
 * gateway's close then flushes the queued spans and analytics events (docs/tracing.md, docs/analytics.md).
 */
import type { LoadResult } from './config/load';
import { ConfigInvalidError } from './config/diagnostics';
import { LISTENING_PORTS, portOpened } from './config/ports';
import { createLogger, type LogLevel, type LogSink } from './log';
import { Metrics } from './observability/metrics';
import { Health, backendPoolChecker, dataSourceChecker, userStoreChecker } from './observability/health';
import { opsRoutes } from './observability/routes';
import { gatewayObserver } from './observability/observe';
import { hasRemoteIssuers, jwksChecker, redisChecker, registerComponentMetrics, workerPoolChecker } from './observability/components';
import { RedisCounterStore } from './throttle/redis';
import { applyReload, type ReloadResult } from './observability/reload';
import { createGateway, type Gateway } from './gateway';
import { createDemoBackend, type DemoBackend } from './demo/backend';
import { defaultPath, versionedPath } from './gateway/apis';
import { createEventBus, type EventBus } from './events/bus';
import { createKeyManager, type KeyManager } from './keymanager';
import { keyManagerLink } from './security';
import { openStore } from './store/open';
import type { Store } from './store/types';
import { listenerTlsSettings, reloadCertificates, serverOptions, watchCertificates } from './tls/settings';
import { ensureSampleKeystore } from './tls/sample';
import type * as tls from 'node:tls';
import * as http from 'node:http';
import * as path from 'node:path';
import { scaleSettingsFrom } from './scale/settings';
import { ControlPlane, type FullSnapshot } from './scale/control-plane';
import { RedisEventHub } from './scale/event-hub';
import type { KeyManagerLink } from './security';
import { MemoryCounterStore } from './throttle/counters';
import { SplitCounterStore } from './scale/split-counters';
import { decisionHubUrl } from './scale/settings';
import { TrafficManager } from './scale/traffic-manager';
import { DecisionCounterStore, redacted, throttleChannels } from './throttle/decisions';
import type { BlockingCondition } from './throttle/blocking';
import { DeploymentFollower, DeploymentSource } from './scale/deployments';
import { gatewaySettingsFrom } from './gateway/settings';
import { listApiFiles } from './gateway/deploy';
import { policyOptionsOf, throttleSettingsFrom } from './throttle/settings';

export interface RunningNode {
  /** The gateway, when this role runs one. */
  readonly gateway: Gateway | undefined;
  /** The key manager (token endpoint, DCR, admin API) on the management port. */
  readonly keyManager: KeyManager | undefined;
  /** Key manager events (token revoked, applications, subscriptions, policies): docs/events.md. */
  readonly events: EventBus;
  /** `GET /metrics` (undefined when [throughway.operations] metrics = false). */
  readonly metrics: Metrics | undefined;
  /** `GET /health`'s checkers (undefined when [server_health_check] enable = false). */
  readonly health: Health | undefined;
  /** What SIGHUP does: re-read deployment.toml (when StartOptions.reload is given), the APIs and templates. */
  reload(): ReloadResult | undefined;
  /** The ports the node listens on. */
  readonly ports: { readonly management: number | undefined; readonly gateway: number | undefined };
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where start-up lines go (default: process.stdout). */
  readonly log?: (line: string) => void;
  /** Reads deployment.toml again (the CLI's loader with the same --config, --strict, --sys): SIGHUP. */
  readonly reload?: () => LoadResult;
  /** Where the server log goes (default: process.stderr). */
  readonly logSink?: LogSink;
  /** Working directory for the store file and the access log (default: process.cwd()). */
  readonly cwd?: string;
  /** Tests: every listener on a free port of 127.0.0.1 instead of the configured ports (RunningNode.ports). */
  readonly ephemeralPorts?: boolean;
  /** Cluster mode ([throughway.cluster] workers > 1; lib/scale/cluster.ts): which part of it this process is. */
  readonly cluster?: ClusterPart;
}

export interface ClusterPart {
  /** primary: the key manager and store (when the role has them), no gateway; worker: the gateway only. */
  readonly role: 'primary' | 'worker';
  readonly workers: number;
  /** worker: the primary's management port, when the primary runs the key manager. */
  readonly controlPlane?: string;
  /** worker: the bus the primary's events arrive on (over IPC). */
  readonly events?: EventBus;
}

/** Ports this version opens (the others are accepted and announced as not opened yet). */
const OPENED = new Set(['passthruHttp', 'passthruHttps', 'ws', 'wss', 'demo', 'managementHttp', 'managementHttps']);

/** A role throughway does not build (api-publisher, api-devportal): the CLI exits with status 2. */
export class RoleNotBuiltError extends Error {
  readonly code = 'ROLE_NOT_BUILT';
}

export async function startNode(loaded: LoadResult, options: StartOptions = {}): Promise<RunningNode> {
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').length;
    throw new ConfigInvalidError(`configuration has ${errors} error(s); run \`throughway config check\``);
  }
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const config = loaded.config;
  const ports = loaded.ports;
  const role = config.server.server_role;
  const configured = scaleSettingsFrom(config);
  const cl = options.cluster;
  // Cluster mode: the primary keeps the control plane half of the role, the workers run its gateway.
  const scale = cl === undefined ? configured : {
    ...configured,
    parts: cl.role === 'primary' ? { ...configured.parts, gateway: false } : { ...configured.parts, keyManager: false },
    controlPlane: cl.controlPlane ?? configured.controlPlane,
  };
  if (scale.parts.notBuilt) throw new RoleNotBuiltError(`server.server_role = "${role}" is not built by throughway (roles: default, gateway-worker, api-key-manager, traffic-manager; docs/scale-out.md)`);
  log(`throughway node: role ${role}, host ${config.server.hostname}, offset ${ports.offset}`);
  const logger = createLogger(config.throughway.log_level as LogLevel, options.logSink ?? process.stderr);
  const cwd = options.cwd ?? process.cwd();
  const listening: { management: number | undefined; gateway: number | undefined } = { management: undefined, gateway: undefined };
  const opsConfig = config.throughway.operations;
  const metrics = opsConfig.metrics ? new Metrics() : undefined;
  const hc = config.server_health_check;
  const health = hc.enable ? new Health(opsConfig.health_check_timeout) : undefined;
  let current: LoadResult = loaded;

  let demo: DemoBackend | undefined;
  let gateway: Gateway | undefined;
  let store: Store | undefined;
  let keyManager: KeyManager | undefined;
  let hub: RedisEventHub | undefined;
  let trafficManager: TrafficManager | undefined;
  let controlPlane: ControlPlane | undefined;
  let remoteLink: KeyManagerLink | undefined;
  let first: FullSnapshot | undefined;
  let initialBlocking: Map<string, BlockingCondition> | undefined;
  /** Control plane: the apis/ and policies file served to gateway-workers. */
  let deploymentSource: DeploymentSource | undefined;
  /** gateway-worker: the APIs and policies pulled from the control plane, kept current by its events. */
  let follower: DeploymentFollower | undefined;
  let stopCollecting = (): void => undefined;
  let opsServer: http.Server | undefined;
  const events = cl?.events ?? createEventBus((err, event) => logger.log('error', 'event_subscriber_failed', { event: event.name, message: (err as Error).message }));
  let stopWatching = (): void => undefined;
  /** SIGHUP: the listeners' certificates read again (set once the TLS listeners exist). */
  let reloadTls = (): { readonly ok: boolean; readonly error?: string } => ({ ok: true });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    // Twice (a second signal during shutdown) waits for the same shutdown.
    closing ??= (async () => {
      stopWatching();
      deploymentSource?.close();
      follower?.close();
      process.removeListener('SIGHUP', onHup);
      health?.shuttingDown();
      logger.log('info', 'shutdown_started', { inFlight: gateway?.transport.connections().inFlight ?? 0, timeoutMs: config.throughway.shutdown_timeout });
      await gateway?.close();
      await keyManager?.close();
      await hub?.close();
      await trafficManager?.close();
      if (opsServer !== undefined) await new Promise<void>((resolve) => opsServer?.close(() => resolve()));
      await store?.close();
      await demo?.close();
      metrics?.attach(undefined);
      logger.log('info', 'shutdown_complete');
    })();
    return closing;
  };
  const reload = (): ReloadResult | undefined => {
    let r: ReloadResult | undefined;
    if (options.reload !== undefined) {
      r = applyReload(current, options.reload(), logger);
      if (!r.ok) {
        log(`reload refused: the configuration has ${r.errors.length} error(s); the running configuration stays`);
        for (const e of r.errors) log(`  ${e}`);
        return r;
      }
      current = r.loaded;
      log(`reloaded configuration${r.applied.length > 0 ? `: applied ${r.applied.join(', ')}` : ''}${r.restartNeeded.length > 0 ? `; at the next start: ${r.restartNeeded.join(', ')}` : ''}`);
    }
    if (deploymentSource !== undefined) {
      // What gateway-workers deploy: changes are published as events (lib/scale/deployments.ts).
      deploymentSource.refresh();
      const d = deploymentSource.snapshot();
      log(`reloaded deployments served to gateway-workers: ${d.apis.length} API file(s)${d.policies !== null ? ', policies' : ''}`);
    }
    if (gateway !== undefined && follower !== undefined) {
      // A gateway-worker's APIs and policies are its control plane's: pulled again, applied when they arrive.
      const f = follower;
      const cp = controlPlane as ControlPlane;
      const pulled = hub !== undefined ? hub.resync() : cp.pull().then((s) => f.replace(s.deployments ?? { apis: [], policies: null }));
      pulled.catch((err: unknown) => logger.log('error', 'control_plane_pull_failed', { message: (err as Error).message }));
      log(`pulling APIs and throttling policies from the control plane ${f.origin} again`);
    } else if (gateway !== undefined) {
      // The policies before the APIs: an API file may name a policy the new file defines.
      const p = gateway.throttle.reload();
      if (p.ok) log(`reloaded throttling policies from ${gateway.throttle.settings.policiesFile}`);
      else {
        log(`throttling policies refused: ${p.errors.length} error(s); the running policies stay`);
        for (const e of p.errors) log(`  ${e}`);
      }
      const c = reloadTls();
      if (!c.ok) log(`TLS certificates refused (${c.error ?? ''}); the running ones stay`);
      const g = gateway.reload();
      log(`reloaded: ${g.deployed.length} API(s) deployed`);
    }
    return r;
  };
  const onHup = (): void => {
    try {
      reload();
    } catch (err) {
      logger.log('error', 'reload_failed', { message: (err as Error).message });
    }
  };

  try {
    // In cluster mode the primary runs the demo backend once; workers sharing its port would collide.
    if (config.throughway.demo.enable && cl?.role !== 'worker') {
      demo = createDemoBackend({ port: ports.demo });
      const a = await demo.listen();
      log(`  ${'demo backend'.padEnd(18)} port ${a.port} (127.0.0.1)`);
    }
    // The key manager first: once the gateway says it listens, tokens can be had.
    // Progress of schema migrations (docs/operations.md): a first start on a remote database can take a while.
    const ops = opsRoutes({ ...(health !== undefined ? { health } : {}), ...(metrics !== undefined ? { metrics } : {}), logger });
    if (scale.ignoredUrls.length > 0) {
      // Real files carry the JMS broker's URLs: accepted, not used (one warning for all of them).
      const msg = `event hub URLs ${scale.ignoredUrls.join(', ')} are JMS URLs throughway does not use${scale.redisUrl !== undefined ? ` (the event hub is ${scale.redisUrl})` : ''}; to share events across nodes, write a redis://host:port URL in [apim.event_hub] event_listening_endpoints (docs/scale-out.md)`;
      logger.log('warn', 'event_hub_jms_ignored', { urls: scale.ignoredUrls, message: msg });
      log(`  warning: ${msg}`);
    }
    // A cluster worker whose primary runs the key manager hears its events over IPC instead.
    // A gateway-worker (not a cluster worker of a control plane node, which shares its primary's apis/)
    // deploys the control plane's API files with its gateway_labels, and its policies (docs/scale-out.md).
    const pullsDeployments = !scale.parts.keyManager && scale.parts.gateway && cl?.controlPlane === undefined;
    const gatewayLabels = config.apim.sync_runtime_artifacts.gateway.gateway_labels;
    const newControlPlane = (): ControlPlane =>
      new ControlPlane({ url: scale.controlPlane, user: scale.controlPlaneUser, password: scale.controlPlanePassword, retry: scale.retry, logger, ...(pullsDeployments ? { deployments: { labels: gatewayLabels } } : {}) });
    if (scale.redisUrl !== undefined && (scale.parts.keyManager || scale.parts.gateway) && cl?.controlPlane === undefined) {
      const gatewayOnly = !scale.parts.keyManager;
      const cp = gatewayOnly ? newControlPlane() : undefined;
      hub = new RedisEventHub({ url: scale.redisUrl, channel: scale.channel, bus: events, publish: !gatewayOnly, subscribe: gatewayOnly, waitingTime: scale.eventWaitingTime, reconnectMin: scale.reconnectMin, reconnectMax: scale.reconnectMax, logger, ...(cp !== undefined ? { resync: () => cp.pull() } : {}) });
      // Subscribed before the first snapshot is pulled, so nothing published in between is lost.
      await hub.start();
      health?.register(hub.checker());
      log(`  ${'event hub'.padEnd(18)} ${scale.redisUrl} channel ${scale.channel} (${gatewayOnly ? 'subscribed' : 'publishing'}${hub.connected ? '' : ', unreachable: reconnecting'})`);
      controlPlane = cp;
    }
    if (!scale.parts.keyManager) {
      // gateway-worker: no store, no key manager; keys, snapshot and blocking conditions from the control plane.
      controlPlane ??= newControlPlane();
      await controlPlane.start();
      first = await controlPlane.pull();
      if (pullsDeployments) {
        // Subscribed now: events arriving before the gateway exists update what it will start with.
        follower = new DeploymentFollower(scale.controlPlane, gatewayLabels, first.deployments ?? { apis: [], policies: null }, events, logger);
        const d = first.deployments;
        log(`  ${'deployments'.padEnd(18)} ${d?.apis.length ?? 0} API file(s) with gateway_labels ${JSON.stringify(gatewayLabels)}, ${d?.policies != null ? `throttling policies ${follower.policiesSource}` : 'no throttling policies (the control plane serves none: this node reads its own policies file)'}`);
        const local = listApiFiles(gatewaySettingsFrom(config, loaded.dir, ports).apisDir) ?? [];
        if (local.length > 0) {
          const msg = `${local.length} API file(s) in ${path.dirname(local[0] as string)} are not used: a gateway-worker deploys the APIs of its control plane ${scale.controlPlane} (docs/scale-out.md)`;
          logger.log('warn', 'apis_dir_not_used', { dir: path.dirname(local[0] as string), files: local.length, message: msg });
          log(`  note: ${msg}`);
        }
      }
      // Blocking conditions added or removed before the gateway (which follows the bus) exists.
      const initial = new Map<string, BlockingCondition>(first.blocking.map((b) => [b.id, b]));
      stopCollecting = events.subscribe((e) => {
        if (e.name === 'blocking.added') initial.set(e.payload.condition.id, e.payload.condition);
        else if (e.name === 'blocking.removed') initial.delete(e.payload.condition.id);
      });
      initialBlocking = initial;
      if (hub !== undefined) {
        hub.remember(first);
        if (!hub.connected) hub.resyncNeededOnFirst = true;
      }
      remoteLink = controlPlane.link();
      log(`  ${'control plane'.padEnd(18)} ${scale.controlPlane} (${first.applications.length} applications, ${first.subscriptions.length} subscriptions, ${first.revoked.length} revoked tokens, ${first.blocking.length} blocking conditions)`);
      if (hub === undefined && cl === undefined) log(`  warning: no redis:// event hub: this gateway-worker has the control plane's state of its start only (docs/scale-out.md)`);
    }
    // A cluster worker has no operations port: the primary's management port is the node's (it shows the
    // workers' metrics and health: lib/scale/cluster-ops.ts), also when the primary runs no key manager.
    if (!scale.parts.keyManager && cl?.role !== 'worker') {
      opsServer = http.createServer((req, res) => {
        const p = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
        ops(req, res, p).then(
          (done) => {
            if (!done) res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not_found"}');
          },
          () => res.writeHead(500).end(),
        );
      });
      const srv = opsServer;
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(options.ephemeralPorts === true ? 0 : ports.managementHttp, options.ephemeralPorts === true ? '127.0.0.1' : undefined, () => resolve());
      });
      listening.management = (srv.address() as { port: number }).port;
      log(`  ${'operations'.padEnd(18)} port ${listening.management}: /health/live${health !== undefined ? ', /health' : ''}${metrics !== undefined ? ', /metrics' : ''} (docs/operations.md)`);
      health?.register(backendPoolChecker(() => gateway?.transport, { order: opsConfig.backend_pool_checker_order, limitPercentage: opsConfig.backend_pool_usage_limit_percentage }));
    }
    if (scale.parts.keyManager) {
    // What gateway-workers deploy: this node's apis/ and policies file (read even when it runs no gateway).
    const throttleSettings = throttleSettingsFrom(config, loaded.dir);
    deploymentSource = new DeploymentSource({
      apisDir: gatewaySettingsFrom(config, loaded.dir, ports).apisDir,
      policiesFile: throttleSettings.policiesFile,
      policyOptions: policyOptionsOf(throttleSettings),
      bus: events,
      logger,
    });
    const source = deploymentSource;
    store = await openStore(config, cwd, (m, i, n) => log(`  ${'store migration'.padEnd(18)} ${i}/${n}: version ${m.version}, ${m.description}`));
    if (health !== undefined) {
      const checkers = hc.health_checker;
      if (checkers.data_source_health_checker.enable) {
        health.register(dataSourceChecker(store, { order: checkers.data_source_health_checker.order, limitPercentage: checkers.data_source_health_checker.properties.pool_usage_limit_percentage }));
      }
      if (checkers.super_tenant_health_checker.enable) health.register(userStoreChecker(store, { order: checkers.super_tenant_health_checker.order, username: config.super_admin.username }));
      health.register(backendPoolChecker(() => gateway?.transport, { order: opsConfig.backend_pool_checker_order, limitPercentage: opsConfig.backend_pool_usage_limit_percentage }));
    }
    keyManager = await createKeyManager({
      loaded,
      store,
      bus: events,
      logger,
      ops,
      deployments: (labels) => source.snapshot(labels),
      apiScopes: () => (gateway?.states() ?? []).flatMap((s) => (s.api?.resources ?? []).flatMap((r) => r.scopes)),
    });
    const km = options.ephemeralPorts === true ? await keyManager.listen(0, '127.0.0.1') : await keyManager.listen();
    listening.management = km.port;
    log(`  ${'management HTTP'.padEnd(18)} port ${km.port} (key manager, ${store.description})`);
    log(`  ${'operations'.padEnd(18)} port ${km.port}: /health/live${health !== undefined ? ', /health' : ''}${metrics !== undefined ? ', /metrics' : ''} (docs/operations.md)`);
    }
    // The decision service (lib/scale/traffic-manager.ts): on a traffic-manager node, and on a default node
    // whose gateways count with counter_store = "traffic-manager" (not in cluster workers: the primary's).
    const throttling = config.throughway.throttling;
    if (cl?.role !== 'worker' && (configured.role === 'traffic-manager' || (configured.role === 'default' && throttling.counter_store === 'traffic-manager'))) {
      const url = decisionHubUrl(config);
      const channels = throttleChannels(config.throughway.scale.channel);
      if (url === undefined) log(`  ${'throttle decisions'.padEnd(18)} not published: no redis:// URL in [apim.throttling] throttle_decision_endpoints or the event hub keys (docs/throttling.md)`);
      else {
        trafficManager = new TrafficManager({ url, channels, maxKeys: throttling.max_counters, reconnectMin: scale.reconnectMin, reconnectMax: scale.reconnectMax, logger });
        await trafficManager.start();
        if (metrics !== undefined) trafficManager.register(metrics);
        health?.register(trafficManager.checker(99));
        log(`  ${'throttle decisions'.padEnd(18)} ${redacted(url)}: data from ${channels.data}, decisions on ${channels.decisions}${trafficManager.connected ? '' : ' (unreachable: reconnecting)'}`);
      }
    }
    // TLS (docs/tls.md): the HTTPS and WSS listeners and the management HTTPS server share the
    // [transport.passthru_https] listener stores; without a key store, the sample key pair (made once).
    const eph = options.ephemeralPorts === true;
    const tlsSettings = listenerTlsSettings(config, cwd);
    let sampleFile: string | undefined;
    if (tlsSettings.keyStore === undefined && tlsSettings.profileFile === undefined) {
      const sample = ensureSampleKeystore(cwd, config.server.hostname);
      sampleFile = sample.file;
      if (sample.created) log(`  generated the sample key pair ${sample.file} (self-signed; configure listener.key_store for real use)`);
    }
    const tlsOptions = serverOptions(tlsSettings, sampleFile);
    const kmTlsOptions = { ...tlsOptions, requestCert: false, rejectUnauthorized: false };
    if (keyManager !== undefined) {
      const kmTls = eph ? await keyManager.listenHttps(kmTlsOptions, 0, '127.0.0.1') : await keyManager.listenHttps(kmTlsOptions);
      log(`  ${'management HTTPS'.padEnd(18)} port ${(kmTls.address() as { port: number }).port}`);
    }
    if (scale.parts.gateway && config.transport.passthru_http.listener.enable) {
      // Blocking conditions in force at start, then kept current by the key manager's events (900805).
      const link: KeyManagerLink = keyManager !== undefined ? keyManagerLink(keyManager) : (remoteLink as KeyManagerLink);
      const blocking = store !== undefined ? await store.listBlockingConditions() : [...(initialBlocking?.values() ?? [])];
      // Cluster workers without a shared counter store each admit 1/N of every limit (docs/scale-out.md).
      const split = cl !== undefined && cl.workers > 1 && config.throughway.throttling.counter_store === 'memory';
      const counters = split ? { counters: new SplitCounterStore(new MemoryCounterStore(config.throughway.throttling.max_counters, 10_000), cl.workers) } : {};
      const pulled = follower?.policiesText();
      const fromControlPlane = follower !== undefined ? { apiTexts: { origin: `the control plane ${follower.origin}`, entries: follower.entries() } } : {};
      gateway = createGateway({ loaded, logger, cwd, keyManager: link, events, ...fromControlPlane, throttling: { blocking, ...counters, ...(pulled !== undefined ? { policies: pulled } : {}) }, observe: gatewayObserver({ logger, ...(metrics !== undefined ? { metrics } : {}) }) });
      const gw = gateway;
      follower?.attach(gw);
      stopCollecting();
      metrics?.attach({ transport: gw.transport, apiOf: (url) => gw.apiOf(url) });
      if (metrics !== undefined) registerComponentMetrics(metrics, () => gateway);
      if (health !== undefined) {
        // The components' checkers share the backend pool checker's order (equal orders keep this order).
        const order = opsConfig.backend_pool_checker_order;
        health.register(workerPoolChecker(() => gateway, { order, queueLimit: gw.mediation.pool.settings.maxThreads }));
        if (hasRemoteIssuers(gw)) health.register(jwksChecker(() => gateway, { order }));
        if (gw.throttle.counters instanceof RedisCounterStore) health.register(redisChecker(() => gateway, { order }));
        if (gw.throttle.counters instanceof DecisionCounterStore) health.register(gw.throttle.counters.checker(order));
      }
      const a = await gateway.listen(options.ephemeralPorts === true ? { port: 0, host: '127.0.0.1' } : {});
      listening.gateway = a.port;
      log(`  ${'gateway HTTP'.padEnd(18)} port ${a.port}`);
      const ts = gw.throttle.settings;
      if (gw.throttle.counters instanceof DecisionCounterStore && ts.decisionUrl !== undefined) log(`  ${'throttle decisions'.padEnd(18)} ${redacted(ts.decisionUrl)}: ${ts.dataPublishing ? `data to ${ts.channels.data} every ${ts.syncInterval} ms` : 'no data published'}, ${ts.decisionConnection ? `decisions from ${ts.channels.decisions}` : 'no decisions received'}`);
      const tr = gateway.tracer?.settings;
      if (tr !== undefined) log(`  ${'tracing'.padEnd(18)} ${[tr.logTracer ? 'log' : '', tr.remote ? `Zipkin http://${tr.host}:${tr.port}/api/v2/spans` : ''].filter((x) => x !== '').join(', ')}`);
      if (gateway.analytics !== undefined) log(`  ${'analytics'.padEnd(18)} ${gateway.analytics.describe()}`);
    }
    if (gateway !== undefined) {
      const tlsServers: tls.Server[] = [];
      const bind = eph ? '127.0.0.1' : (config.transport.passthru_https.listener.parameters['bind-address'] ?? config.transport.passthru_http.listener['bind-address'] ?? '0.0.0.0');
      if (config.transport.passthru_https.listener.enable) {
        const s = await gateway.listenTls({ port: eph ? 0 : ports.passthruHttps, host: bind }, tlsOptions);
        tlsServers.push(s);
        log(`  ${'gateway HTTPS'.padEnd(18)} port ${(s.address() as { port: number }).port}${tlsSettings.verifyClient === 'require' ? ' (mutual TLS)' : ''}`);
      }
      if (config.transport.ws.sender.enable) {
        const w = await gateway.listen(eph ? { port: 0, host: bind } : { port: ports.ws });
        log(`  ${'gateway WS'.padEnd(18)} port ${w.port}`);
      }
      if (config.transport.wss.sender.enable) {
        const w = await gateway.listenTls({ port: eph ? 0 : ports.wss, host: bind }, tlsOptions);
        tlsServers.push(w);
        log(`  ${'gateway WSS'.padEnd(18)} port ${(w.address() as { port: number }).port}`);
      }
      stopWatching = watchCertificates(tlsServers, tlsSettings, sampleFile, logger);
      reloadTls = () => reloadCertificates(tlsServers, tlsSettings, sampleFile, logger);
    } else {
      log(`  the gateway does not run for role ${role}${scale.parts.gateway ? ' (transport.passthru_http.listener.enable = false)' : ''}`);
    }
    process.on('SIGHUP', onHup);
  } catch (err) {
    await close();
    throw err;
  }

  for (const spec of LISTENING_PORTS) {
    if (OPENED.has(spec.name)) continue;
    if (portOpened(config, spec)) log(`  ${spec.title.padEnd(18)} port ${ports[spec.name]} (not opened yet by this version)`);
  }

  // The first deployed API that needs a token: the application is subscribed to it (docs/security.md).
  const secured = (gateway?.states() ?? []).find((s) => s.api !== undefined && (s.status === 'deployed' || s.status === 'kept-previous') && s.api.resources.some((r) => r.auth === 'oauth2'))?.api;
  if (keyManager !== undefined) {
    // No secret is printed: keys are generated by the command and shown by it once.
    const km = keyManager.settings.baseUrl;
    log(`Key manager: ${km}/oauth2/token (docs/key-manager.md). Get keys${secured !== undefined ? ', subscribe' : ''}, then a token:`);
    log(`  npm run -s throughway -- apps create MyApp --url ${km}`);
    log(`  npm run -s throughway -- keys generate --app MyApp --url ${km}`);
    if (secured !== undefined) log(`  npm run -s throughway -- subscriptions add --app MyApp --api ${secured.context} --api-version ${secured.version} --url ${km}`);
    log(`  then: curl -u <consumer key>:<consumer secret> -d grant_type=client_credentials ${km}/oauth2/token`);
  }

  if (gateway !== undefined) {
    const deployed = gateway.deployed();
    const states = gateway.states();
    log(`APIs: ${deployed.length} deployed from ${gateway.apiSource}${states.length > deployed.length ? `, ${states.length - deployed.length} not deployed (see the log, or \`throughway apis list\`)` : ''}`);
    const base = `http://${config.server.hostname}:${ports.passthruHttp}`;
    const tries: string[] = [];
    for (const s of states) {
      const api = s.api;
      if (api === undefined || (s.status !== 'deployed' && s.status !== 'kept-previous')) continue;
      const p = versionedPath(api);
      log(`  ${api.name} ${api.version}  ${base}${p}  (${api.state})`);
      const get = api.resources.find((r) => r.methods.includes('GET') && !r.path.includes('{') && !r.path.includes('*'));
      const post = api.resources.find((r) => r.methods.includes('POST') && !r.path.includes('{') && !r.path.includes('*'));
      const bearer = (r: { readonly auth: string }): string => (r.auth === 'oauth2' ? `-H 'Authorization: Bearer <access token>' ` : '');
      if (get !== undefined) tries.push(`curl ${bearer(get)}${base}${p}${get.path}`);
      if (get !== undefined && s.defaultRouting) tries.push(`curl ${bearer(get)}${base}${defaultPath(api)}${get.path}`);
      if (post !== undefined) tries.push(`curl -X POST ${bearer(post)}-H 'Content-Type: application/json' -d '{"pizza":"Margherita"}' ${base}${p}${post.path}`);
    }
    if (tries.length > 0) {
      log('Try:');
      for (const t of tries.slice(0, 8)) log(`  ${t}`);
    }
  }
  return { gateway, keyManager, events, metrics, health, reload, ports: listening, close };
}
