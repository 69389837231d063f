/**
 * The management server's HTTP routes (spec 002, part 4, "management" host):
 *
 *   POST /oauth2/token                          RFC 6749 §3.2
 *   POST /oauth2/revoke                         RFC 7009
 *   POST /oauth2/introspect                     RFC 7662 (client or super admin credentials)
 *   GET|POST /oauth2/authorize                  RFC 6749 §4.1 with PKCE: sign-in and consent pages (authorize.ts)
 *   GET|POST /oauth2/userinfo                   OpenID Connect Core §5.3 (authorize.ts)
 *   GET  /oauth2/jwks, /jwks/<version>          RFC 7517 key set (spec's /jwks/<version> shape)
 *   GET  /.well-known/openid-configuration      OpenID Connect Discovery 1.0 and RFC 8414 metadata at the
 *        /.well-known/oauth-authorization-server issuer-derived locations (lib/keymanager/discovery.ts)
 *   GET  /t/<domain>/oauth2/jwks, its discovery  a tenant's key set and metadata (docs/tenants.md, "Signing
 *                                               keys"); 103010 (404) for a domain that is no active tenant
 *   POST /client-registration/v0.<n>/register   RFC 7591 with an initial access token or the super admin,
 *                                               or the reference's clientName/grantType body
 *                                               (lib/keymanager/registration.ts)
 *   /admin/v1/...                               the JSON admin API (lib/keymanager/admin.ts)
 *   POST /api/am/publisher/v<n>/workflows/update-workflow-status  the external workflow engine's
 *                                               callback (lib/keymanager/workflow-routes.ts)
 *   GET  /health                                liveness of the store (the checkers' report when
 *                                               [server_health_check] enable: lib/observability)
 *   GET  /health/live, /metrics                 lib/observability/routes.ts (`ops`), asked first
 *   /devportal, /publisher                      the web consoles (lib/portal) when mounted (`site`), asked
 *                                               after `ops`
 *
 * Clients authenticate the same way on token, revoke and introspect (lib/keymanager/client-auth.ts).
 * Request bodies are read up to 64 KiB. Token responses carry Cache-Control: no-store (RFC 6749 §5.1).
 */
import type * as http from 'node:http';
import { STORE_UNAVAILABLE_CODES, StoreError } from '../store/types';
import { UserStoreError } from '../store/users';
import { handleAdmin } from './admin';
import { handleAuthorize, handleUserinfo } from './authorize';
import { AdminKeptError, OAuthError } from './errors';
import { checkClient, presentedClient, type PresentedClient } from './client-auth';
import { discoveryKind, requestOrigin, serverMetadata, tenantRoute } from './discovery';
import { faultBody, fault, gatewayFacts, GatewayOwnCode } from '../faults';
import { SIGNING_ALG } from './keys';
import { register } from './registration';
import type { OAuthAnswer, OAuthCall } from '../gateway/token-route';
import { WorkflowError } from '../workflows';
import { CALLBACK_ROUTE, handleWorkflowCallback, workflowRefusal } from './workflow-routes';
import { readBody, requireAdmin, requireSuperAdmin, sendJson, type RouteContext } from './route-context';

export {
  readBody,
  readJson,
  requireAdmin,
  requireSuperAdmin,
  sendJson,
  type AdminAuthContext,
  type ApiFileRefusal,
  type ApiFileService,
  type ApiFileText,
  type ApiProtos,
  MAX_PROTO_UPLOAD_BODY,
  type RouteContext,
  type SiteHandler,
} from './route-context';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** RFC 6749 §3.2: the token endpoint takes application/x-www-form-urlencoded. */
function formOf(contentType: string | undefined, body: Buffer): URLSearchParams {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the request body must be application/x-www-form-urlencoded (RFC 6749 §3.2)');
  }
  return new URLSearchParams(body.toString('utf8'));
}

async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const body = await readBody(req);
  return formOf(req.headers['content-type'], body);
}

/**
 * The client credentials a request presents (client-auth.ts presentedClient, the one decoder of Basic and
 * form credentials). Malformed Basic credentials are a failed client sign-in of the address (lockout.ts),
 * under the empty account name: nothing names the client they were meant for.
 */
