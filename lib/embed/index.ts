/**
 * The gateway as embedders get it (lib/index.ts exports this createGateway): the gateway of lib/gateway,
 * wrapped with the embedding surface (docs/embedding.md): events (`on('fault' | 'request')`), inject(),
 * the (req, res) handler, handleUpgrade and custom phases; and with the access log, tracing and analytics
 * observing its calls (lib/observability/calls.ts), made from the configuration.
 */
import type * as http from 'node:http';
import type * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { silentLogger } from '../log';
import {
  createGateway as createCore,
  type Gateway as GatewayCore,
  type GatewayControls,
  type GatewayOptions as CoreOptions,
} from '../gateway';
import { PHASES } from '../gateway/phases';
import type { TransportEvents } from '../transport/types';
import type { Analytics } from '../observability/analytics';
import { callObservers, type CallObservers } from '../observability/calls';
import type { Tracer } from '../observability/tracing';
import { GatewayEvents, gatewayFaultEvent, transportFaultEvent, type GatewayEventName, type GatewayListener } from './events';
import { requestListener } from './handler';
import { inject, type InjectOptions, type InjectResponse } from './inject';
import { chainWith, type PhasePlacement } from './phases';
import { replay } from './upgrade';

export interface GatewayOptions extends Omit<CoreOptions, 'chain' | 'observeCalls' | 'tap'> {
  /**
   * Tracing and analytics (docs/tracing.md, docs/analytics.md); default: made from [apim.open_tracer] and
   * [apim.analytics] when they are on. The gateway flushes and closes them in close().
   */
  readonly tracer?: Tracer;
  readonly analytics?: Analytics;
  /** Custom phases placed before or after built-in ones (lib/embed/phases.ts, docs/embedding.md). */
  readonly phases?: readonly PhasePlacement[];
}

export interface Gateway extends GatewayCore {
  /** Tracing when on (its stats(): spans sent, dropped, queued), else undefined. */
  readonly tracer: Tracer | undefined;
  /** Analytics events when on (its stats(): events sent, dropped, queued), else undefined. */
  readonly analytics: Analytics | undefined;
  /**
   * For a node:http server's 'upgrade' event: the socket goes to the transport with the consumed request
   * head replayed; a WebSocket handshake to a WS API is tunnelled, any other upgrade answered as a plain call.
   */
  handleUpgrade(req: http.IncomingMessage, socket: Duplex, head?: Buffer): void;
  /** A (req, res) listener for node:http / Express / Fastify apps: the slower path (docs/embedding.md). */
  readonly handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  /** Runs one request through the whole chain without a client socket; the backend is real. */
  inject(options: InjectOptions): Promise<InjectResponse>;
  /** 'fault': every fault answered; 'request': every finished exchange. Costs nothing while nobody listens. */
  on<K extends GatewayEventName>(event: K, listener: GatewayListener<K>): this;
  off<K extends GatewayEventName>(event: K, listener: GatewayListener<K>): this;
}

/** The events' view of the transport's: emitted after the gateway's own handling of each. */
function eventTap(events: GatewayEvents): TransportEvents {
  return {
    onFault(f, req) {
      if (events.has('fault')) events.emit('fault', transportFaultEvent(f, req));
    },
    onExchange(r) {
      if (events.has('request')) events.emit('request', r);
      // Transport faults were reported by onFault when they happened; a phase's fault shows here.
      if (r.faultCode !== undefined && r.fault === undefined && events.has('fault')) events.emit('fault', gatewayFaultEvent(r));
    },
  };
}

export function createGateway(options: GatewayOptions): Gateway {
  const { tracer, analytics, phases, ...rest } = options;
  const logger = options.logger ?? silentLogger;
  let observers: CallObservers | undefined;
  let controls: GatewayControls | undefined;
  const events = new GatewayEvents(logger, () => controls?.recordExchanges());
  const core = createCore({
    ...rest,
    ...(phases !== undefined && phases.length > 0 ? { chain: chainWith(PHASES, phases, logger) } : {}),
    observeCalls: (config, settings, log) =>
      (observers = callObservers(config, settings, {
        ...(tracer !== undefined ? { tracer } : {}),
        ...(analytics !== undefined ? { analytics } : {}),
        logger: log,
      })).observer,
    tap: (c) => {
      controls = c;
      return eventTap(events);
    },
  });
  const own = controls as unknown as GatewayControls;
  const transport = core.transport;
  const serve = (socket: net.Socket, secure: boolean): void => transport.handleConnection(socket, secure);
  const handler = requestListener(serve, (res, req, code) => {
    const f = own.ownFault(code);
    if (events.has('fault'))
      events.emit('fault', {
        code: f.faultCode ?? code,
        status: f.status,
        source: 'gateway',
        method: req.method,
        url: req.url,
        remoteAddress: req.socket?.remoteAddress,
        transportFault: undefined,
      });
    res.writeHead(f.status, f.headers as unknown as http.OutgoingHttpHeaders);
    res.end(f.body);
  });
  const gateway: Gateway = {
    ...core,
    tracer: observers?.tracer,
    analytics: observers?.analytics,
    handleUpgrade(req, socket, head) {
      // The transport tunnels upgrades (Transport.tunnelsUpgrades): it reads the replayed head as if it had
      // accepted the socket, so a handshake to a WS API becomes a tunnel and any other upgrade a plain call.
      const secure = (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
      replay(req, socket, head);
      transport.handleConnection(socket as net.Socket, secure);
    },
    handler,
    inject: (o) => inject(serve, o),
    on(event, listener) {
      events.on(event, listener);
      return gateway;
    },
    off(event, listener) {
      events.off(event, listener);
      return gateway;
    },
  };
  return gateway;
}

export { gatewayFault, customFault, localAnswer, PhaseOptionsError } from './phases';
export type { CustomPhase, CustomFault, PhasePlacement } from './phases';
export type { GatewayEventMap, GatewayEventName, GatewayFaultEvent, GatewayListener } from './events';
export type { InjectOptions, InjectResponse } from './inject';
