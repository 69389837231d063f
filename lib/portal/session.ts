/**
 * Browser sessions of the consoles (docs/portal.md, "Security"): in memory, bounded, idle-expired.
 *
 * The cookie `tw_portal` holds only a random id (256 bits): `HttpOnly`, `SameSite=Lax`, `Path=/`, and
 * `Secure` when the request came over TLS. A session exists only for a signed-in user: it is created at
 * the sign-in's callback with a new id, so an id planted before sign-in is worth nothing, and anonymous
 * requests (GET /devportal/login included) create nothing on the server, so they cannot evict anyone's
 * session. The sign-in in progress (PKCE verifier, state, where to return) travels in the `tw_signin`
 * cookie, sealed with AES-256-GCM under a key of this process (SignInSeal): the browser can neither read
 * the verifier nor forge or stretch the state. Sessions are bounded per user and per client address, so
 * one account or one address signing in again and again drops its own oldest sessions, not others'.
 * Every state-changing form carries the session's CSRF token, compared in constant time; a POST without
 * it is refused with 403.
 */
import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import { CALLBACK_PATH } from '../keymanager/console-clients';
import { addressKey } from '../keymanager/listener';
import { randomToken } from '../store/passwords';

export const COOKIE = 'tw_portal';
/** A session unused this long is dropped. */
export const IDLE_TTL = 30 * 60_000;
/** At most this many sessions; the least recently used goes first. */
export const MAX_SESSIONS = 10_000;
/** Sessions of one user at most (browsers and devices); a new one drops that user's least recently used. */
export const MAX_SESSIONS_PER_USER = 20;
/** Sessions signed in from one client address (an IPv6 /64) at most; a new one drops that address's least recently used. */
export const MAX_SESSIONS_PER_ADDRESS = 100;
/** A sign-in in progress (between the redirect to /oauth2/authorize and the callback) lasts this long. */
export const SIGNIN_TTL = 10 * 60_000;
/** The sealed sign-in cookie, sent only to the callback. */
export const SIGNIN_COOKIE = 'tw_signin';

export interface PortalUser {
  readonly username: string;
  readonly roles: readonly string[];
}

/** Secrets and tokens of an application kept for this session only, never sent to the browser twice. */
export interface HeldKeys {
  consumerKey: string;
  consumerSecret: string;
  accessToken?: string;
  /** The held token's scope (RFC 6749 §5.1 `scope`) and when it expires (ms since the epoch, from `expires_in`). */
  tokenScope?: string;
  tokenExpires?: number;
}

/** A sign-in in progress: PKCE verifier (RFC 7636 §4.1), state (RFC 6749 §10.12), where to return. */
export interface PendingSignIn {
  readonly state: string;
  readonly verifier: string;
  readonly back: string;
  readonly expiresAt: number;
}

export interface Session {
  id: string;
  readonly csrf: string;
  /** Undefined only for the stand-in of an anonymous request, which is never stored. */
  user: PortalUser | undefined;
  /** The client address (addressKey) the user signed in from. */
  readonly address: string;
  /** By application id, then key type. */
  readonly keys: Map<string, Map<string, HeldKeys>>;
  /** Shown once on the next page, then dropped (a new consumer secret, a new access token). */
  flash: string | undefined;
  lastUsed: number;
}

