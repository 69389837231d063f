/**
 * The backend JWT ([apim.jwt], spec 002 part 5 rule 4): a JWT the gateway sends to the backend in the
 * header [apim.jwt] header names (X-JWT-Assertion), telling it who called: the gateway's claims under
 * `claim_dialect` (subscriber, application, API, tier, key type, user type, end user) and the token's own
 * claims, except the registered ones the backend JWT sets itself and gateway_generator.excluded_claims.
 *
 * Signed RS256 for SHA256withRSA, unsigned (`alg: none`, empty signature) for NONE. The parts are
 * encoded per `encoding`: base64url (RFC 7515) or, the reference's default, standard base64 with
 * padding, which is why signing is done here with node:crypto over the encoded parts rather than with
 * jose (which only writes base64url). Signing costs ~0.4 ms (measured on a prototype): the result is cached per token
 * and API until shortly before it expires.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign, KeyObject } from 'node:crypto';
import type { AuthContext } from './auth-context';
import type { BackendJwtSettings } from './settings';

/** The API claims of a backend JWT (the gateway's API definition has these fields). */
export interface BackendJwtApi {
  readonly name: string;
  readonly context: string;
  readonly version: string;
}

/** Registered claims the backend JWT sets itself; the token's values are not copied (RFC 7519 §4.1). */
export const RESTRICTED_CLAIMS: ReadonlySet<string> = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);

/** A cached backend JWT is renewed this long before it expires, so the backend never gets a stale one. */
export const BACKEND_JWT_RENEW_MS = 30_000;

export interface BackendJwtKey {
  readonly kid: string;
  readonly key: KeyObject;
  /** The key's X.509 certificate (DER), when its keystore holds one: its thumbprint goes in the header. */
  readonly certificate?: Buffer;
}

/** An RSA key for when no key manager key is at hand (another process runs it, or its key is EC). */
export function generatedKey(): BackendJwtKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: `throughway-${randomUUID()}`, key: privateKey };
}

/** The key manager's signing key as a node:crypto KeyObject, when it can sign RS256. */
export function keyManagerKey(k: {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: unknown;
  readonly certificate?: Buffer;
}): BackendJwtKey | undefined {
  if (k.alg !== 'RS256') return undefined;
  const key = k.privateKey instanceof KeyObject ? k.privateKey : KeyObject.from(k.privateKey as Parameters<typeof KeyObject.from>[0]);
  return {
    kid: k.kid,
    key: key.type === 'private' ? key : createPrivateKey(key.export({ format: 'pem', type: 'pkcs8' })),
    ...(k.certificate !== undefined ? { certificate: k.certificate } : {}),
  };
}

function encode(s: BackendJwtSettings, data: string | Buffer): string {
  const b = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return s.encoding === 'base64url' ? b.toString('base64url') : b.toString('base64');
}

export interface BackendJwt {
  readonly value: string;
  /** Epoch ms. */
  readonly expiresAt: number;
}

/**
 * Builds and signs one backend JWT. `now` in ms; the JWT expires with the token, or earlier when
 * [apim.cache.jwt_claim] expiry_time is shorter.
 */
export function buildBackendJwt(
  s: BackendJwtSettings,
  key: BackendJwtKey | undefined,
  issuer: string,
  auth: AuthContext,
  api: BackendJwtApi,
  now: number,
): BackendJwt {
  const d = s.dialect;
  const expiresAt = s.maxValidity !== undefined ? Math.min(auth.expiresAt, now + s.maxValidity) : auth.expiresAt;
  const claims: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(auth.claims)) {
    if (!RESTRICTED_CLAIMS.has(k) && !s.excludedClaims.has(k)) claims[k] = v;
  }
  const own: Record<string, unknown> = {
    iss: issuer,
    sub: auth.endUser,
    iat: Math.floor(now / 1000),
    exp: Math.floor(expiresAt / 1000),
    jti: randomUUID(),
    [`${d}/subscriber`]: auth.subscriber,
    [`${d}/applicationid`]: auth.applicationId,
    [`${d}/applicationname`]: auth.applicationName,
    [`${d}/applicationtier`]: auth.applicationTier,
    [`${d}/apiname`]: api.name,
    [`${d}/apicontext`]: api.context,
    [`${d}/version`]: api.version,
    [`${d}/tier`]: auth.subscriptionTier,
    [`${d}/keytype`]: auth.keyType,
    [`${d}/usertype`]: auth.userType,
    [`${d}/enduser`]: auth.endUser,
    [`${d}/client_id`]: auth.consumerKey,
  };
  // [apim.jwt] enable_user_claims: the end user's store claims under the dialect (`<dialect>/role`).
  if (auth.userClaims !== undefined) for (const [k, v] of Object.entries(auth.userClaims)) own[`${d}/${k}`] ??= v;
  for (const [k, v] of Object.entries(own)) if (!s.excludedClaims.has(k) || RESTRICTED_CLAIMS.has(k)) claims[k] = v;
  const signed = s.algorithm === 'RS256' && key !== undefined;
  const header: Record<string, string> = { typ: 'JWT', alg: signed ? 'RS256' : 'none' };
  if (signed && s.useKid) header.kid = key.kid;
  // The signing certificate's thumbprint (RFC 7515 §4.1.7 x5t, SHA-1; §4.1.8 x5t#S256 with use_sha256_hash).
  if (signed && key.certificate !== undefined)
    header[s.thumbprint === 'sha256' ? 'x5t#S256' : 'x5t'] = createHash(s.thumbprint).update(key.certificate).digest('base64url');
  const input = `${encode(s, JSON.stringify(header))}.${encode(s, JSON.stringify(claims))}`;
  const signature = signed ? encode(s, sign('sha256', Buffer.from(input, 'latin1'), key.key)) : '';
  return { value: `${input}.${signature}`, expiresAt };
}
