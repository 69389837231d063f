/**
 * The key manager's settings, read once from the frozen configuration.
 *
 * - Issuer (`iss`): `[oauth.oidc.id_token] issuer` when set, otherwise the token endpoint URL on the
 *   management HTTPS port, `https://<server.hostname>:<9443 + offset>/oauth2/token`, as the reference
 *   names it (spec 002, part 4: /oauth2/token is the default ID token issuer), whether or not that port
 *   is open.
 * - Validity: `[oauth.token_validation]` (application 3600 s, user 3600 s, refresh 86400 s) and
 *   `[oauth.oidc.token_validation] id_token_validity` (spec 002, part 5, rule 6); `[oauth]
 *   timestamp_skew` is the clock tolerance when checking `exp`/`nbf`/`iat` of tokens and assertions.
 * - Grants: `[oauth.grant_type.<grant>] enable` (spec 002, part 5, rule 5).
 * - Scopes: `[apim.oauth_config] allowed_scopes` and `[oauth] allowed_scopes` (regular expressions,
 *   spec default `^device_.*` and `openid`) plus the scopes deployed API resources declare.
 * - Revocation: `[apim.token.revocation] enable_realtime_notifier` (on unless false) publishes
 *   `token.revoked`; revoked ids are always kept in the store until they expire (the persistent list a
 *   restarted gateway reads).
 * - `[oauth.token_generation] retry_count_on_persistence_failures`: a refresh token whose digest collides
 *   with a stored one is drawn again, this many times.
 * - jwt-bearer assertions (RFC 7523): trusted issuers are `[[apim.jwt.issuer]]` entries (`name` = the
 *   assertion's `iss`, `jwks.url` = where its keys are); SAML 2.0 bearer assertions (RFC 7522): trusted
 *   identity providers are `[[oauth.grant_type.saml_bearer.identity_provider]]` entries (saml-bearer.ts).
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';
import type { EffectivePorts } from '../config/ports';
import type { PasswordHashMethod } from '../store/types';
import { gatewayEnvironments, type GatewayEnvironment } from '../gateway/environments';

/** grant_type parameter values (RFC 6749 §4, RFC 7523 §2.1, RFC 7522 §2.1) → `[oauth.grant_type.<key>]`. */
export const GRANT_KEYS = {
  authorization_code: 'authorization_code',
  password: 'password',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
  'urn:ietf:params:oauth:grant-type:saml2-bearer': 'saml_bearer',
  'iwa:ntlm': 'iwa_ntlm',
  'urn:ietf:params:oauth:grant-type:jwt-bearer': 'jwt_bearer',
  kerberos: 'kerberos',
  'urn:ietf:params:oauth:grant-type:token-exchange': 'token_exchange',
} as const;

export type GrantType = keyof typeof GRANT_KEYS;

/** Own keys only: `toString` and the like are not grant types. */
export function isGrantType(g: string): g is GrantType {
  return Object.prototype.hasOwnProperty.call(GRANT_KEYS, g);
}
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** RFC 7522 §2.1. */
export const SAML2_BEARER = 'urn:ietf:params:oauth:grant-type:saml2-bearer';
/** RFC 8693 §2.1. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** Grants throughway implements; the others need a Windows domain it does not join (NTLM, Kerberos). */
export const IMPLEMENTED_GRANTS: readonly GrantType[] = [
  'authorization_code',
  'client_credentials',
  'password',
  'refresh_token',
  JWT_BEARER,
  TOKEN_EXCHANGE,
  SAML2_BEARER,
];

/** Grant types a new OAuth client gets when none are named. */
export const DEFAULT_CLIENT_GRANTS: readonly string[] = ['client_credentials', 'password', 'refresh_token', JWT_BEARER];

export interface TrustedIssuer {
  readonly name: string;
  readonly jwksUrl: string;
}

