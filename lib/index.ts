/**
 * throughway's public API, for embedding: importing it starts nothing, opens nothing and reads no file.
 *
 *   const loaded = loadConfig({ file: 'conf/deployment.toml' });
 *   const gateway = createGateway({ loaded });
 *   await gateway.listen();                       // or server.on('connection', gateway.handleConnection)
 *
 * The bare proxy without APIs: createTransport({ route }) with targetFromUrl() for the backends.
 */
// The gateway with its embedding surface and observers (lib/embed wraps lib/gateway).
export { createGateway } from './embed';
export type { Gateway, GatewayOptions } from './embed';
export { GatewayOptionsError } from './gateway';
export type { DeployedApi, ReloadReport, ApiDefinition, ApiState, FileStatus, ApiDiagnostic, TokenEndpoints, OAuthCall, OAuthAnswer } from './gateway';
// Embedding (docs/embedding.md): events, inject(), custom phases and the faults they may answer.
export type { GatewayEventMap, GatewayEventName, GatewayFaultEvent, GatewayListener, InjectOptions, InjectResponse, CustomPhase, CustomFault, PhasePlacement } from './embed';
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
// Operations (docs/operations.md): metrics and health for an embedding server's own routes.
export { Metrics } from './observability/metrics';
export type { MetricSource, Sample } from './observability/metrics';
export { Health, dataSourceChecker, backendPoolChecker } from './observability/health';
export type { HealthChecker, HealthResult, HealthReport } from './observability/health';
export { opsRoutes, type OpsHandler } from './observability/routes';
export { gatewayObserver } from './observability/observe';
export { registerComponentMetrics, workerPoolChecker, jwksChecker, redisChecker, THROTTLE_LEVELS } from './observability/components';
export { GATEWAY_FAULTS, ApiCode, GatewayOwnCode } from './faults';
export type { GatewayFaultDef } from './faults';
export { PHASES } from './gateway/phases';
export type { Phase, PhaseName } from './gateway/phases';
export { createDemoBackend } from './demo/backend';
// The key manager (docs/key-manager.md): openStore opens [database.apim_db], createKeyManager serves the
// token endpoint, DCR and the admin API; createEventBus is what gateways subscribe to (docs/events.md).
export { createKeyManager } from './keymanager';
export type { KeyManager, KeyManagerOptions } from './keymanager';
export { openStore } from './store/open';
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
