/**
 * The loaded configuration, read for scale-out (docs/scale-out.md): which parts a
 * `server.server_role` runs (spec 000, part 1.1), where the control plane is, the Redis of the event
 * hub and the deployment retry. The one place that maps those keys; lib/scale never reads TOML.
 * Which of the hub keys' URLs are Redis: lib/config/hub.ts.
 */
import type { DeploymentConfig } from '../config/types';
import { isRedisUrl as isRedis } from '../config/hub';

export type ServerRole = 'default' | 'gateway-worker' | 'api-key-manager' | 'traffic-manager' | 'api-publisher' | 'api-devportal';

/** What a role runs. */
export interface RoleParts {
  /** The gateway listeners (HTTP, HTTPS, WS, WSS). */
  readonly gateway: boolean;
  /** The key manager and its store (token endpoint, admin API, snapshot). */
  readonly keyManager: boolean;
  /** Not built by throughway: the CLI refuses to start with exit status 2. */
  readonly notBuilt: boolean;
  /** The web consoles on the management ports (lib/portal, docs/portal.md). */
  readonly consoles: { readonly devportal: boolean; readonly publisher: boolean };
}

const BOTH = { devportal: true, publisher: true } as const;
const NONE = { devportal: false, publisher: false } as const;

/**
 * spec 000, part 1.1. `traffic-manager` owns throttling policies and blocking conditions: the store-backed
 * half of the key manager serves and publishes them (admin API, events), without a gateway; the boot
 * (lib/node/control-plane.ts) adds its throttle decision service (lib/scale/traffic-manager.ts).
 * `api-publisher` and `api-devportal` run the store-backed management server over the shared
 * `[database.apim_db]` with their console (docs/portal.md), and no gateway.
 */
export const ROLE_PARTS: Readonly<Record<ServerRole, RoleParts>> = Object.freeze({
  default: { gateway: true, keyManager: true, notBuilt: false, consoles: BOTH },
  'gateway-worker': { gateway: true, keyManager: false, notBuilt: false, consoles: NONE },
  'api-key-manager': { gateway: false, keyManager: true, notBuilt: false, consoles: NONE },
  'traffic-manager': { gateway: false, keyManager: true, notBuilt: false, consoles: NONE },
  'api-publisher': { gateway: false, keyManager: true, notBuilt: false, consoles: { devportal: false, publisher: true } },
  'api-devportal': { gateway: false, keyManager: true, notBuilt: false, consoles: { devportal: true, publisher: false } },
});

export function roleParts(role: string): RoleParts {
  return ROLE_PARTS[role as ServerRole] ?? ROLE_PARTS.default;
}

export interface RetrySettings {
  /** ms before the first retry ([apim.sync_runtime_artifacts.gateway] deployment_retry_duration). */
  readonly first: number;
  /** Retries after the first attempt (max_retry_count). */
  readonly maxRetries: number;
  /** Each wait is the previous one times this (retry_progression_factor). */
  readonly factor: number;
}

export interface ScaleSettings {
  readonly role: ServerRole;
  readonly parts: RoleParts;
  /** The event hub's Redis, undefined: events stay in the process. */
  readonly redisUrl: string | undefined;
  /** JMS (`tcp://`, `ssl://`, `amqp://`...) URLs written in the hub keys: not used, one warning. */
  readonly ignoredUrls: readonly string[];
  /** ms an event waits before it is applied ([apim.event_hub] event_waiting_time; 0: at once). */
  readonly eventWaitingTime: number;
  /** Pub/sub channel of the events. */
  readonly channel: string;
  /** Origin of the control plane's management HTTP port ([apim.key_manager] service_url): gateway-worker. */
  readonly controlPlane: string;
  readonly controlPlaneUser: string;
  readonly controlPlanePassword: string;
  readonly retry: RetrySettings;
  /** ms between two reconnect attempts to Redis: first, then doubled up to max. */
  readonly reconnectMin: number;
  readonly reconnectMax: number;
  /** ms between two checks of a gateway-worker's API files and policies against its control plane's. */
  readonly deploymentCheckInterval: number;
  /**
   * Where an api-devportal or api-publisher node's console finds the key manager and the API files:
   * `local` (its own store-backed key manager over [database.apim_db] and apis_dir), or `remote` when
   * deployment.toml writes [apim.key_manager] service_url (the node at controlPlane; docs/portal.md).
   * Other roles: `local`.
   */
  readonly consoleBackend: 'local' | 'remote';
}

/** `written`: the key paths deployment.toml writes (LoadResult.written), for consoleBackend. */
export function scaleSettingsFrom(c: DeploymentConfig, written: ReadonlySet<string> = new Set()): ScaleSettings {
  const hub = c.apim.event_hub;
  const urls = [
    ...(hub.event_listening_endpoints ?? []),
    ...(hub.event_duplicate_url ?? []),
    ...(c.apim.throttling.throttle_decision_endpoints ?? []),
  ];
  const redis = urls.find(isRedis);
  const role = (c.server.server_role as ServerRole) in ROLE_PARTS ? (c.server.server_role as ServerRole) : 'default';
  const km = c.apim.key_manager;
  const sync = c.apim.sync_runtime_artifacts.gateway;
  const sc = c.throughway.scale;
  let origin: string;
  try {
    origin = new URL(km.service_url).origin;
  } catch {
    origin = km.service_url;
  }
  const consoleRole = role === 'api-devportal' || role === 'api-publisher';
  const consoleBackend = consoleRole && written.has('apim.key_manager.service_url') ? 'remote' : 'local';
  return Object.freeze({
    role,
    // A remote console node runs no key manager and no store of its own.
    parts: consoleBackend === 'remote' ? { ...ROLE_PARTS[role], keyManager: false } : ROLE_PARTS[role],
    consoleBackend,
    redisUrl: hub.enable ? redis?.trim() : undefined,
    ignoredUrls: Object.freeze(urls.filter((u) => !isRedis(u))),
    eventWaitingTime: hub.event_waiting_time ?? 0,
    channel: sc.channel,
    controlPlane: origin,
    controlPlaneUser: km.username,
    controlPlanePassword: km.password,
    retry: Object.freeze({
      first: sync.deployment_retry_duration,
      maxRetries: sync.max_retry_count,
      factor: sync.retry_progression_factor,
    }),
    reconnectMin: sc.reconnect_min,
    reconnectMax: sc.reconnect_max,
    deploymentCheckInterval: sc.deployment_check_interval,
  });
}

/** The waits of the deployment retry, in order: first, first x factor, ... (maxRetries of them). */
export function retryDelays(r: RetrySettings): number[] {
  const out: number[] = [];
  let d = r.first;
  for (let i = 0; i < r.maxRetries; i++) {
    out.push(Math.round(d));
    d *= r.factor;
  }
  return out;
}
