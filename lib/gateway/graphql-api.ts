/**
 * GraphQL APIs in the route phase (docs/graphql.md): the query of a call is read the GraphQL-over-HTTP
 * way (GET query string, POST body gathered up to the API's max_query_bytes), analysed against the API's
 * schema by lib/graphql, and the operation put on the call (`ctx.graphql`) for the authentication phase
 * (each field's scopes) and the throttling phase (each field's policy). Refusals are the route phase's
 * faults: 900422 (syntax, spec 002 part 7) and the 103180–103199 block. The request is forwarded unchanged:
 * a gathered body is the one the transport sends, so a request a backend could read otherwise than the
 * gateway did is refused (103188, lib/graphql/request.ts).
 */
import { ApiCode, GatewayOwnCode, fault, type FaultValue, type GatewayCode } from '../faults';
import {
  fieldPolicies,
  missingScope,
  POOL_QUERY_CHARS,
  rulesOf,
  tierExcess,
  WORKER_FILE,
  type Analysis,
  type AnalysisFailure,
  type Operation,
  type OperationRule,
} from '../graphql';
import type { AnalyseAnswer, AnalyseTask } from '../graphql/worker';
import { PoolError } from '../mediation';
import { fromBody, fromQueryString, socketMessage, type RequestRead } from '../graphql/request';
import type { ClientMessageVerdict, ForwardDecision, WebSocketHooks } from '../transport/types';
import { headerValue, sameLower } from '../transport/headers';
import type { GraphqlApi } from './apis';
import { isWebSocketHandshake } from './websocket';
import { throttleCall } from './throttle-call';
import { CONTINUE, stop, type CallContext, type Outcome } from './phases/context';

/** The fault of each refusal of the GraphQL service (lib/graphql), here and in the throttling phase (tier limits). */
export const GRAPHQL_FAILURE_CODE: Readonly<Record<AnalysisFailure['kind'], GatewayCode>> = {
  syntax: ApiCode.INVALID_GRAPHQL_QUERY,
  invalid: GatewayOwnCode.GRAPHQL_INVALID,
  operation: GatewayOwnCode.GRAPHQL_BAD_REQUEST,
  introspection: GatewayOwnCode.GRAPHQL_INTROSPECTION,
  depth: GatewayOwnCode.GRAPHQL_TOO_DEEP,
  complexity: GatewayOwnCode.GRAPHQL_TOO_COMPLEX,
};

/** The query of a call to a GraphQL API: CONTINUE with `ctx.graphql` set, or the fault. */
export function graphqlQuery(ctx: CallContext, gq: GraphqlApi): Outcome | Promise<Outcome> {
  const req = ctx.req;
  const method = req.method;
  // A preflight asks nothing of the schema; a handshake opens a graphql-transport-ws tunnel (docs/graphql.md).
  if (method === 'OPTIONS' || isWebSocketHandshake(req)) return CONTINUE;
  if (method === 'GET' || method === 'HEAD') {
    // GraphQL over HTTP: a GET's parameters are its URL's; a backend that reads a body as well could run that instead.
    if (hasBody(req.headers))
      return stop(
        fault(GatewayOwnCode.GRAPHQL_AMBIGUOUS, {
          description: `A ${method} request carries its GraphQL parameters in the URL only, and no body: a backend may read the body's`,
        }),
      );
    if (ctx.query.length > gq.maxQueryBytes)
      return stop(
        fault(GatewayOwnCode.GRAPHQL_TOO_LARGE, {
          description: `The query string (${ctx.query.length} bytes) is larger than the API's max_query_bytes (${gq.maxQueryBytes})`,
        }),
      );
    return decide(ctx, gq, fromQueryString(ctx.query), false);
  }
  if (method !== 'POST') return CONTINUE;
  if (req.readBody === undefined)
    return stop(
      fault(GatewayOwnCode.GRAPHQL_BAD_REQUEST, { description: 'The transport serving this call cannot hand over request bodies' }),
    );
  return req.readBody(gq.maxQueryBytes).then((read) => {
    if (read.ok) return decide(ctx, gq, fromBody(headerValue(req.headers, 'content-type'), read.body, ctx.query), true);
    if (read.reason === 'too_large')
      return stop(
        fault(GatewayOwnCode.GRAPHQL_TOO_LARGE, {
          description: `The request body (${read.size} bytes or more) is larger than the API's max_query_bytes (${gq.maxQueryBytes})`,
        }),
      );
    return stop(fault(GatewayOwnCode.GRAPHQL_BAD_REQUEST, { description: 'The request body could not be read' }));
  });
}

