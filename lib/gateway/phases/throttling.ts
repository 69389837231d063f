/**
 * The throttling phase (after authentication): asks the runtime's throttle service (lib/throttle) about
 * the call, with the call's plain facts (ThrottleCall, ../throttle-call.ts), and answers its
 * fault, or continues with the call's IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers:
 * RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset in seconds) for the send phase and for faults.
 * The reference sends none of these; they describe the most restrictive limit the call was counted
 * against, and are absent when every level is unlimited. A GraphQL query's tier limits and field
 * policies are the GraphQL service's rules (lib/graphql), a WebSocket tunnel's frames the throttle
 * service's frame guard.
 */
import { ApiCode, fault, type GatewayCode } from '../../faults';
import type { CompiledApi } from '../router';
import type { ThrottleCall, ThrottleIdentity, Verdict } from '../../throttle/engine';
import type { Throttle } from '../../throttle';
import { fieldPolicies as graphqlPolicies, tierExcess } from '../../graphql';
import { GRAPHQL_FAILURE_CODE } from '../graphql-api';
import { isWebSocketHandshake } from '../websocket';
import { throttleCall } from '../throttle-call';
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
    const tier = (ctx.auth as ThrottleIdentity).subscriptionTier;
    const over = tierExcess(ctx.graphql.operation, tier, th.policies().subscription.get(tier));
    if (over !== undefined) return { fault: fault(GRAPHQL_FAILURE_CODE[over.kind], { description: over.message }) };
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

/** The verdict as the phase's outcome: RateLimit fields, the WebSocket frame guard, or the level's fault. */
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
    if (def.type === 'WS' || (def.type === 'GRAPHQL' && isWebSocketHandshake(req))) ctx.websocket = th.frameGuard(call);
    return undefined;
  }
  th.countRefusal(v.code);
  if (v.code === ApiCode.BLOCKED)
    return { fault: fault(ApiCode.BLOCKED, { description: BLOCKED_BY[v.blockedBy ?? ''] ?? 'Blocked by a blocking condition' }) };
  if (v.unavailable) return { fault: fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs, description: UNAVAILABLE }) };
  return { fault: fault(v.code as GatewayCode, { retryAfterMs: v.retryAfterMs }) };
}

/** The description of a fail = "closed" policy's refusal while Redis is unreachable (docs/throttling.md). */
const UNAVAILABLE = 'The throttle counters are unreachable and this policy fails closed';
