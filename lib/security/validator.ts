/**
 * Token validation: what a bearer token proves, independent of the API it is presented to.
 *
 * - Self-contained JWTs (spec 002 part 5 rule 3) are verified locally with `jose`: the built-in key
 *   manager's keys (its `iss`, RFC 9068 `typ: at+jwt`) or a trusted [[apim.jwt.issuer]] (its JWKS, its
 *   `claim_mapping`, its `audience` when set). The algorithm must be on ALLOWED_ALGORITHMS and match the
 *   key (RFC 8725 §3.1); exp / nbf / iat are checked with [oauth] timestamp_skew (an `iat` later than
 *   now + skew is refused: issuedInFuture, since jose checks `iat` only when given a maximum age).
 * - Anything else is a reference (opaque) token, asked of the key manager's introspection endpoint
 *   (RFC 7662): in process directly, otherwise over HTTP through a client limited by [apim.http_client].
 *
 * A token that is wrong is a 900901; a token that cannot be judged because a key set or the key manager
 * cannot be reached is a 900900 (spec 002 part 7: "key validation backend unreachable").
 */
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type { JWTPayload, ProtectedHeaderParameters } from 'jose';
import { jose } from './jose';
import type { KeyType, TokenIdentity, UserType } from './auth-context';
import { ApiCode, fault, type FaultValue } from '../faults';
import { LocalKeySource, RemoteKeySource, type KeyLookup, type TenantKey } from './keys';
import { issuerTenant, SUPER_TENANT } from '../tenants';
import { ALLOWED_ALGORITHMS, type IssuerSettings, type SecuritySettings } from './settings';

