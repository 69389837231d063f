/**
 * The authentication phase: bearer tokens, subscriptions, scopes, backend JWT, mutual TLS (spec 002 parts
 * 3, 5, 7), asked of the runtime's security service (lib/security) with the call's fields, API and
 * resource. Synchronous for auth = "none" and for a token in the cache; asynchronous only to validate a new
 * token.
 */
import { ApiCode, fault } from '../../faults';
import { isRefusal, type AuthResult, type Security } from '../../security';
import { missingScope } from '../../graphql';
import { CONTINUE, stop, type CallContext, type Outcome } from './context';

export function authenticationPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const res = ctx.resource;
  const security = ctx.rt.security;
  if (security === undefined) {
    // No security runtime (a runtime built by hand): only open resources are served.
    if (res === undefined || res.def.auth === 'none') return CONTINUE;
    return stop(fault(ApiCode.AUTH_GENERAL_ERROR, { description: 'no token validation is configured' }));
  }
  const api = ctx.api;
  // OPTIONS without a resource was answered by the CORS phase; nothing to protect.
  if (res === undefined || api === undefined) return CONTINUE;
  const r = security.authenticate(ctx.req.headers, api, res.def);
  if (r instanceof Promise) return r.then((a) => admitted(ctx, a));
  return admitted(ctx, r);
}

/** Puts an admission on the call (its context, key type and backend JWT), or stops with the refusal. */
function admitted(ctx: CallContext, r: AuthResult): Outcome {
  if (isRefusal(r)) return stop(r);
  const auth = r.auth;
  const gq = ctx.graphql;
  if (gq !== undefined && gq.rules.length > 0) {
    // A GraphQL query needs a scope of every field it selects that lists some (docs/graphql.md).
    const miss = missingScope(gq.rules, auth.scopes);
    if (miss !== undefined)
      return stop(
        fault(ApiCode.INVALID_SCOPE, {
          scope: miss.scopes.join(' '),
          description: `the access token lacks the scope the ${miss.type.toLowerCase()} field ${miss.name} requires: ${miss.scopes.join(' or ')}`,
        }),
      );
  }
  ctx.auth = auth;
  ctx.keyType = auth.keyType;
  if (r.jwt !== undefined) {
    const header = (ctx.rt.security as Security).settings.backendJwt.header;
    ctx.addRequestHeaders = ctx.addRequestHeaders === undefined ? [header, r.jwt] : [...ctx.addRequestHeaders, header, r.jwt];
  }
  return CONTINUE;
}
