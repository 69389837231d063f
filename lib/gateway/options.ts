/**
 * What createGateway() takes, and the configuration it runs on: `loaded`, a deployment.toml to load, or
 * a configuration object.
 */
import { loadConfig, type LoadResult } from '../config/load';
import { formatDiagnostic } from '../config/diagnostics';
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import type { ConnectFn } from '../transport/core';
import type { TransportSettings } from '../transport/settings';
import type { TransportEvents } from '../transport/types';
import type { Outbound } from '../transport/outbound';
import type { Logger } from '../log';
import type { EventBus } from '../events/bus';
import type { KeyManagerLink } from '../security';
import type { BlockingCondition, CounterStore } from '../throttle';
import type { ApiText } from './deploy';
import type { ChainStep } from './phases';
import type { PluginCatalogue } from './steps';
import type { CallObserver, GatewayTap } from './hooks';
import type { GatewaySettings } from './settings';
import type { TokenEndpoints } from './token-route';
import type { TenantDirectory } from '../tenants';
import { ThroughwayError } from '../errors';

export interface GatewayOptions {
  /** The result of loadConfig(): configuration, effective ports and the directory of apis/. */
  readonly loaded?: LoadResult;
  /** Or the path of a deployment.toml to load (createGateway throws GatewayOptionsError when it is invalid). */
  readonly configFile?: string;
  /** Or a configuration object (defaults filled, as loadConfig returns it) and the directory it is from. */
  readonly config?: DeploymentConfig;
  readonly dir?: string;
  readonly ports?: EffectivePorts;
  /**
   * API definitions given in code, shaped like the TOML files (name, context, version, endpoints, ...).
   * When given, the apis/ directory is not read.
   */
  readonly apis?: readonly unknown[];
  /**
   * API definition files given as texts, e.g. pulled from the control plane by a gateway-worker
   * (docs/scale-out.md): parsed and deployed like the files of apis/ (this gateway's runtime tokens,
   * policy names and labels; diagnostics name each entry's `file`). When given, apis/ is not read;
   * `reload({ apiTexts })` replaces them. `origin` says where they come from (the start output).
   */
  readonly apiTexts?: { readonly origin: string; readonly entries: readonly ApiText[] };
  readonly logger?: Logger;
  /** Transport settings on top of those the configuration gives. */
  readonly transport?: Partial<TransportSettings>;
  /** Hot deploy: watch the apis/ directory (default true when it is read). */
  readonly watch?: boolean;
  /** Where the access log file is resolved (default: the working directory). */
  readonly cwd?: string;
  /** How backend sockets are opened (tests). */
  readonly connect?: ConnectFn;
  /** Also told of every fault and finished exchange (metrics and fault logs: lib/observability). */
  readonly observe?: TransportEvents;
  /**
   * The key manager in this process (lib/security keyManagerLink()): its public keys validate its tokens
   * directly, its snapshot fills the subscription store. Without it only [[apim.jwt.issuer]] tokens are valid.
   */
  readonly keyManager?: KeyManagerLink;
  /**
   * The tenants of the key manager in this process (lib/tenants, docs/tenants.md): whether a tenant's API
   * (apis/t/<domain>/) is served and its tokens valid. Absent: a /t/<domain>/ call answers 103010.
   */
  readonly tenants?: TenantDirectory;
  /**
   * `/token` and `/revoke` on this gateway's listeners (spec 002 part 4): the key manager in this process,
   * or its origin over HTTP(S) (lib/gateway/token-route.ts). Absent: those paths are routed like any other.
   */
  readonly tokenEndpoints?: TokenEndpoints;
  /** Key manager events: token.revoked, applications, subscriptions (security); blocking.added / blocking.removed (throttling). */
  readonly events?: EventBus;
  /** The clock of token validation (epoch ms; tests). */
  readonly now?: () => number;
  /** Throttling (docs/throttling.md): blocking conditions at start, a clock, a counter store of your own. */
  readonly throttling?: { readonly blocking?: readonly BlockingCondition[]; readonly now?: () => number; readonly counters?: CounterStore };
  /** TLS and proxies toward the backends (default: from the configuration, lib/tls/settings.ts). */
  readonly outbound?: Outbound;
  /**
   * The plugins API files may attach (`plugins`, docs/plugins.md): a node's [throughway] api_plugins. Read
   * by each deploy; when its generation changes, reload() validates every API file again.
   */
  readonly plugins?: PluginCatalogue;
  /** The chain to run (default PHASES); lib/embed places an embedder's custom phases in it. */
  readonly chain?: readonly ChainStep[];
  /** Made once the configuration is read (lib/observability: access log, tracing and analytics, from the configuration). */
  readonly observeCalls?: (config: DeploymentConfig, settings: GatewaySettings, logger: Logger) => CallObserver | undefined;
  /** The embedding surface's view of faults and exchanges (lib/embed: events, embedding paths). */
  readonly tap?: GatewayTap;
}

/** createGateway options that cannot work: a configuration that does not load, apis for a directory gateway. */
export class GatewayOptionsError extends ThroughwayError {
  override readonly name = 'GatewayOptionsError';
  readonly code = 'GATEWAY_OPTIONS';
}

function loadFile(file: string): LoadResult {
  const loaded = loadConfig({ file });
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').map((d) => formatDiagnostic(d));
    throw new GatewayOptionsError(`${file}: invalid configuration:\n${errors.join('\n')}`);
  }
  return loaded;
}

export interface Configured {
  readonly config: DeploymentConfig;
  /** The directory deployment.toml is in (apis/, relative paths). */
  readonly dir: string;
  readonly ports: EffectivePorts | undefined;
}

/** The configuration the options give; throws GatewayOptionsError when they give none or it is invalid. */
export function configuredBy(options: GatewayOptions): Configured {
  const loaded = options.loaded ?? (options.configFile !== undefined ? loadFile(options.configFile) : undefined);
  const config = loaded?.config ?? options.config;
  if (config === undefined) throw new GatewayOptionsError('createGateway needs `loaded` (from loadConfig), `configFile` or `config`');
  return { config, dir: loaded?.dir ?? options.dir ?? process.cwd(), ports: loaded?.ports ?? options.ports };
}
