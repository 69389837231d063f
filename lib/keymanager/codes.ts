/**
 * Pending authorizations and authorization codes of the authorization endpoint (authorize.ts; RFC 6749
 * §4.1, PKCE RFC 7636): in memory, bounded, swept on insert, each code single use and kept by its
 * SHA-256 only. The token endpoint (oauth.ts) redeems the codes; both take them from here.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { digest, randomToken } from '../store/passwords';
import { OAuthError } from './errors';
/** A scope a deployed API declares: a bare name (no roles, API unknown), or with roles and its API. */
export type ApiScope =
  | string
  | { readonly name: string; readonly roles: readonly string[]; readonly api?: { readonly context: string; readonly version: string } };

/** RFC 6749 §4.1.2: a code lives at most 10 minutes; one minute is plenty for a redirect. */
export const CODE_TTL = 60_000;
/** A sign-in page stays usable this long. */
export const PENDING_TTL = 10 * 60_000;
/** Bounds of the in-memory maps (each entry well under 4 KiB). */
const MAX_ENTRIES = 10_000;
/** Longest state or nonce accepted. */
export const MAX_PARAM = 1024;
export const COOKIE = 'tw_authz';
/** RFC 7636 §4.1: code_verifier = 43*128 unreserved characters. */
export const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export interface IssuedByCode {
  readonly jti: string;
  readonly expiresAt: number;
  readonly family: string;
}

export interface CodeRecord {
  readonly clientId: string;
  readonly redirectUri: string;
  /** redirect_uri was in the authorization request: the token request must repeat it (RFC 6749 §4.1.3). */
  readonly redirectGiven: boolean;
  readonly scope: string;
  readonly subject: string;
  readonly nonce: string | undefined;
  readonly challenge: string;
  readonly method: 'S256' | 'plain';
  /** Seconds since the epoch of the sign-in. */
  readonly authTime: number;
  readonly expiresAt: number;
  used: boolean;
  issued?: IssuedByCode;
}

export interface Pending {
  readonly id: string;
  readonly csrf: string;
  readonly clientId: string;
  readonly applicationId: string;
  readonly clientName: string;
  readonly redirectUri: string;
  readonly redirectGiven: boolean;
  readonly scope: string | undefined;
  readonly state: string | undefined;
  readonly nonce: string | undefined;
  readonly challenge: string;
  readonly method: 'S256' | 'plain';
  readonly expiresAt: number;
  user?: { username: string; scope: string; authTime: number };
}

function sweep<V extends { expiresAt: number }>(map: Map<string, V>, now: number, keep = 0): void {
  for (const [k, v] of map) if (v.expiresAt + keep <= now) map.delete(k);
}

/** Pending authorizations and codes (in memory, bounded, swept on insert). */
export class AuthorizationCodes {
  private readonly pending = new Map<string, Pending>();
  /** By the code's SHA-256: the code itself is never kept. */
  private readonly codes = new Map<string, CodeRecord>();

  addPending(p: Omit<Pending, 'id' | 'csrf' | 'expiresAt'>, now: number): Pending {
    sweep(this.pending, now);
    if (this.pending.size >= MAX_ENTRIES)
      throw new OAuthError('server_error', 'too many sign-ins in progress; try again shortly', {
        status: 503,
        headers: { 'Retry-After': '60' },
      });
    const rec: Pending = { ...p, id: randomUUID(), csrf: randomToken(), expiresAt: now + PENDING_TTL };
    this.pending.set(rec.id, rec);
    return rec;
  }

  getPending(id: string, now: number): Pending | undefined {
    const p = this.pending.get(id);
    if (p === undefined || p.expiresAt <= now) return undefined;
    return p;
  }

  dropPending(id: string): void {
    this.pending.delete(id);
  }

  /** A new code for a signed-in, consenting user. */
  addCode(p: Pending, user: { username: string; scope: string; authTime: number }, now: number): string {
    // A used code is kept CODE_TTL longer than its life, so a late replay still revokes what it issued.
    sweep(this.codes, now, CODE_TTL);
    if (this.codes.size >= MAX_ENTRIES)
      throw new OAuthError('server_error', 'too many authorization codes outstanding; try again shortly', {
        status: 503,
        headers: { 'Retry-After': '60' },
      });
    const code = randomToken();
    this.codes.set(digest(code), {
      clientId: p.clientId,
      redirectUri: p.redirectUri,
      redirectGiven: p.redirectGiven,
      scope: user.scope,
      subject: user.username,
      nonce: p.nonce,
      challenge: p.challenge,
      method: p.method,
      authTime: user.authTime,
      expiresAt: now + CODE_TTL,
      used: false,
    });
    return code;
  }

  /**
   * The token request's code (RFC 6749 §4.1.3, RFC 7636 §4.6): bound to the client, the redirect URI and
   * the verifier; single use. A code presented again answers `reused` with what it issued.
   */
  redeem(
    r: { code: string; clientId: string; redirectUri: string | undefined; verifier: string | undefined },
    now: number,
  ): { record: CodeRecord; key: string; reused?: undefined } | { reused: IssuedByCode } {
    const key = digest(r.code);
    const rec = this.codes.get(key);
    if (rec === undefined || rec.clientId !== r.clientId)
      throw new OAuthError('invalid_grant', 'unknown or expired authorization code, or issued to another client');
    if (rec.used) {
      if (rec.issued !== undefined) return { reused: rec.issued };
      throw new OAuthError('invalid_grant', 'the authorization code was already used');
    }
    if (rec.expiresAt <= now) throw new OAuthError('invalid_grant', 'the authorization code has expired');
    if ((rec.redirectGiven || r.redirectUri !== undefined) && r.redirectUri !== rec.redirectUri) {
      throw new OAuthError('invalid_grant', 'redirect_uri differs from the one of the authorization request (RFC 6749 §4.1.3)');
    }
    if (r.verifier === undefined)
      throw new OAuthError('invalid_grant', 'code_verifier is required: the authorization request used PKCE (RFC 7636 §4.5)');
    if (!VERIFIER.test(r.verifier))
      throw new OAuthError('invalid_grant', 'code_verifier must be 43 to 128 unreserved characters (RFC 7636 §4.1)');
    const derived = rec.method === 'S256' ? createHash('sha256').update(r.verifier, 'ascii').digest('base64url') : r.verifier;
    const a = Buffer.from(derived);
    const b = Buffer.from(rec.challenge);
    if (a.length !== b.length || !timingSafeEqual(a, b))
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge (RFC 7636 §4.6)');
    rec.used = true;
    return { record: rec, key };
  }

  /** Records what a redeemed code issued (revoked if the code comes back). */
  issued(key: string, what: IssuedByCode): void {
    const rec = this.codes.get(key);
    if (rec !== undefined) rec.issued = what;
  }
}