async function presentedUnderGuard(
  ctx: RouteContext,
  authorization: string | undefined,
  address: string,
  form: URLSearchParams,
): Promise<PresentedClient | undefined> {
  const g = ctx.guard;
  if (g === undefined) return presentedClient(authorization, form);
  try {
    return presentedClient(authorization, form);
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'invalid_client') {
      g.check('client', '', address);
      await g.failed('client', '', address);
    }
    throw err;
  }
}

/**
 * `run` under the sign-in guard (lockout.ts), as on the token, revocation and introspection endpoints:
 * the client and, for the password grant, the user are refused while locked; a failed client
 * authentication (invalid_client) or resource owner password (invalid_grant of the password grant)
 * counts against them; a success clears their pairs.
 */
async function guarded<T>(
  ctx: RouteContext,
  address: string,
  client: string | undefined,
  user: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  const g = ctx.guard;
  if (g === undefined) return run();
  if (client !== undefined) g.check('client', client, address);
  if (user !== undefined) g.check('password', user, address);
  try {
    const answer = await run();
    if (client !== undefined) g.succeeded('client', client, address);
    if (user !== undefined) g.succeeded('password', user, address);
    return answer;
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'invalid_client' && client !== undefined) await g.failed('client', client, address);
    else if (err instanceof OAuthError && err.error === 'invalid_grant' && user !== undefined) await g.failed('password', user, address);
    throw err;
  }
}

/** The token endpoint under the sign-in guard. */
async function guardedToken(
  ctx: RouteContext,
  authorization: string | undefined,
  address: string,
  form: URLSearchParams,
): Promise<unknown> {
  const client = (await presentedUnderGuard(ctx, authorization, address, form))?.id ?? form.get('client_id') ?? undefined;
  const user = form.get('grant_type') === 'password' ? (form.get('username') ?? undefined) : undefined;
  return guarded(ctx, address, client, user, () => ctx.oauth.token(authorization, form));
}

/** Revocation (RFC 7009 §2.1) under the sign-in guard: its client authentication is the token endpoint's. */
async function guardedRevoke(ctx: RouteContext, authorization: string | undefined, address: string, form: URLSearchParams): Promise<void> {
  const client = (await presentedUnderGuard(ctx, authorization, address, form))?.id ?? form.get('client_id') ?? undefined;
  return guarded(ctx, address, client, undefined, () => ctx.oauth.revoke(authorization, form));
}

/**
 * RFC 7662 §2.1: the caller of introspection authenticates. A client by either method of
 * client-auth.ts (under the sign-in guard, as on the token endpoint); HTTP Basic whose user is no client
 * is tried as the super admin (guarded as an admin sign-in by requireAdmin). A failure is
 * invalid_client, 401 (RFC 7662 §2.3 refers to RFC 6749 §5.2), whichever was tried.
 */
async function introspectionCaller(ctx: RouteContext, req: http.IncomingMessage, form: URLSearchParams): Promise<void> {
  const address = req.socket.remoteAddress ?? '';
  const presented = await presentedUnderGuard(ctx, req.headers.authorization, address, form);
  if (presented !== undefined && (presented.method === 'client_secret_post' || (await ctx.store.getClient(presented.id)) !== undefined)) {
    await guarded(ctx, address, presented.id, undefined, () => checkClient(ctx.store, presented));
    return;
  }
  try {
    await requireSuperAdmin(ctx, req);
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'invalid_client') {
      throw new OAuthError(
        'invalid_client',
        presented === undefined
          ? 'client authentication required: HTTP Basic with the consumer key and secret, or client_id and client_secret in the body'
          : 'client authentication failed',
        { headers: err.headers },
      );
    }
    throw err;
  }
}

