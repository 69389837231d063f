/**
 * Authorization server metadata: OpenID Connect Discovery 1.0 §3 and RFC 8414 §2, one builder for both
 * documents (docs/key-manager.md, "Discovery").
 *
 * - `issuer` is the key manager's issuer, fixed (it is the `iss` of every token): `[oauth.oidc.id_token]
 *   issuer` when set, otherwise `https://<[server] hostname>:<9443 + offset>/oauth2/token`
 *   (lib/keymanager/settings.ts).
 * - The documents answer at the issuer-derived locations: `<issuer path>/.well-known/openid-configuration`
 *   (Discovery §4.1) and `/.well-known/oauth-authorization-server<issuer path>` (RFC 8414 §3.1), and at
 *   the root forms of both (and the reference's `/oauth2/oidcdiscovery/...`), on every management listener.
 * - A tenant's documents (docs/tenants.md, "Signing keys") answer at the same locations under `/t/<domain>`
 *   (and RFC 8414's at `/.well-known/oauth-authorization-server/t/<domain><issuer path>`), naming the
 *   tenant's issuer (`/t/<domain>` before the issuer's path) and its key set `/t/<domain>/oauth2/jwks`; the
 *   token, revocation and introspection endpoints are the shared ones (the client's credentials say its tenant).
 * - Endpoint URLs follow the listener the client reached: `https://` on the TLS port, `http://` on the
 *   plain one, with the request's Host (its port included) when it is a well-formed host, otherwise
 *   `[server] hostname` and the listener's port. A client that checks the issuer (openid-client,
 *   oauth4webapi) discovers at the issuer's own URL, so the default issuer means the HTTPS port.
 */
import type * as http from 'node:http';
import type { TLSSocket } from 'node:tls';
import { CLIENT_AUTH_METHODS } from './client-auth';
import { IMPLEMENTED_GRANTS, type GrantType, type KeyManagerSettings } from './settings';
import { SUPER_TENANT, tenantDomainOf, tenantIssuer } from '../tenants';

/** Spec 002, part 9, rule 4: v0.14 is the default version of the registration path (any v0.<n> answers). */
export const REGISTRATION_PATH = '/client-registration/v0.14/register';

/** RFC 3986 §3.2.2 host (reg-name or IP literal) with an optional port; anything else is not used. */
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::\d{1,5})?$/;

/** The origin the client reached: scheme of the listener, the request's Host when well-formed. */
export function requestOrigin(req: http.IncomingMessage, hostname: string): string {
  const scheme = (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http';
  const host = req.headers.host;
  if (host !== undefined && HOST.test(host)) return `${scheme}://${host}`;
  return `${scheme}://${hostname}:${req.socket.localPort ?? 0}`;
}

/** The path part of the issuer, without a trailing slash ('' for an issuer at the root). */
export function issuerPath(issuer: string): string {
  try {
    return new URL(issuer).pathname.replace(/\/+$/, '');
  } catch {
    return '';
  }
}

/** Which metadata document a GET path asks for, if any. */
export function discoveryKind(path: string, issuer: string): 'openid' | 'oauth' | undefined {
  const ip = issuerPath(issuer);
  if (
    path === '/.well-known/openid-configuration' ||
    path === `${ip}/.well-known/openid-configuration` ||
    path === '/oauth2/oidcdiscovery/.well-known/openid-configuration'
  )
    return 'openid';
  if (path === '/.well-known/oauth-authorization-server' || path === `/.well-known/oauth-authorization-server${ip}`) return 'oauth';
  return undefined;
}

/** What a `/t/<domain>/...` GET path of the key manager asks for (docs/tenants.md, "Signing keys"), if anything. */
export function tenantRoute(
  path: string,
  issuer: string,
): { readonly tenant: string; readonly kind: 'openid' | 'oauth' | 'jwks' } | undefined {
  const rfc8414 = '/.well-known/oauth-authorization-server';
  const tail = path.startsWith(`${rfc8414}/t/`) ? path.slice(rfc8414.length) : path;
  const tenant = tenantDomainOf(tail);
  if (tenant === undefined || tenant === '') return undefined;
  if (tail !== path) return tail === issuerPath(tenantIssuer(issuer, tenant)) ? { tenant, kind: 'oauth' } : undefined;
  const rest = path.slice(3 + tenant.length);
  if (rest === '/oauth2/jwks' || /^\/jwks(\/[^/]+)?$/.test(rest)) return { tenant, kind: 'jwks' };
  // The super tenant's locations under /t/<domain>: `<issuer path>/.well-known/...` there is the tenant issuer's own.
  const kind = discoveryKind(rest, issuer);
  return kind === undefined ? undefined : { tenant, kind };
}

/**
 * The metadata document. Add endpoints and capabilities here, so both documents and every listener
 * agree. `*_auth_methods_supported` come from CLIENT_AUTH_METHODS (the one client authentication).
 */
export function serverMetadata(
  s: KeyManagerSettings,
  signingAlg: string,
  origin: string,
  tenant: string = SUPER_TENANT,
): Record<string, unknown> {
  const grants = IMPLEMENTED_GRANTS.filter((g: GrantType) => s.grants[g]);
  return {
    issuer: tenantIssuer(s.issuer, tenant),
    token_endpoint: `${origin}/oauth2/token`,
    revocation_endpoint: `${origin}/oauth2/revoke`,
    introspection_endpoint: `${origin}/oauth2/introspect`,
    jwks_uri: tenant === SUPER_TENANT ? `${origin}/oauth2/jwks` : `${origin}/t/${tenant}/oauth2/jwks`,
    registration_endpoint: `${origin}${REGISTRATION_PATH}`,
    grant_types_supported: grants,
    // RFC 8414 §2 / Discovery §3: the response types of the authorization endpoint; none without one.
    response_types_supported: grants.includes('authorization_code') ? ['code'] : [],
    ...(grants.includes('authorization_code')
      ? {
          authorization_endpoint: `${origin}/oauth2/authorize`,
          code_challenge_methods_supported: s.pkcePlain ? ['S256', 'plain'] : ['S256'],
          authorization_response_iss_parameter_supported: true,
        }
      : {}),
    userinfo_endpoint: `${origin}/oauth2/userinfo`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [signingAlg],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    introspection_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    scopes_supported: ['openid'],
    claims_supported: ['iss', 'sub', 'aud', 'azp', 'client_id', 'scope', 'jti', 'iat', 'nbf', 'exp', 'keytype', 'aut'],
  };
}
