/**
 * What the parts of a starting node share (lib/node/index.ts composes them): the loaded configuration,
 * the role's parts (spec 000, part 1.1; lib/scale/settings.ts ROLE_PARTS) as this process runs them, the
 * logs, the event bus, the operations objects, and each part once it has started (close() and SIGHUP
 * find them here).
 */
import type { Mailer } from '../mail/outbox';
import type { Plugins } from './plugins';
import type { LoadResult } from '../config/load';
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import { createLogger, type LogLevel, type LogSink, type ReloadableLogger } from '../log';
import { Metrics } from '../observability/metrics';
import { Health } from '../observability/health';
import { opsRoutes } from '../observability/routes';
import type { OpsHandler } from '../events/observed';
import type { ReloadResult } from '../observability/reload';
import type { Gateway } from '../embed';
import type { DemoBackend } from '../demo/backend';
import { createEventBus, type EventBus } from '../events/bus';
import type { BlockingCondition } from '../events/blocking';
import type { KeyManager, SiteHandler } from '../keymanager';
import type { KeyManagerLink } from '../security';
import type { Store } from '../store/types';
import type * as http from 'node:http';
import type * as https from 'node:https';
import { scaleSettingsFrom, type ScaleSettings } from '../scale/settings';
import type { ControlPlane } from '../scale/control-plane';
import { ConfigInvalidError } from '../config/diagnostics';
import type { RedisEventHub } from '../scale/event-hub';
import type { TrafficManager } from '../scale/traffic-manager';
import type { DeploymentFollower, DeploymentSource } from '../scale/deployments';
import type { DeploymentCheck } from '../scale/deployment-check';
import type { RemoteTenants } from '../scale/remote-tenants';
import type { ClusterPart } from '../scale/cluster';
import { ThroughwayError } from '../errors';
import { FaultRing } from '../observability/fault-ring';
import { serveStatus, STATUS_PATH, type ListenerEntry } from './status';

