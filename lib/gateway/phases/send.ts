/**
 * The send phase, always last: the endpoint of the call's key type, its suspension, the backend's
 * credentials when the endpoint declares them (../backend-auth.ts), and the forward decision the transport
 * carries out (WebSocket APIs only by handshake, RFC 6455 §4.1; gRPC APIs only by gRPC calls over HTTP/2).
 */
import type { ForwardDecision, WebSocketHooks } from '../../transport/types';
import { ApiCode, GatewayOwnCode, fault } from '../../faults';
import type { CompiledApi } from '../router';
import { isWebSocketHandshake } from '../websocket';
import { stop, type CallContext, type Outcome } from './context';
import { securedForward } from '../backend-auth';
import { subscriptionForward } from '../graphql-api';
import { isGrpcCall } from '../grpc';

export function sendPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const api = ctx.api as CompiledApi;
  const ep = ctx.keyType === 'SANDBOX' ? api.sandbox : api.production;
  if (ep === undefined) {
    // spec 002 part 7: 900901 also for "production or sandbox key without matching endpoint".
    return stop(
      fault(ApiCode.INVALID_CREDENTIALS, {
        description: `The API has no ${ctx.keyType === 'SANDBOX' ? 'sandbox' : 'production'} endpoint`,
      }),
    );
  }
  ctx.endpoint = ep;
  if (ep.suspends) {
    const left = ep.remaining(Date.now());
    if (left > 0) return stop(fault(GatewayOwnCode.ENDPOINT_SUSPENDED, { retryAfterMs: left }));
    ctx.rt.track(ctx.req, ep);
  }
  if (ctx.beforeSend !== undefined) ctx.beforeSend(ctx);
  const base = ep.target.basePath;
  const path = base + ctx.rest;
  const forward: ForwardDecision = {
    target: ep.target,
    path: (path === '' ? '/' : path) + ctx.query,
    headers: ctx.outHeaders,
    responseHeaders: responseFields(ctx),
    dropResponseHeaders: ctx.rt.headers.dropFromResponse,
    timeout: ep.def.timeout,
    retry: ep.retry,
    body: ctx.body,
    bufferResponse: ctx.responseHook,
  };
  const type = api.def.type;
  if (type !== 'HTTP') {
    if (type === 'WS') {
      // A WebSocket API is reached only by handshakes (RFC 6455 §4.1); 103083 otherwise.
      if (!isWebSocketHandshake(ctx.req)) return stop(fault(GatewayOwnCode.WEBSOCKET_UPGRADE_REQUIRED));
      const ws = { ...forward, websocket: ctx.websocket ?? NO_HOOKS };
      return ep.auth === undefined ? { forward: ws } : securedForward(ctx, ep.auth, ws, false);
    }
    // A gRPC API only by gRPC calls over HTTP/2, which lib/http2/grpc.ts relays (docs/grpc.md); 103210 otherwise.
    if (type === 'GRPC') return isGrpcCall(ctx.req) ? { forward } : stop(fault(GatewayOwnCode.GRPC_REQUIRED));
  }
  // A GraphQL API's subscriptions: graphql-transport-ws over a handshake to the same context (docs/graphql.md).
  const gq = api.def.graphql;
  if (gq !== undefined && isWebSocketHandshake(ctx.req)) {
    const ws = subscriptionForward(ctx, gq, forward);
    return ep.auth === undefined ? { forward: ws } : securedForward(ctx, ep.auth, ws, false);
  }
  return ep.auth === undefined ? { forward } : securedForward(ctx, ep.auth, forward, true);
}

const NO_HOOKS: WebSocketHooks = Object.freeze({});

/** CORS and rate-limit fields of a forwarded call (undefined: none, the pass-through path allocates nothing). */
function responseFields(ctx: CallContext): readonly string[] | undefined {
  const cors = ctx.corsFields !== undefined && ctx.corsFields.length > 0 ? ctx.corsFields : undefined;
  const rl = ctx.rateLimitFields;
  if (rl === undefined) return cors;
  return cors === undefined ? rl : [...cors, ...rl];
}
