/**
 * The gateway as the transport sees it: the phase chain as its router, the renderer of its faults, and
 * what the gateway does with its events (endpoint suspension, the call observer, the node's `observe`,
 * then the tap of lib/embed).
 */
import type { TransportFault } from '../transport/codes';
import type {
  ExchangeRecord,
  FaultRenderer,
  LocalResponse,
  RouteDecision,
  RouteFn,
  SourceRequest,
  TransportEvents,
} from '../transport/types';
import { fault, gatewayFacts, renderFacts, transportFacts } from '../faults';
import type { GatewayParts } from './assembly';
import { corsRequest } from './cors';
import type { CallObserver, GatewayControls } from './hooks';
import { CallContext, runChain, runChainObserved, type ChainStep } from './phases';
import type { Deployment } from './reload';
import type { TenantDirectory } from '../tenants';
import { handshakeRequest, isWebSocketHandshake } from './websocket';
import { tokenEndpointOf, type OAuthEndpoint } from './token-route';

/** The answer for `/token` and `/revoke` (token-route.ts tokenRoute). */
export type TokenRouter = (which: OAuthEndpoint, req: SourceRequest) => Promise<RouteDecision>;

export interface Router {
  readonly route: RouteFn;
  /**
   * The route keeps each request's call in the request (SourceRequest.call) for the call observer, which
   * reads it at the exchange's end (takeCall). A map from request to call cost about 1.2k instructions per
   * call under callgrind (docs/performance.md).
   */
  readonly calls: boolean;
}

/**
 * Three routers, chosen once: without a call observer the plain chain runs untouched. With `tokens`
 * (token-route.ts), `/token` and `/revoke` are answered before routing.
 */
export function routerOf(d: Deployment, chain: readonly ChainStep[], observer: CallObserver | undefined, tokens?: TokenRouter): Router {
  const r = chainRouterOf(d, chain, observer);
  if (tokens === undefined) return r;
  const chained = r.route;
  return {
    route: (req) => {
      const which = tokenEndpointOf(req.url);
      return which === undefined ? chained(req) : tokens(which, req);
    },
    calls: r.calls,
  };
}

function chainRouterOf(d: Deployment, steps: readonly ChainStep[], observer: CallObserver | undefined): Router {
  // Run over a plain copy: `phases[i]` on the frozen PHASES array went through V8's generic keyed-load
  // builtin on every step (callgrind: about 620 instructions per call; docs/performance.md).
  const chain = [...steps];
  // An Upgrade request (rare) may carry its token as access_token (websocket.ts); others go straight in.
  const callOf = (req: SourceRequest): CallContext =>
    new CallContext(req.upgrade === true && isWebSocketHandshake(req) ? handshakeRequest(req) : req, d.rt);
  if (observer === undefined || !observer.calls)
    return { route: (req: SourceRequest): RouteDecision | Promise<RouteDecision> => runChain(callOf(req), chain), calls: false };
  // Records come only from the gateway's own transport, whose requests have the field; a request made by
  // hand without it (maybe frozen) never comes back in one, so nothing is kept for it.
  const keep = (req: SourceRequest, ctx: CallContext): void => {
    if ('call' in req) req.call = ctx;
  };
  const observed = observer.chain;
  const route =
    observed === undefined
      ? (req: SourceRequest): RouteDecision | Promise<RouteDecision> => {
          const ctx = callOf(req);
          keep(req, ctx);
          return runChain(ctx, chain);
        }
      : (req: SourceRequest): RouteDecision | Promise<RouteDecision> => {
          const ctx = callOf(req);
          keep(req, ctx);
          return observed.start(ctx) ? runChainObserved(ctx, chain, observed) : runChain(ctx, chain);
        };
  return { route, calls: true };
}

/**
 * The call the route kept in `req`, taken out of it: an exchange's request stays referenced by its
 * connection until the next one, and an idle keep-alive connection must not hold a finished call.
 */
function takeCall(req: SourceRequest): CallContext | undefined {
  const ctx = req.call as CallContext | undefined;
  if (ctx !== undefined) req.call = undefined;
  return ctx;
}

/**
 * Counts a tenant URL's exchange (`/t/<domain>/...`, docs/tenants.md) against the tenant's bandwidth:
 * the request body and response bytes the transport already counted. One character compare for every
 * other URL.
 */
