/**
 * Gateway security: the service behind the authentication phase (lib/gateway/phases/authentication.ts).
 * It takes plain inputs (the request's fields, the few facts of the API and resource it reads) and answers
 * an Admission or a fault; the phase adapter puts the answer on the call.
 *
 * Per call, in this order (spec 002 parts 3, 5 and 7):
 *   1. mutual TLS when the API asks for it ([apimgt.mutual_ssl]; mutual-ssl.ts);
 *   2. resources with auth = "none" pass (admitted as NO_AUTH);
 *   3. the bearer token from [apim.oauth_config] auth_header: none -> 900902;
 *   4. the token cache, else validation (validator.ts): invalid -> 900901, cannot judge -> 900900;
 *   5. revoked -> 900901; sandbox key and no sandbox endpoint -> 900901;
 *   6. subscription (subscriptions.ts): none -> 900908, blocked / PROD_ONLY_BLOCKED for production
 *      keys -> 900907, on hold or rejected -> 900909;
 *   7. token type of the resource -> 900905; scopes of the resource -> 900910;
 *   8. the admission: the call's AuthContext and its backend JWT ([apim.jwt]; backend-jwt.ts).
 *
 * A call whose token is in the cache runs all of this synchronously, without a Promise or a closure:
 * Map look-ups and a few comparisons. Only a cache miss (signature check, JWKS fetch, introspection)
 * makes the rest of the call's chain asynchronous.
 */
import type { AuthContext, TokenIdentity } from './auth-context';
import { ApiCode, fault, type FaultValue } from '../faults';
import type { EventBus } from '../events/bus';
import { silentLogger, type Logger } from '../log';
import { buildBackendJwt, generatedKey, keyManagerKey, BACKEND_JWT_RENEW_MS, type BackendJwtKey } from './backend-jwt';
import { ClientCertificates } from './mutual-ssl';
import type { RemoteKeyState } from './keys';
import { ALLOWED_ALGORITHMS as allowedAlgorithms, securitySettingsFrom as settingsFrom, type SecuritySettings } from './settings';
import { SubscriptionStore, type Snapshot } from './subscriptions';
import { TokenCache, type CacheEntry } from './token-cache';
import { isFault, TokenValidator, type KeyManagerLink } from './validator';
import { SUPER_TENANT, type TenantDirectory } from '../tenants';

export interface SecurityOptions {
  readonly settings: SecuritySettings;
  /** The key manager in the same process: its keys, snapshot and introspection (keyManagerLink()). */
  readonly keyManager?: KeyManagerLink;
  /** Its events (token.revoked, applications, subscriptions): docs/events.md. */
  readonly events?: EventBus;
  readonly logger?: Logger;
  /** The clock (epoch ms); tests pass a fake one. */
  readonly now?: () => number;
  /** Whether a tenant is active (lib/tenants): a token of a tenant that is not is refused. Absent: every application is the super tenant's. */
  readonly tenants?: TenantDirectory;
  /** `[apim.devportal] enable_cross_tenant_subscriptions`: a subscribed application may call another tenant's API. */
  readonly crossTenantSubscriptions?: boolean;
}

export interface SecurityHealth {
  /** The key manager's snapshot is loaded (calls wait for it until then). */
  readonly ready: boolean;
  readonly cachedTokens: number;
  /** One entry per [[apim.jwt.issuer]]: its JWKS endpoint and whether the last fetch worked. */
  readonly issuers: readonly (RemoteKeyState & { readonly issuer: string })[];
}

/** The context of calls to resources with auth = "none" (one shared frozen object). */
export const NO_AUTH: AuthContext = Object.freeze({
  kind: 'none',
  tokenId: '',
  issuer: '',
  consumerKey: '',
  applicationId: '',
  applicationName: '',
  applicationTier: '',
  subscriber: '',
  subscriptionTier: '',
  keyType: 'PRODUCTION',
  userType: 'APPLICATION',
  endUser: '',
  scopes: Object.freeze([]),
  claims: Object.freeze({}),
  expiresAt: Number.MAX_SAFE_INTEGER,
});

/** The facts of an API that authentication reads (the gateway's API definition has these fields). */
export interface SecuredApiFacts {
  readonly name: string;
  readonly version: string;
  readonly context: string;
  /** [apimgt.mutual_ssl] for this API. */
  readonly mutualSsl: 'off' | 'optional' | 'mandatory';
  /** The API's tenant (docs/tenants.md); absent for the super tenant's. */
  readonly tenant?: string;
}

