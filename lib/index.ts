/**
 * throughway's public API, for embedding: importing it starts nothing, opens nothing and reads no file.
 *
 *   const loaded = loadConfig({ file: 'conf/deployment.toml' });
 *   const gateway = createGateway({ loaded });
 *   await gateway.listen();                       // or server.on('connection', gateway.handleConnection)
 *
 * The bare proxy without APIs: createTransport({ route }) with targetFromUrl() for the backends.
 */
export { createGateway } from './gateway';
export type { Gateway, GatewayOptions, DeployedApi, ReloadReport, ApiDefinition, ApiState, FileStatus, ApiDiagnostic } from './gateway';
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
export type { LoadOptions, LoadResult } from './config/load';
export type { DeploymentConfig, EffectivePorts, Diagnostic } from './config/types';
export { createLogger, silentLogger } from './observability/log';
export type { Logger, LogLevel } from './observability/log';
export { GATEWAY_FAULTS, ApiCode, GatewayOwnCode } from './gateway/faults';
export type { GatewayFaultDef } from './gateway/faults';
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
