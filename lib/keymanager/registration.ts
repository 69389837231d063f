/**
 * Dynamic client registration (RFC 7591) at /client-registration/v0.<n>/register, and its initial
 * access tokens (RFC 7591 §3: "the authorization server MAY require an initial access token").
 *
 * Who may register: the holder of an initial access token (`Authorization: Bearer`), or the super admin
 * (HTTP Basic, any stored user with the admin role). An initial access token is a JWT signed with the
 * key ring's current key, header `typ: registration+jwt` (so it is never taken for an access token,
 * which must be `at+jwt`, RFC 9068 §2.1, nor the reverse), with `iss`, `sub` (the admin who issued it),
 * `owner` (the owner of the applications it registers), `jti`, `iat`, `exp`. It may be used until it
 * expires or is revoked (DELETE /admin/v1/registration-tokens/<jti>: its jti joins the revoked list).
 *
 * Bodies: RFC 7591 §2 (`client_name`, `grant_types`, `redirect_uris`) answers 201 with the §3.2.1 fields;
 * the reference's form (`clientName`, `owner`, `grantType` as a space-separated string, `callbackUrl`)
 * answers 200 with its fields (`clientId`, `clientSecret`, `clientName`, `callBackURL`, `appOwner`,
 * `jsonString`). The reference keeps `callbackUrl` as given (its documented example is "www.google.lk"),
 * so that form accepts any callback without control characters; an RFC 7591 `redirect_uris` entry must
 * be an absolute URI without a fragment (RFC 7591 §2, RFC 6749 §3.1.2). Errors are RFC 7591 §3.2.2's
 * invalid_redirect_uri and invalid_client_metadata.
 */
import type * as http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { issuedInFuture } from '../security/validator';
import type { Store } from '../store/types';
import { CLIENT_AUTH_METHODS } from './client-auth';
import { OAuthError } from './errors';
import type { KeyRing } from './keys';
import { checkName, checkText } from './manage';
import { isGrantType, type KeyManagerSettings } from './settings';
import { readJson, requireSuperAdmin, sendJson, type RouteContext } from './route-context';

export const REGISTRATION_TOKEN_TYPE = 'registration+jwt';
/** Default and longest lifetime of an initial access token, seconds. */
export const REGISTRATION_TOKEN_DEFAULT_TTL = 3600;
export const REGISTRATION_TOKEN_MAX_TTL = 30 * 24 * 3600;

export interface RegistrationToken {
  readonly token: string;
  readonly jti: string;
  readonly owner: string;
  readonly issuedBy: string;
  readonly expiresAt: number;
}

/** Issues an initial access token (admin API POST /admin/v1/registration-tokens, `throughway registration token`). */
export async function issueRegistrationToken(
  keys: KeyRing,
  issuer: string,
  input: { issuedBy: string; owner?: string; expiresIn?: number },
): Promise<RegistrationToken> {
  const ttl = input.expiresIn ?? REGISTRATION_TOKEN_DEFAULT_TTL;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > REGISTRATION_TOKEN_MAX_TTL)
    throw new OAuthError('invalid_request', `expiresIn must be a whole number of seconds from 1 to ${REGISTRATION_TOKEN_MAX_TTL}`);
  const owner = input.owner ?? input.issuedBy;
  checkText('owner', owner);
  const key = keys.current();
  const now = Math.floor(Date.now() / 1000);
  const jti = randomUUID();
  const token = await new SignJWT({ owner })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: REGISTRATION_TOKEN_TYPE })
    .setIssuer(issuer)
    .setSubject(input.issuedBy)
    .setJti(jti)
    .setIssuedAt(now)
    .setExpirationTime(now + ttl)
    .sign(key.privateKey);
  return { token, jti, owner, issuedBy: input.issuedBy, expiresAt: (now + ttl) * 1000 };
}

/** Revokes an initial access token by its jti (kept revoked for the longest lifetime one can have). */
export async function revokeRegistrationToken(store: Store, jti: string): Promise<void> {
  const now = Date.now();
  await store.revokeToken(jti, now + REGISTRATION_TOKEN_MAX_TTL * 1000, now);
}

