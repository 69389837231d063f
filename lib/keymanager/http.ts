/**
 * The management server's HTTP routes (spec 002, part 4, "management" host):
 *
 *   POST /oauth2/token                          RFC 6749 §3.2
 *   POST /oauth2/revoke                         RFC 7009
 *   POST /oauth2/introspect                     RFC 7662 (client or super admin credentials)
 *   GET  /oauth2/jwks, /jwks/<version>          RFC 7517 key set (spec's /jwks/<version> shape)
 *   GET  /.well-known/openid-configuration      OpenID Connect Discovery 1.0 (also under /oauth2/token/,
 *                                               the issuer's path, as Discovery §4 builds it)
 *   POST /client-registration/v0.<n>/register   RFC 7591, or the reference's clientName/grantType body
 *   /admin/v1/...                               the JSON admin API (lib/keymanager/admin.ts)
 *   GET  /health                                liveness of the store (the checkers' report when
 *                                               [server_health_check] enable: lib/observability)
 *   GET  /health/live, /metrics                 lib/observability/routes.ts (`ops`), asked first
 *
 * Request bodies are read up to 64 KiB. Token responses carry Cache-Control: no-store (RFC 6749 §5.1).
 */
import type * as http from 'node:http';
import type { Logger } from '../log';
import type { OpsHandler } from '../events/observed';
import { checkUserPassword } from '../store/passwords';
import type { LoginGuard } from './lockout';
import type { Store } from '../store/types';
import type { Deployments } from '../scale/deployments';
import { handleAdmin } from './admin';
import { OAuthError } from './errors';
import type { KeyRing } from './keys';
import type { Manager } from './manage';
import { parseBasic, type OAuthServer } from './oauth';
import { IMPLEMENTED_GRANTS, isGrantType, type GrantType } from './settings';

const MAX_BODY = 64 * 1024;

export interface RouteContext {
  readonly oauth: OAuthServer;
  readonly manager: Manager;
  readonly store: Store;
  readonly keys: KeyRing;
  readonly logger: Logger;
  readonly userRules: { username: RegExp; password: RegExp };
  /** Failed sign-ins slowed and locked (lib/keymanager/lockout.ts). */
  readonly guard?: LoginGuard;
  /** Health, liveness and metrics routes (lib/observability/routes.ts). */
  readonly ops?: OpsHandler;
  /** The API files and policies this control plane serves to gateway-workers (lib/scale/deployments.ts). */
  readonly deployments?: (labels?: readonly string[]) => Deployments;
}

export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        // Answer 413 and close the connection rather than read the rest (Connection: close below).
        req.removeAllListeners('data');
        req.pause();
        reject(new OAuthError('invalid_request', `request body larger than ${MAX_BODY} bytes`, { status: 413, headers: { Connection: 'close' } }));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** RFC 6749 §3.2: the token endpoint takes application/x-www-form-urlencoded. */
async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  const body = await readBody(req);
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the request body must be application/x-www-form-urlencoded (RFC 6749 §3.2)');
  }
  return new URLSearchParams(body.toString('utf8'));
}

