/**
 * The throttling phase (after authentication): asks the runtime's throttle engine (lib/throttle) about the
 * call, with the call's plain facts (ThrottleCall), and answers its
 * fault, or continues with the call's IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers:
 * RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset in seconds) for the send phase and for faults.
 * The reference sends none of these; they describe the most restrictive limit the call was counted
 * against, and are absent when every level is unlimited.
 */
import { ApiCode, GatewayOwnCode, fault, type FaultValue, type GatewayCode } from '../../faults';
import type { CompiledApi } from '../router';
import type { WebSocketHooks } from '../../transport/types';
import type { ThrottleCall, ThrottleIdentity, Verdict } from '../../throttle/engine';
import type { Throttle } from '../../throttle';
import type { Operation, OperationRule } from '../../graphql';
import { isWebSocketHandshake } from '../websocket';
import type { CallContext, Outcome } from './context';

const BLOCKED_BY: Record<string, string> = {
  API: 'Blocked by a blocking condition on the API context',
  APPLICATION: 'Blocked by a blocking condition on the application',
  USER: 'Blocked by a blocking condition on the user',
  IP: 'Blocked by a blocking condition on the client IP address',
  IP_RANGE: 'Blocked by a blocking condition on the client IP address range',
};

export function throttlingPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const th = ctx.rt.throttle;
  if (th === undefined) return undefined;
  const api = ctx.api as CompiledApi;
  const def = api.def;
  const res = ctx.resource?.def;
  const ep = ctx.keyType === 'SANDBOX' ? api.sandbox : api.production;
  const maxTps = ep?.def.maxTps;
  const unauthenticatedPolicy = res?.unauthenticatedPolicy ?? def.unauthenticatedPolicy ?? 'Unauthenticated';
  // An open resource carries the shared NO_AUTH context (kind 'none'): counted like no authentication.
  const open = ctx.auth === undefined || ctx.auth.kind === 'none';
  if (ctx.graphql !== undefined && !open) {
    const limited = tierLimits(th, ctx.graphql.operation, (ctx.auth as ThrottleIdentity).subscriptionTier);
    if (limited !== undefined) return { fault: limited };
  }
  const fieldPolicies = ctx.graphql === undefined ? undefined : graphqlPolicies(ctx.graphql.operation.type, ctx.graphql.rules);
  if (
    open &&
    def.policy === undefined &&
    res?.policy === undefined &&
    fieldPolicies === undefined &&
    maxTps === undefined &&
    th.engine.nothingToCount(unauthenticatedPolicy)
  )
    return undefined;
  const call = throttleCall(ctx, api, unauthenticatedPolicy, fieldPolicies, maxTps);
  const v = th.engine.check(call, th.now());
  // An exact level, or a leased one without local quota, waits for Redis (docs/throttling.md, "Counting modes").
  if (v.pending !== undefined) return v.pending.then((w) => answer(ctx, th, call, w));
  return answer(ctx, th, call, v);
}

/** The verdict as the phase's outcome: RateLimit fields, the WebSocket frame hook, or the level's fault. */
function answer(ctx: CallContext, th: Throttle, call: ThrottleCall, v: Verdict): Outcome {
  const def = (ctx.api as CompiledApi).def;
  const req = ctx.req;
  if (v.limit >= 0)
    ctx.rateLimitFields = [
      'RateLimit-Limit',
      String(v.limit),
      'RateLimit-Remaining',
      String(v.remaining),
      'RateLimit-Reset',
      String(Math.ceil(v.resetMs / 1000)),
    ];
  if (v.code === 0) {
    // A WebSocket API reaches send only with a handshake (103083 otherwise): its frames are counted too.
    if (def.type === 'WS' || (def.type === 'GRAPHQL' && isWebSocketHandshake(req))) ctx.websocket = frameThrottle(th, call);
    return undefined;
  }
  th.refused.set(v.code, (th.refused.get(v.code) ?? 0) + 1);
  if (v.code === ApiCode.BLOCKED)
    return { fault: fault(ApiCode.BLOCKED, { description: BLOCKED_BY[v.blockedBy ?? ''] ?? 'Blocked by a blocking condition' }) };
  if (v.unavailable) return { fault: fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs, description: UNAVAILABLE }) };
  return { fault: fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs }) };
}

/** The description of a fail = "closed" policy's refusal while Redis is unreachable (docs/throttling.md). */
const UNAVAILABLE = 'The throttle counters are unreachable and this policy fails closed';

