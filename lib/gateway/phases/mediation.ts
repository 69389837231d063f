/**
 * The mediation phase: payload validation, scripts and conversion (lib/mediation; docs/mediation.md),
 * synchronous and free when a call needs none. The request side's answer becomes the forwarded body and
 * fields; the response side gets a hook that mediates the gathered response and renders its faults
 * with finish(), as every fault of the call is rendered.
 */
import type { LocalResponse } from '../../transport/types';
import type { FaultValue } from '../../faults';
import type { MediationOutcome } from '../../mediation';
import type { CompiledApi } from '../router';
import { CONTINUE, finish, type CallContext, type Outcome } from './context';

export function mediationPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const m = ctx.rt.mediation;
  if (m === undefined) return CONTINUE;
  // A GraphQL query's body was gathered and its JSON read by the route phase (docs/graphql.md): global
  // payload validation has nothing left to check, and a GraphQL API has no [mediation] table.
  if (ctx.graphql !== undefined) return CONTINUE;
  const def = (ctx.api as CompiledApi).def;
  const am = def.mediation;
  if (m.mediatesResponse(am)) {
    // Gathered by the transport and mediated when it is complete (onResponse, response_format).
    const render = (f: FaultValue): LocalResponse => finish(ctx, { fault: f }) as LocalResponse;
    ctx.responseHook = { limit: m.settings.maxBody, handle: (res) => m.response(ctx.req, def, am, res, render) };
  }
  const r = m.request(ctx.req, def, am);
  return r === undefined ? CONTINUE : r.then((o) => mediated(ctx, o));
}

/** The request side's answer on the call: the body and fields to forward, or the stop. */
function mediated(ctx: CallContext, o: MediationOutcome): Outcome {
  if (o === undefined) return CONTINUE;
  if ('body' in o) {
    if (o.headers !== undefined) ctx.requestHeaders = o.headers;
    ctx.body = o.body;
    return CONTINUE;
  }
  return o;
}
