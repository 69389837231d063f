/**
 * The bare pass-through transport, usable alone: createTransport({ route }) gives a proxy that listens on
 * its own port or takes sockets another server accepted (handleConnection). It knows nothing about APIs
 * or tokens; lib/gateway routes through it.
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import { TransportCore, defaultConnect, defaultRenderFault, type ConnectFn, type TransportStats } from './core';
import { SourceConnection } from './source';
import { resolveSettings, type TransportSettings } from './settings';
import { selfTest } from './parser';
import { silentLogger, type Logger } from '../observability/log';
import type { FaultRenderer, RouteFn, TransportEvents } from './types';

export interface TransportOptions {
  /** Decides, per request head, where it goes (or answers it). */
  readonly route: RouteFn;
  readonly settings?: Partial<TransportSettings>;
  readonly logger?: Logger;
  readonly renderFault?: FaultRenderer;
  readonly events?: TransportEvents;
  /** How backend sockets are opened (tests inject failures here; default net.connect). */
  readonly connect?: ConnectFn;
}

export interface ListenOptions {
  readonly port: number;
  readonly host?: string;
  readonly backlog?: number;
}

export interface Transport {
  readonly settings: TransportSettings;
  readonly stats: Readonly<TransportStats>;
  /** Open connections: sources (clients), targets (backend sockets, idle ones included). */
  connections(): { readonly sources: number; readonly targets: number; readonly idleTargets: number; readonly inFlight: number; readonly queued: number };
  /** Serve a socket accepted elsewhere (an embedding server's 'connection' event). */
  handleConnection(socket: net.Socket, secure?: boolean): void;
  /** Listen on a port of its own (max_open_connections applies). */
  listen(options: ListenOptions): Promise<net.AddressInfo>;
  /** Stop accepting, finish in-flight exchanges within shutdownTimeout, close idle keep-alives. */
  close(): Promise<void>;
}

let selfTested = false;

export function createTransport(options: TransportOptions): Transport {
  if (!selfTested) {
    // A parser that mis-splits headers corrupts traffic silently: refuse to start instead.
    selfTest();
    selfTested = true;
  }
  const settings = resolveSettings(options.settings);
  const core = new TransportCore(
    settings,
    options.route,
    options.renderFault ?? defaultRenderFault,
    options.logger ?? silentLogger,
    options.events ?? {},
    options.connect ?? defaultConnect(settings.highWaterMark),
  );
  const servers: net.Server[] = [];

  const handleConnection = (socket: net.Socket, secure = false): void => {
    if (core.closing) {
      socket.destroy();
      return;
    }
    core.now = performance.now();
    core.startSweep();
    socket.setNoDelay(true);
    new SourceConnection(core, socket, secure);
  };

  return {
    settings,
    stats: core.stats,
    connections() {
      let idle = 0;
      for (const p of core.pools.values()) idle += p.idle.length;
      return { sources: core.sources.size, targets: core.targets.size, idleTargets: idle, inFlight: core.inFlight, queued: core.queued };
    },
    handleConnection,
    listen(opts) {
      return new Promise((resolve, reject) => {
        // allowHalfOpen: a client that half-closes after its request still gets its response.
        const server = net.createServer({ allowHalfOpen: true, noDelay: true, highWaterMark: settings.highWaterMark }, (socket) => handleConnection(socket));
        if (settings.maxOpenConnections > 0) server.maxConnections = settings.maxOpenConnections;
        server.once('error', reject);
        server.listen({ port: opts.port, host: opts.host ?? '0.0.0.0', backlog: opts.backlog ?? 511 }, () => {
          server.off('error', reject);
          servers.push(server);
          resolve(server.address() as net.AddressInfo);
        });
      });
    },
    async close() {
      const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      servers.length = 0;
      await core.shutdown(settings.shutdownTimeout);
      await Promise.all(closed);
    },
  };
}

export { targetFromUrl } from './types';
export type { TargetEndpoint, SourceRequest, RouteDecision, ForwardDecision, RetryPolicy, LocalResponse, RouteFn, FaultRenderer, TransportEvents, ExchangeRecord } from './types';
export { ProtocolState, STATE_NAMES, TRANSITIONS, stateName } from './states';
export { TransportBase, OwnCode, FAULT_KINDS, makeFault, faultJson, type TransportFault, type FaultReason, type Side } from './codes';
export { DEFAULT_TRANSPORT_SETTINGS, type TransportSettings } from './settings';