export async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readBody(req);
  if (body.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new OAuthError('invalid_request', 'the request body is not JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new OAuthError('invalid_request', 'the request body must be a JSON object');
  return v as Record<string, unknown>;
}

/** The super admin (any stored user with the admin role) by HTTP Basic; 401 with a challenge otherwise. */
export async function requireAdmin(ctx: RouteContext, req: http.IncomingMessage): Promise<string> {
  const challenge = { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="throughway management", charset="UTF-8"' } };
  const creds = parseBasic(req.headers.authorization);
  if (creds === undefined) throw new OAuthError('invalid_client', 'super admin credentials required (HTTP Basic)', challenge);
  const address = req.socket.remoteAddress ?? '';
  ctx.guard?.check('admin', creds.user, address);
  const user = await checkUserPassword(ctx.store, creds.user, creds.password);
  if (user === undefined || !user.roles.includes('admin')) {
    await ctx.guard?.failed('admin', creds.user, address);
    throw new OAuthError('invalid_client', 'invalid super admin credentials', challenge);
  }
  ctx.guard?.succeeded('admin', creds.user, address);
  return user.username;
}

/**
 * The token endpoint under the sign-in guard (lockout.ts): the client (Basic user or client_id) and, for
 * the password grant, the user are refused while locked; a failed client authentication (invalid_client)
 * or resource owner password (invalid_grant of the password grant) counts against them.
 */
async function guardedToken(ctx: RouteContext, req: http.IncomingMessage, form: URLSearchParams): Promise<unknown> {
  const g = ctx.guard;
  if (g === undefined) return ctx.oauth.token(req.headers.authorization, form);
  const address = req.socket.remoteAddress ?? '';
  const basic = parseBasic(req.headers.authorization)?.user;
  let client = form.get('client_id') ?? undefined;
  if (basic !== undefined) {
    try {
      client = decodeURIComponent(basic.replace(/\+/g, ' '));
    } catch {
      client = basic;
    }
  }
  const user = form.get('grant_type') === 'password' ? form.get('username') ?? undefined : undefined;
  if (client !== undefined) g.check('client', client, address);
  if (user !== undefined) g.check('password', user, address);
  try {
    const answer = await ctx.oauth.token(req.headers.authorization, form);
    if (client !== undefined) g.succeeded('client', client, address);
    if (user !== undefined) g.succeeded('password', user, address);
    return answer;
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'invalid_client' && client !== undefined) await g.failed('client', client, address);
    else if (err instanceof OAuthError && err.error === 'invalid_grant' && user !== undefined) await g.failed('password', user, address);
    throw err;
  }
}

function discovery(ctx: RouteContext): Record<string, unknown> {
  const s = ctx.oauth.settings;
  const base = s.baseUrl;
  return {
    issuer: s.issuer,
    token_endpoint: `${base}/oauth2/token`,
    revocation_endpoint: `${base}/oauth2/revoke`,
    introspection_endpoint: `${base}/oauth2/introspect`,
    jwks_uri: `${base}/oauth2/jwks`,
    // Spec 002, part 9, rule 4: v0.14 is the default version of the registration path (any v0.<n> answers).
    registration_endpoint: `${base}/client-registration/v0.14/register`,
    grant_types_supported: IMPLEMENTED_GRANTS.filter((g: GrantType) => s.grants[g]),
    response_types_supported: ['token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [ctx.keys.current().alg],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
    scopes_supported: ['openid'],
    claims_supported: ['iss', 'sub', 'aud', 'azp', 'client_id', 'scope', 'jti', 'iat', 'nbf', 'exp', 'keytype', 'aut'],
  };
}

/**
 * Dynamic client registration. RFC 7591 §2 body (`client_name`, `grant_types`, `redirect_uris`) answers
 * 201 with the RFC 7591 §3.2.1 fields; the reference's form (`clientName`, `owner`, `grantType` as a
 * space-separated string, `callbackUrl`) answers 200 with its fields (`clientId`, `clientSecret`,
 * `clientName`, `callBackURL`, `appOwner`, `jsonString`). Both create an application with production keys.
 */
async function register(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const admin = await requireAdmin(ctx, req);
  const body = await readJson(req);
  const reference = typeof body.clientName === 'string';
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const name = reference ? str(body.clientName) : str(body.client_name);
  if (name === undefined) throw new OAuthError('invalid_client_metadata', 'client_name (or clientName) is required');
  let grants: string[] | undefined;
  if (reference) grants = str(body.grantType)?.split(/[\s,]+/).filter((g) => g !== '');
  else if (body.grant_types !== undefined) {
    if (!Array.isArray(body.grant_types) || !body.grant_types.every((g) => typeof g === 'string')) throw new OAuthError('invalid_client_metadata', 'grant_types must be an array of strings');
    grants = body.grant_types as string[];
  }
  if (grants !== undefined) {
    // RFC 7591 §2: "implicit" and other grant names this server does not know are refused.
    for (const g of grants) if (!isGrantType(g)) throw new OAuthError('invalid_client_metadata', `unknown grant type ${g}`);
  }
  let callback = reference ? str(body.callbackUrl) : undefined;
  if (!reference && body.redirect_uris !== undefined) {
    if (!Array.isArray(body.redirect_uris) || !body.redirect_uris.every((u) => typeof u === 'string')) throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be an array of strings');
    callback = (body.redirect_uris as string[])[0];
  }
  if (callback !== undefined) {
    try {
      new URL(callback);
    } catch {
      throw new OAuthError('invalid_redirect_uri', `${callback} is not an absolute URI`);
    }
  }
  const owner = str(body.owner) ?? admin;
  const app = await ctx.manager.createApplication({ name, owner, tier: str(body.tier) ?? 'Unlimited', description: 'registered by dynamic client registration' }).catch((err: unknown) => {
    if (err instanceof OAuthError && err.error === 'conflict') throw new OAuthError('invalid_client_metadata', `an application named ${name} already exists for ${owner}`);
    throw err;
  });
  const keys = await ctx.manager.generateKeys(app.id, { keyType: 'PRODUCTION', ...(grants !== undefined ? { grantTypes: grants } : {}), ...(callback !== undefined ? { callbackUrl: callback } : {}) });
  ctx.logger.log('info', 'client_registered', { client_id: keys.consumerKey, client_name: name, owner });
  if (reference) {
    sendJson(res, 200, {
      clientId: keys.consumerKey,
      clientName: name,
      callBackURL: keys.callbackUrl,
      clientSecret: keys.consumerSecret,
      isSaasApplication: body.saasApp === true,
      appOwner: owner,
      jsonString: JSON.stringify({ grant_types: keys.grantTypes.join(' '), redirect_uris: keys.callbackUrl, client_name: name }),
    }, NO_STORE);
    return;
  }
  sendJson(res, 201, {
    client_id: keys.consumerKey,
    client_secret: keys.consumerSecret,
    client_id_issued_at: Math.floor(Date.now() / 1000),
    client_secret_expires_at: 0,
    client_name: name,
    grant_types: keys.grantTypes,
    redirect_uris: keys.callbackUrl === '' ? [] : [keys.callbackUrl],
    token_endpoint_auth_method: 'client_secret_basic',
  }, NO_STORE);
}

export function createHandler(ctx: RouteContext): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const route = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const p = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (ctx.ops !== undefined && (await ctx.ops(req, res, p))) return;
    const onlyPost = (): void => {
      if (method !== 'POST') throw new OAuthError('invalid_request', `${p} takes POST`, { status: 405, headers: { Allow: 'POST' } });
    };
    if (p === '/oauth2/token') {
      onlyPost();
      const form = await readForm(req);
      sendJson(res, 200, await guardedToken(ctx, req, form), NO_STORE);
      return;
    }
    if (p === '/oauth2/revoke') {
      onlyPost();
      await ctx.oauth.revoke(req.headers.authorization, await readForm(req));
      // RFC 7009 §2.2: 200, empty body.
      res.writeHead(200, { 'Content-Length': 0, ...NO_STORE });
      res.end();
      return;
    }
    if (p === '/oauth2/introspect') {
      onlyPost();
      const form = await readForm(req);
      // RFC 7662 §2.1: the caller authenticates; a registered client or the super admin.
      const creds = parseBasic(req.headers.authorization);
      const isClient = creds !== undefined && (await ctx.store.getClient(creds.user)) !== undefined;
      if (isClient) await ctx.oauth.authenticateClient(req.headers.authorization, new URLSearchParams());
      else await requireAdmin(ctx, req);
      sendJson(res, 200, await ctx.oauth.introspect(form), NO_STORE);
      return;
    }
    if (method === 'GET' && (p === '/oauth2/jwks' || /^\/jwks(\/[^/]+)?$/.test(p))) {
      sendJson(res, 200, { keys: ctx.keys.publicJwks() }, { 'Cache-Control': 'max-age=300' });
      return;
    }
    if (method === 'GET' && (p === '/.well-known/openid-configuration' || p === '/oauth2/token/.well-known/openid-configuration' || p === '/oauth2/oidcdiscovery/.well-known/openid-configuration')) {
      sendJson(res, 200, discovery(ctx));
      return;
    }
    if (/^\/client-registration\/v0\.\d+\/register$/.test(p)) {
      onlyPost();
      await register(ctx, req, res);
      return;
    }
    if (p === '/admin/v1' || p.startsWith('/admin/v1/')) {
      await requireAdmin(ctx, req);
      await handleAdmin(ctx, req, res, p.slice('/admin/v1'.length), url.searchParams);
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
      if (err instanceof OAuthError) {
        if (err.status >= 500) ctx.logger.log('error', 'management_error', { path: req.url, error: err.error, message: err.message });
        sendJson(res, err.status, err.body(), { ...NO_STORE, ...err.headers });
        return;
      }
      ctx.logger.log('error', 'management_error', { path: req.url, error: 'server_error', message: (err as Error).message, code: (err as { code?: unknown }).code });
      sendJson(res, 500, { error: 'server_error', error_description: 'internal error; see the server log' }, NO_STORE);
    });
  };
}
