/**
 * The authorization endpoint (RFC 6749 §3.1, §4.1) with PKCE (RFC 7636) and OpenID Connect (Core 1.0
 * §3.1), and the userinfo endpoint (OpenID Connect Core §5.3). docs/key-manager.md, "Authorization code
 * with PKCE", shows the flow.
 *
 * GET /oauth2/authorize checks the client and its redirect URI (exact match with the registered callback;
 * a mismatch is never redirected to, §4.1.2.1), then the rest of the request (errors go back to the
 * client's redirect URI with `state`), keeps a pending authorization and renders the sign-in page. The
 * page's POSTs carry the pending authorization's id and CSRF token, and the browser carries the same id
 * in a SameSite=Strict cookie, so a form posted from another site is refused. After sign-in and consent
 * the browser is redirected with a code (256 random bits, valid CODE_TTL, single use), `state` and `iss`
 * (RFC 9207).
 *
 * Pending authorizations and codes live in memory (AuthorizationCodes): short-lived by design, bounded,
 * and lost on restart; with several key manager nodes behind one address the balancer must keep a
 * browser's requests and the token request on the node that issued the code (docs/key-manager.md).
 */
import { timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import type { LoginGuard } from './lockout';
import { SignInHeldError, UserStoreError, type Identity, type UserStore } from '../store/users';
import { OAuthError } from './errors';
import { COOKIE, MAX_PARAM, PENDING_TTL, VERIFIER } from './codes';
import type { RouteContext } from './route-context';
import { consentPage, errorPage, formPageHeaders, sendPage, sendStyle, signInPage, STYLE_PATH } from './signin-page';
import { clientDisplayName } from './console-clients';
import { ThroughwayError } from '../errors';
import { SUPER_TENANT, tenantIssuer } from '../tenants';

export { AuthorizationCodes, CODE_TTL, PENDING_TTL, type ApiScope, type CodeRecord, type IssuedByCode } from './codes';

/**
 * The sign-in page's password check against the user store, under the login guard (lockout.ts): it
 * slows and locks guessing per account and client address as for the password grant (a locked pair or
 * address rejects with a 429 OAuthError). The guard is the only limit: a new pending authorization does
 * not restart the count.
 */
export async function checkPassword(
  users: UserStore,
  username: string,
  password: string,
  clientAddress: string | undefined,
  guard?: LoginGuard,
): Promise<Identity | undefined> {
  if (guard === undefined) return users.authenticate(username, password);
  let user: Identity | undefined;
  const ok = await guard.attempt(
    'signin',
    username,
    clientAddress ?? '',
    async () => (user = await users.authenticate(username, password)) !== undefined,
  );
  return ok ? user : undefined;
}

function single(q: URLSearchParams, name: string): string | undefined {
  const all = q.getAll(name);
  if (all.length > 1) throw new RedirectError('invalid_request', `parameter ${name} is repeated`);
  const v = all[0];
  return v === undefined || v === '' ? undefined : v;
}

/** An error of the authorization request reported to the client at its redirect URI (RFC 6749 §4.1.2.1). */
class RedirectError extends ThroughwayError {
  /** Caught by the authorize endpoint and sent to the client's redirect URI as `error` (never leaves the key manager as a throw). */
  readonly code = 'OAUTH_AUTHORIZE_REDIRECT';
  constructor(
    readonly error: string,
    description: string,
  ) {
    super(description);
  }
}

function redirect(
  res: http.ServerResponse,
  uri: string,
  params: Record<string, string | undefined>,
  headers: Record<string, string | string[]> = {},
): void {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.append(k, v);
  res.writeHead(302, {
    Location: u.toString(),
    'Content-Length': 0,
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    ...headers,
  });
  res.end();
}

function cookieOf(req: http.IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) return v.join('=');
  }
  return undefined;
}