export function createHandler(ctx: RouteContext): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const route = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const p = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (ctx.ops !== undefined && (await ctx.ops(req, res, p))) return;
    if (ctx.site !== undefined && (await ctx.site(req, res, p, url))) return;
    const onlyPost = (): void => {
      if (method !== 'POST') throw new OAuthError('invalid_request', `${p} takes POST`, { status: 405, headers: { Allow: 'POST' } });
    };
    if (p === '/oauth2/token' || p === '/oauth2/revoke') {
      // A method other than POST is refused before any body byte is read.
      const body = method === 'POST' ? await readBody(req) : Buffer.alloc(0);
      const a = await oauthCall(ctx, {
        endpoint: p === '/oauth2/token' ? 'token' : 'revoke',
        method,
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        body,
        address: req.socket.remoteAddress ?? '',
      });
      res.writeHead(a.status, { ...a.headers, 'Content-Length': Buffer.byteLength(a.body) });
      res.end(a.body);
      return;
    }
    if (p === '/oauth2/introspect') {
      onlyPost();
      const form = await readForm(req);
      await introspectionCaller(ctx, req, form);
      sendJson(res, 200, await ctx.oauth.introspect(form), NO_STORE);
      return;
    }
    if (p === '/oauth2/authorize' || p.startsWith('/oauth2/authorize/')) {
      await handleAuthorize(ctx, req, res, p, url, method === 'POST' ? await readBody(req) : undefined);
      return;
    }
    if (p === '/oauth2/userinfo' && (method === 'GET' || method === 'POST')) {
      await handleUserinfo(ctx, req, res);
      return;
    }
    if (method === 'GET' && (p === '/oauth2/jwks' || /^\/jwks(\/[^/]+)?$/.test(p))) {
      sendJson(res, 200, { keys: ctx.keys.publicJwks() }, { 'Cache-Control': 'max-age=300' });
      return;
    }
    if (method === 'GET' && discoveryKind(p, ctx.oauth.settings.issuer) !== undefined) {
      const s = ctx.oauth.settings;
      sendJson(res, 200, serverMetadata(s, ctx.keys.current().alg, requestOrigin(req, s.hostname)), {
        'Cache-Control': 'max-age=300',
        Vary: 'Host',
      });
      return;
    }
    const tr = method === 'GET' ? tenantRoute(p, ctx.oauth.settings.issuer) : undefined;
    if (tr !== undefined) {
      await tenantKeyRoute(ctx, req, res, tr);
      return;
    }
    if (/^\/client-registration\/v0\.\d+\/register$/.test(p)) {
      onlyPost();
      await register(ctx, req, res);
      return;
    }
    if (p === '/admin/v1' || p.startsWith('/admin/v1/')) {
      const admin = await requireAdmin(ctx, req);
      await handleAdmin(ctx, req, res, p.slice('/admin/v1'.length), url.searchParams, admin);
      return;
    }
    if (CALLBACK_ROUTE.test(p)) {
      await handleWorkflowCallback(ctx, req, res, url);
      return;
    }
    if (p === '/health' && method === 'GET') {
      await ctx.store.schemaVersion();
      sendJson(res, 200, { status: 'UP' });
      return;
    }
    throw new OAuthError('not_found', `no resource ${p} on the management server`);
  };
  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const a = errorAnswer(ctx, req.url, err);
      res.writeHead(a.status, { ...a.headers, 'Content-Length': Buffer.byteLength(a.body) });
      res.end(a.body);
    });
  };
}

/**
 * A tenant's JWKS or discovery document (docs/tenants.md, "Signing keys"). A domain that is no tenant, or
 * a deactivated one, answers the gateway's 103010 fault (404), as its `/t/<domain>/` URLs do.
 */
