/**
 * OpenID Connect ID tokens (OpenID Connect Core 1.0 §2), signed with the key ring's current key (RS256
 * unless a configured keystore holds an EC key): `iss`, `sub`, `aud` = the client, `azp`, `iat`, `exp`,
 * `nonce` when the authorization request carried one (§3.1.2.1), `auth_time` for a sign-in, and `at_hash`
 * (§3.1.3.6: the left half of the SHA-256 of the access token, base64url) when issued with one.
 */
import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import type { ActiveKey } from './keys';

export interface IdTokenInput {
  readonly issuer: string;
  readonly subject: string;
  readonly clientId: string;
  /** Seconds. */
  readonly validity: number;
  readonly nonce?: string;
  /** Seconds since the epoch of the user's sign-in. */
  readonly authTime?: number;
  readonly accessToken?: string;
}

/** §3.1.3.6: at_hash for SHA-256 based algorithms (RS256, ES256). */
export function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');
}

export async function signIdToken(key: ActiveKey, t: IdTokenInput, now = Math.floor(Date.now() / 1000)): Promise<string> {
  const claims: Record<string, unknown> = { azp: t.clientId };
  if (t.nonce !== undefined) claims.nonce = t.nonce;
  if (t.authTime !== undefined) claims.auth_time = t.authTime;
  if (t.accessToken !== undefined) claims.at_hash = atHash(t.accessToken);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(t.issuer)
    .setSubject(t.subject)
    .setAudience(t.clientId)
    .setIssuedAt(now)
    .setExpirationTime(now + Math.max(1, t.validity))
    .sign(key.privateKey);
}