/** The key manager this gateway runs with in one process (node.ts builds it; see keyManagerLink()). */
export interface KeyManagerLink {
  /** `iss` of its access tokens. */
  issuer(): string;
  /** Its published public keys (live: rotation is seen at once). */
  publicJwks(): import('jose').JWK[];
  /**
   * A tenant's published key by kid (docs/tenants.md, "Signing keys"), re-read from its source on an
   * unknown kid at most once per bounded interval. Absent: tokens of a tenant issuer are not trusted.
   */
  tenantKey?(kid: string): Promise<TenantKey | undefined>;
  snapshot(): Promise<import('./subscriptions').Snapshot>;
  /** RFC 7662 introspection, answered in process. */
  introspect?(token: string): Promise<Record<string, unknown>>;
  /** The claims of a user of its store (`role`: the roles, comma-separated), undefined for an unknown user. */
  userClaims?(username: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** Its current signing key (the backend JWT is signed with it when it is RSA). */
  signingKey?(): {
    readonly kid: string;
    readonly alg: string;
    readonly privateKey: import('jose').CryptoKey;
    readonly certificate?: Buffer;
  };
}

const invalid = (description: string): FaultValue => fault(ApiCode.INVALID_CREDENTIALS, { description });
const unavailable = (description: string): FaultValue => fault(ApiCode.AUTH_GENERAL_ERROR, { description });

export function isFault(v: TokenIdentity | FaultValue): v is FaultValue {
  return (v as FaultValue).def !== undefined;
}

/** A JWS in compact serialisation: three base64url parts (RFC 7515 §7.1). */
export function looksLikeJwt(token: string): boolean {
  const a = token.indexOf('.');
  const b = a < 0 ? -1 : token.indexOf('.', a + 1);
  return a > 0 && b > a + 1 && token.indexOf('.', b + 1) < 0;
}

function scopesOf(p: Record<string, unknown>): string[] {
  if (typeof p.scope === 'string') return p.scope.split(' ').filter((s) => s !== '');
  if (Array.isArray(p.scp)) return p.scp.filter((s): s is string => typeof s === 'string');
  if (typeof p.scp === 'string') return p.scp.split(' ').filter((s) => s !== '');
  return [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * True when a token's `iat` (RFC 7519 §4.1.6) is later than now plus the clock tolerance: such a token
 * was minted with a wrong clock or by someone holding the key. jose's jwtVerify checks `iat` only with
 * maxTokenAge, so every verifier of this project asks this too. Seconds for `iat`, milliseconds otherwise.
 */
export function issuedInFuture(payload: { readonly iat?: unknown }, nowMs: number, skewMs: number): boolean {
  return typeof payload.iat === 'number' && payload.iat * 1000 > nowMs + skewMs;
}

/** Why jose refused a token, in words for the fault description. */
function reason(err: unknown): string {
  if (err instanceof jose().errors.JWTExpired) return 'the access token has expired';
  if (err instanceof jose().errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'the access token is not yet valid (nbf)';
    if (err.claim === 'iat') return 'the access token was issued in the future (iat)';
    if (err.claim === 'aud') return 'the access token is not meant for this gateway (aud)';
    if (err.claim === 'typ') return 'the token is not an access token (typ must be at+jwt, RFC 9068 §2.1)';
    return `the access token's ${err.claim} claim is not valid`;
  }
  if (err instanceof jose().errors.JWSSignatureVerificationFailed) return 'the access token signature is not valid';
  if (err instanceof jose().errors.JOSEAlgNotAllowed) return 'the access token algorithm is not accepted';
  return 'the access token is not valid';
}

interface Source {
  readonly issuer: string;
  readonly builtIn: boolean;
  /** The tenant whose ring signs this issuer's tokens, for a tenant issuer of the built-in key manager. */
  readonly tenant?: string;
  readonly settings: IssuerSettings | undefined;
  lookup(kid: string | undefined, alg: string): Promise<KeyLookup>;
}

export class TokenValidator {
  private readonly local: LocalKeySource | undefined;
  readonly remote: ReadonlyMap<string, { readonly settings: IssuerSettings; readonly keys: RemoteKeySource }>;
  private readonly agent: http.Agent | undefined;

  constructor(
    private readonly s: SecuritySettings,
    private readonly km: KeyManagerLink | undefined,
    private readonly o: { readonly now: () => number; readonly logger: import('../log').Logger },
  ) {
    this.local =
      km !== undefined
        ? new LocalKeySource(
            () => km.publicJwks(),
            km.tenantKey !== undefined ? (kid) => km.tenantKey?.(kid) as Promise<TenantKey | undefined> : undefined,
          )
        : undefined;
    const remote = new Map<string, { settings: IssuerSettings; keys: RemoteKeySource }>();
    for (const i of s.issuers) {
      remote.set(i.name, {
        settings: i,
        keys: new RemoteKeySource(i.jwksUrl, {
          refetchInterval: s.jwksRefetchInterval,
          timeout: s.fetchTimeout,
          now: o.now,
          logger: o.logger,
          issuer: i.name,
        }),
      });
    }
    this.remote = remote;
    if (km?.introspect === undefined) {
      const opts = { keepAlive: true, maxSockets: s.introspection.maxPerRoute, maxTotalSockets: s.introspection.maxTotal };
      this.agent = s.introspection.url.startsWith('https:') ? new https.Agent(opts) : new http.Agent(opts);
    }
  }

  close(): void {
    this.agent?.destroy();
  }

  validate(token: string): Promise<TokenIdentity | FaultValue> {
    return looksLikeJwt(token) ? this.jwt(token) : this.opaque(token);
  }

  private source(iss: string): Source | undefined {
    const km = this.km;
    if (km !== undefined && this.local !== undefined && iss === km.issuer()) {
      const local = this.local;
      return { issuer: iss, builtIn: true, settings: undefined, lookup: (kid, alg) => local.lookup(kid, alg) };
    }
    const r = this.remote.get(iss);
    if (r === undefined) return km !== undefined && km.tenantKey !== undefined ? this.tenantSource(km, iss) : undefined;
    return { issuer: iss, builtIn: false, settings: r.settings, lookup: (kid, alg) => r.keys.lookup(kid, alg) };
  }

  /** A tenant issuer of the built-in key manager (docs/tenants.md, "Signing keys"): only that tenant's keys sign for it. */
  private tenantSource(km: KeyManagerLink, iss: string): Source | undefined {
    const tenant = issuerTenant(km.issuer(), iss);
    const local = this.local;
    if (tenant === undefined || tenant === SUPER_TENANT || local === undefined) return undefined;
    return { issuer: iss, builtIn: true, tenant, settings: undefined, lookup: (kid, alg) => local.lookupTenant(kid, alg, tenant) };
  }

  private async jwt(token: string): Promise<TokenIdentity | FaultValue> {
    let header: ProtectedHeaderParameters;
    let unverified: JWTPayload;
    try {
      header = jose().decodeProtectedHeader(token);
      unverified = jose().decodeJwt(token);
    } catch {
      return invalid('the access token is malformed');
    }
    const alg = header.alg;
    // RFC 8725 §3.1: the algorithm comes from our list, never from the token ('none', HS256 with a public key).
    if (typeof alg !== 'string' || !ALLOWED_ALGORITHMS.includes(alg))
      return invalid(`the access token algorithm ${JSON.stringify(alg ?? null)} is not accepted`);
    if (typeof unverified.iss !== 'string') return invalid('the access token names no issuer (iss)');
    const src = this.source(unverified.iss);
    if (src === undefined) return invalid('the access token issuer is not trusted');
    let found: KeyLookup;
    try {
      found = await src.lookup(typeof header.kid === 'string' ? header.kid : undefined, alg);
    } catch {
      // importJWK refused the key for this algorithm (an RSA key with ES256 and the like).
      return invalid('the access token algorithm does not match the signing key');
    }
    if ('unavailable' in found) {
      this.o.logger.log('error', 'token_key_unavailable', { issuer: src.issuer, kid: header.kid, message: found.unavailable });
      return unavailable(found.unavailable);
    }
    if ('unknown' in found) return invalid('the access token is signed with an unknown key');
    if (found.jwk.alg !== undefined && found.jwk.alg !== alg) return invalid('the access token algorithm does not match the signing key');
    let payload: JWTPayload;
    try {
      const r = await jose().jwtVerify(token, found.key, {
        algorithms: [alg],
        issuer: src.issuer,
        ...(src.settings?.audience !== undefined ? { audience: src.settings.audience } : {}),
        ...(src.builtIn ? { typ: 'at+jwt' } : {}),
        clockTolerance: Math.round(this.s.skew / 1000),
        currentDate: new Date(this.o.now()),
        requiredClaims: ['exp'],
      });
      payload = r.payload;
    } catch (err) {
      return invalid(reason(err));
    }
    if (issuedInFuture(payload, this.o.now(), this.s.skew)) return invalid('the access token was issued in the future (iat)');
    let claims: Record<string, unknown> = payload;
    const mapping = src.settings?.claimMapping;
    if (mapping !== undefined && mapping.size > 0) {
      claims = { ...payload };
      for (const [remote, local] of mapping) {
        if (remote in payload) {
          const v = payload[remote];
          delete claims[remote];
          claims[local] = v;
        }
      }
    }
    const id = this.identity(
      claims,
      src.issuer,
      src.builtIn,
      src.builtIn || src.settings?.subscriptionValidation === true,
      str(payload.jti),
      (payload.exp as number) * 1000 + this.s.skew,
    );
    return src.tenant === undefined ? id : Object.freeze({ ...id, keyTenant: src.tenant });
  }

  /** The identity a set of (local) claims describes, from a JWT or an introspection answer. */
  private identity(
    c: Record<string, unknown>,
    issuer: string,
    builtIn: boolean,
    subscriptionValidation: boolean,
    tokenId: string,
    expiresAt: number,
  ): TokenIdentity {
    const consumerKey = str(c.azp) || str(c.client_id);
    const sub = str(c.sub) || str(c.username);
    // The built-in key manager says which kind of token it is (`aut`); for another issuer's token without
    // it, a subject equal to the client is an application token (the client credentials grant's shape).
    const userType: UserType =
      c.aut === 'APPLICATION' || c.aut === 'APPLICATION_USER'
        ? c.aut
        : sub === '' || sub === consumerKey
          ? 'APPLICATION'
          : 'APPLICATION_USER';
    const keyType: KeyType = str(c.keytype).toUpperCase() === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
    const app = c.application as Record<string, unknown> | undefined;
    const application =
      app !== undefined && typeof app === 'object' && app !== null
        ? { id: str(app.id), name: str(app.name), owner: str(app.owner), tier: str(app.tier) }
        : undefined;
    return Object.freeze({
      tokenId,
      issuer,
      builtIn,
      subscriptionValidation,
      consumerKey,
      keyType,
      userType,
      endUser: sub,
      scopes: Object.freeze(scopesOf(c)),
      claims: Object.freeze(c),
      expiresAt,
      application,
    });
  }

  private async opaque(token: string): Promise<TokenIdentity | FaultValue> {
    let answer: Record<string, unknown>;
    try {
      answer = this.km?.introspect !== undefined ? await this.km.introspect(token) : await this.introspectHttp(token);
    } catch (err) {
      const message = (err as Error).message;
      this.o.logger.log('error', 'introspection_failed', { url: this.s.introspection.url, message });
      return unavailable(`the key manager cannot be reached to validate the access token: ${message}`);
    }
    // RFC 7662 §2.2: anything not active is simply not a valid token; a refresh token is not an access token.
    if (answer.active !== true || answer.token_type === 'refresh_token') return invalid('the access token is not active');
    const exp = typeof answer.exp === 'number' ? answer.exp * 1000 : this.o.now();
    const tokenId = createHash('sha256').update(token).digest('base64url');
    const iss = str(answer.iss) || (this.km?.issuer() ?? 'introspection');
    return this.identity(answer, iss, true, true, str(answer.jti) || tokenId, exp + this.s.skew);
  }

  private introspectHttp(token: string): Promise<Record<string, unknown>> {
    const s = this.s.introspection;
    const url = new URL(s.url);
    const body = new URLSearchParams({ token, token_type_hint: 'access_token' }).toString();
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          timeout: this.s.fetchTimeout,
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': Buffer.byteLength(body),
            authorization: `Basic ${Buffer.from(`${s.username}:${s.password}`).toString('base64')}`,
            accept: 'application/json',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            if (res.statusCode !== 200) return reject(new Error(`introspection answered HTTP ${res.statusCode ?? 0}`));
            try {
              const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
              // eslint-disable-next-line no-restricted-syntax -- caught below: becomes the rejection's message
              if (typeof v !== 'object' || v === null) throw new Error('not a JSON object');
              resolve(v as Record<string, unknown>);
            } catch (err) {
              reject(new Error(`introspection answer is not JSON: ${(err as Error).message}`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.s.fetchTimeout} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
