/**
 * The control plane part of a node (docs/scale-out.md): the Redis event hub, the control plane a
 * gateway-worker pulls its keys, snapshot and deployments from (lib/scale/control-plane.ts,
 * lib/scale/deployments.ts), the key manager over its store on the management port (lib/keymanager,
 * lib/store), and the throttle decision service (lib/scale/traffic-manager.ts).
 */
import * as path from 'node:path';
import { createKeyManager } from '../keymanager';
import { LOOPBACK_REASON } from '../keymanager/listener';
import { openStore } from '../store/open';
import { decisionHubUrl } from '../config/hub';
import type { BlockingCondition } from '../events/blocking';
import { ControlPlane } from '../scale/control-plane';
import { RedisEventHub } from '../scale/event-hub';
import { TrafficManager } from '../scale/traffic-manager';
import { DeploymentFollower, DeploymentSource, type Deployments } from '../scale/deployments';
import { DeploymentCheck } from '../scale/deployment-check';
import { RemoteTenants } from '../scale/remote-tenants';
import { redacted, throttleChannels } from '../throttle/decisions';
import { policyOptionsOf, throttleSettingsFrom } from '../throttle/settings';
import { gatewaySettingsFrom } from '../gateway/settings';
import { listApiFiles } from '../gateway/deploy';
import { apiScopeBindings } from '../gateway/apis';
import { Catalogue } from '../portal/catalogue';
import { logOperations, registerStoreCheckers } from './operations';
import type { Boot } from './boot';
import { tenantMetricSources } from '../tenants';

/** Real files carry the JMS broker's URLs: accepted, not used (one warning for all of them). */
export function warnJmsUrls(b: Boot): void {
  const scale = b.scale;
  if (scale.ignoredUrls.length === 0) return;
  const msg = `event hub URLs ${scale.ignoredUrls.join(', ')} are JMS URLs throughway does not use${scale.redisUrl !== undefined ? ` (the event hub is ${scale.redisUrl})` : ''}; to share events across nodes, write a redis://host:port URL in [apim.event_hub] event_listening_endpoints (docs/scale-out.md)`;
  b.logger.log('warn', 'event_hub_jms_ignored', { urls: scale.ignoredUrls, message: msg });
  b.log(`  warning: ${msg}`);
}

/**
 * A gateway-worker (not a cluster worker of a control plane node, which shares its primary's apis/)
 * deploys the control plane's API files with its gateway_labels, and its policies (docs/scale-out.md).
 */
export const pullsDeployments = (b: Boot): boolean =>
  !b.scale.parts.keyManager && b.scale.parts.gateway && b.cl?.controlPlane === undefined;

function newControlPlane(b: Boot): ControlPlane {
  const scale = b.scale;
  const labels = b.config.apim.sync_runtime_artifacts.gateway.gateway_labels;
  return new ControlPlane({
    url: scale.controlPlane,
    user: scale.controlPlaneUser,
    password: scale.controlPlanePassword,
    retry: scale.retry,
    logger: b.logger,
    keyRefetchInterval: b.config.throughway.security.jwks_refetch_interval,
    ...(pullsDeployments(b) ? { deployments: { labels } } : {}),
  });
}

/** The Redis event hub: the key manager publishes, a gateway-worker subscribes. A cluster worker whose primary runs the key manager hears its events over IPC instead. */
export async function startEventHub(b: Boot): Promise<void> {
  const scale = b.scale;
  if (scale.redisUrl === undefined || !(scale.parts.keyManager || scale.parts.gateway) || b.cl?.controlPlane !== undefined) return;
  const gatewayOnly = !scale.parts.keyManager;
  const cp = gatewayOnly ? newControlPlane(b) : undefined;
  const hub = new RedisEventHub({
    url: scale.redisUrl,
    channel: scale.channel,
    bus: b.events,
    publish: !gatewayOnly,
    subscribe: gatewayOnly,
    waitingTime: scale.eventWaitingTime,
    reconnectMin: scale.reconnectMin,
    reconnectMax: scale.reconnectMax,
    logger: b.logger,
    ...(cp !== undefined ? { resync: () => cp.pull() } : {}),
  });
  b.hub = hub;
  // Subscribed before the first snapshot is pulled, so nothing published in between is lost.
  await hub.start();
  b.health?.register(hub.checker());
  b.log(
    `  ${'event hub'.padEnd(18)} ${scale.redisUrl} channel ${scale.channel} (${gatewayOnly ? 'subscribed' : 'publishing'}${hub.connected ? '' : ', unreachable: reconnecting'})`,
  );
  b.controlPlane = cp;
}

