/**
 * The gateway: the API runtime over the pass-through transport. createGateway() puts together the parts
 * (assembly.ts), deploys the APIs (reload.ts), and hands the transport the phase chain as its router, the
 * fault renderer and its event handling (wiring.ts). The floors above fill its hook points (hooks.ts):
 * lib/observability observes calls, lib/embed adds the embedding surface (docs/embedding.md).
 */
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import { createTransport, type ListenOptions, type Transport } from '../transport';
import type { RouteFn } from '../transport/types';
import type { Security } from '../security';
import type { Throttle } from '../throttle';
import type { Mediation } from '../mediation';
import { assemble } from './assembly';
import type { ApiState } from './deploy';
import type { GatewayOptions } from './options';
import { PHASES } from './phases';
import { Deployment, describe, type DeployedApi, type ReloadOptions, type ReloadReport } from './reload';
import type { GatewaySettings } from './settings';
import { transportSettingsFrom } from './transport-settings';
import { eventsOf, faultRendererOf, routerOf } from './wiring';
import { tokenRoute } from './token-route';
import type { GrpcGateway } from './grpc';

export interface Gateway {
  readonly transport: Transport;
  /** Payload validation, scripts and conversion; its worker pool starts on first use (docs/mediation.md). */
  readonly mediation: Mediation;
  readonly settings: GatewaySettings;
  /** Token validation, token cache, subscriptions (docs/security.md). */
  readonly security: Security;
  /** Throttling: the engine, its counters and the blocking conditions in force. */
  readonly throttle: Throttle;
  /** The phase chain as a router: what the transport calls per request head (another transport may too). */
  readonly route: RouteFn;
  /** Listen on the gateway HTTP port ([transport.passthru_http] listener port + offset) unless told otherwise. */
  listen(options?: Partial<ListenOptions>): Promise<net.AddressInfo>;
  /** Listen with TLS (HTTPS 8243, WSS 8099: docs/tls.md); the server can take new certificates. */
  listenTls(options: ListenOptions, tlsOptions: tls.TlsOptions): Promise<tls.Server>;
  handleConnection(socket: net.Socket, secure?: boolean, clientVersion?: string): void;
  /**
   * Re-reads the apis/ directory (or re-validates the APIs given in code) and the fault templates.
   * `{ apis }` replaces the definitions of a gateway created with `apis` (programmatic hot deploy).
   */
  reload(options?: ReloadOptions): ReloadReport;
  /** Where the APIs come from: the apis/ directory, the origin of `apiTexts`, or "code" (`apis`). */
  readonly apiSource: string;
  /** What is deployed now. */
  deployed(): readonly DeployedApi[];
  /** Every API file or definition and what became of it. */
  states(): readonly ApiState[];
  /** The deployed API ("name:version") a request target belongs to (a gRPC call's: its service's), for metrics labels. */
  apiOf(url: string): string | undefined;
  /** The gRPC relay's view of the gateway (lib/http2/grpc.ts, docs/grpc.md). */
  readonly grpc: GrpcGateway;
  close(): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const p = assemble(options);
  const { config, ports } = p;
  const d = new Deployment(p, options.apis, options.watch !== false);
  const tokens = options.tokenEndpoints !== undefined ? tokenRoute(options.tokenEndpoints, (url) => p.registry.target(url)) : undefined;
  const { route, calls } = routerOf(d, options.chain ?? PHASES, p.observer, tokens);
  const wiring = eventsOf(p, d, calls, { observe: options.observe, codeApis: options.apis !== undefined, tap: options.tap });
  const transport = createTransport({
    route,
    settings: { ...transportSettingsFrom(config), ...options.transport },
    logger: p.logger,
    renderFault: faultRendererOf(d),
    events: wiring.events,
    ...(options.connect !== undefined ? { connect: options.connect } : {}),
  });
  d.start();
  return {
    transport,
    mediation: p.mediation,
    settings: p.settings,
    security: p.security,
    throttle: p.throttle,
    route,
    apiSource: p.texts?.origin ?? p.directory?.dir ?? 'code',
    listen(opts = {}) {
      const port = opts.port ?? ports?.passthruHttp ?? 8280;
      const host = opts.host ?? config.transport.passthru_http.listener['bind-address'] ?? '0.0.0.0';
      return transport.listen({
        port,
        host,
        backlog: opts.backlog ?? config.throughway.backlog,
        ...(opts.handover !== undefined ? { handover: opts.handover } : {}),
      });
    },
    listenTls: (opts, tlsOptions) => transport.listenTls({ ...opts, backlog: opts.backlog ?? config.throughway.backlog }, tlsOptions),
    handleConnection: (socket, secure, clientVersion) => transport.handleConnection(socket, secure, clientVersion),
    reload: (o) => d.reload(o),
    deployed: () => describe(d.states),
    states: () => d.states,
    apiOf(url) {
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const table = d.rt.table;
      const id = table.lookup(path)?.api.id;
      if (id !== undefined || table.grpcServices.size === 0) return id;
      return table.grpcServices.get(path.slice(1, path.indexOf('/', 1) >>> 0))?.id;
    },
    grpc: {
      prefixOf: (service) => d.rt.table.grpcServices.get(service)?.path,
      route,
      exchanged: (r) => wiring.events.onExchange?.(r),
      faulted: (f, req) => wiring.events.onFault?.(f, req),
    },
    async close() {
      p.directory?.unwatch();
      p.security.close();
      for (const u of p.unsubscribe) u();
      await transport.close();
      await p.throttle.close();
      await p.mediation.close();
      // After the transport: every in-flight call's line, span and event is recorded before the last flush.
      await p.observer?.close();
    },
  };
}

export { type ApiDefinition } from './apis';
export { GatewayOptionsError, type GatewayOptions } from './options';
export type { DeployedApi, ReloadReport } from './reload';
export type { CallObserver, ChainObserver, GatewayControls, GatewayTap } from './hooks';
export type { ApiState, ApiText, FileStatus } from './deploy';
export type { ApiDiagnostic } from './diagnostics';
export type { OAuthAnswer, OAuthCall, TokenEndpoints } from './token-route';
export { grpcRequest, type GrpcGateway } from './grpc';