function cookieValue(req: http.IncomingMessage, name = COOKIE): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The anonymous visitor's stand-in session: never stored, holds nothing. */
export function anonymousSession(): Session {
  return { id: '', csrf: '', user: undefined, address: '', keys: new Map(), flash: undefined, lastUsed: 0 };
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class Sessions {
  /** Insertion order is use order (a used session is re-inserted): the first entry is the least recently used. */
  private readonly map = new Map<string, Session>();

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.map.size;
  }

  /** The request's session, if its cookie names a live one. */
  find(req: http.IncomingMessage): Session | undefined {
    const id = cookieValue(req);
    if (id === undefined) return undefined;
    const s = this.map.get(id);
    if (s === undefined) return undefined;
    const now = this.now();
    if (s.lastUsed + IDLE_TTL <= now) {
      this.map.delete(id);
      return undefined;
    }
    s.lastUsed = now;
    this.map.delete(id);
    this.map.set(id, s);
    return s;
  }

  /**
   * The session of a user who just signed in, from `address`. Drops first the idle ones met, then this
   * user's or this address's least recently used when it holds its bound, then the least recently used
   * of all at MAX_SESSIONS.
   */
  create(user: PortalUser, address: string): Session {
    const now = this.now();
    const key = addressKey(address);
    let ofUser: Session | undefined;
    let ofAddress: Session | undefined;
    let users = 0;
    let addresses = 0;
    for (const [id, s] of this.map) {
      if (s.lastUsed + IDLE_TTL <= now) {
        this.map.delete(id);
        continue;
      }
      if (s.user?.username === user.username && users++ === 0) ofUser = s;
      if (s.address === key && addresses++ === 0) ofAddress = s;
    }
    if (users >= MAX_SESSIONS_PER_USER && ofUser !== undefined) this.map.delete(ofUser.id);
    if (addresses >= MAX_SESSIONS_PER_ADDRESS && ofAddress !== undefined) this.map.delete(ofAddress.id);
    while (this.map.size >= MAX_SESSIONS) this.map.delete(this.map.keys().next().value as string);
    const s: Session = { id: randomToken(), csrf: randomToken(), user, address: key, keys: new Map(), flash: undefined, lastUsed: now };
    this.map.set(s.id, s);
    return s;
  }

  drop(s: Session): void {
    this.map.delete(s.id);
  }
}

/** The Set-Cookie header of a session (or of its removal when `s` is undefined). */
export function sessionCookie(req: http.IncomingMessage, s: Session | undefined): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : '';
  return s === undefined
    ? `${COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`
    : `${COOKIE}=${s.id}; Path=/; HttpOnly; SameSite=Lax${secure}`;
}

/** The CSRF check of a posted form: the session's token in the `csrf` field. */
export function csrfOk(s: Session | undefined, form: URLSearchParams): boolean {
  return s !== undefined && safeEqual(form.get('csrf') ?? '', s.csrf);
}

/**
 * The sign-in in progress as a cookie value: AES-256-GCM (NIST SP 800-38D) under a key made at start, a
 * fresh 96-bit IV each time; the tag authenticates it, so a changed, forged or expired value opens to
 * nothing. A restart forgets the key, as it forgets the consoles' client secret (signin.ts).
 */
export class SignInSeal {
  private readonly key = randomBytes(32);

  constructor(private readonly now: () => number = Date.now) {}

  seal(p: Omit<PendingSignIn, 'expiresAt'>): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(JSON.stringify({ ...p, expiresAt: this.now() + SIGNIN_TTL }), 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url');
  }

  /** The request's sign-in in progress, if its cookie opens and has not expired. */
  open(req: http.IncomingMessage): PendingSignIn | undefined {
    const v = cookieValue(req, SIGNIN_COOKIE);
    // A sealed value of a bounded `back` (2 KiB) is under 4 KiB.
    if (v === undefined || v.length > 4096) return undefined;
    const raw = Buffer.from(v, 'base64url');
    if (raw.length < 29) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(12, 28));
      const p = JSON.parse(Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')) as PendingSignIn;
      return typeof p.state === 'string' &&
        typeof p.verifier === 'string' &&
        typeof p.back === 'string' &&
        typeof p.expiresAt === 'number' &&
        p.expiresAt > this.now()
        ? p
        : undefined;
    } catch {
      return undefined;
    }
  }
}

/** The Set-Cookie of a sign-in in progress (or of its removal when `value` is undefined): the callback's path only. */
export function signInCookie(req: http.IncomingMessage, value: string | undefined): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : '';
  return value === undefined
    ? `${SIGNIN_COOKIE}=; Path=${CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=0${secure}`
    : `${SIGNIN_COOKIE}=${value}; Path=${CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=${SIGNIN_TTL / 1000}${secure}`;
}