/**
 * The API a call is for (the gateway's compiled API satisfies it). The object itself keys the per-API
 * decisions of a cached token: a redeployed API is a new object and gets fresh ones.
 */
export interface SecuredApi {
  readonly def: SecuredApiFacts;
  /** The sandbox endpoint, when the API has one (a sandbox key without it is refused). */
  readonly sandbox: object | undefined;
}

/** The facts of a resource that authentication reads (the gateway's resource definition has these fields). */
export interface SecuredResource {
  readonly auth: 'oauth2' | 'none';
  /** Which tokens it accepts (spec 002 part 5 rule 2). */
  readonly tokenType: 'any' | 'application' | 'user';
  /** A token needs one of them; empty: none is needed. */
  readonly scopes: readonly string[];
}

/** What an admitted call is: its context (key type included) and the backend JWT to send, if any. */
export interface Admission {
  readonly auth: AuthContext;
  /** The backend JWT ([apim.jwt]), sent in settings.backendJwt.header; undefined when it is off. */
  readonly jwt: string | undefined;
}

/** The answer of authenticate(): an admission, or the fault that refuses the call. */
export type AuthResult = Admission | FaultValue;

/** Tells a refusal from an admission. */
export function isRefusal(r: AuthResult): r is FaultValue {
  return (r as FaultValue).def !== undefined;
}

/** What one token gets on one API, recomputed when the subscription store changes; its own Admission. */
interface PerApi {
  readonly version: number;
  readonly fault: FaultValue | undefined;
  readonly auth: AuthContext | undefined;
  /** The application's tenant when it is not the super tenant: checked active on every call. */
  readonly tenant?: string;
  jwt: string | undefined;
  jwtRenewAt: number;
}

/** The admission of calls to resources with auth = "none". */
const OPEN: Admission = Object.freeze({ auth: NO_AUTH, jwt: undefined });
const UNLIMITED = 'Unlimited';

/** `Bearer <token>` (RFC 6750 §2.1: the scheme is case-insensitive); undefined for anything else. */
export function bearerToken(value: string): string | undefined {
  if (value.length < 8 || value.charCodeAt(6) !== 32) return undefined;
  for (let i = 0; i < 6; i++) if ((value.charCodeAt(i) | 0x20) !== BEARER[i]) return undefined;
  const t = value.slice(7).trim();
  return t === '' ? undefined : t;
}

/** "bearer" as lower-case char codes (| 0x20 lower-cases ASCII letters). */
const BEARER = [98, 101, 97, 114, 101, 114];

export class Security {
  readonly settings: SecuritySettings;
  readonly subscriptions = new SubscriptionStore();
  readonly cache: TokenCache;
  readonly validator: TokenValidator;
  readonly certificates: ClientCertificates;
  /** Resolves once the key manager's snapshot is loaded (at once without a key manager). */
  readonly ready: Promise<void>;
  private loaded = false;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly km: KeyManagerLink | undefined;
  private readonly unfollow: (() => void) | undefined;
  private generated: BackendJwtKey | undefined;
  /** Validations under way: calls arriving with the same new token share one signature check. */
  private readonly pending = new Map<string, Promise<TokenIdentity | FaultValue>>();
  private readonly tenants: TenantDirectory | undefined;
  private readonly crossTenant: boolean;

  constructor(o: SecurityOptions) {
    this.settings = o.settings;
    this.tenants = o.tenants;
    this.crossTenant = o.crossTenantSubscriptions === true;
    this.now = o.now ?? Date.now;
    this.logger = o.logger ?? silentLogger;
    this.km = o.keyManager;
    const s = o.settings;
    this.cache = new TokenCache({ max: s.tokenCache.max, expiry: s.tokenCache.enabled ? s.tokenCache.expiry : 0 });
    if (s.tokenCache.bothEnabled)
      this.logger.log('warn', 'token_caches_both_enabled', {
        message:
          '[apim.cache.gateway_token] and [apim.cache.km_token] are both on; the spec says to enable one: the gateway token cache is used',
      });
    this.validator = new TokenValidator(s, o.keyManager, { now: this.now, logger: this.logger });
    this.certificates = new ClientCertificates(s.mutualSsl, this.logger);
    this.subscriptions.onRevoked((jti) => {
      if (this.cache.evict(jti)) this.logger.log('info', 'token_evicted', { jti, reason: 'revoked' });
    });
    // Subscribe before reading the snapshot, so nothing published in between is lost (docs/events.md).
    const early: Parameters<SubscriptionStore['apply']>[0][] = [];
    this.unfollow = o.events?.subscribe((e) => (this.loaded ? this.subscriptions.apply(e) : early.push(e)));
    const km = o.keyManager;
    this.ready = (km === undefined ? Promise.resolve<Snapshot | undefined>(undefined) : km.snapshot()).then(
      (snap) => {
        if (snap !== undefined) this.subscriptions.load(snap);
        for (const e of early) this.subscriptions.apply(e);
        early.length = 0;
        this.loaded = true;
      },
      (err: unknown) => {
        // Without the snapshot no subscription can be checked; events still arrive. Calls go on (and
        // fail their subscription check) rather than wait forever.
        this.logger.log('error', 'security_snapshot_failed', { message: (err as Error).message });
        for (const e of early) this.subscriptions.apply(e);
        this.loaded = true;
      },
    );
  }

