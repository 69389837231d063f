/**
 * What a gateway is made of, built in the order each part needs the ones before it: settings, CORS and
 * header rules, the backend endpoints, throttling, the API source, the call observer,
 * security and mediation. Each constructor that refuses its configuration throws here, before anything
 * listens.
 */
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import type { SourceRequest } from '../transport/types';
import { silentLogger, type Logger } from '../log';
import { Security, securitySettingsFrom } from '../security';
import { createThrottle, type Throttle } from '../throttle';
import { throttleSettingsFrom } from '../throttle/settings';
import { outboundFrom } from '../tls/settings';
import { Mediation, mediationSettingsFrom } from '../mediation';
import { CorsPolicy } from './cors';
import { ApiDirectory, ApiTexts } from './deploy';
import { EndpointRegistry, type EndpointRuntime } from './endpoints';
import type { CallObserver } from './hooks';
import { configuredBy, GatewayOptionsError, type GatewayOptions } from './options';
import { gatewaySettingsFrom, type GatewaySettings } from './settings';
import { HeaderRules } from './transport-headers';
import type { TenantDirectory } from '../tenants';
import { NO_PLUGINS, type PluginCatalogue } from './steps';

export interface GatewayParts {
  readonly config: DeploymentConfig;
  readonly ports: EffectivePorts | undefined;
  readonly logger: Logger;
  readonly settings: GatewaySettings;
  readonly globalCors: CorsPolicy;
  readonly headers: HeaderRules;
  readonly registry: EndpointRegistry;
  /** Calls in flight to suspending endpoints, so a transport fault can reach its endpoint. */
  readonly tracked: WeakMap<SourceRequest, EndpointRuntime>;
  readonly throttle: Throttle;
  /** Subscriptions to the key manager's events, ended by close(). */
  readonly unsubscribe: readonly (() => void)[];
  readonly texts: ApiTexts | undefined;
  readonly directory: ApiDirectory | undefined;
  readonly observer: CallObserver | undefined;
  readonly security: Security;
  readonly mediation: Mediation;
  /** The tenants (lib/tenants), given by the node that runs the key manager; undefined: none. */
  readonly tenants: TenantDirectory | undefined;
  /** What API files may attach (GatewayOptions.plugins; NO_PLUGINS without). */
  readonly plugins: PluginCatalogue;
}

export function assemble(options: GatewayOptions): GatewayParts {
  const { config, dir, ports } = configuredBy(options);
  const logger = options.logger ?? silentLogger;
  const settings = gatewaySettingsFrom(config, dir, ports, options.cwd);
  // Throws CorsConfigError for allow_credentials with the origin * (spec 000, [apim.cors]).
  const globalCors = new CorsPolicy(settings.cors);
  const headers = new HeaderRules(settings.headerRules);
  // Paths in [transport.passthru_https] resolve like the store's: against the working directory.
  const registry = new EndpointRegistry(options.outbound ?? outboundFrom(config, options.cwd ?? process.cwd()), logger, options.now);
  // Throws ThrottleConfigError for an invalid policies file: a gateway never runs with limits it cannot read.
  const throttle = createThrottle({ settings: throttleSettingsFrom(config, dir), logger, ...options.throttling });
  const unsubscribe: (() => void)[] = [];
  if (options.events !== undefined) {
    unsubscribe.push(options.events.on('blocking.added', (e) => throttle.blocking.add(e.payload.condition)));
    unsubscribe.push(options.events.on('blocking.removed', (e) => void throttle.blocking.remove(e.payload.condition.id)));
  }
  if (options.apis !== undefined && options.apiTexts !== undefined)
    throw new GatewayOptionsError('createGateway takes `apis` or `apiTexts`, not both');
  const texts =
    options.apiTexts !== undefined
      ? new ApiTexts(options.apiTexts.origin, options.apiTexts.entries, settings.vars, throttle.names(), settings.scriptDirs)
      : undefined;
  const directory =
    options.apis === undefined && texts === undefined
      ? new ApiDirectory(settings.apisDir, settings.vars, throttle.names(), settings.scriptDirs)
      : undefined;
  const files = texts ?? directory;
  if (files !== undefined) files.plugins = options.plugins ?? NO_PLUGINS;
  const observer = options.observeCalls?.(config, settings, logger);
  const security = new Security({
    settings: securitySettingsFrom(config),
    logger,
    ...(options.keyManager !== undefined ? { keyManager: options.keyManager } : {}),
    ...(options.events !== undefined ? { events: options.events } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
    ...(options.tenants !== undefined ? { tenants: options.tenants } : {}),
    crossTenantSubscriptions: config.apim.devportal.enable_cross_tenant_subscriptions === true,
  });
  // Throws FormatConfigError for an unknown builder/formatter class (naming the alternatives). The worker
  // pool inside is created on the first call that needs it.
  const mediation = new Mediation({ settings: mediationSettingsFrom(config), logger });
  return {
    config,
    ports,
    logger,
    settings,
    globalCors,
    headers,
    registry,
    tracked: new WeakMap(),
    throttle,
    unsubscribe,
    texts,
    directory,
    observer,
    security,
    mediation,
    tenants: options.tenants,
    plugins: options.plugins ?? NO_PLUGINS,
  };
}
