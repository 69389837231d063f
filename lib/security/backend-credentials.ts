/**
 * Backend security: the credentials the gateway presents to a backend that requires them, the reference's
 * endpoint security types (docs/apis.md, "Backend security"):
 *  - basic: `Authorization: Basic` from a user name and password (RFC 7617 §2);
 *  - digest: RFC 7616 with qop=auth (digest.ts): the first call goes without credentials, its 401's
 *    challenge is answered and the call sent again; the nonce is cached and counted (nc) for later calls;
 *  - oauth: a bearer token (RFC 6750 §2.1) the gateway obtains from a token endpoint with the
 *    client_credentials (RFC 6749 §4.4) or password (§4.3) grant, cached until shortly before expiry,
 *    fetched once for every concurrent call (single-flight), and fetched again when the backend answers 401.
 *
 * Plain inputs and values only: the gateway's send phase (lib/gateway/phases/send.ts) asks for the
 * Authorization value of a call and hands a 401's fields back; errors are BackendAuthError values that the
 * phase turns into 900424, 103200 or 103201 (docs/faults.md). Secrets and tokens are never logged.
 */
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type { SecureContext } from 'node:tls';
import { redactUrl, silentLogger, type Logger } from '../log';
import { digestAuthorization, parseDigestChallenge, type DigestChallenge } from './digest';

export const BACKEND_SECURITY_TYPES = ['basic', 'digest', 'oauth'] as const;
export type BackendSecurityType = (typeof BACKEND_SECURITY_TYPES)[number];
export const BACKEND_GRANT_TYPES = ['client_credentials', 'password'] as const;
export type BackendGrantType = (typeof BACKEND_GRANT_TYPES)[number];
/** Where the client id and secret go: an Authorization: Basic field (RFC 6749 §2.3.1) or the form body. */
export const BACKEND_CLIENT_AUTH = ['basic', 'body'] as const;
export type BackendClientAuth = (typeof BACKEND_CLIENT_AUTH)[number];
/** Form parameters of the token request that `parameters` may not set (the grant's own). */
export const RESERVED_TOKEN_PARAMETERS: readonly string[] = ['grant_type', 'client_id', 'client_secret', 'username', 'password', 'scope'];

/**
 * The origin (RFC 6454 §4: scheme, host, port) of an http(s):// or ws(s):// URL as `scheme://host:port`,
 * ws: written http: and wss: https: (the same connections, RFC 6455 §3), the default port written out,
 * the host as WHATWG URL writes it (lower case, IPv6 in brackets). Undefined when `url` is not one.
 */
export function originOf(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const scheme =
    u.protocol === 'https:' || u.protocol === 'wss:' ? 'https' : u.protocol === 'http:' || u.protocol === 'ws:' ? 'http' : undefined;
  if (scheme === undefined || u.hostname === '') return undefined;
  return `${scheme}://${u.hostname}:${u.port === '' ? (scheme === 'https' ? 443 : 80) : u.port}`;
}