async function tenantKeyRoute(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  r: { readonly tenant: string; readonly kind: 'openid' | 'oauth' | 'jwks' },
): Promise<void> {
  if (ctx.tenants?.state(r.tenant) !== 'active') {
    const f = gatewayFacts(fault(GatewayOwnCode.TENANT_UNKNOWN, { description: `no active tenant ${r.tenant.slice(0, 253)}` }));
    const body = faultBody(f);
    res.writeHead(f.status, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (r.kind === 'jwks') {
    sendJson(res, 200, { keys: await ctx.keys.tenantJwks(r.tenant) }, { 'Cache-Control': 'max-age=300' });
    return;
  }
  const s = ctx.oauth.settings;
  // A tenant's keys are generated RS256 keys (lib/keymanager/keys.ts), whatever signs the super tenant's.
  sendJson(res, 200, serverMetadata(s, SIGNING_ALG, requestOrigin(req, s.hostname), r.tenant), {
    'Cache-Control': 'max-age=300',
    Vary: 'Host',
  });
}

/** An error as the management server answers it: an OAuthError's code and status, else 500 (logged). */
function errorAnswer(ctx: RouteContext, path: string | undefined, caught: unknown): OAuthAnswer {
  const json = { 'Content-Type': 'application/json; charset=utf-8', ...NO_STORE };
  const err =
    caught instanceof WorkflowError
      ? workflowRefusal(caught)
      : caught instanceof AdminKeptError
        ? new OAuthError('conflict', `${caught.code}: ${caught.message}`)
        : caught;
  if (err instanceof OAuthError) {
    if (err.status >= 500) ctx.logger.log('error', 'management_error', { path, error: err.error, message: err.message });
    return { status: err.status, headers: { ...json, ...err.headers }, body: JSON.stringify(err.body()) };
  }
  if (err instanceof UserStoreError && (err.code === 'USER_STORE_CONFLICT' || err.code === 'USER_STORE_REFUSED')) {
    const status = err.code === 'USER_STORE_CONFLICT' ? 409 : 400;
    return {
      status,
      headers: json,
      body: JSON.stringify({ error: status === 409 ? 'conflict' : 'invalid_request', error_description: err.message }),
    };
  }
  if (err instanceof UserStoreError) {
    // A directory that cannot answer a sign-in (lib/store/ldap.ts): 503, the reason in the log only.
    ctx.logger.log('error', 'user_store_unavailable', { path, code: err.code, message: err.message });
    return {
      status: 503,
      headers: { ...json, 'Retry-After': '5' },
      body: JSON.stringify({ error: 'server_error', error_description: 'the user store cannot be reached; try again later' }),
    };
  }
  if (err instanceof StoreError && STORE_UNAVAILABLE_CODES.has(err.code)) {
    // The database is unreachable or its link broke under the statement (lib/store/pool.ts): 503 with the
    // store's code, the call may be made again once it is back (docs/operations.md, "Start-up errors").
    ctx.logger.log('error', 'store_unavailable', { path, code: err.code, message: err.message });
    return {
      status: 503,
      headers: { ...json, 'Retry-After': '5' },
      body: JSON.stringify({ error: 'server_error', error_description: 'the store cannot be reached; try again later', code: err.code }),
    };
  }
  ctx.logger.log('error', 'management_error', {
    path,
    error: 'server_error',
    message: (err as Error).message,
    code: (err as { code?: unknown }).code,
  });
  return {
    status: 500,
    headers: json,
    body: JSON.stringify({ error: 'server_error', error_description: 'internal error; see the server log' }),
  };
}

/**
 * POST /oauth2/token and /oauth2/revoke as one plain call: what the management port answers, and what the
 * gateway's /token and /revoke answer in process (lib/gateway/token-route.ts). Never rejects.
 */
export async function oauthCall(ctx: RouteContext, c: OAuthCall): Promise<OAuthAnswer> {
  const path = c.endpoint === 'token' ? '/oauth2/token' : '/oauth2/revoke';
  try {
    if (c.method !== 'POST') throw new OAuthError('invalid_request', `${path} takes POST`, { status: 405, headers: { Allow: 'POST' } });
    const form = formOf(c.contentType, c.body);
    if (c.endpoint === 'token')
      return {
        status: 200,
        headers: { 'Content-Type': 'application/json; charset=utf-8', ...NO_STORE },
        body: JSON.stringify(await guardedToken(ctx, c.authorization, c.address, form)),
      };
    await guardedRevoke(ctx, c.authorization, c.address, form);
    // RFC 7009 §2.2: 200, empty body.
    return { status: 200, headers: NO_STORE, body: '' };
  } catch (err) {
    return errorAnswer(ctx, path, err);
  }
}
