/**
 * The CORS phase: the call's CORS response fields by the API's policy (../cors.ts); a preflight, or a plain
 * OPTIONS call on a path without an OPTIONS resource, is answered here.
 */
import { methodsFor, type CompiledApi } from '../router';
import { corsRequest } from '../cors';
import { CONTINUE, type CallContext, type Outcome } from './context';

export function corsPhase(ctx: CallContext): Outcome {
  const api = ctx.api as CompiledApi;
  const policy = api.cors;
  const method = ctx.req.method;
  // Only a preflight or a named origin needs the request's Origin: a call other than OPTIONS under a policy
  // that is off or allows any origin gets the same fields whatever it sends, without a pass over its
  // fields (docs/performance.md, "The deployed node's request path"). ctx.cors stays unset: corsFieldsOf
  // reads ctx.corsFields first.
  if (method !== 'OPTIONS' && (!policy.enabled || policy.anyOrigin)) {
    ctx.corsFields = policy.responseFields(undefined);
    return CONTINUE;
  }
  const cr = corsRequest(ctx.req);
  ctx.cors = cr;
  ctx.corsFields = policy.responseFields(cr.origin);
  if (method !== 'OPTIONS') return CONTINUE;
  if (cr.preflight && policy.enabled) {
    const methods = ctx.pathMethods ?? methodsFor(api, ctx.rest);
    return { answer: { status: 204, headers: policy.preflightFields(cr.origin, methods) } };
  }
  if (ctx.resource === undefined) {
    // A plain OPTIONS call on a path without an OPTIONS resource: the gateway says what is allowed
    // (RFC 9110 §9.3.7) rather than 405 for the very method that asks.
    const methods = ctx.pathMethods ?? [];
    if (!methods.includes('OPTIONS')) methods.push('OPTIONS');
    return { answer: { status: 204, headers: ['Allow', methods.join(', '), ...ctx.corsFields] } };
  }
  return CONTINUE;
}