export interface RunningNode {
  /** The gateway, when this role runs one. */
  readonly gateway: Gateway | undefined;
  /** The policy plugins the gateway runs, with their failures counted (docs/plugins.md); undefined with none configured. */
  readonly plugins: Plugins | undefined;
  /** The key manager (token endpoint, DCR, admin API) on the management port. */
  readonly keyManager: KeyManager | undefined;
  /** Key manager events (token revoked, applications, subscriptions, policies): docs/events.md. */
  readonly events: EventBus;
  /** `GET /metrics` (undefined when [throughway.operations] metrics = false). */
  readonly metrics: Metrics | undefined;
  /** `GET /health`'s checkers (undefined when [server_health_check] enable = false). */
  readonly health: Health | undefined;
  /** `GET /health/ready`'s checks: what this role needs to serve (docs/operations.md, "Probes"). */
  readonly readiness: Health;
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

/** The node being started: its settings, then each part as it starts. */
export interface Boot {
  readonly loaded: LoadResult;
  readonly config: DeploymentConfig;
  readonly ports: EffectivePorts;
  readonly options: StartOptions;
  /** Start-up lines (StartOptions.log); a cluster worker keeps only its warnings and notes (summary.ts prints its one line). */
  readonly log: (line: string) => void;
  /** StartOptions.log unfiltered. */
  readonly out: (line: string) => void;
  readonly logger: ReloadableLogger;
  readonly cwd: string;
  /** Every listener on a free port of 127.0.0.1 (StartOptions.ephemeralPorts). */
  readonly eph: boolean;
  /** The role's scale-out settings as configured, and as this process runs them (a cluster splits the role). */
  readonly configured: ScaleSettings;
  readonly scale: ScaleSettings;
  readonly cl: ClusterPart | undefined;
  readonly events: EventBus;
  readonly metrics: Metrics | undefined;
  readonly health: Health | undefined;
  readonly readiness: Health;
  /** True once every listener of the role is up (the end of startNode): the `listeners` readiness check. */
  started: boolean;
  /** GET /health, /health/live, /health/ready and /metrics (lib/observability/routes.ts), and GET /status (lib/node/status.ts), on the management port. */
  readonly ops: OpsHandler;
  /** The runtime view's ring of the last faults the gateway answered (written by its exchange observer). */
  readonly faults: FaultRing;
  /** The node's listeners as each part opens them (the runtime view). */
  readonly listeners: ListenerEntry[];
  /** Wall-clock ms when the node began to start. */
  readonly startedAt: number;
  readonly listening: { management: number | undefined; gateway: number | undefined };
  demo?: DemoBackend;
  gateway?: Gateway;
  /** The policy plugins the gateway runs ([throughway] plugins, lib/node/plugins.ts), when any is configured. */
  plugins?: Plugins;
  store?: Store;
  keyManager?: KeyManager;
  /** The mail outbox of the developer portal's self-service (lib/mail, docs/self-service.md). */
  mailer?: Mailer;
  hub?: RedisEventHub;
  trafficManager?: TrafficManager;
  controlPlane?: ControlPlane;
  /** gateway-worker: the key manager over the control plane's management port. */
  remoteLink?: KeyManagerLink;
  /** gateway-worker: the control plane's tenants (lib/scale/remote-tenants.ts). */
  remoteTenants?: RemoteTenants;
  /** gateway-worker: the blocking conditions of the first snapshot, kept current until the gateway exists. */
  initialBlocking?: Map<string, BlockingCondition>;
  /** Control plane: the apis/ and policies file served to gateway-workers. */
  deploymentSource?: DeploymentSource;
  /** gateway-worker: the APIs and policies pulled from the control plane, kept current by its events. */
  follower?: DeploymentFollower;
  /** gateway-worker: compares the follower's version with the control plane's (lib/scale/deployment-check.ts). */
  deploymentCheck?: DeploymentCheck;
  /** The operations port of a node without the key manager. */
  opsServer?: http.Server;
  /** A console node with a remote key manager: the consoles, served on its operations port (lib/node/portal.ts). */
  site?: SiteHandler;
  /** A console node with a remote key manager: its management HTTPS listener (lib/node/gateway.ts startManagementHttps). */
  consoleHttps?: https.Server;
  /** A console node with a remote key manager: its origin once the consoles registered there. */
  portalRemote?: string;
  stopCollecting: () => void;
  stopWatching: () => void;
  /** SIGHUP: the listeners' certificates read again (set once the TLS listeners exist). */
  reloadTls: () => { readonly ok: boolean; readonly error?: string };
}

/** A role throughway does not build (ROLE_PARTS notBuilt; none today): the CLI exits with status 2. */
export class RoleNotBuiltError extends ThroughwayError {
  readonly code = 'ROLE_NOT_BUILT';
}

/** The settings of the node to start; throws for a configuration with errors or a role not built. */
export function createBoot(loaded: LoadResult, options: StartOptions): Boot {
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').length;
    throw new ConfigInvalidError(`configuration has ${errors} error(s); run \`throughway config check\``);
  }
  const out = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  // N workers repeating the primary's banner said nothing new: a worker prints one line, and what warns.
  const log =
    options.cluster?.role === 'worker' ? (line: string): void => (/^\s*(warning|note):/.test(line) ? out(line.trim()) : undefined) : out;
  const config = loaded.config;
  const ports = loaded.ports;
  const role = config.server.server_role;
  const configured = scaleSettingsFrom(config, loaded.written);
  const cl = options.cluster;
  // Cluster mode: the primary keeps the control plane half of the role, the workers run its gateway.
  const scale =
    cl === undefined
      ? configured
      : {
          ...configured,
          parts: cl.role === 'primary' ? { ...configured.parts, gateway: false } : { ...configured.parts, keyManager: false },
          controlPlane: cl.controlPlane ?? configured.controlPlane,
        };
  if (scale.parts.notBuilt) throw new RoleNotBuiltError(`server.server_role = "${role}" is not built by throughway (docs/scale-out.md)`);
  log(`throughway node: role ${role}, host ${config.server.hostname}, offset ${ports.offset}`);
  const logger = createLogger(config.throughway.log_level as LogLevel, options.logSink ?? process.stderr);
  const opsConfig = config.throughway.operations;
  const metrics = opsConfig.metrics ? new Metrics() : undefined;
  const health = config.server_health_check.enable ? new Health(opsConfig.health_check_timeout) : undefined;
  // Readiness is answered on every role, whatever [server_health_check] enable says (lib/node/operations.ts).
  const readiness = new Health(opsConfig.health_check_timeout);
  const events =
    cl?.events ??
    createEventBus((err, event) => logger.log('error', 'event_subscriber_failed', { event: event.name, message: (err as Error).message }));
  const probes = opsRoutes({
    readiness,
    ...(health !== undefined ? { health } : {}),
    ...(metrics !== undefined ? { metrics } : {}),
    logger,
  });
  let self: Boot | undefined;
  const ops: OpsHandler = async (req, res, p) =>
    (await probes(req, res, p)) || (p === STATUS_PATH && self !== undefined && (await serveStatus(self, req, res)));
  const boot: Boot = {
    loaded,
    config,
    ports,
    options,
    log,
    out,
    logger,
    cwd: options.cwd ?? process.cwd(),
    eph: options.ephemeralPorts === true,
    configured,
    scale,
    cl,
    events,
    metrics,
    health,
    readiness,
    started: false,
    ops,
    faults: new FaultRing(),
    listeners: [],
    startedAt: Date.now(),
    listening: { management: undefined, gateway: undefined },
    stopCollecting: () => undefined,
    stopWatching: () => undefined,
    reloadTls: () => ({ ok: true }),
  };
  self = boot;
  return boot;
}