/** The origin a transport target connects to (the same form as originOf). */
export function targetOrigin(t: { readonly host: string; readonly port: number; readonly tls?: unknown }): string {
  return `${t.tls !== undefined ? 'https' : 'http'}://${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
}

/** An endpoint's backend security, as an API file declares it ([endpoints.production.security]). */
export interface BackendSecurity {
  readonly type: BackendSecurityType;
  /**
   * The origin the credentials are bound to (`security.origin`, or the endpoint URL's when the file
   * writes none): they are never sent to another (docs/apis.md, "Backend security").
   */
  readonly origin: string;
  /** basic and digest: the backend's user; oauth with the password grant: the resource owner. */
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** Bytes of a request body held in memory so that the call can be sent again after a 401. */
  readonly maxReplayBody: number;
  readonly oauth: OAuthBackend | undefined;
}

export interface OAuthBackend {
  readonly grantType: BackendGrantType;
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scopes: readonly string[];
  /** Extra form parameters of the token request (e.g. audience, resource). */
  readonly parameters: Readonly<Record<string, string>>;
  readonly clientAuth: BackendClientAuth;
  /** ms the token request may take, connection included. */
  readonly timeout: number;
  /** ms before the token's expiry at which it is fetched again (at most half its lifetime). */
  readonly expiryMargin: number;
}

/** Why no credentials could be presented; the send phase maps it to a fault (docs/faults.md). */
export interface BackendAuthError {
  /** token: no valid OAuth token (900424); refused: the backend refused the credentials (103200); unanswered: a challenge that a streamed body cannot answer (103201); unbound: the call goes to an origin the credentials are not bound to (103202). */
  readonly kind: 'token' | 'refused' | 'unanswered' | 'unbound';
  readonly description: string;
}

export function isAuthError(v: unknown): v is BackendAuthError {
  return typeof v === 'object' && v !== null && 'kind' in v;
}

/** A token response is read up to this many bytes (a token endpoint's JSON is a few KiB at most). */
export const MAX_TOKEN_RESPONSE = 64 * 1024;
/** RFC 6750 §2.1 b64token: the only characters a bearer token may have (no field injection). */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const MAX_TOKEN_LENGTH = 16 * 1024;

interface Token {
  readonly value: string;
  /** Epoch ms from which the token is fetched again; Infinity when the response gave no expires_in. */
  readonly refreshAt: number;
}

/** One cached token and the fetch in flight for one set of token-request inputs. */
interface Slot {
  token: Token | undefined;
  inflight: Promise<Token | BackendAuthError> | undefined;
}

/**
 * Tokens per token-request inputs (URL, grant, client, user, scopes, parameters), shared by every endpoint
 * of the gateway's process that names the same ones and kept across hot redeploys. Each node:cluster worker
 * is a process and holds its own (docs/apis.md).
 */
export class BackendTokens {
  private readonly slots = new Map<string, Slot>();
  /** Token requests sent (tests and `apis list` read it). */
  fetches = 0;

  constructor(
    private readonly logger: Logger = silentLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The slot key of one set of token-request inputs (a digest: the secrets are not kept as map keys). */
  static keyOf(o: OAuthBackend, user: string | undefined, password: string | undefined): string {
    return createHash('sha256')
      .update(JSON.stringify([o.tokenUrl, o.grantType, o.clientId, o.clientSecret, o.clientAuth, user, password, o.scopes, o.parameters]))
      .digest('base64');
  }

  /** Drops the tokens no deployed endpoint uses any more (after a redeploy; `keys` from keyOf). */
  retain(keys: ReadonlySet<string>): void {
    for (const k of this.slots.keys()) if (!keys.has(k)) this.slots.delete(k);
  }

  private slot(o: OAuthBackend, user: string | undefined, password: string | undefined): Slot {
    const key = BackendTokens.keyOf(o, user, password);
    let s = this.slots.get(key);
    if (s === undefined) {
      s = { token: undefined, inflight: undefined };
      this.slots.set(key, s);
    }
    return s;
  }

  /** The cached token while it is fresh (synchronously), else the one fetch in flight for these inputs. */
  token(
    o: OAuthBackend,
    user: string | undefined,
    password: string | undefined,
    tls: SecureContext | undefined,
  ): string | Promise<string | BackendAuthError> {
    const s = this.slot(o, user, password);
    const t = s.token;
    if (t !== undefined && this.now() < t.refreshAt) return t.value;
    s.token = undefined;
    if (s.inflight === undefined) {
      this.fetches++;
      const p = requestToken(o, user, password, tls, this.now).then((r) => {
        s.inflight = undefined;
        if (isAuthError(r)) this.logger.log('warn', 'backend_token_failed', { token_url: redactUrl(o.tokenUrl), reason: r.description });
        else {
          s.token = r;
          this.logger.log('debug', 'backend_token_fetched', {
            token_url: redactUrl(o.tokenUrl),
            refresh_in_ms: Number.isFinite(r.refreshAt) ? r.refreshAt - this.now() : null,
          });
        }
        return r;
      });
      s.inflight = p;
    }
    return s.inflight.then((r) => (isAuthError(r) ? r : r.value));
  }

  /** The backend refused `value`: forget it (if still cached), so the next call fetches a new one. */
  invalidate(o: OAuthBackend, user: string | undefined, password: string | undefined, value: string): void {
    const s = this.slot(o, user, password);
    if (s.token?.value === value) s.token = undefined;
  }
}

/** RFC 6749 §2.3.1: client id and secret form-urlencoded, then joined by ':' and base64-encoded. */
export function clientBasic(id: string, secret: string): string {
  const enc = (s: string): string => new URLSearchParams([['', s]]).toString().slice(1);
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

/** One token request (RFC 6749 §4.3.2 / §4.4.2), bounded in time and size; never throws. */
function requestToken(
  o: OAuthBackend,
  user: string | undefined,
  password: string | undefined,
  tls: SecureContext | undefined,
  now: () => number,
): Promise<Token | BackendAuthError> {
  const form = new URLSearchParams();
  form.set('grant_type', o.grantType);
  if (o.grantType === 'password') {
    form.set('username', user ?? '');
    form.set('password', password ?? '');
  }
  if (o.scopes.length > 0) form.set('scope', o.scopes.join(' '));
  for (const [k, v] of Object.entries(o.parameters)) form.set(k, v);
  const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' };
  if (o.clientAuth === 'basic') headers.Authorization = clientBasic(o.clientId, o.clientSecret);
  else {
    form.set('client_id', o.clientId);
    form.set('client_secret', o.clientSecret);
  }
  const body = Buffer.from(form.toString());
  headers['Content-Length'] = String(body.length);
  const fail = (description: string): BackendAuthError => ({ kind: 'token', description });
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: Token | BackendAuthError): void => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearTimeout(timer);
      resolve(r);
    };
    let url: URL;
    try {
      url = new URL(o.tokenUrl);
    } catch {
      finish(fail('the token URL is not a URL'));
      return;
    }
    const lib = url.protocol === 'https:' ? https : http;
    let req: http.ClientRequest;
    try {
      req = lib.request(
        url,
        { method: 'POST', headers, agent: false, ...(url.protocol === 'https:' && tls !== undefined ? { secureContext: tls } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_TOKEN_RESPONSE) {
              finish(fail(`the token response is larger than ${MAX_TOKEN_RESPONSE} bytes`));
              req.destroy();
              return;
            }
            chunks.push(c);
          });
          res.on('error', () => finish(fail('the token response was cut off')));
          res.on('end', () => finish(tokenFrom(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), now(), o.expiryMargin)));
        },
      );
    } catch (err) {
      finish(fail(`the token request could not be sent (${(err as NodeJS.ErrnoException).code ?? 'error'})`));
      return;
    }
    timer = setTimeout(() => {
      finish(fail(`the token endpoint did not answer within ${o.timeout} ms`));
      req.destroy();
    }, o.timeout);
    req.on('error', (err: NodeJS.ErrnoException) => finish(fail(`the token endpoint is unreachable (${err.code ?? 'error'})`)));
    req.end(body);
  });
}

/** A token response read (RFC 6749 §5.1 success, §5.2 error). */
function tokenFrom(status: number, text: string, now: number, margin: number): Token | BackendAuthError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const o = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
  if (status !== 200) {
    // Only the RFC's error code is repeated (a short token of the §5.2 set), never the description.
    const code = typeof o.error === 'string' && /^[a-z_]{1,40}$/.test(o.error) ? `: ${o.error}` : '';
    return { kind: 'token', description: `the token endpoint refused the request (HTTP ${status}${code})` };
  }
  const value = o.access_token;
  if (typeof value !== 'string' || value.length > MAX_TOKEN_LENGTH || !B64TOKEN.test(value))
    return { kind: 'token', description: 'the token response has no usable access_token' };
  if (o.token_type !== undefined && (typeof o.token_type !== 'string' || o.token_type.toLowerCase() !== 'bearer'))
    return { kind: 'token', description: 'the token response is not a bearer token (RFC 6750)' };
  const e = o.expires_in;
  const seconds = typeof e === 'number' ? e : typeof e === 'string' && /^\d{1,10}$/.test(e) ? Number(e) : undefined;
  if (seconds === undefined || !(seconds > 0)) return { value, refreshAt: seconds === undefined ? Infinity : now };
  const life = seconds * 1000;
  return { value, refreshAt: now + life - Math.min(margin, life / 2) };
}

/**
 * One endpoint's backend credentials. `authorization()` gives the Authorization value of a call;
 * `challenged()` answers the backend's 401 with the value to send the call again with, or an error.
 */
export class BackendAuthorizer {
  private readonly basic: string | undefined;
  /** digest: the cached challenge and its nonce count (RFC 7616 §3.4: nc counts requests per nonce). */
  private challenge: DigestChallenge | undefined;
  private nc = 0;

  constructor(
    readonly security: BackendSecurity,
    private readonly tokens: BackendTokens,
    /** The outbound TLS context for an https:// token URL (docs/tls.md). */
    private readonly tls: SecureContext | undefined,
  ) {
    this.basic =
      security.type === 'basic'
        ? `Basic ${Buffer.from(`${security.username ?? ''}:${security.password ?? ''}`, 'utf8').toString('base64')}`
        : undefined;
  }

  get type(): BackendSecurityType {
    return this.security.type;
  }

  /**
   * undefined: send without credentials (digest before its first challenge). `origin`: where the call
   * goes (targetOrigin); another than the bound one gets `unbound` and no credential is computed.
   */
  authorization(method: string, uri: string, origin: string): string | undefined | BackendAuthError | Promise<string | BackendAuthError> {
    const s = this.security;
    if (origin !== s.origin)
      return {
        kind: 'unbound',
        description: `The endpoint's ${s.type} credentials are bound to ${s.origin} and the call goes to ${origin}: they are not sent (docs/apis.md, "Backend security")`,
      };
    if (this.basic !== undefined) return this.basic;
    if (s.type === 'digest') {
      const c = this.challenge;
      if (c === undefined) return undefined;
      this.nc++;
      return digestAuthorization(c, { username: s.username ?? '', password: s.password ?? '', method, uri, nc: this.nc });
    }
    return withBearer(this.tokens.token(s.oauth as OAuthBackend, s.username, s.password, this.tls));
  }

  /**
   * The backend answered 401 to a call sent with `sent` (undefined: none). `replayable`: the call can be
   * sent again. Called at most once per call (the send phase counts).
   */
  challenged(
    sent: string | undefined,
    fields: readonly string[],
    method: string,
    uri: string,
    replayable: boolean,
  ): string | BackendAuthError | Promise<string | BackendAuthError> {
    const s = this.security;
    if (s.type === 'basic') return { kind: 'refused', description: "The backend refused the endpoint's Basic credentials (401)" };
    if (s.type === 'digest') {
      const c = parseDigestChallenge(fields);
      if (c === undefined)
        return {
          kind: 'refused',
          description: 'The backend answered 401 without a Digest challenge the gateway can answer (RFC 7616: MD5 or SHA-256, qop=auth)',
        };
      // Sent with this very nonce and it was not stale: the credentials themselves were refused.
      if (sent !== undefined && !c.stale && sent.includes(`nonce="${c.nonce.replace(/[\\"]/g, (x) => `\\${x}`)}"`)) {
        return { kind: 'refused', description: "The backend refused the endpoint's Digest credentials (401)" };
      }
      this.challenge = c;
      this.nc = 0;
      if (!replayable)
        return {
          kind: 'unanswered',
          description:
            'The backend asked for Digest credentials and the request body, streamed, cannot be sent again; the challenge is kept for the next call',
        };
      this.nc = 1;
      return digestAuthorization(c, { username: s.username ?? '', password: s.password ?? '', method, uri, nc: 1 });
    }
    const o = s.oauth as OAuthBackend;
    if (sent !== undefined && sent.startsWith('Bearer ')) this.tokens.invalidate(o, s.username, s.password, sent.slice(7));
    if (!replayable)
      return {
        kind: 'token',
        description:
          'The backend refused the OAuth 2.0 token (401); the request body, streamed, cannot be sent again; the next call gets a new token',
      };
    return withBearer(this.tokens.token(o, s.username, s.password, this.tls));
  }
}

function withBearer(t: string | Promise<string | BackendAuthError>): string | Promise<string | BackendAuthError> {
  return typeof t === 'string' ? `Bearer ${t}` : t.then((v) => (typeof v === 'string' ? `Bearer ${v}` : v));
}