/** The call as the throttle engine sees it (ThrottleCall). */
function throttleCall(
  ctx: CallContext,
  api: CompiledApi,
  unauthenticatedPolicy: string,
  fieldPolicies: (readonly [string, string])[] | undefined,
  maxTps: number | undefined,
): ThrottleCall {
  const def = api.def;
  const res = ctx.resource?.def;
  const req = ctx.req;
  return {
    ip: req.remoteAddress,
    apiPath: api.path,
    apiContext: def.context,
    apiVersion: def.version,
    apiName: def.name,
    resourceKey: res?.path ?? ctx.rest,
    apiPolicy: def.policy,
    resourcePolicy: res?.policy,
    unauthenticatedPolicy,
    auth: ctx.auth,
    headers: req.headers,
    query: ctx.query,
    bytes: req.contentLength > 0 ? req.contentLength : 0,
    // A plain field, undefined when absent: a conditional spread copies an object per call.
    fieldPolicies,
    endpointKey: maxTps === undefined ? undefined : `${api.id}|${ctx.keyType}`,
    maxTps,
  };
}

/**
 * A `subscribe` message's fields counted against their `[[operations]] policy` (docs/graphql.md): with the
 * handshake's identity and request fields, only those levels (the message's frame is counted against the
 * tunnel's quotas already: frameThrottle). The 900802 fault when one is exhausted, undefined otherwise.
 */
export function subscribeFieldsThrottled(ctx: CallContext, op: Operation, rules: readonly OperationRule[]): FaultValue | undefined {
  const th = ctx.rt.throttle;
  const api = ctx.api;
  if (th === undefined || api === undefined || api.def.policy !== undefined) return undefined;
  const fieldPolicies = graphqlPolicies(op.type, rules);
  if (fieldPolicies === undefined) return undefined;
  const call = throttleCall(
    ctx,
    api,
    ctx.resource?.def.unauthenticatedPolicy ?? api.def.unauthenticatedPolicy ?? 'Unauthenticated',
    fieldPolicies,
    undefined,
  );
  const v = th.engine.checkFields(call, th.now());
  // A subscribe message is answered at once: an exact or leased field policy that has to wait for Redis
  // lets this message through, and its refusal is counted when it comes.
  if (v.pending !== undefined) {
    void v.pending.then((w) => {
      if (w.code !== 0) th.refused.set(w.code, (th.refused.get(w.code) ?? 0) + 1);
    });
    return undefined;
  }
  if (v.code === 0) return undefined;
  th.refused.set(v.code, (th.refused.get(v.code) ?? 0) + 1);
  return fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs });
}

/** A GraphQL query over its subscription tier's depth or complexity (graphql_max_depth, graphql_max_complexity; docs/graphql.md). */
export function tierLimits(th: Throttle, op: Operation, tier: string): FaultValue | undefined {
  const sp = th.policies().subscription.get(tier);
  if (sp === undefined) return undefined;
  if (sp.graphqlMaxDepth !== undefined && op.depth > sp.graphqlMaxDepth)
    return fault(GatewayOwnCode.GRAPHQL_TOO_DEEP, {
      description: `the query is ${op.depth} levels deep; the subscription tier ${tier} allows ${sp.graphqlMaxDepth}`,
    });
  if (sp.graphqlMaxComplexity !== undefined && op.complexity > sp.graphqlMaxComplexity)
    return fault(GatewayOwnCode.GRAPHQL_TOO_COMPLEX, {
      description: `the query's complexity is ${op.complexity}; the subscription tier ${tier} allows ${sp.graphqlMaxComplexity}`,
    });
  return undefined;
}

/** The policies of a GraphQL query's fields, keyed "QUERY name" (docs/graphql.md); undefined: none has one. */
function graphqlPolicies(type: string, rules: readonly OperationRule[]): (readonly [string, string])[] | undefined {
  let out: (readonly [string, string])[] | undefined;
  for (const r of rules) if (r.policy !== undefined) (out ??= []).push([`${type} ${r.name}`, r.policy]);
  return out;
}

/**
 * Per-frame throttling of a WebSocket tunnel (docs/websocket.md, docs/throttling.md): like the reference,
 * each frame the client sends counts as one call against the same quotas as its handshake (API or
 * resource policy, subscription and its burst, application, custom policies, the endpoint's hard limit,
 * blocking conditions), with the handshake's identity, IP and fields; bandwidth quotas are not charged
 * for frames. The first frame a level refuses closes the tunnel with 1008 (the tunnel's fault 103082) and
 * is counted as throttled by its level's code. One hook per opened tunnel, made at the handshake: plain HTTP calls never get here.
 */
function frameThrottle(th: Throttle, handshake: ThrottleCall): WebSocketHooks {
  const frame: ThrottleCall = { ...handshake, bytes: 0 };
  // A frame is answered at once: one whose exact or leased level has to wait for Redis passes, and when
  // that wait ends in a refusal the tunnel's next frame is refused (closing it with 1008).
  let refusedLater = false;
  return {
    onClientFrame(): boolean {
      if (refusedLater) return false;
      const v = th.engine.check(frame, th.now());
      if (v.pending !== undefined) {
        void v.pending.then((w) => {
          if (w.code === 0) return;
          refusedLater = true;
          th.refused.set(w.code, (th.refused.get(w.code) ?? 0) + 1);
        });
        return true;
      }
      if (v.code === 0) return true;
      th.refused.set(v.code, (th.refused.get(v.code) ?? 0) + 1);
      return false;
    },
  };
}
