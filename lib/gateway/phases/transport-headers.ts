/**
 * The transport-headers phase: the fields for the backend, built new once from the client's (or
 * mediation's) fields and the fields earlier phases add, by the runtime's header rules (../transport-headers.ts).
 */
import { CONTINUE, type CallContext, type Outcome } from './context';

export function transportHeadersPhase(ctx: CallContext): Outcome {
  const fields = ctx.requestHeaders;
  ctx.outHeaders =
    fields === undefined
      ? ctx.rt.headers.outgoing(ctx.req.headers, ctx.addRequestHeaders)
      : (ctx.rt.headers.outgoing(fields, ctx.addRequestHeaders) ?? fields);
  return CONTINUE;
}