export interface KeyManagerSettings {
  readonly issuer: string;
  /** `[server] hostname`: discovery's endpoints when a request names no usable Host (discovery.ts). */
  readonly hostname: string;
  /** Where this server answers (the start-up hint, jwt-bearer's audience). */
  readonly baseUrl: string;
  readonly appTokenValidity: number;
  readonly userTokenValidity: number;
  readonly refreshTokenValidity: number;
  readonly idTokenValidity: number;
  readonly skew: number;
  readonly grants: Readonly<Record<GrantType, boolean>>;
  readonly clientCredentialsRefresh: boolean;
  readonly clientCredentialsIdToken: boolean;
  /** [oauth.grant_type.token_exchange] allow_refresh_tokens and iat_validity_period (ms). */
  readonly tokenExchange: { readonly refresh: boolean; readonly iatValidity: number };
  readonly allowedScopes: readonly RegExp[];
  readonly trustedIssuers: readonly TrustedIssuer[];
  readonly passwordHashMethod: PasswordHashMethod;
  readonly tokenCleanup: boolean;
  readonly realtimeRevocation: boolean;
  readonly persistenceRetries: number;
  readonly adminUser: string;
  /** `[throughway.key_manager] pkce_allow_plain`: code_challenge_method=plain accepted (RFC 7636 §4.2). */
  readonly pkcePlain: boolean;
  /** [[apim.gateway.environment]]: the gateway URLs GET /admin/v1/environments reports (lib/gateway/environments.ts). */
  readonly environments: readonly GatewayEnvironment[];
}

function scopePattern(p: string): RegExp {
  try {
    return new RegExp(`^(?:${p})$`);
  } catch {
    return new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  }
}

export function keyManagerSettings(config: DeploymentConfig, ports: EffectivePorts, baseUrl?: string): KeyManagerSettings {
  const host = config.server.hostname;
  const g = config.oauth.grant_type;
  const grants: Record<GrantType, boolean> = {
    authorization_code: g.authorization_code.enable,
    password: g.password.enable,
    refresh_token: g.refresh_token.enable,
    client_credentials: g.client_credentials.enable,
    [SAML2_BEARER]: g.saml_bearer.enable,
    'iwa:ntlm': g.iwa_ntlm.enable,
    [JWT_BEARER]: g.jwt_bearer.enable,
    kerberos: g.kerberos.enable,
    [TOKEN_EXCHANGE]: g.token_exchange.enable,
  };
  const patterns = [...config.apim.oauth_config.allowed_scopes, ...(config.oauth.allowed_scopes ?? [])];
  const trustedIssuers: TrustedIssuer[] = [];
  for (const i of config.apim.jwt.issuer) {
    if (i.name !== undefined && i.jwks.url !== undefined) trustedIssuers.push({ name: i.name, jwksUrl: i.jwks.url });
  }
  return {
    issuer: config.oauth.oidc.id_token.issuer ?? `https://${host}:${ports.managementHttps}/oauth2/token`,
    hostname: host,
    baseUrl: baseUrl ?? `http://${host}:${ports.managementHttp}`,
    appTokenValidity: config.oauth.token_validation.app_access_token_validity,
    userTokenValidity: config.oauth.token_validation.user_access_token_validity,
    refreshTokenValidity: config.oauth.token_validation.refresh_token_validity,
    idTokenValidity: config.oauth.oidc.token_validation.id_token_validity,
    skew: config.oauth.timestamp_skew,
    grants,
    clientCredentialsRefresh: g.client_credentials.allow_refresh_tokens,
    clientCredentialsIdToken: g.client_credentials.allow_id_token,
    tokenExchange: { refresh: g.token_exchange.allow_refresh_tokens, iatValidity: g.token_exchange.iat_validity_period },
    allowedScopes: patterns.map(scopePattern),
    trustedIssuers,
    passwordHashMethod: config.user_store.properties.PasswordHashMethod ?? 'SHA-256',
    tokenCleanup: config.oauth.token_cleanup.enable,
    realtimeRevocation: config.apim.token.revocation.enable_realtime_notifier !== false,
    persistenceRetries: Math.max(0, config.oauth.token_generation.retry_count_on_persistence_failures),
    adminUser: config.super_admin.username,
    pkcePlain: config.throughway.key_manager.pkce_allow_plain,
    environments: gatewayEnvironments(config, ports),
  };
}