/** A body announced by the request's framing (RFC 9112 §6.3): Transfer-Encoding, or a Content-Length other than 0. */
function hasBody(h: readonly string[]): boolean {
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i] as string;
    if (sameLower(name, 'transfer-encoding')) return true;
    if (sameLower(name, 'content-length') && (h[i + 1] as string).trim() !== '0') return true;
  }
  return false;
}

function decide(ctx: CallContext, gq: GraphqlApi, r: RequestRead, post: boolean): Outcome | Promise<Outcome> {
  if (!r.ok)
    return stop(
      fault(r.ambiguous === true ? GatewayOwnCode.GRAPHQL_AMBIGUOUS : GatewayOwnCode.GRAPHQL_BAD_REQUEST, { description: r.message }),
    );
  const pool = ctx.rt.mediation?.pool;
  // A large query (never in the analysis cache) is parsed and validated on a worker thread (docs/graphql.md).
  if (pool !== undefined && r.request.query.length > POOL_QUERY_CHARS) {
    const task: AnalyseTask = { sdl: gq.sdl, sdlHash: gq.sdlHash, request: r.request, limits: gq.limits };
    return pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task).then(
      (answer) => conclude(ctx, gq, 'analysis' in answer ? answer.analysis : gq.cache.analyse(gq.schema, r.request, gq.limits), post),
      (err: unknown) => {
        if (err instanceof PoolError && err.kind === 'queue_full')
          return stop(
            fault(GatewayOwnCode.MEDIATION_QUEUE_FULL, { description: `a large GraphQL query waits for a worker thread: ${err.message}` }),
          );
        // A thread that failed (not the query's doing): the same analysis, inline, within the API's bounds.
        return conclude(ctx, gq, gq.cache.analyse(gq.schema, r.request, gq.limits), post);
      },
    );
  }
  return conclude(ctx, gq, gq.cache.analyse(gq.schema, r.request, gq.limits), post);
}

function conclude(ctx: CallContext, gq: GraphqlApi, a: Analysis, post: boolean): Outcome {
  if (!a.ok) return stop(fault(GRAPHQL_FAILURE_CODE[a.kind], { description: a.message }));
  const op = a.operation;
  // GraphQL over HTTP: a mutation by GET is 405; subscriptions are the WebSocket's (graphql-transport-ws).
  if (op.type === 'MUTATION' && !post) return stop(fault(GatewayOwnCode.GRAPHQL_MUTATION_BY_GET, { allow: 'POST' }));
  if (op.type === 'SUBSCRIPTION') return stop(fault(GatewayOwnCode.GRAPHQL_SUBSCRIPTION_BY_HTTP));
  ctx.graphql = { operation: op, rules: rulesOf(op, gq.rules) };
  return CONTINUE;
}

/** graphql-transport-ws close codes (GraphQL over WebSocket, "Subscribe"): invalid message. */
const CLOSE_BAD_MESSAGE = 4400;

/**
 * The forward decision of a GraphQL API's WebSocket handshake (docs/graphql.md): the subscription hooks
 * below, and the handshake without its Sec-WebSocket-Extensions fields, so the backend never agrees to
 * an extension (RFC 6455 §9.1: only offered extensions may be accepted). permessage-deflate (RFC 7692)
 * would compress messages the hooks must read; the tunnel refuses any frame with an RSV bit (1002).
 */
export function subscriptionForward(ctx: CallContext, gq: GraphqlApi, forward: ForwardDecision): ForwardDecision {
  const h = forward.headers ?? ctx.req.headers;
  let headers = forward.headers;
  for (let i = 0; i < h.length; i += 2) {
    if (!sameLower(h[i] as string, 'sec-websocket-extensions')) continue;
    const kept: string[] = [];
    for (let j = 0; j < h.length; j += 2)
      if (!sameLower(h[j] as string, 'sec-websocket-extensions')) kept.push(h[j] as string, h[j + 1] as string);
    headers = kept;
    break;
  }
  return { ...forward, headers, websocket: subscriptionHooks(ctx, gq, ctx.websocket) };
}