/** gateway-worker: no store, no key manager; keys, snapshot and blocking conditions from the control plane. */
export async function pullControlPlane(b: Boot): Promise<void> {
  const scale = b.scale;
  // A console node with a remote key manager pulls nothing: its consoles call the key manager (lib/node/portal.ts).
  if (scale.parts.keyManager || !scale.parts.gateway) return;
  const controlPlane = (b.controlPlane ??= newControlPlane(b));
  await controlPlane.start();
  const first = await controlPlane.pull();
  if (pullsDeployments(b)) followDeployments(b, first.deployments ?? { apis: [], policies: null });
  // The control plane's tenants and whether each is active, read again every second (docs/scale-out.md, "Tenants").
  // Its tenants' bytes go to the control plane's store every second, against their packages' bandwidth.limit (docs/tenants.md).
  b.remoteTenants = await RemoteTenants.open(controlPlane, b.logger, 1000, { meter: true });
  // Blocking conditions added or removed before the gateway (which follows the bus) exists.
  const initial = new Map<string, BlockingCondition>(first.blocking.map((c) => [c.id, c]));
  b.stopCollecting = b.events.subscribe((e) => {
    if (e.name === 'blocking.added') initial.set(e.payload.condition.id, e.payload.condition);
    else if (e.name === 'blocking.removed') initial.delete(e.payload.condition.id);
  });
  b.initialBlocking = initial;
  if (b.hub !== undefined) {
    b.hub.remember(first);
    if (!b.hub.connected) b.hub.resyncNeededOnFirst = true;
  }
  b.remoteLink = controlPlane.link();
  b.log(
    `  ${'control plane'.padEnd(18)} ${scale.controlPlane} (${first.applications.length} applications, ${first.subscriptions.length} subscriptions, ${first.revoked.length} revoked tokens, ${first.blocking.length} blocking conditions)`,
  );
  if (b.hub === undefined && b.cl === undefined)
    b.log(`  warning: no redis:// event hub: this gateway-worker has the control plane's state of its start only (docs/scale-out.md)`);
}

/**
 * A gateway-worker's full pull of its APIs and policies (SIGHUP, and the deployment check): through the
 * event hub when there is one (its snapshot's difference becomes events, the deployments included), else
 * a pull whose deployments replace what the follower holds.
 */
export function resyncDeployments(b: Boot): Promise<void> {
  const follower = b.follower;
  if (follower === undefined) return Promise.resolve();
  if (b.hub !== undefined) return b.hub.resync();
  return (b.controlPlane as ControlPlane).pull().then((s) => follower.replace(s.deployments ?? { apis: [], policies: null }));
}

/** Subscribed now: events arriving before the gateway exists update what it will start with. */
function followDeployments(b: Boot, deployments: Deployments): void {
  const { config, loaded, scale } = b;
  const gatewayLabels = config.apim.sync_runtime_artifacts.gateway.gateway_labels;
  const follower = new DeploymentFollower(scale.controlPlane, gatewayLabels, deployments, b.events, b.logger);
  b.follower = follower;
  // Changes the events cannot carry (a control plane restarted with other files): lib/scale/deployment-check.ts.
  const check = new DeploymentCheck({
    controlPlane: b.controlPlane as ControlPlane,
    follower,
    origin: scale.controlPlane,
    interval: scale.deploymentCheckInterval,
    resync: () => resyncDeployments(b),
    logger: b.logger,
    healthOrder: config.throughway.operations.backend_pool_checker_order,
  });
  b.deploymentCheck = check;
  b.health?.register(check.checker());
  check.start();
  b.log(
    `  ${'deployments'.padEnd(18)} ${deployments.apis.length} API file(s) with gateway_labels ${JSON.stringify(gatewayLabels)}, ${deployments.policies != null ? `throttling policies ${follower.policiesSource}` : 'no throttling policies (the control plane serves none: this node reads its own policies file)'}`,
  );
  const local = listApiFiles(gatewaySettingsFrom(config, loaded.dir, b.ports).apisDir) ?? [];
  if (local.length > 0) {
    const msg = `${local.length} API file(s) in ${path.dirname(local[0] as string)} are not used: a gateway-worker deploys the APIs of its control plane ${scale.controlPlane} (docs/scale-out.md)`;
    b.logger.log('warn', 'apis_dir_not_used', { dir: path.dirname(local[0] as string), files: local.length, message: msg });
    b.log(`  note: ${msg}`);
  }
}

