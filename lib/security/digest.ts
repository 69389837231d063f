/**
 * HTTP Digest access authentication as a client (RFC 7616), for backends that demand it
 * (docs/apis.md, "Backend security"): the challenge of a 401 parsed, and the Authorization field of each
 * later call computed from it with qop=auth, a fresh cnonce and the nonce count (nc) of the cached nonce.
 *
 * Algorithms: MD5 and SHA-256, and their -sess variants (RFC 7616 §3.4.2). qop=auth-int is not offered:
 * a challenge without "auth" in its qop list is not answered. The legacy RFC 2069 form (no qop) is
 * answered as RFC 7616 §3.4.1 keeps it, without cnonce and nc.
 */
import { createHash, randomBytes } from 'node:crypto';

export type DigestAlgorithm = 'MD5' | 'MD5-sess' | 'SHA-256' | 'SHA-256-sess';
const ALGORITHMS: readonly DigestAlgorithm[] = ['MD5', 'MD5-sess', 'SHA-256', 'SHA-256-sess'];

/** One parsed Digest challenge (RFC 7616 §3.3). */
export interface DigestChallenge {
  readonly realm: string;
  readonly nonce: string;
  readonly opaque: string | undefined;
  readonly algorithm: DigestAlgorithm;
  /** Whether qop=auth is offered; false for the RFC 2069 form. */
  readonly qopAuth: boolean;
  /** stale=true: the nonce expired, the credentials were right (RFC 7616 §3.3). */
  readonly stale: boolean;
  readonly userhash: boolean;
}

/** A challenge header this long is refused (a backend's field; its own limits are far below). */
const MAX_CHALLENGE = 4096;

/** auth-param pairs of one challenge: token = ( token / quoted-string ) (RFC 9110 §11.2). */
function params(text: string): Map<string, string> | undefined {
  const out = new Map<string, string>();
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && (text[i] === ' ' || text[i] === ',' || text[i] === '\t')) i++;
    if (i >= n) break;
    const eq = text.indexOf('=', i);
    if (eq < 0) return undefined;
    const name = text.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    while (i < n && text[i] === ' ') i++;
    let value = '';
    if (text[i] === '"') {
      i++;
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < n) i++;
        value += text[i];
        i++;
      }
      if (i >= n) return undefined;
      i++;
    } else {
      const end = text.indexOf(',', i);
      value = (end < 0 ? text.slice(i) : text.slice(i, end)).trim();
      i = end < 0 ? n : end;
    }
    if (name !== '' && !out.has(name)) out.set(name, value);
  }
  return out;
}

/**
 * The best Digest challenge among a 401's WWW-Authenticate fields (flat [name, value, ...]): SHA-256
 * before MD5 (RFC 7616 §3.7: a client uses the strongest it supports). Undefined: none it can answer.
 */
export function parseDigestChallenge(fields: readonly string[]): DigestChallenge | undefined {
  let best: DigestChallenge | undefined;
  for (let i = 0; i < fields.length; i += 2) {
    if ((fields[i] as string).toLowerCase() !== 'www-authenticate') continue;
    const value = fields[i + 1] as string;
    if (value.length > MAX_CHALLENGE) continue;
    // One field may list several challenges; each Digest one starts with the scheme name.
    for (const part of value.split(/(?:^|,)\s*(?=Digest\s)/i)) {
      const m = /^\s*Digest\s+(.*)$/is.exec(part);
      if (m === null) continue;
      const p = params(m[1] as string);
      if (p === undefined) continue;
      const realm = p.get('realm');
      const nonce = p.get('nonce');
      if (realm === undefined || nonce === undefined || nonce === '') continue;
      const alg = ALGORITHMS.find((a) => a.toLowerCase() === (p.get('algorithm') ?? 'MD5').toLowerCase());
      if (alg === undefined) continue;
      const qop = p.get('qop');
      const qopAuth = qop !== undefined && qop.split(',').some((q) => q.trim().toLowerCase() === 'auth');
      if (qop !== undefined && !qopAuth) continue;
      const c: DigestChallenge = {
        realm,
        nonce,
        opaque: p.get('opaque'),
        algorithm: alg,
        qopAuth,
        stale: (p.get('stale') ?? '').toLowerCase() === 'true',
        userhash: (p.get('userhash') ?? '').toLowerCase() === 'true',
      };
      if (best === undefined || (best.algorithm.startsWith('MD5') && alg.startsWith('SHA-256'))) best = c;
    }
  }
  return best;
}

function h(alg: DigestAlgorithm, s: string): string {
  return createHash(alg.startsWith('SHA-256') ? 'sha256' : 'md5')
    .update(s, 'utf8')
    .digest('hex');
}

/** A quoted-string value (RFC 9110 §5.6.4): backslash and double quote escaped. */
function q(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * The Authorization field value answering `c` for one request (RFC 7616 §3.4): `nc` is this nonce's
 * count (1 for its first use), `cnonce` fresh per request unless a test passes one.
 */
export function digestAuthorization(
  c: DigestChallenge,
  o: { username: string; password: string; method: string; uri: string; nc: number; cnonce?: string },
): string {
  const cnonce = o.cnonce ?? randomBytes(16).toString('hex');
  const nc = o.nc.toString(16).padStart(8, '0');
  let ha1 = h(c.algorithm, `${o.username}:${c.realm}:${o.password}`);
  if (c.algorithm.endsWith('-sess')) ha1 = h(c.algorithm, `${ha1}:${c.nonce}:${cnonce}`);
  const ha2 = h(c.algorithm, `${o.method}:${o.uri}`);
  const response = c.qopAuth ? h(c.algorithm, `${ha1}:${c.nonce}:${nc}:${cnonce}:auth:${ha2}`) : h(c.algorithm, `${ha1}:${c.nonce}:${ha2}`);
  // RFC 7616 §3.4.4: with userhash=true the username is H(username:realm).
  const user = c.userhash ? h(c.algorithm, `${o.username}:${c.realm}`) : o.username;
  const parts = [`username=${q(user)}`, `realm=${q(c.realm)}`, `uri=${q(o.uri)}`, `algorithm=${c.algorithm}`, `nonce=${q(c.nonce)}`];
  if (c.qopAuth) parts.push(`nc=${nc}`, `cnonce=${q(cnonce)}`, 'qop=auth');
  parts.push(`response=${q(response)}`);
  if (c.opaque !== undefined) parts.push(`opaque=${q(c.opaque)}`);
  if (c.userhash) parts.push('userhash=true');
  return `Digest ${parts.join(', ')}`;
}