/** The owner an initial access token registers for; invalid_token (RFC 6750 §3.1) otherwise. */
async function verifyRegistrationToken(
  ctx: RouteContext,
  token: string,
  s: KeyManagerSettings,
): Promise<{ owner: string; issuedBy: string; jti: string }> {
  const bad = (why: string): OAuthError =>
    new OAuthError('invalid_token', why, { headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${why}"` } });
  let p: Record<string, unknown>;
  try {
    const r = await jwtVerify(token, createLocalJWKSet({ keys: ctx.keys.publicJwks() }), {
      issuer: s.issuer,
      typ: REGISTRATION_TOKEN_TYPE,
      requiredClaims: ['exp', 'jti', 'sub'],
      clockTolerance: Math.round(s.skew / 1000),
    });
    p = r.payload as Record<string, unknown>;
  } catch {
    throw bad('the initial access token is not valid');
  }
  if (issuedInFuture(p, Date.now(), s.skew)) throw bad('the initial access token was issued in the future');
  const jti = String(p.jti);
  if (await ctx.store.isRevoked(jti, Date.now())) throw bad('the initial access token is revoked');
  const owner = typeof p.owner === 'string' && p.owner !== '' ? p.owner : String(p.sub);
  return { owner, issuedBy: String(p.sub), jti };
}

/** Who registers: the initial access token's owner, or the super admin (who may name any owner). */
async function registrant(
  ctx: RouteContext,
  req: http.IncomingMessage,
): Promise<{ owner: string | undefined; admin: string; jti?: string }> {
  const auth = req.headers.authorization;
  const bearer = auth === undefined ? undefined : /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(auth);
  if (bearer !== undefined && bearer !== null) {
    const t = await verifyRegistrationToken(ctx, bearer[1] ?? '', ctx.oauth.settings);
    return { owner: t.owner, admin: t.issuedBy, jti: t.jti };
  }
  if (auth !== undefined && /^Bearer\s/i.test(auth))
    throw new OAuthError('invalid_token', 'malformed bearer token', { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
  if (auth === undefined) {
    throw new OAuthError(
      'invalid_token',
      'registration needs an initial access token (Authorization: Bearer) or the super admin credentials (HTTP Basic)',
      { headers: { 'WWW-Authenticate': 'Bearer, Basic realm="throughway management", charset="UTF-8"' } },
    );
  }
  return { owner: undefined, admin: await requireSuperAdmin(ctx, req) };
}

function absoluteRedirect(u: string): void {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    throw new OAuthError('invalid_redirect_uri', `${JSON.stringify(u)} is not an absolute URI (RFC 7591 §2)`);
  }
  if (url.hash !== '' || u.includes('#'))
    throw new OAuthError('invalid_redirect_uri', `${JSON.stringify(u)} has a fragment (RFC 6749 §3.1.2)`);
}

export async function register(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const who = await registrant(ctx, req);
  const body = await readJson(req);
  const reference = typeof body.clientName === 'string';
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const meta = (f: () => void): void => {
    try {
      f();
    } catch (err) {
      throw err instanceof OAuthError && err.error === 'invalid_request' ? new OAuthError('invalid_client_metadata', err.message) : err;
    }
  };
  const name = reference ? str(body.clientName) : str(body.client_name);
  if (name === undefined) throw new OAuthError('invalid_client_metadata', 'client_name (or clientName) is required');
  meta(() => checkName(reference ? 'clientName' : 'client_name', name));
  let grants: string[] | undefined;
  if (reference)
    grants = str(body.grantType)
      ?.split(/[\s,]+/)
      .filter((g) => g !== '');
  else if (body.grant_types !== undefined) {
    if (!Array.isArray(body.grant_types) || !body.grant_types.every((g) => typeof g === 'string'))
      throw new OAuthError('invalid_client_metadata', 'grant_types must be an array of strings');
    grants = body.grant_types as string[];
  }
  // RFC 7591 §2: "implicit" and other grant names this server does not know are refused.
  for (const g of grants ?? []) if (!isGrantType(g)) throw new OAuthError('invalid_client_metadata', `unknown grant type ${g}`);
  let callback: string | undefined;
  if (reference) {
    callback = str(body.callbackUrl);
    if (callback !== undefined) {
      try {
        checkText('callbackUrl', callback, 2048);
      } catch (err) {
        throw new OAuthError('invalid_redirect_uri', (err as Error).message);
      }
    }
  } else if (body.redirect_uris !== undefined) {
    if (!Array.isArray(body.redirect_uris) || !body.redirect_uris.every((u) => typeof u === 'string'))
      throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be an array of strings');
    const uris = body.redirect_uris as string[];
    // The store keeps one callback URL per client (the reference's model).
    if (uris.length > 1) throw new OAuthError('invalid_redirect_uri', 'one redirect URI per client');
    for (const u of uris) absoluteRedirect(u);
    callback = uris[0];
  }
  const method = body.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!(CLIENT_AUTH_METHODS as readonly unknown[]).includes(method))
    throw new OAuthError('invalid_client_metadata', `token_endpoint_auth_method must be one of ${CLIENT_AUTH_METHODS.join(', ')}`);
  const asked = str(body.owner);
  if (who.owner !== undefined && asked !== undefined && asked !== who.owner) {
    throw new OAuthError('invalid_client_metadata', `this initial access token registers applications of ${who.owner}, not ${asked}`);
  }
  const owner = who.owner ?? asked ?? who.admin;
  meta(() => checkText('owner', owner));
  const app = await ctx.manager
    .createApplication({ name, owner, tier: str(body.tier) ?? 'Unlimited', description: 'registered by dynamic client registration' })
    .catch((err: unknown) => {
      if (err instanceof OAuthError && err.error === 'conflict')
        throw new OAuthError('invalid_client_metadata', `an application named ${name} already exists for ${owner}`);
      if (err instanceof OAuthError && err.error === 'invalid_request') throw new OAuthError('invalid_client_metadata', err.message);
      throw err;
    });
  const keys = await ctx.manager.generateKeys(app.id, {
    keyType: 'PRODUCTION',
    ...(grants !== undefined ? { grantTypes: grants } : {}),
    ...(callback !== undefined ? { callbackUrl: callback } : {}),
  });
  ctx.logger.log('info', 'client_registered', {
    client_id: keys.consumerKey,
    client_name: name,
    owner,
    ...(who.jti !== undefined ? { initial_access_token: who.jti } : {}),
  });
  const noStore = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
  if (reference) {
    sendJson(
      res,
      200,
      {
        clientId: keys.consumerKey,
        clientName: name,
        callBackURL: keys.callbackUrl,
        clientSecret: keys.consumerSecret,
        isSaasApplication: body.saasApp === true,
        appOwner: owner,
        jsonString: JSON.stringify({ grant_types: keys.grantTypes.join(' '), redirect_uris: keys.callbackUrl, client_name: name }),
      },
      noStore,
    );
    return;
  }
  sendJson(
    res,
    201,
    {
      client_id: keys.consumerKey,
      client_secret: keys.consumerSecret,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      client_secret_expires_at: 0,
      client_name: name,
      grant_types: keys.grantTypes,
      redirect_uris: keys.callbackUrl === '' ? [] : [keys.callbackUrl],
      token_endpoint_auth_method: method,
    },
    noStore,
  );
}
