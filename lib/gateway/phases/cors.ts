/**
 * The CORS phase: the call's CORS response fields by the API's policy (../cors.ts); a preflight, or a plain
 * OPTIONS call on a path without an OPTIONS resource, is answered here.
 */
import { methodsFor, type CompiledApi } from '../router';
import { corsRequest } from '../cors';
import { CONTINUE, type CallContext, type Outcome } from './context';

export function corsPhase(ctx: CallContext): Outcome {
  const api = ctx.api as CompiledApi;
  const cr = corsRequest(ctx.req);
  ctx.cors = cr;
  const policy = api.cors;
  ctx.corsFields = policy.responseFields(cr.origin);
  if (ctx.req.method !== 'OPTIONS') return CONTINUE;
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
