/**
 * Backends that demand credentials, written from the RFCs (not from the gateway's code): one that checks
 * an OAuth 2.0 bearer token by verifying the JWT with the key manager's JWKS (RFC 6750 §2.1, §3), one that
 * checks Basic (RFC 7617) and one that checks Digest (RFC 7616 §3.4, qop=auth, nonce counts). And a
 * counting forwarder in front of the key manager's token endpoint, which can also refuse or hang.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { HOST } from '../gateway/helpers';

export interface Hit {
  readonly method: string;
  readonly url: string;
  /** Every Authorization field the backend received (a forwarded client field would show as a second one). */
  readonly authorization: readonly string[];
  readonly body: string;
  /** The status the backend answered. */
  status: number;
  /** OAuth backend: the token's jti and sub when it verified. */
  jti?: string;
  sub?: string;
}

export interface Server {
  readonly port: number;
  readonly url: string;
  readonly hits: Hit[];
  close(): Promise<void>;
}

function authorizations(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === 'authorization') out.push(raw[i + 1] as string);
  return out;
}

async function serve(
  handle: (
    req: http.IncomingMessage,
    body: string,
    hit: Hit,
  ) => Promise<{ status: number; headers?: Record<string, string>; body?: string }>,
): Promise<Server> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const hit: Hit = { method: req.method ?? '', url: req.url ?? '', authorization: authorizations(req.rawHeaders), body, status: 0 };
      hits.push(hit);
      handle(req, body, hit).then(
        (r) => {
          hit.status = r.status;
          const out = r.body ?? JSON.stringify({ ok: r.status === 200, url: hit.url, body });
          res.writeHead(r.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(out), ...r.headers });
          res.end(out);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `http://${HOST}:${port}`,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface OAuthBackend extends Server {
  /** Tokens (by jti) this backend refuses from now on, as if revoked. */
  readonly refused: Set<string>;
  /** Refuse every token. */
  refuseAll: boolean;
}

/** RFC 6750: a bearer JWT verified with the key manager's JWKS; 401 with an invalid_token challenge otherwise. */
export async function oauthBackend(jwks: JSONWebKeySet): Promise<OAuthBackend> {
  const keys = createLocalJWKSet(jwks);
  const state = { refused: new Set<string>(), refuseAll: false };
  const deny = { status: 401, headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' }, body: '{"error":"invalid_token"}' };
  const s = await serve(async (_req, _body, hit) => {
    const m = hit.authorization.length === 1 ? /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/.exec(hit.authorization[0] as string) : null;
    if (m === null) return { status: 401, headers: { 'WWW-Authenticate': 'Bearer' }, body: '{"error":"missing"}' };
    try {
      const { payload } = await jwtVerify(m[1] as string, keys, { issuer: 'https://localhost:9443/oauth2/token' });
      hit.jti = payload.jti;
      hit.sub = payload.sub;
      if (state.refuseAll || state.refused.has(payload.jti ?? '')) return deny;
      return { status: 200 };
    } catch {
      return deny;
    }
  });
  // Accessors, so that setting refuseAll on the returned object reaches the handler.
  return Object.defineProperties(s, {
    refused: { value: state.refused },
    refuseAll: { get: () => state.refuseAll, set: (v: boolean) => void (state.refuseAll = v), enumerable: true },
  }) as OAuthBackend;
}

/** RFC 7617: exactly one `Basic base64(user:pass)`; 401 with a Basic challenge otherwise. */
export function basicBackend(user: string, password: string): Promise<Server> {
  const want = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
  return serve(async (_req, _b, hit) =>
    hit.authorization.length === 1 && hit.authorization[0] === want
      ? { status: 200 }
      : { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="backend", charset="UTF-8"' } },
  );
}

export interface DigestBackend extends Server {
  /** Nonces issued so far. */
  readonly nonces: string[];
  /** Declare the current nonces stale: the next use gets 401 with stale=true and a new nonce. */
  expireNonces(): void;
}

/** Parses `Digest a=b, c="d"` auth-params (RFC 7616 §3.4; RFC 9110 §11.2 quoted-string). */
function digestParams(v: string): Map<string, string> | undefined {
  const m = /^Digest\s+(.*)$/s.exec(v);
  if (m === null) return undefined;
  const out = new Map<string, string>();
  const re = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))\s*(?:,|$)/gy;
  const text = m[1] as string;
  let r: RegExpExecArray | null;
  while (re.lastIndex < text.length && (r = re.exec(text)) !== null)
    out.set((r[1] as string).toLowerCase(), r[2] !== undefined ? r[2].replace(/\\(.)/g, '$1') : (r[3] as string));
  return out;
}

/**
 * RFC 7616 §3.3-§3.4 server side: a challenge with realm, nonce, opaque, qop="auth" and `algorithm`; a
 * response checked with H(A1) = H(user:realm:password), H(A2) = H(method:uri), response =
 * H(H(A1):nonce:nc:cnonce:qop:H(A2)); nc must grow per nonce (replays refused), uri must be the request's.
 */
export async function digestBackend(user: string, password: string, algorithm: 'MD5' | 'SHA-256'): Promise<DigestBackend> {
  const realm = 'backend@example.org';
  const opaque = randomBytes(12).toString('base64');
  const H = (s: string): string =>
    createHash(algorithm === 'MD5' ? 'md5' : 'sha256')
      .update(s)
      .digest('hex');
  const nonces: string[] = [];
  // RFC 7616 §3.4: "if the same nc-value is seen twice, then the request is a replay".
  const seenNc = new Map<string, Set<number>>();
  const stale = new Set<string>();
  const challenge = (isStale: boolean): { status: number; headers: Record<string, string> } => {
    const nonce = randomBytes(18).toString('base64');
    nonces.push(nonce);
    seenNc.set(nonce, new Set());
    return {
      status: 401,
      headers: {
        'WWW-Authenticate': `Digest realm="${realm}", qop="auth", algorithm=${algorithm}, nonce="${nonce}", opaque="${opaque}"${isStale ? ', stale=true' : ''}`,
      },
    };
  };
  const s = await serve(async (req, _b, hit) => {
    if (hit.authorization.length !== 1) return challenge(false);
    const p = digestParams(hit.authorization[0] as string);
    if (p === undefined) return challenge(false);
    const nonce = p.get('nonce') ?? '';
    const seen = seenNc.get(nonce);
    if (
      seen === undefined ||
      p.get('username') !== user ||
      p.get('realm') !== realm ||
      p.get('opaque') !== opaque ||
      p.get('qop') !== 'auth' ||
      (p.get('algorithm') ?? 'MD5') !== algorithm
    )
      return challenge(false);
    if (p.get('uri') !== req.url) return { status: 400 };
    const ncText = p.get('nc') ?? '';
    const nc = /^[0-9a-f]{8}$/.test(ncText) ? parseInt(ncText, 16) : -1;
    const expected = H(
      `${H(`${user}:${realm}:${password}`)}:${nonce}:${ncText}:${p.get('cnonce') ?? ''}:auth:${H(`${req.method ?? ''}:${req.url ?? ''}`)}`,
    );
    if (p.get('response') !== expected) return challenge(false);
    if (stale.has(nonce)) return challenge(true);
    if (nc < 1 || seen.has(nc)) return challenge(false); // a replayed nonce count
    seen.add(nc);
    return { status: 200 };
  });
  return Object.assign(s, {
    nonces,
    expireNonces: () => {
      for (const n of nonces) stale.add(n);
    },
  });
}

export interface TokenForwarder extends Server {
  /** Token requests received. */
  readonly calls: () => number;
  mode: 'pass' | 'hang' | 'error';
  /** The form bodies received (the tests check what the gateway asked for). */
  readonly forms: URLSearchParams[];
  readonly auths: (string | undefined)[];
}

/** A counting forwarder in front of the key manager's token endpoint: pass, hang (no answer) or answer 500. */
export async function tokenForwarder(kmUrl: string): Promise<TokenForwarder> {
  const forms: URLSearchParams[] = [];
  const auths: (string | undefined)[] = [];
  const state = { mode: 'pass' as TokenForwarder['mode'] };
  const s = await serve(async (req, body) => {
    forms.push(new URLSearchParams(body));
    auths.push(req.headers.authorization);
    // A hung request is ended by close() (closeAllConnections).
    if (state.mode === 'hang') return new Promise<never>(() => undefined);
    if (state.mode === 'error') return { status: 500, body: '{"error":"server_error","error_description":"down for maintenance"}' };
    const r = await fetch(`${kmUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'Content-Type': req.headers['content-type'] ?? '',
        ...(req.headers.authorization !== undefined ? { Authorization: req.headers.authorization } : {}),
      },
      body,
    });
    return { status: r.status, body: await r.text() };
  });
  const out = { ...s, url: `${s.url}/oauth2/token`, forms, auths, calls: () => s.hits.length };
  return Object.defineProperty(out, 'mode', {
    get: () => state.mode,
    set: (v: TokenForwarder['mode']) => void (state.mode = v),
    enumerable: true,
  }) as TokenForwarder;
}

/** An API file whose production endpoint declares `security` (TOML lines of the security table). */
export function securedApi(name: string, backendPort: number, security: string, extra = ''): string {
  return `name = "${name}"\ncontext = "/${name}"\nversion = "1"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n${extra}[endpoints.production]\nurl = "http://${HOST}:${backendPort}/be"\n[endpoints.production.security]\n${security}\n[[resources]]\npath = "/*"\nmethods = ["GET", "POST", "PUT"]\n`;
}