function setCookie(req: http.IncomingMessage, value: string, maxAge: number): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : '';
  return `${COOKIE}=${value}; Path=/oauth2/authorize; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** GET: a new authorization request. */
async function start(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse, q: URLSearchParams): Promise<void> {
  const s = ctx.oauth.settings;
  // Until the redirect URI is known good, errors are shown here, never redirected (RFC 6749 §4.1.2.1).
  let clientId: string | undefined;
  let given: string | undefined;
  try {
    clientId = single(q, 'client_id');
    given = single(q, 'redirect_uri');
  } catch (err) {
    sendPage(res, 400, errorPage('Invalid request', (err as Error).message));
    return;
  }
  const client = clientId === undefined ? undefined : await ctx.store.getClient(clientId);
  if (client === undefined) {
    sendPage(res, 400, errorPage('Invalid request', clientId === undefined ? 'client_id is required.' : 'Unknown client_id.'));
    return;
  }
  if (client.callbackUrl === '') {
    sendPage(res, 400, errorPage('Invalid request', 'This application has no registered callback URL.'));
    return;
  }
  if (given !== undefined && given !== client.callbackUrl) {
    sendPage(res, 400, errorPage('Invalid request', 'redirect_uri does not match the registered callback URL.'));
    return;
  }
  const redirectUri = client.callbackUrl;
  let state: string | undefined;
  // RFC 9207 §2: the authorization response names the issuer of the tokens to come, the client's tenant's.
  let iss = s.issuer;
  try {
    state = single(q, 'state');
    if (state !== undefined && state.length > MAX_PARAM) {
      state = undefined;
      throw new RedirectError('invalid_request', `state is longer than ${MAX_PARAM} characters`);
    }
    if (!s.grants.authorization_code)
      throw new RedirectError(
        'unsupported_response_type',
        'the authorization_code grant is disabled by [oauth.grant_type.authorization_code] enable = false',
      );
    if (single(q, 'response_type') !== 'code') throw new RedirectError('unsupported_response_type', 'response_type must be code');
    if (client.grantTypes.length > 0 && !client.grantTypes.includes('authorization_code'))
      throw new RedirectError('unauthorized_client', 'this client may not use the authorization_code grant');
    const challenge = single(q, 'code_challenge');
    if (challenge === undefined) throw new RedirectError('invalid_request', 'code_challenge is required (PKCE, RFC 7636)');
    // RFC 7636 §4.3: without a method the challenge is plain.
    const method = single(q, 'code_challenge_method') ?? 'plain';
    if (method !== 'S256' && method !== 'plain')
      throw new RedirectError('invalid_request', `code_challenge_method ${method} is not supported; use S256`);
    if (method === 'plain' && !s.pkcePlain)
      throw new RedirectError(
        'invalid_request',
        'code_challenge_method plain is refused; use S256 ([throughway.key_manager] pkce_allow_plain)',
      );
    if (method === 'S256' ? !/^[A-Za-z0-9_-]{43}$/.test(challenge) : !VERIFIER.test(challenge))
      throw new RedirectError('invalid_request', 'malformed code_challenge (RFC 7636 §4.2)');
    const nonce = single(q, 'nonce');
    if (nonce !== undefined && nonce.length > MAX_PARAM)
      throw new RedirectError('invalid_request', `nonce is longer than ${MAX_PARAM} characters`);
    const scope = single(q, 'scope');
    if (scope !== undefined && (scope.length > 2048 || !/^[\x21\x23-\x5B\x5D-\x7E ]*$/.test(scope)))
      throw new RedirectError('invalid_scope', 'malformed scope (RFC 6749 §3.3)');
    const app = await ctx.store.getApplication(client.applicationId);
    if (app === undefined) throw new RedirectError('unauthorized_client', "the client's application was deleted");
    iss = tenantIssuer(s.issuer, app.tenant);
    const clientName = clientDisplayName(app, ctx.oauth.settings.adminUser, redirectUri);
    const p = ctx.oauth.codes.addPending(
      {
        clientId: client.consumerKey,
        applicationId: app.id,
        clientName,
        redirectUri,
        redirectGiven: given !== undefined,
        scope,
        state,
        nonce,
        challenge,
        method,
      },
      Date.now(),
    );
    sendPage(res, 200, signInPage({ clientName, authz: p.id, csrf: p.csrf }), {
      ...formPageHeaders(redirectUri),
      'Set-Cookie': setCookie(req, p.id, PENDING_TTL / 1000),
    });
  } catch (err) {
    if (!(err instanceof RedirectError)) throw err;
    redirect(res, redirectUri, { error: err.error, error_description: err.message, state, iss });
  }
}

/** POST: the sign-in form, then the consent form. */
async function step(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): Promise<void> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    sendPage(res, 400, errorPage('Invalid request', 'The form must be posted as application/x-www-form-urlencoded.'));
    return;
  }
  const form = new URLSearchParams(body.toString('utf8'));
  const now = Date.now();
  const id = form.get('authz') ?? '';
  const p = ctx.oauth.codes.getPending(id, now);
  if (p === undefined) {
    sendPage(res, 400, errorPage('Sign-in expired', 'This sign-in has expired or is unknown; start again from the application.'));
    return;
  }
  // CSRF: the token of this pending authorization, and the cookie only this site's pages send back.
  const cookie = cookieOf(req);
  if (cookie === undefined || cookie !== p.id || !safeEqual(form.get('csrf') ?? '', p.csrf)) {
    ctx.logger.log('warn', 'authorize_csrf_refused', { client_id: p.clientId, cookie: cookie !== undefined });
    sendPage(
      res,
      403,
      errorPage(
        'Request refused',
        'The form was not posted from this sign-in page (missing or wrong CSRF token). Start again from the application.',
      ),
    );
    return;
  }
  const s = ctx.oauth.settings;
  const iss = tenantIssuer(s.issuer, (await ctx.store.getApplication(p.applicationId))?.tenant ?? SUPER_TENANT);
  const back = (params: Record<string, string | undefined>): void => {
    ctx.oauth.codes.dropPending(p.id);
    redirect(res, p.redirectUri, { ...params, state: p.state, iss }, { 'Set-Cookie': setCookie(req, '', 0) });
  };
  const action = form.get('action');
  if (action === 'login') {
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    const address = req.socket.remoteAddress;
    let user: Identity | undefined;
    try {
      user =
        username === '' || username.length > 255 || password.length > 1024
          ? undefined
          : await checkPassword(ctx.oauth.users, username, password, address, ctx.guard);
    } catch (err) {
      // The user store cannot answer (lib/store/ldap.ts): a page saying so, not counted as a wrong password.
      if (err instanceof UserStoreError && err.code === 'USER_STORE_UNAVAILABLE') {
        ctx.logger.log('error', 'user_store_unavailable', { path: '/oauth2/authorize', code: err.code, message: err.message });
        sendPage(res, 503, errorPage('Sign-in unavailable', 'The user store cannot be reached; try again in a moment.'), {
          'Retry-After': '5',
        });
        return;
      }
      // The right password of a signed-up account not yet approved or confirmed: the page says why (docs/self-service.md).
      if (err instanceof SignInHeldError) {
        ctx.logger.log('info', 'sign_in_held', { client_id: p.clientId, code: err.code, address });
        sendPage(
          res,
          403,
          signInPage({ clientName: p.clientName, authz: p.id, csrf: p.csrf, username, error: err.message }),
          formPageHeaders(p.redirectUri),
        );
        return;
      }
      // Locked by the login guard: the page again, with the time left (Retry-After).
      if (!(err instanceof OAuthError && err.status === 429)) throw err;
      const retry = err.headers['Retry-After'] ?? '60';
      sendPage(
        res,
        429,
        signInPage({
          clientName: p.clientName,
          authz: p.id,
          csrf: p.csrf,
          username,
          error: `Too many failed sign-ins from this address: try again in ${retry} s.`,
        }),
        { ...formPageHeaders(p.redirectUri), 'Retry-After': retry },
      );
      return;
    }
    if (user === undefined) {
      ctx.logger.log('warn', 'sign_in_failed', {
        client_id: p.clientId,
        username: username.slice(0, 255).replace(/[\u0000-\u001f\u007f]/g, '?'),
        address,
      });
      sendPage(
        res,
        401,
        signInPage({ clientName: p.clientName, authz: p.id, csrf: p.csrf, username, error: 'Wrong username or password.' }),
        formPageHeaders(p.redirectUri),
      );
      return;
    }
    const scope = await ctx.oauth.resolveScope(p.scope, { roles: user.roles, applicationId: p.applicationId });
    p.user = { username: user.username, scope, authTime: Math.floor(now / 1000) };
    ctx.logger.log('info', 'sign_in', { client_id: p.clientId, username: user.username, address });
    // A first-party client (the server's own consoles, lib/portal) asks for nothing beyond the sign-in.
    if (ctx.firstParty?.has(p.clientId) === true) {
      const code = ctx.oauth.codes.addCode(p, p.user, now);
      ctx.logger.log('info', 'authorization_code_issued', { client_id: p.clientId, sub: p.user.username, scope: p.user.scope });
      back({ code });
      return;
    }
    sendPage(
      res,
      200,
      consentPage({
        clientName: p.clientName,
        username: user.username,
        scopes: scope === 'default' ? [] : scope.split(' '),
        authz: p.id,
        csrf: p.csrf,
      }),
      formPageHeaders(p.redirectUri),
    );
    return;
  }
  if (p.user === undefined || (action !== 'allow' && action !== 'deny')) {
    sendPage(res, 400, errorPage('Invalid request', 'Sign in first.'));
    return;
  }
  if (action === 'deny') {
    back({ error: 'access_denied', error_description: 'the user denied the request' });
    return;
  }
  const code = ctx.oauth.codes.addCode(p, p.user, now);
  ctx.logger.log('info', 'authorization_code_issued', { client_id: p.clientId, sub: p.user.username, scope: p.user.scope });
  back({ code });
}

/** /oauth2/authorize (GET: a request; POST: the page's forms) and its stylesheet. */
export async function handleAuthorize(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  p: string,
  url: URL,
  body: Buffer | undefined,
): Promise<void> {
  const method = req.method ?? 'GET';
  if (p === STYLE_PATH && method === 'GET') {
    sendStyle(res);
    return;
  }
  if (p !== '/oauth2/authorize') throw new OAuthError('not_found', `no resource ${p} on the management server`);
  if (method === 'GET') return start(ctx, req, res, url.searchParams);
  if (method === 'POST' && body !== undefined) return step(ctx, req, res, body);
  throw new OAuthError('invalid_request', `${p} takes GET and POST`, { status: 405, headers: { Allow: 'GET, POST' } });
}

/** GET or POST /oauth2/userinfo (OpenID Connect Core §5.3): the claims of a user access token with openid. */
export async function handleUserinfo(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const m = /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(req.headers.authorization ?? '');
  // RFC 6750 §3.1: the error codes of a bearer-protected resource, in the challenge too.
  const invalid = (error: 'invalid_token' | 'insufficient_scope', description: string): never => {
    throw new OAuthError(error, description, { headers: { 'WWW-Authenticate': `Bearer realm="throughway", error="${error}"` } });
  };
  if (m === null) return invalid('invalid_token', 'a bearer access token is required (RFC 6750 §2.1)');
  const claims = await ctx.oauth.verifyAccessToken(m[1] as string);
  if (claims === undefined) return invalid('invalid_token', 'the access token is invalid, expired or revoked');
  if (!claims.scope.split(' ').includes('openid') || claims.aut !== 'APPLICATION_USER')
    return invalid('insufficient_scope', 'userinfo needs a user access token with the openid scope');
  const sub = String(claims.sub);
  const user = await ctx.oauth.users.lookup(sub);
  const body: Record<string, unknown> = { sub };
  if (user !== undefined) {
    body.preferred_username = user.username;
    body.roles = user.roles;
  }
  const text = JSON.stringify(body);
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
  });
  res.end(text);
}