function countTenantBytes(tenants: TenantDirectory, r: ExchangeRecord): void {
  const url = r.url;
  if (url.charCodeAt(1) !== 116 || url.charCodeAt(2) !== 47 || url.charCodeAt(0) !== 47) return;
  const end = url.indexOf('/', 3);
  if (end < 0) return;
  tenants.countBytes?.(url.slice(3, end), r.requestBytes + r.responseBytes);
}

/** Transport faults through the same table, templates and CORS fields as the gateway's own. */
export function faultRendererOf(d: Deployment): FaultRenderer {
  return (f: TransportFault, req: SourceRequest | undefined): LocalResponse => {
    const current = d.rt;
    let extra: readonly string[] = [];
    if (req !== undefined) {
      const q = req.url.indexOf('?');
      const entry = current.table.lookup(q < 0 ? req.url : req.url.slice(0, q));
      const cors = (entry?.api.cors ?? current.cors).responseFields(corsRequest(req).origin);
      const echoed = current.headers.echoed(req.method, req.headers);
      extra = echoed.length === 0 ? cors : [...cors, ...echoed];
    }
    return renderFacts(transportFacts(f), extra, current.templates, current.headers.dropFromResponseSet);
  };
}

export interface EventWiring {
  /** What the transport is given; its onExchange may be set later (recordExchanges). */
  readonly events: TransportEvents;
  readonly controls: GatewayControls;
}

/**
 * The gateway's handling of transport events. Endpoint suspension learns of successes from exchange
 * records, so they are made whenever APIs can be deployed; otherwise only for the call observer or
 * `observe`, and for the tap once it asks (recordExchanges).
 */
export function eventsOf(
  p: GatewayParts,
  d: Deployment,
  calls: Router['calls'],
  o: {
    readonly observe: TransportEvents | undefined;
    readonly codeApis: boolean;
    readonly tap: ((c: GatewayControls) => TransportEvents) | undefined;
  },
): EventWiring {
  const { logger, tracked, registry, observer } = p;
  // Bytes are counted only when a billing package limits bandwidth (docs/tenants.md, "Billing packages"):
  // otherwise no exchange looks at its URL for a tenant. Calls are counted by the route phase.
  const tenants = p.tenants?.metersBandwidth === true && p.tenants.countBytes !== undefined ? p.tenants : undefined;
  const observe = o.observe;
  let tap: TransportEvents | undefined;
  const onFault = (f: TransportFault, req: SourceRequest | undefined): void => {
    observe?.onFault?.(f, req);
    if (req !== undefined) {
      const ep = tracked.get(req);
      if (ep !== undefined) {
        const ms = ep.failed(f, Date.now());
        if (ms > 0)
          logger.log('warn', 'endpoint_suspended', { endpoint: ep.def.url, code: f.code, base: f.base, state: f.state, durationMs: ms });
      }
    }
    tap?.onFault?.(f, req);
  };
  const onExchange = (r: ExchangeRecord): void => {
    if (registry.suspendingByKey.size > 0 && r.target !== undefined && r.fault === undefined && r.faultCode === undefined) {
      const list = registry.suspendingByKey.get(r.target);
      if (list !== undefined) {
        const now = Date.now();
        for (const ep of list) ep.succeeded(now);
      }
    }
    if (tenants !== undefined) countTenantBytes(tenants, r);
    if (observer !== undefined) {
      const ctx = calls && r.request !== undefined ? takeCall(r.request) : undefined;
      observer.ended(ctx, r);
    }
    observe?.onExchange?.(r);
    tap?.onExchange?.(r);
  };
  const files = p.directory ?? p.texts;
  const needExchange =
    observer !== undefined || files !== undefined || o.codeApis || observe?.onExchange !== undefined || tenants !== undefined;
  const events: { onFault: typeof onFault; onExchange?: typeof onExchange } = needExchange ? { onFault, onExchange } : { onFault };
  const controls: GatewayControls = {
    // The transport reads events.onExchange per exchange, so setting it starts the records.
    recordExchanges: () => void (events.onExchange ??= onExchange),
    ownFault: (code) => {
      const current = d.rt;
      return renderFacts(gatewayFacts(fault(code)), [], current.templates, current.headers.dropFromResponseSet);
    },
  };
  tap = o.tap?.(controls);
  return { events, controls };
}