/** The key manager and its store on the management port (lib/keymanager), with the operations routes. */
export async function startKeyManager(b: Boot): Promise<void> {
  if (!b.scale.parts.keyManager) return;
  const { config, loaded } = b;
  // What gateway-workers deploy: this node's apis/ and policies file (read even when it runs no gateway).
  const throttleSettings = throttleSettingsFrom(config, loaded.dir);
  const gw = gatewaySettingsFrom(config, loaded.dir, b.ports);
  const source = new DeploymentSource({
    apisDir: gw.apisDir,
    policiesFile: throttleSettings.policiesFile,
    policyOptions: policyOptionsOf(throttleSettings),
    bus: b.events,
    logger: b.logger,
  });
  b.deploymentSource = source;
  // Progress of schema migrations: a first start on a remote database can take a while.
  const store = await openStore(
    config,
    b.cwd,
    (m, i, n) => b.log(`  ${'store migration'.padEnd(18)} ${i}/${n}: version ${m.version}, ${m.description}`),
    (line) => b.log(`  ${'store'.padEnd(18)} ${line}`),
  );
  b.store = store;
  registerStoreCheckers(b, store);
  const keyManager = await createKeyManager({
    loaded,
    store,
    bus: b.events,
    logger: b.logger,
    ops: b.ops,
    deployments: (labels) => source.snapshot(labels),
    // What console nodes with a remote key manager read and write (GET|PUT /admin/v1/api-files; docs/admin-api.md).
    // A tenant's files (ids t:<domain>:...) within its package's resource_volume.limit (docs/tenants.md).
    apiFiles: new Catalogue(gw.apisDir, gw.vars, { apiLimit: (d) => b.keyManager?.tenants.apiLimit(d) }),
    apiScopes: () => (b.gateway?.states() ?? []).flatMap((s) => (s.api === undefined ? [] : apiScopeBindings(s.api))),
  });
  b.keyManager = keyManager;
  const km = b.eph ? await keyManager.listen(0, '127.0.0.1') : await keyManager.listen();
  b.listening.management = km.port;
  // The key manager keeps its server to itself: its connections are not counted here.
  b.listeners.push({ name: 'management', address: km.address, port: km.port, protocol: 'http', connections: () => undefined });
  b.log(`  ${'management HTTP'.padEnd(18)} port ${km.port} (key manager, ${store.description})`);
  if (keyManager.users.kind !== 'database') b.log(`  ${'user store'.padEnd(18)} ${keyManager.users.description} (docs/user-stores.md)`);
  if (keyManager.loopbackOnly) {
    b.logger.log('warn', 'management_loopback_only', { address: km.address, message: LOOPBACK_REASON });
    b.log(`  warning: ${LOOPBACK_REASON}`);
  }
  b.metrics?.register({
    name: 'throughway_login_failures_total',
    help: 'Failed sign-ins on the management port (kind: admin, password, client, signin), and sign-ins refused while locked (outcome locked): docs/security.md.',
    type: 'counter',
    collect: () =>
      (['admin', 'password', 'client', 'signin'] as const).flatMap((kind) => [
        { labels: { kind, outcome: 'failed' }, value: keyManager.guard.failures.get(kind) ?? 0 },
        { labels: { kind, outcome: 'locked' }, value: keyManager.guard.locked.get(kind) ?? 0 },
      ]),
  });
  for (const m of tenantMetricSources(keyManager.tenants)) b.metrics?.register(m);
  logOperations(b, km.port);
}

/**
 * The decision service (lib/scale/traffic-manager.ts): on a traffic-manager node, and on a default node
 * whose gateways count with counter_store = "traffic-manager" (not in cluster workers: the primary's).
 */
export async function startDecisionService(b: Boot): Promise<void> {
  const { config, configured } = b;
  const throttling = config.throughway.throttling;
  if (
    b.cl?.role === 'worker' ||
    !(configured.role === 'traffic-manager' || (configured.role === 'default' && throttling.counter_store === 'traffic-manager'))
  )
    return;
  const url = decisionHubUrl(config);
  const channels = throttleChannels(config.throughway.scale.channel);
  if (url === undefined) {
    b.log(
      `  ${'throttle decisions'.padEnd(18)} not published: no redis:// URL in [apim.throttling] throttle_decision_endpoints or the event hub keys (docs/throttling.md)`,
    );
    return;
  }
  const tm = new TrafficManager({
    url,
    channels,
    maxKeys: throttling.max_counters,
    reconnectMin: b.scale.reconnectMin,
    reconnectMax: b.scale.reconnectMax,
    logger: b.logger,
  });
  b.trafficManager = tm;
  await tm.start();
  if (b.metrics !== undefined) tm.register(b.metrics);
  b.health?.register(tm.checker(99));
  // A traffic-manager node is there for its decisions: not ready while their Redis is unreachable.
  if (configured.role === 'traffic-manager') b.readiness.register(tm.checker(4));
  b.log(
    `  ${'throttle decisions'.padEnd(18)} ${redacted(url)}: data from ${channels.data}, decisions on ${channels.decisions}${tm.connected ? '' : ' (unreachable: reconnecting)'}`,
  );
}
