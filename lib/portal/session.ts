/**
 * Browser sessions of the consoles (docs/portal.md, "Security"): in memory, bounded, idle-expired.
 *
 * The cookie `tw_portal` holds only a random id (256 bits): `HttpOnly`, `SameSite=Lax`, `Path=/`, and
 * `Secure` when the request came over TLS. A session starts anonymous (it holds the sign-in's PKCE
 * verifier and state) and gets a new id when the user signs in, so an id planted before sign-in is
 * worth nothing after it. Every state-changing form carries the session's CSRF token, compared in
 * constant time; a POST without it is refused with 403.
 */
import { timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import { randomToken } from '../store/passwords';

export const COOKIE = 'tw_portal';
/** A session unused this long is dropped. */
export const IDLE_TTL = 30 * 60_000;
/** At most this many sessions; the least recently used goes first. */
export const MAX_SESSIONS = 10_000;
/** A sign-in in progress (between the redirect to /oauth2/authorize and the callback) lasts this long. */
export const SIGNIN_TTL = 10 * 60_000;

export interface PortalUser {
  readonly username: string;
  readonly roles: readonly string[];
}

/** Secrets and tokens of an application kept for this session only, never sent to the browser twice. */
export interface HeldKeys {
  consumerKey: string;
  consumerSecret: string;
  accessToken?: string;
}

export interface Session {
  id: string;
  readonly csrf: string;
  user: PortalUser | undefined;
  /** The sign-in in progress: PKCE verifier (RFC 7636 §4.1), state (RFC 6749 §10.12), where to return. */
  signin: { readonly state: string; readonly verifier: string; readonly back: string; readonly expiresAt: number } | undefined;
  /** By application id, then key type. */
  readonly keys: Map<string, Map<string, HeldKeys>>;
  /** Shown once on the next page, then dropped (a new consumer secret, a new access token). */
  flash: string | undefined;
  lastUsed: number;
}

function cookieValue(req: http.IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === COOKIE) return part.slice(i + 1).trim();
  }
  return undefined;
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

  create(): Session {
    const now = this.now();
    for (const [id, s] of this.map) {
      if (s.lastUsed + IDLE_TTL > now && this.map.size < MAX_SESSIONS) break;
      this.map.delete(id);
    }
    const s: Session = { id: randomToken(), csrf: randomToken(), user: undefined, signin: undefined, keys: new Map(), flash: undefined, lastUsed: now };
    this.map.set(s.id, s);
    return s;
  }

  /** A new id for the same session (after sign-in): the old id stops working. */
  renew(s: Session): void {
    this.map.delete(s.id);
    s.id = randomToken();
    this.map.set(s.id, s);
  }

  drop(s: Session): void {
    this.map.delete(s.id);
  }
}

/** The Set-Cookie header of a session (or of its removal when `s` is undefined). */
export function sessionCookie(req: http.IncomingMessage, s: Session | undefined): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : '';
  return s === undefined ? `${COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}` : `${COOKIE}=${s.id}; Path=/; HttpOnly; SameSite=Lax${secure}`;
}

/** The CSRF check of a posted form: the session's token in the `csrf` field. */
export function csrfOk(s: Session | undefined, form: URLSearchParams): boolean {
  return s !== undefined && safeEqual(form.get('csrf') ?? '', s.csrf);
}