  health(): SecurityHealth {
    return {
      ready: this.loaded,
      cachedTokens: this.cache.size,
      issuers: [...this.validator.remote.values()].map((r) => ({ issuer: r.settings.name, ...r.keys.state() })),
    };
  }

  close(): void {
    this.unfollow?.();
    this.validator.close();
    this.cache.clear();
  }

  /**
   * Authenticates one call: `headers` are the request's fields (flat name/value pairs). Synchronous for
   * auth = "none" and for a token in the cache; a Promise only to validate a new token.
   */
  authenticate(headers: readonly string[], api: SecuredApi, res: SecuredResource): AuthResult | Promise<AuthResult> {
    const def = api.def;
    if (def.mutualSsl !== 'off') {
      const c = this.certificates.check(headers, this.now());
      if (!c.ok && (def.mutualSsl === 'mandatory' || !c.missing))
        return fault(ApiCode.INVALID_CREDENTIALS, { description: c.missing ? 'a client certificate is required' : c.reason });
      if (c.ok && (res.auth === 'none' || def.mutualSsl === 'optional'))
        return { auth: this.certificateContext(c.subject, c.fingerprint, c.notAfter), jwt: undefined };
    }
    if (res.auth === 'none') return OPEN;
    const name = this.settings.authHeader;
    let value: string | undefined;
    for (let i = 0; i < headers.length; i += 2) {
      const n = headers[i] as string;
      if (n.length === name.length && n.toLowerCase() === name) {
        value = headers[i + 1] as string;
        break;
      }
    }
    const token = value === undefined ? undefined : bearerToken(value);
    if (token === undefined) return fault(ApiCode.MISSING_CREDENTIALS);
    if (!this.loaded) return this.ready.then(() => this.authenticate(headers, api, res));
    const now = this.now();
    const hit = this.cache.get(token, now);
    if (hit !== undefined) return this.admit(api, res, hit, now);
    let p = this.pending.get(token);
    if (p === undefined) {
      p = this.withUserClaims(this.validator.validate(token)).finally(() => this.pending.delete(token));
      this.pending.set(token, p);
    }
    return p.then((r) => {
      if (isFault(r)) return r;
      const at = this.now();
      return this.admit(api, res, this.cache.set(token, r, at), at);
    });
  }

  /**
   * [apim.jwt] enable_user_claims: a token of the built-in key manager gets its end user's claims from
   * the key manager's store before it is cached (the reference's JWT claim cache: claims live as long as
   * the cached token). A failed lookup admits the call without them (logged): the claims inform the
   * backend, they do not authorise.
   */
  private async withUserClaims(p: Promise<TokenIdentity | FaultValue>): Promise<TokenIdentity | FaultValue> {
    const r = await p;
    const lookup = this.km?.userClaims;
    if (isFault(r) || !r.builtIn || !this.settings.backendJwt.enabled || !this.settings.backendJwt.userClaims || lookup === undefined)
      return r;
    try {
      const claims = await lookup.call(this.km, r.endUser);
      return claims === undefined ? r : Object.freeze({ ...r, userClaims: claims });
    } catch (err) {
      this.logger.log('warn', 'user_claims_failed', { user: r.endUser, message: (err as Error).message });
      return r;
    }
  }

  private certificateContext(subject: string, fingerprint: string, notAfter: number): AuthContext {
    return Object.freeze({
      ...NO_AUTH,
      kind: 'mutual-ssl',
      tokenId: fingerprint,
      endUser: subject,
      subscriber: subject,
      expiresAt: notAfter,
    });
  }