/**
 * The tunnel hooks of a GraphQL API's WebSocket handshake (docs/graphql.md): each operation message the
 * client sends, graphql-transport-ws `subscribe` or the legacy graphql-ws protocol's `start`, text or
 * binary frame, is checked like a query (syntax, schema, introspection, depth, complexity, its
 * subscription tier's GraphQL limits, the fields' scopes against the handshake's token) before the
 * backend sees it. A refused one is answered with an `error` message for its id, whose payload carries
 * the fault's code and description (graphql-transport-ws: a list of errors; the legacy protocol: one
 * error object); a message that is not one of the protocols' closes the socket with 4400.
 */
export function subscriptionHooks(ctx: CallContext, gq: GraphqlApi, frames: WebSocketHooks | undefined): WebSocketHooks {
  const auth = ctx.auth;
  const scopes = auth?.scopes ?? [];
  return {
    ...frames,
    maxClientMessage: gq.maxQueryBytes + 14,
    onClientMessage(text: string): ClientMessageVerdict {
      const m = socketMessage(text);
      if (m.type === 'other') return undefined;
      if (m.type === 'invalid') return { close: CLOSE_BAD_MESSAGE, reason: m.message };
      const legacy = m.type === 'start';
      const refuse = (code: number, message: string): ClientMessageVerdict => {
        const error = { message, extensions: { code } };
        return { reply: JSON.stringify({ id: m.id, type: 'error', payload: legacy ? error : [error] }) };
      };
      if (!m.request.ok) return refuse(GatewayOwnCode.GRAPHQL_BAD_REQUEST, m.request.message);
      const a = gq.cache.analyse(gq.schema, m.request.request, gq.limits);
      if (!a.ok) return refuse(GRAPHQL_FAILURE_CODE[a.kind], a.message);
      const th = ctx.rt.throttle;
      const tier = auth !== undefined && auth.kind !== 'none' && th !== undefined ? auth.subscriptionTier : undefined;
      const over = tier === undefined ? undefined : tierExcess(a.operation, tier, th?.policies().subscription.get(tier));
      if (over !== undefined) return refuse(GRAPHQL_FAILURE_CODE[over.kind], over.message);
      const rules = rulesOf(a.operation, gq.rules);
      const miss = missingScope(rules, scopes);
      if (miss !== undefined)
        return refuse(
          ApiCode.INVALID_SCOPE,
          `the access token lacks the scope the ${miss.type.toLowerCase()} field ${miss.name} requires: ${miss.scopes.join(' or ')}`,
        );
      // After the scopes, as over HTTP (authentication before throttling): a refused subscribe counts nothing.
      const throttled = subscribeFieldsThrottled(ctx, a.operation, rules);
      if (throttled !== undefined) return refuse(throttled.def.code, throttled.description ?? throttled.def.description);
      return undefined;
    },
  };
}

/**
 * A `subscribe` message's fields counted against their `[[operations]] policy` (docs/graphql.md): with the
 * handshake's identity and request fields, only those levels (the message's frame is counted against the
 * tunnel's quotas already: the throttle service's frame guard). The 900802 fault when one is exhausted,
 * undefined otherwise.
 */
function subscribeFieldsThrottled(ctx: CallContext, op: Operation, rules: readonly OperationRule[]): FaultValue | undefined {
  const th = ctx.rt.throttle;
  const api = ctx.api;
  if (th === undefined || api === undefined || api.def.policy !== undefined) return undefined;
  const policies = fieldPolicies(op.type, rules);
  if (policies === undefined) return undefined;
  const unauthenticated = ctx.resource?.def.unauthenticatedPolicy ?? api.def.unauthenticatedPolicy ?? 'Unauthenticated';
  const v = th.refuseFields(throttleCall(ctx, api, unauthenticated, policies, undefined));
  return v === undefined ? undefined : fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs });
}
