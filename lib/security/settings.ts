/**
 * The gateway's security settings, read once from the frozen configuration (spec 000: [apim.oauth_config],
 * [[apim.jwt.issuer]], [apim.cache.gateway_token], [apim.cache.km_token], [apim.jwt], [apim.http_client],
 * [apim.key_manager], [apimgt.mutual_ssl]; [oauth] timestamp_skew; [throughway.security]).
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';

/**
 * Signature algorithms a token may use: an explicit allow-list (RFC 8725 §3.1). `none` and the HMAC family
 * are never on it: with HMAC an attacker could sign with the issuer's *public* key as the secret
 * (algorithm confusion, RFC 8725 §2.1).
 */
export const ALLOWED_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
]);

export interface IssuerSettings {
  /** `iss` of its tokens. */
  readonly name: string;
  readonly jwksUrl: string;
  /** Required `aud` (undefined: not checked). */
  readonly audience: string | undefined;
  /** remote claim name -> local claim name. */
  readonly claimMapping: ReadonlyMap<string, string>;
  readonly subscriptionValidation: boolean;
}

export interface BackendJwtSettings {
  readonly enabled: boolean;
  readonly header: string;
  /** 'RS256' for SHA256withRSA, 'none' for NONE. */
  readonly algorithm: 'RS256' | 'none';
  readonly encoding: 'base64' | 'base64url';
  readonly useKid: boolean;
  /** Prefix of the gateway's claims, e.g. http://wso2.org/claims. */
  readonly dialect: string;
  readonly excludedClaims: ReadonlySet<string>;
  /** Longest validity of one backend JWT (ms): [apim.cache.jwt_claim] expiry_time, else the token's own. */
  readonly maxValidity: number | undefined;
  /** enable_user_claims or enable_claim_retrieval: the end user's claims from the key manager's store. */
  readonly userClaims: boolean;
  /** use_sha256_hash: the signing certificate's thumbprint as `x5t#S256` (SHA-256) instead of `x5t` (SHA-1). */
  readonly thumbprint: 'sha1' | 'sha256';
}

export interface MutualSslSettings {
  /** Lower-case header name carrying the client certificate, or undefined when none is configured. */
  readonly header: string | undefined;
  readonly urlEncoded: boolean;
  readonly chainValidation: boolean;
  /** The PEM trust store file ([throughway.security] client_trust_store). */
  readonly trustStoreFile: string | undefined;
}

export interface SecuritySettings {
  /** Lower-case name of the header carrying the bearer token. */
  readonly authHeader: string;
  /** Allowed clock skew (ms) for exp / nbf / iat. */
  readonly skew: number;
  readonly issuers: readonly IssuerSettings[];
  /** Token cache: on, longest life of an entry (ms), most entries. */
  readonly tokenCache: { readonly enabled: boolean; readonly expiry: number; readonly max: number; readonly bothEnabled: boolean };
  /** Reference (opaque) tokens: the key manager's introspection endpoint and its client limits. */
  readonly introspection: {
    readonly url: string;
    readonly username: string;
    readonly password: string;
    readonly maxTotal: number;
    readonly maxPerRoute: number;
  };
  readonly jwksRefetchInterval: number;
  readonly fetchTimeout: number;
  readonly backendJwt: BackendJwtSettings;
  readonly mutualSsl: MutualSslSettings;
}

/** The reference's claim dialect (its backend JWT claims are named <dialect>/<claim>). */
export const DEFAULT_CLAIM_DIALECT = 'http://wso2.org/claims';

export function securitySettingsFrom(config: DeploymentConfig): SecuritySettings {
  const issuers: IssuerSettings[] = [];
  for (const i of config.apim.jwt.issuer) {
    if (i.name === undefined || i.jwks.url === undefined) continue;
    const mapping = new Map<string, string>();
    for (const m of i.claim_mapping)
      if (m.remote_claim !== undefined && m.local_claim !== undefined) mapping.set(m.remote_claim, m.local_claim);
    issuers.push(
      Object.freeze({
        name: i.name,
        jwksUrl: i.jwks.url,
        audience: i.audience,
        claimMapping: mapping,
        subscriptionValidation: i.subscription_validation,
      }),
    );
  }
  const c = config.apim.cache;
  // The spec: enable only one of the gateway and key manager token caches; the gateway's wins when both are.
  const gw = c.gateway_token;
  const km = c.km_token;
  const tokenCache = {
    enabled: gw.enable || km.enable,
    expiry: gw.enable ? gw.expiry_time : km.expiry_time,
    max: config.throughway.security.token_cache_max,
    bothEnabled: gw.enable && km.enable,
  };
  const j = config.apim.jwt;
  const service = new URL(config.apim.key_manager.service_url);
  const sec = config.throughway.security;
  const ms = config.apimgt.mutual_ssl;
  return Object.freeze({
    authHeader: config.apim.oauth_config.auth_header.toLowerCase(),
    skew: config.oauth.timestamp_skew,
    issuers: Object.freeze(issuers),
    tokenCache: Object.freeze(tokenCache),
    introspection: Object.freeze({
      url: `${service.protocol}//${service.host}/oauth2/introspect`,
      username: config.apim.key_manager.username,
      password: config.apim.key_manager.password,
      maxTotal: config.apim.http_client.max_total,
      maxPerRoute: config.apim.http_client.default_max_per_route,
    }),
    jwksRefetchInterval: sec.jwks_refetch_interval,
    fetchTimeout: sec.jwks_timeout,
    backendJwt: Object.freeze({
      enabled: j.enable,
      header: j.header,
      algorithm: j.signing_algorithm.toUpperCase() === 'NONE' ? 'none' : 'RS256',
      encoding: j.encoding,
      useKid: j.use_kid_property,
      dialect: (j.claim_dialect ?? DEFAULT_CLAIM_DIALECT).replace(/\/+$/, ''),
      excludedClaims: new Set(j.gateway_generator?.excluded_claims ?? []),
      maxValidity: c.jwt_claim.enable ? c.jwt_claim.expiry_time : undefined,
      // spec 000 [apim.jwt]: enable_user_claims puts user store claims in the JWT; enable_claim_retrieval
      // adds the authorized user's claims (default key manager): the same claims here, from one store.
      userClaims: j.enable_user_claims || j.enable_claim_retrieval === true,
      thumbprint: j.use_sha256_hash ? 'sha256' : 'sha1',
    }),
    mutualSsl: Object.freeze({
      header: ms.certificate_header?.toLowerCase(),
      urlEncoded: ms.client_certificate_encode,
      chainValidation: ms.enable_certificate_chain_validation,
      trustStoreFile: sec.client_trust_store,
    }),
  });
}