  private admit(api: SecuredApi, res: SecuredResource, entry: CacheEntry, now: number): AuthResult {
    const id = entry.identity;
    if (now >= id.expiresAt) return fault(ApiCode.INVALID_CREDENTIALS, { description: 'the access token has expired' });
    if (id.tokenId !== '' && this.subscriptions.isRevoked(id.tokenId, now))
      return fault(ApiCode.INVALID_CREDENTIALS, { description: 'the access token is revoked' });
    // spec 002 part 7: 900901 also for a key type without a matching endpoint.
    if (id.keyType === 'SANDBOX' && api.sandbox === undefined)
      return fault(ApiCode.INVALID_CREDENTIALS, { description: 'The API has no sandbox endpoint' });
    const def = api.def;
    // Keyed by the compiled API: a redeployed API (new object) gets a fresh decision.
    let per = entry.perApi.get(api) as PerApi | undefined;
    if (per === undefined || per.version !== this.subscriptions.version) {
      per = this.decide(id, def);
      entry.perApi.set(api, per);
    }
    if (per.fault !== undefined) return per.fault;
    // A deactivated tenant's tokens stop at once (docs/tenants.md); the super tenant's calls skip this.
    if (per.tenant !== undefined && this.tenants?.state(per.tenant) !== 'active')
      return fault(ApiCode.INVALID_CREDENTIALS, { description: `the access token's tenant ${per.tenant} is not active` });
    if (res.tokenType !== 'any' && (res.tokenType === 'user') !== (id.userType === 'APPLICATION_USER')) {
      return fault(ApiCode.INCORRECT_TOKEN_TYPE, {
        description:
          res.tokenType === 'user'
            ? 'the resource accepts only tokens issued to an end user'
            : 'the resource accepts only application tokens',
      });
    }
    const scopes = res.scopes;
    if (scopes.length > 0) {
      let any = false;
      for (const s of scopes) if (id.scopes.includes(s)) any = true;
      if (!any)
        return fault(ApiCode.INVALID_SCOPE, {
          scope: scopes.join(' '),
          description: `the access token lacks the scope the resource requires: ${scopes.join(' or ')}`,
        });
    }
    const bj = this.settings.backendJwt;
    if (bj.enabled && (per.jwt === undefined || now >= per.jwtRenewAt)) {
      const built = buildBackendJwt(bj, this.backendKey(), this.km?.issuer() ?? 'throughway', per.auth as AuthContext, def, now);
      per.jwt = built.value;
      per.jwtRenewAt = Math.max(now + 1, built.expiresAt - BACKEND_JWT_RENEW_MS);
    }
    return per as Admission;
  }

  /** The key that signs backend JWTs: the key manager's when it is RSA, else one generated once. */
  private backendKey(): BackendJwtKey | undefined {
    if (this.settings.backendJwt.algorithm === 'none') return undefined;
    const k = this.km?.signingKey?.();
    const fromKm = k !== undefined ? keyManagerKey(k) : undefined;
    if (fromKm !== undefined) return fromKm;
    if (this.generated === undefined) {
      this.generated = generatedKey();
      this.logger.log('warn', 'backend_jwt_key_generated', {
        kid: this.generated.kid,
        message: 'no RSA key of a key manager in this process: backend JWTs are signed with a key generated at start',
      });
    }
    return this.generated;
  }

