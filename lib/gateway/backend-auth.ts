/**
 * The send phase's part for endpoints with backend security (docs/apis.md, "Backend security"): the
 * client's Authorization field replaced by the endpoint's credentials (lib/security/backend-credentials.ts),
 * and the backend's 401 answered once: the Digest challenge answered, or a new OAuth 2.0 token fetched, and
 * the call sent again (transport Resend) when its body can be sent again. Failures become 900424 (no valid
 * token), 103200 (Basic or Digest credentials refused), 103201 (a challenge a streamed body cannot answer) or
 * 103202 (the call goes to an origin the credentials are not bound to: nothing is sent).
 */
import type { BufferedResponse, ForwardDecision, LocalResponse, Resend, ResponseHook } from '../transport/types';
import { ApiCode, GatewayOwnCode, fault, type GatewayCode } from '../faults';
import { isAuthError, targetOrigin, type BackendAuthError, type BackendAuthorizer } from '../security/backend-credentials';
import { finish, stop, type CallContext, type Outcome } from './phases/context';

/** A 401's body is gathered up to this many bytes to read its challenge (larger: 101510 + state). */
export const CHALLENGE_BODY_LIMIT = 64 * 1024;
const UNAUTHORIZED: readonly number[] = Object.freeze([401]);

const CODES: Readonly<Record<BackendAuthError['kind'], GatewayCode>> = {
  token: ApiCode.TEMPORARY_SERVER_ERROR,
  refused: GatewayOwnCode.BACKEND_CREDENTIALS_REFUSED,
  unanswered: GatewayOwnCode.BACKEND_CHALLENGE_UNANSWERED,
  unbound: GatewayOwnCode.BACKEND_CREDENTIALS_UNBOUND,
};

function isPromise<T>(v: unknown): v is Promise<T> {
  return typeof (v as Promise<T> | undefined)?.then === 'function';
}

/** The fields without any Authorization: the client's credentials never reach such a backend. */
function withoutAuthorization(fields: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length; i += 2)
    if ((fields[i] as string).toLowerCase() !== 'authorization') out.push(fields[i] as string, fields[i + 1] as string);
  return out;
}

/**
 * The forward with the endpoint's credentials. `answer401`: the backend's 401 is gathered and answered
 * (false for WebSocket handshakes, whose 401 is relayed).
 */
export function securedForward(
  ctx: CallContext,
  auth: BackendAuthorizer,
  forward: ForwardDecision,
  answer401: boolean,
): Outcome | Promise<Outcome> {
  const req = ctx.req;
  const base = withoutAuthorization(forward.headers ?? req.headers);
  const hasBody = req.chunked || req.contentLength > 0;
  // A body held in memory can be sent again; one with a known length up to max_replay_body is read first
  // (Basic never sends a call twice and streams every body).
  if (
    answer401 &&
    hasBody &&
    forward.body === undefined &&
    auth.type !== 'basic' &&
    !req.chunked &&
    req.contentLength <= auth.security.maxReplayBody &&
    req.readBody !== undefined
  ) {
    return req.readBody(auth.security.maxReplayBody).then((r) => {
      // already_read: mediation gathered it; the transport holds it and resends it.
      if (!r.ok && r.reason !== 'already_read')
        return stop(
          fault(GatewayOwnCode.BACKEND_CHALLENGE_UNANSWERED, {
            description: "The request body could not be read to be held for the backend's challenge",
          }),
        );
      return withCredentials(ctx, auth, r.ok ? { ...forward, body: r.body } : forward, base, true, answer401);
    });
  }
  return withCredentials(ctx, auth, forward, base, forward.body !== undefined || !hasBody, answer401);
}

function withCredentials(
  ctx: CallContext,
  auth: BackendAuthorizer,
  forward: ForwardDecision,
  base: readonly string[],
  replayable: boolean,
  answer401: boolean,
): Outcome | Promise<Outcome> {
  const uri = forward.path ?? ctx.req.url;
  const build = (h: string | undefined | BackendAuthError): Outcome => {
    if (isAuthError(h)) return stop(fault(CODES[h.kind], { description: h.description }));
    const headers = h === undefined ? base : [...base, 'Authorization', h];
    return {
      forward: {
        ...forward,
        headers,
        ...(answer401 ? { bufferResponse: challengeHook(ctx, auth, base, h, uri, replayable, forward.bufferResponse) } : {}),
      },
    };
  };
  // Checked on the target the transport will connect to, not on the endpoint's URL (defence in depth).
  const h = auth.authorization(ctx.req.method, uri, targetOrigin(forward.target));
  return isPromise<string | BackendAuthError>(h) ? h.then(build) : build(h);
}

/** The fault as the client gets it, from inside a response hook. */
function failure(ctx: CallContext, e: BackendAuthError): LocalResponse {
  return finish(ctx, stop(fault(CODES[e.kind], { description: e.description }))) as LocalResponse;
}

/**
 * Gathers the backend's 401 (every response when mediation gathers them anyway: `mediation`) and answers
 * it once with new credentials; a second 401 fails the call.
 */
function challengeHook(
  ctx: CallContext,
  auth: BackendAuthorizer,
  base: readonly string[],
  sent: string | undefined,
  uri: string,
  replayable: boolean,
  mediation: ResponseHook | undefined,
): ResponseHook {
  let last = sent;
  let resent = false;
  const method = ctx.req.method;
  const on401 = (res: BufferedResponse): LocalResponse | Resend | Promise<LocalResponse | Resend> => {
    if (resent) {
      // Sent again with fresh credentials and refused again: the call fails (the token, if any, is dropped).
      const r = auth.challenged(last, res.headers, method, uri, false);
      const e = isAuthError(r) ? r : undefined;
      if (auth.type === 'oauth')
        return failure(ctx, { kind: 'token', description: 'The backend refused a freshly obtained OAuth 2.0 token (401)' });
      return failure(
        ctx,
        e !== undefined && e.kind === 'refused'
          ? e
          : {
              kind: 'refused',
              description: `The backend refused the endpoint's ${auth.type === 'digest' ? 'Digest' : 'Basic'} credentials (401)`,
            },
      );
    }
    resent = true;
    const next = (v: string | BackendAuthError): LocalResponse | Resend => {
      if (isAuthError(v)) return failure(ctx, v);
      last = v;
      return { resend: [...base, 'Authorization', v] };
    };
    const r = auth.challenged(last, res.headers, method, uri, replayable);
    return isPromise<string | BackendAuthError>(r) ? r.then(next) : next(r);
  };
  return {
    limit: mediation?.limit ?? CHALLENGE_BODY_LIMIT,
    ...(mediation === undefined ? { statuses: UNAUTHORIZED } : {}),
    handle(res) {
      if (res.status === 401) return on401(res);
      if (mediation !== undefined) return mediation.handle(res);
      return { status: res.status, headers: res.headers, body: res.body };
    },
  };
}
