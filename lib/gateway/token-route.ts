/**
 * `/token` and `/revoke` on the gateway's listeners (spec 002 part 4: "/token | gateway HTTPS | Token
 * endpoint (used by workflow and shown in the developer portal)"; docs/key-manager.md, "The gateway's
 * /token and /revoke"). They are the key manager's `/oauth2/token` and `/oauth2/revoke`, answered before
 * routing, as the reference's token and revoke APIs do (an API of their own with no authentication,
 * throttling or CORS handler, POST to the key manager, a 60 s endpoint timeout):
 *
 * - in process, when this node runs the key manager: the body is gathered (at most TOKEN_BODY_LIMIT, the
 *   key manager's own limit) and handed to its endpoint as a plain call; its status, fields (Cache-Control:
 *   no-store) and body are the answer;
 * - else over HTTP(S) to the key manager's origin (a gateway-worker's control plane): the gathered body is
 *   forwarded by the transport like any backend call, with the client's fields (Authorization included:
 *   client authentication passes through untouched), minus the hop-by-hop ones.
 *
 * Only the exact paths `/token` and `/revoke` (a trailing slash and a query allowed) are taken; an API
 * whose context is /token keeps its versioned paths.
 */
import type { BodyRead, LocalResponse, RouteDecision, SourceRequest, TargetEndpoint } from '../transport/types';
import { headerValue } from '../transport/headers';

export type OAuthEndpoint = 'token' | 'revoke';

/** One call of the key manager's token or revocation endpoint, as plain values. */
export interface OAuthCall {
  readonly endpoint: OAuthEndpoint;
  readonly method: string;
  /** The client's Authorization field (HTTP Basic client authentication), as sent. */
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: Buffer;
  /** The client's address (the key manager's sign-in guard counts failures per address). */
  readonly address: string;
}

/** The key manager's answer: status, response fields (no framing fields), body. */
export interface OAuthAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Where `/token` and `/revoke` go: the key manager in this process, or its origin over HTTP(S). */
export type TokenEndpoints =
  { readonly kind: 'in-process'; call(c: OAuthCall): Promise<OAuthAnswer> } | { readonly kind: 'remote'; readonly url: string };

/** The key manager reads request bodies up to 64 KiB (lib/keymanager/http.ts); the gateway gathers no more. */
export const TOKEN_BODY_LIMIT = 64 * 1024;
/** The reference's token API waits 60 s for the key manager (its endpoint's timeout duration). */
export const TOKEN_TIMEOUT_MS = 60_000;

const PATHS: Readonly<Record<OAuthEndpoint, string>> = { token: '/oauth2/token', revoke: '/oauth2/revoke' };
const NO_STORE = ['Cache-Control', 'no-store', 'Pragma', 'no-cache'];
const JSON_TYPE = 'application/json; charset=utf-8';

/** `/token` or `/revoke` (optionally `/` and `?query` after it), else undefined. One compare for other paths. */
export function tokenEndpointOf(url: string): OAuthEndpoint | undefined {
  const c = url.charCodeAt(1);
  let which: OAuthEndpoint;
  if (c === 116 /* t */ && url.startsWith('/token')) which = 'token';
  else if (c === 114 /* r */ && url.startsWith('/revoke')) which = 'revoke';
  else return undefined;
  let i = which === 'token' ? 6 : 7;
  if (url.charCodeAt(i) === 47 /* / */) i++;
  return i === url.length || url.charCodeAt(i) === 63 /* ? */ ? which : undefined;
}

/** An OAuth error answer (RFC 6749 §5.2) for what the gateway refuses before the key manager sees it. */
function oauthError(status: number, error: string, description: string, extra: readonly string[] = []): LocalResponse {
  return {
    status,
    headers: ['Content-Type', JSON_TYPE, ...NO_STORE, ...extra],
    body: JSON.stringify({ error, error_description: description }),
  };
}

/** The body, or the answer when there is none to forward: over the limit (413, as the key manager answers), or unreadable. */
async function gathered(req: SourceRequest): Promise<Buffer | LocalResponse> {
  if (req.readBody === undefined) return oauthError(500, 'server_error', 'the transport serving this call cannot hand over request bodies');
  const r: BodyRead = await req.readBody(TOKEN_BODY_LIMIT);
  if (r.ok) return r.body;
  if (r.reason === 'too_large')
    return oauthError(413, 'invalid_request', `request body larger than ${TOKEN_BODY_LIMIT} bytes`, ['Connection', 'close']);
  // 'aborted': the client went away and reads nothing; 'already_read' cannot happen before routing.
  return oauthError(400, 'invalid_request', `the request body could not be read (${r.reason})`);
}

async function inProcess(
  endpoints: { call(c: OAuthCall): Promise<OAuthAnswer> },
  which: OAuthEndpoint,
  req: SourceRequest,
): Promise<LocalResponse> {
  const body = await gathered(req);
  if (!Buffer.isBuffer(body)) return body;
  const a = await endpoints.call({
    endpoint: which,
    method: req.method,
    authorization: headerValue(req.headers, 'authorization'),
    contentType: headerValue(req.headers, 'content-type'),
    body,
    address: req.remoteAddress,
  });
  const headers: string[] = [];
  for (const [k, v] of Object.entries(a.headers)) headers.push(k, v);
  return { status: a.status, headers, body: a.body };
}

async function remote(target: TargetEndpoint, which: OAuthEndpoint, req: SourceRequest): Promise<RouteDecision> {
  const body = await gathered(req);
  if (!Buffer.isBuffer(body)) return body;
  return { target, path: PATHS[which], body, timeout: TOKEN_TIMEOUT_MS };
}

/** The router's answer for `/token` and `/revoke`; `target` makes the key manager's origin a backend target. */
export function tokenRoute(
  endpoints: TokenEndpoints,
  target: (url: string) => TargetEndpoint,
): (which: OAuthEndpoint, req: SourceRequest) => Promise<RouteDecision> {
  if (endpoints.kind === 'in-process') return (which, req) => inProcess(endpoints, which, req);
  const u = new URL(endpoints.url);
  const t = target(`${u.protocol}//${u.host}`);
  return (which, req) => remote(t, which, req);
}
