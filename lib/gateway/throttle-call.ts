/**
 * A gateway call as the throttling service sees it (ThrottleCall, lib/throttle/engine.ts): the plain
 * facts of the call, filled by the throttling phase (phases/throttling.ts) for the call and its
 * WebSocket frames, and by a GraphQL API's subscription hooks (graphql-api.ts) for each `subscribe` message.
 */
import type { ThrottleCall } from '../throttle/engine';
import type { CompiledApi } from './router';
import type { CallContext } from './phases/context';

/** The call as the throttle engine sees it (ThrottleCall). */
export function throttleCall(
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
