/**
 * throughway's public API, for embedding: importing it starts nothing, opens nothing and reads no file.
 *
 *   const loaded = loadConfig({ file: 'conf/deployment.toml' });
 *   const gateway = createGateway({ loaded });
 *   await gateway.listen();                       // or server.on('connection', gateway.handleConnection)
 *
 * The bare proxy without APIs: createTransport({ route }) with targetFromUrl() for the backends.
 */
import type * as MetricsModule from './observability/metrics';
import type * as HealthModule from './observability/health';
import type * as RoutesModule from './observability/routes';
import type * as ObserveModule from './observability/observe';
import type * as ComponentsModule from './observability/components';
import type * as DemoModule from './demo/backend';
import type * as KeyManagerModule from './keymanager';
import type * as StoreModule from './store/open';

/**
 * Exports that `require('throughway')` does not load: the metrics, health and operations routes
 * (prom-client, @opentelemetry/api), the demo backend, the key manager and the store. Each is a getter that
 * requires its module on first read (Node caches it: later reads are a property look-up); their types are
 * the `export declare` lines below. `test/package/module-count.test.ts` pins what the import loads
 * (docs/performance.md, "Import and start-up").
 */
const ON_FIRST_USE: Readonly<Record<string, readonly string[]>> = {
  './observability/metrics': ['Metrics'],
  './observability/health': ['Health', 'dataSourceChecker', 'backendPoolChecker'],
  './observability/routes': ['opsRoutes'],
  './observability/observe': ['gatewayObserver'],
  './observability/components': ['registerComponentMetrics', 'workerPoolChecker', 'jwksChecker', 'redisChecker', 'THROTTLE_LEVELS'],
  './demo/backend': ['createDemoBackend'],
  './keymanager': ['createKeyManager'],
  './store/open': ['openStore'],
};
for (const [file, names] of Object.entries(ON_FIRST_USE)) {
  for (const name of names) {
    Object.defineProperty(exports, name, { enumerable: true, get: () => (require(file) as Record<string, unknown>)[name] });
  }
}

// The gateway with its embedding surface and observers (lib/embed wraps lib/gateway).
export { createGateway } from './embed';
export type { Gateway, GatewayOptions } from './embed';
export { InternalError, ThroughwayError, UsageError } from './errors';
export { GatewayOptionsError } from './gateway';
export type {
  DeployedApi,
  ReloadReport,
  ApiDefinition,
  ApiState,
  FileStatus,
  ApiDiagnostic,
  TokenEndpoints,
  OAuthCall,
  OAuthAnswer,
} from './gateway';
// Embedding (docs/embedding.md): events, inject(), custom phases and the faults they may answer.
export type {
  GatewayEventMap,
  GatewayEventName,
  GatewayFaultEvent,
  GatewayListener,
  InjectOptions,
  InjectResponse,
  CustomPhase,
  CustomFault,
  PhasePlacement,
} from './embed';
export { gatewayFault, customFault, localAnswer, PhaseOptionsError } from './embed';
export type { CallContext, Outcome, Stop } from './gateway/phases';
export { createTransport, targetFromUrl } from './transport';
export type {
  Transport,
  TransportOptions,
  ListenOptions,
  TargetEndpoint,
  SourceRequest,
  RouteDecision,
  ForwardDecision,
  LocalResponse,
  RouteFn,
  FaultRenderer,
  TransportEvents,
  ExchangeRecord,
  TransportFault,
  TransportSettings,
  WebSocketHooks,
  TunnelInfo,
  Outbound,
  TargetTls,
  ProxyRoute,
} from './transport';
export { loadConfig } from './config/load';
export type { LoadOptions, LoadResult, WrittenKey } from './config/load';
export type { KeyStatus, StatusCounts } from './config/key-status';
export type { DeploymentConfig, EffectivePorts, Diagnostic } from './config/types';
export { createLogger, silentLogger } from './log';
// Tracing and analytics (docs/tracing.md, docs/analytics.md): Gateway.tracer / Gateway.analytics and their stats().
export type { Tracer, TracingStats, Span } from './observability/tracing';
export type { Analytics, AnalyticsStats, AnalyticsEvent } from './observability/analytics';
export type { Logger, LogLevel, ReloadableLogger } from './log';
// Operations (docs/operations.md): metrics and health for an embedding server's own routes. Loaded on
// first read (below: prom-client and its OpenTelemetry peer are 83 modules).
export declare const Metrics: typeof MetricsModule.Metrics;
export type Metrics = MetricsModule.Metrics;
export type { MetricSource, Sample } from './observability/metrics';
export declare const Health: typeof HealthModule.Health;
export type Health = HealthModule.Health;
export declare const dataSourceChecker: typeof HealthModule.dataSourceChecker;
export declare const backendPoolChecker: typeof HealthModule.backendPoolChecker;
export type { HealthChecker, HealthResult, HealthReport } from './observability/health';
export declare const opsRoutes: typeof RoutesModule.opsRoutes;
export type { OpsHandler } from './observability/routes';
export declare const gatewayObserver: typeof ObserveModule.gatewayObserver;
export declare const registerComponentMetrics: typeof ComponentsModule.registerComponentMetrics;
export declare const workerPoolChecker: typeof ComponentsModule.workerPoolChecker;
export declare const jwksChecker: typeof ComponentsModule.jwksChecker;
export declare const redisChecker: typeof ComponentsModule.redisChecker;
export declare const THROTTLE_LEVELS: typeof ComponentsModule.THROTTLE_LEVELS;
export { GATEWAY_FAULTS, ApiCode, GatewayOwnCode } from './faults';
export type { GatewayFaultDef } from './faults';
export { PHASES } from './gateway/phases';
export type { Phase, PhaseName } from './gateway/phases';
export declare const createDemoBackend: typeof DemoModule.createDemoBackend;
// The key manager (docs/key-manager.md): openStore opens [database.apim_db], createKeyManager serves the
// token endpoint, DCR and the admin API; createEventBus is what gateways subscribe to (docs/events.md).
export declare const createKeyManager: typeof KeyManagerModule.createKeyManager;
export type { KeyManager, KeyManagerOptions } from './keymanager';
export declare const openStore: typeof StoreModule.openStore;
export type { Store, Application, OAuthClient, Subscription, SubscriptionState, KeyType, User } from './store/types';
export { createEventBus, EVENT_NAMES } from './events/bus';
export type { EventBus, Event, AnyEvent, EventName, EventPayloads } from './events/bus';
// Gateway security (docs/security.md): keyManagerLink() hands an in-process key manager to createGateway
// (its keys, snapshot, introspection); AuthContext is what the authentication phase leaves on each call.
export { keyManagerLink, ALLOWED_ALGORITHMS } from './security';
export type { KeyManagerLink, Security, SecurityHealth } from './security';
export type { AuthContext, AuthKind, UserType } from './security/auth-context';
// Throttling (docs/throttling.md): createGateway builds it; these are for embedders who pass their own
// counter store or clock (GatewayOptions.throttling) or read policies themselves.
export { MemoryCounterStore, ThrottleConfigError } from './throttle';
export type { Throttle, CounterStore, BlockingCondition, Policies, ThrottleCall, Verdict } from './throttle';
export { loadPolicies, parsePolicies } from './throttle/policies';