  /** Subscription decision of one token on one API (spec 002 part 3). */
  private decide(id: TokenIdentity, def: SecuredApiFacts): PerApi {
    const version = this.subscriptions.version;
    const no = (f: FaultValue): PerApi => ({ version, fault: f, auth: undefined, jwt: undefined, jwtRenewAt: 0 });
    const base = {
      kind: 'oauth2' as const,
      tokenId: id.tokenId,
      issuer: id.issuer,
      consumerKey: id.consumerKey,
      keyType: id.keyType,
      userType: id.userType,
      endUser: id.endUser,
      scopes: id.scopes,
      claims: id.claims,
      expiresAt: id.expiresAt,
      ...(id.userClaims !== undefined ? { userClaims: id.userClaims } : {}),
    };
    if (!id.subscriptionValidation) {
      const a = id.application;
      const auth: AuthContext = Object.freeze({
        ...base,
        applicationId: a?.id ?? '',
        applicationName: a?.name ?? id.consumerKey,
        applicationTier: a?.tier ?? UNLIMITED,
        subscriber: a?.owner ?? id.endUser,
        subscriptionTier: UNLIMITED,
      });
      return { version, fault: undefined, auth, jwt: undefined, jwtRenewAt: 0 };
    }
    const app = this.subscriptions.application(id.consumerKey);
    if (app === undefined)
      return no(fault(ApiCode.INVALID_CREDENTIALS, { description: 'the access token belongs to no known application' }));
    const appTenant = app.application.tenant;
    // A tenant's key signs its own tenant's applications only: another's is a forgery (docs/tenants.md, "Signing keys").
    if (id.keyTenant !== undefined && id.keyTenant !== (appTenant ?? SUPER_TENANT))
      return no(
        fault(ApiCode.INVALID_CREDENTIALS, {
          description: `the access token is signed by a key of tenant ${id.keyTenant} and names an application of tenant ${appTenant ?? SUPER_TENANT}`,
        }),
      );
    if (appTenant !== def.tenant && !this.crossTenant) {
      return no(
        fault(ApiCode.RESOURCE_FORBIDDEN, {
          description: `the access token's application is of tenant ${appTenant ?? SUPER_TENANT} and ${def.name} ${def.version} of tenant ${def.tenant ?? SUPER_TENANT}: cross-tenant subscriptions are off`,
        }),
      );
    }
    const sub = this.subscriptions.subscription(app.application.id, def.context, def.version);
    if (sub === undefined)
      return no(fault(ApiCode.RESOURCE_FORBIDDEN, { description: `the application is not subscribed to ${def.name} ${def.version}` }));
    if (sub.state === 'BLOCKED' || (sub.state === 'PROD_ONLY_BLOCKED' && id.keyType === 'PRODUCTION'))
      return no(fault(ApiCode.API_TEMPORARILY_BLOCKED));
    // A subscription whose workflow waits (ON_HOLD) or refused it (REJECTED) is inactive (docs/workflows.md).
    if (sub.state === 'ON_HOLD' || sub.state === 'REJECTED') return no(fault(ApiCode.SUBSCRIPTION_INACTIVE));
    const a = app.application;
    const auth: AuthContext = Object.freeze({
      ...base,
      applicationId: a.id,
      applicationName: a.name,
      applicationTier: a.tier,
      subscriber: a.owner,
      subscriptionTier: sub.tier,
    });
    return { version, fault: undefined, auth, jwt: undefined, jwtRenewAt: 0, ...(appTenant !== undefined ? { tenant: appTenant } : {}) };
  }
}

/** The link to a key manager in this process (node.ts passes it to createGateway). */
export function keyManagerLink(km: {
  readonly settings: { readonly issuer: string };
  readonly keys: {
    publicJwks(): import('jose').JWK[];
    /** The key ring's tenants' keys (lib/keymanager/keys.ts); without it a tenant issuer's tokens are not trusted. */
    findTenantKey?(kid: string): Promise<{ readonly tenant: string; readonly jwk: import('jose').JWK } | undefined>;
    current(): { readonly kid: string; readonly alg: string; readonly privateKey: import('jose').CryptoKey; readonly certificate?: Buffer };
  };
  readonly manager: { snapshot(): Promise<Snapshot>; userClaims(username: string): Promise<Readonly<Record<string, string>> | undefined> };
  readonly oauth: { introspect(form: URLSearchParams): Promise<Record<string, unknown>> };
}): KeyManagerLink {
  const tenantKey = km.keys.findTenantKey?.bind(km.keys);
  return {
    issuer: () => km.settings.issuer,
    publicJwks: () => km.keys.publicJwks(),
    ...(tenantKey !== undefined ? { tenantKey } : {}),
    snapshot: () => km.manager.snapshot(),
    userClaims: (username) => km.manager.userClaims(username),
    introspect: (token) => km.oauth.introspect(new URLSearchParams({ token })),
    signingKey: () => km.keys.current(),
  };
}

export type { SecuritySettings } from './settings';
/** Plain data properties, not `export { ... } from` (see lib/gateway/phases/index.ts): isRefusal is read on every call. */
export const securitySettingsFrom = settingsFrom;
export const ALLOWED_ALGORITHMS = allowedAlgorithms;
export type { KeyManagerLink } from './validator';
export type { AuthContext, AuthKind, KeyType, TokenFacts, TokenIdentity, UserType } from './auth-context';
export type { Snapshot } from './subscriptions';
