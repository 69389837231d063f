/**
 * The OAuth 2.0 authorization server: token (RFC 6749), revocation (RFC 7009) and introspection
 * (RFC 7662), independent of HTTP (lib/keymanager/http.ts parses requests and renders the results).
 *
 * Access tokens are self-contained JWTs (spec 002, part 5, rule 3; RFC 9068 profile) signed with the
 * current key of the application's tenant's ring (docs/tenants.md, "Signing keys"): the super tenant's
 * with the key manager's issuer, a tenant's with that tenant's issuer (`/t/<domain>` before its path). Refresh tokens are opaque 256-bit values kept only as digests, rotated on every
 * use; presenting a used one again revokes its whole family (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
 */
import { randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  jwtVerify,
  SignJWT,
  type JWK,
  type JWTPayload,
} from 'jose';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import { digest, randomToken } from '../store/passwords';
import { authenticateClient, type AuthenticatedClient } from './client-auth';
import { StoreError, type Application, type KeyType, type OAuthClient, type Store } from '../store/types';
import { databaseUserStore, findIdentity, SignInHeldError, type Identity, type UserStore } from '../store/users';
import { AuthorizationCodes, type ApiScope } from './codes';
import { issuedInFuture } from '../security/validator';
import { OAuthError } from './errors';
import { signIdToken } from './id-token';
import { awaitingApproval } from './confirmed';
import type { KeyRing } from './keys';
import {
  GRANT_KEYS,
  IMPLEMENTED_GRANTS,
  isGrantType,
  JWT_BEARER,
  SAML2_BEARER,
  TOKEN_EXCHANGE,
  type GrantType,
  type KeyManagerSettings,
} from './settings';
import { issuerTenant, SUPER_TENANT, tenantIssuer, type Tenants } from '../tenants';
import type { SamlAssertions, SamlIdentityProvider } from './saml-bearer';

export type Form = URLSearchParams;

export interface AccessTokenClaims extends JWTPayload {
  client_id: string;
  azp: string;
  scope: string;
  keytype: KeyType;
  aut: 'APPLICATION' | 'APPLICATION_USER';
  application?: { id: string; name: string; owner: string; tier: string };
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  /** RFC 8693 §2.2.1: the type of the issued token (token exchange only). */
  issued_token_type?: string;
}

/**
 * The family id of a grant a local user signed in to (password, authorization_code): its refresh checks
 * that the user still exists and may sign in (docs/key-manager.md, "Refresh tokens"). Asserted subjects
 * (jwt-bearer, token exchange) are not users of this node's store and get plain ids.
 */
const USER_FAMILY = 'user:';
const userFamily = (): string => `${USER_FAMILY}${randomUUID()}`;

/** RFC 8693 §3: the token types a subject token may be (both JWTs here) and the one issued. */
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export type { AuthenticatedClient } from './client-auth';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Form parameters that must appear at most once (RFC 6749 §3.1, §3.2). */
function param(form: Form, name: string): string | undefined {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError('invalid_request', `parameter ${name} is repeated`);
  const v = all[0];
  return v === undefined || v === '' ? undefined : v;
}

function required(form: Form, name: string): string {
  const v = param(form, name);
  if (v === undefined) throw new OAuthError('invalid_request', `parameter ${name} is required`);
  return v;
}

export { parseBasic } from './client-auth';

export interface OAuthServerOptions {
  readonly store: Store;
  /** Where users sign in (lib/store/users.ts); the key manager's store when not given. */
  readonly users?: UserStore;
  readonly keys: KeyRing;
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly settings: KeyManagerSettings;
  /**
   * Scopes the deployed APIs declare, with the roles allowed to hold them (docs/security.md, "Scopes and
   * roles"); a bare name is a scope without roles whose API is not known.
   */
  readonly apiScopes?: () => Iterable<ApiScope>;
  /** Pending authorizations and issued codes (authorization_code grant); one per key manager. */
  readonly codes?: AuthorizationCodes;
  /** The tenants (docs/tenants.md): a deactivated tenant's clients get no token, a user none of another tenant's client. */
  readonly tenants?: Tenants;
  /** The saml2-bearer grant: its identity providers and the replay cache, kept when the server is rebuilt. */
  readonly saml?: { readonly providers: readonly SamlIdentityProvider[]; readonly assertions: SamlAssertions };
}

/** Who a scope is granted to: the user's (or the application owner's) roles and the application. */
export interface ScopeHolder {
  readonly roles: readonly string[];
  readonly applicationId: string;
}

export class OAuthServer {
  private readonly remoteJwks = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  readonly codes: AuthorizationCodes;
  /** Where users sign in: `[user_store] type` (lib/store/users.ts). */
  readonly users: UserStore;

  constructor(private readonly o: OAuthServerOptions) {
    this.codes = o.codes ?? new AuthorizationCodes();
    this.users = o.users ?? databaseUserStore(o.store);
  }

  /**
   * A user's roles by name: the user store's, else the key manager's store's (the super admin, who owns
   * applications, lives there whatever the user store: docs/user-stores.md).
   */
  async rolesOf(username: string): Promise<readonly string[]> {
    return (await findIdentity(this.users, this.o.store, username))?.roles ?? [];
  }

  get settings(): KeyManagerSettings {
    return this.o.settings;
  }

  /** Client authentication, the same on every endpoint (lib/keymanager/client-auth.ts). */
  authenticateClient(authorization: string | undefined, form: Form): Promise<AuthenticatedClient> {
    return authenticateClient(this.o.store, authorization, form);
  }

  /** POST /oauth2/token (RFC 6749 §3.2). */
  async token(authorization: string | undefined, form: Form): Promise<TokenResponse> {
    const grant = required(form, 'grant_type');
    if (!isGrantType(grant)) throw new OAuthError('unsupported_grant_type', `grant type ${grant} is not known to this server`);
    const g = grant as GrantType;
    if (!this.o.settings.grants[g])
      throw new OAuthError(
        'unsupported_grant_type',
        `grant type ${grant} is disabled by [oauth.grant_type.${GRANT_KEYS[g]}] enable = false`,
      );
    if (!IMPLEMENTED_GRANTS.includes(g)) {
      const why =
        g === 'authorization_code'
          ? 'it needs a login page, which throughway does not serve'
          : 'throughway joins no Windows domain to check NTLM or Kerberos tickets against';
      throw new OAuthError(
        'unsupported_grant_type',
        `grant type ${grant} is not supported: ${why}; use client_credentials, password, refresh_token or ${JWT_BEARER}`,
      );
    }
    const auth = await this.authenticateClient(authorization, form);
    const tenants = this.o.tenants;
    const appTenant = auth.application.tenant;
    if (appTenant !== SUPER_TENANT && tenants?.state(appTenant) !== 'active')
      throw new OAuthError('invalid_client', `the client's tenant ${appTenant} is not active`);
    if (auth.client.grantTypes.length > 0 && !auth.client.grantTypes.includes(grant)) {
      throw new OAuthError(
        'unauthorized_client',
        `this client may not use grant type ${grant} (its grant types: ${auth.client.grantTypes.join(' ')})`,
      );
    }
    switch (g) {
      case 'authorization_code':
        return this.authorizationCode(auth, form);
      case 'client_credentials': {
        // The application owner's roles bind scopes for application tokens (docs/security.md).
        // The owner's roles are looked up only when a scope is asked for (a directory is not asked otherwise).
        const asked = param(form, 'scope');
        const scope = await this.resolveScope(asked, {
          roles: asked === undefined ? [] : await this.rolesOf(auth.application.owner),
          applicationId: auth.application.id,
        });
        return this.issue(auth, {
          grant,
          subject: auth.application.owner,
          aut: 'APPLICATION',
          scope,
          validity: this.o.settings.appTokenValidity,
          refresh: this.o.settings.clientCredentialsRefresh,
          idToken: this.o.settings.clientCredentialsIdToken,
        });
      }
      case 'password': {
        const username = required(form, 'username');
        const password = required(form, 'password');
        let user: Identity | undefined;
        try {
          user = await this.users.authenticate(username, password);
        } catch (err) {
          // A signed-up account not yet approved or confirmed (lib/keymanager/confirmed.ts): the right password, refused with why.
          if (err instanceof SignInHeldError) throw new OAuthError('invalid_grant', `${err.code}: ${err.message}`);
          throw err;
        }
        if (user === undefined) throw new OAuthError('invalid_grant', 'invalid resource owner credentials');
        // A tenant's users sign in to their tenant's applications only (docs/tenants.md).
        if (tenants !== undefined && tenants.tenantOf(user.username) !== appTenant)
          throw new OAuthError('invalid_grant', `${user.username} is not a user of the client's tenant ${appTenant}`);
        const scope = await this.resolveScope(param(form, 'scope'), { roles: user.roles, applicationId: auth.application.id });
        return this.issue(auth, {
          grant,
          subject: user.username,
          aut: 'APPLICATION_USER',
          scope,
          validity: this.o.settings.userTokenValidity,
          refresh: true,
          idToken: true,
          family: userFamily(),
        });
      }
      case 'refresh_token':
        return this.refresh(auth, form);
      case TOKEN_EXCHANGE:
        return this.tokenExchange(auth, form);
      case SAML2_BEARER:
        return this.samlBearer(auth, form);
      default:
        return this.jwtBearer(auth, form);
    }
  }

  /**
   * Requested scopes filtered by allowed_scopes and the scopes deployed APIs declare: RFC 6749 §3.3 lets
   * the server issue a narrower scope than asked (the response's `scope` says what was granted). An API
   * scope with roles goes only to a holder with one of them; one without roles to an application
   * subscribed to a declaring API (docs/security.md, "Scopes and roles"). Nothing left, or nothing asked:
   * the reference's `default` scope.
   */
  async resolveScope(requested: string | undefined, holder: ScopeHolder): Promise<string> {
    if (requested === undefined) return 'default';
    const asked = requested.split(' ').filter((s) => s !== '');
    for (const s of asked)
      if (!SCOPE_TOKEN.test(s)) throw new OAuthError('invalid_scope', `malformed scope ${JSON.stringify(s)} (RFC 6749 §3.3)`);
    const declared = [...(this.o.apiScopes?.() ?? [])];
    let subscriptions: Set<string> | undefined;
    const subscribed = async (context: string, version: string): Promise<boolean> => {
      subscriptions ??= new Set(
        (await this.o.store.listSubscriptions({ applicationId: holder.applicationId }))
          .filter((x) => x.state !== 'BLOCKED' && x.state !== 'ON_HOLD')
          .map((x) => `${x.apiContext}\u0000${x.apiVersion}`),
      );
      return subscriptions.has(`${context}\u0000${version}`);
    };
    const granted: string[] = [];
    for (const s of new Set(asked)) {
      if (this.o.settings.allowedScopes.some((p) => p.test(s))) {
        granted.push(s);
        continue;
      }
      for (const d of declared) {
        if (typeof d === 'string') {
          if (d !== s) continue;
          granted.push(s);
          break;
        }
        if (d.name !== s) continue;
        const ok =
          d.roles.length > 0
            ? d.roles.some((r) => holder.roles.includes(r))
            : d.api === undefined || (await subscribed(d.api.context, d.api.version));
        if (ok) {
          granted.push(s);
          break;
        }
      }
    }
    return granted.length > 0 ? granted.join(' ') : 'default';
  }

  /**
   * The authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.6): the code is redeemed once; presented
   * again it revokes every token it issued (RFC 6749 §4.1.2) and is refused.
   */
  private async authorizationCode(auth: AuthenticatedClient, form: Form): Promise<TokenResponse> {
    const r = this.codes.redeem(
      {
        code: required(form, 'code'),
        clientId: auth.client.consumerKey,
        redirectUri: param(form, 'redirect_uri'),
        verifier: param(form, 'code_verifier'),
      },
      Date.now(),
    );
    if (r.reused !== undefined) {
      const issued = r.reused;
      const n = await this.revokeFamily(issued.family, auth.client.consumerKey);
      const now = Date.now();
      if (!(await this.o.store.isRevoked(issued.jti, now))) {
        await this.o.store.revokeToken(issued.jti, issued.expiresAt, now);
        if (this.o.settings.realtimeRevocation)
          this.o.bus.publish('token.revoked', {
            jti: issued.jti,
            expiresAt: issued.expiresAt,
            consumerKey: auth.client.consumerKey,
            revokedAt: now,
          });
      }
      this.o.logger.log('warn', 'authorization_code_reuse', {
        client_id: auth.client.consumerKey,
        family: issued.family,
        access_tokens_revoked: n,
      });
      throw new OAuthError('invalid_grant', 'the authorization code was already used; the tokens it issued are revoked');
    }
    const c = r.record;
    const family = userFamily();
    const res = await this.issue(auth, {
      grant: 'authorization_code',
      subject: c.subject,
      aut: 'APPLICATION_USER',
      scope: c.scope,
      validity: this.o.settings.userTokenValidity,
      refresh: true,
      idToken: true,
      family,
      nonce: c.nonce,
      authTime: c.authTime,
    });
    const claims = decodeJwt(res.access_token);
    this.codes.issued(r.key, { jti: String(claims.jti), expiresAt: Number(claims.exp) * 1000 + this.o.settings.skew, family });
    return res;
  }

  private async refresh(auth: AuthenticatedClient, form: Form): Promise<TokenResponse> {
    const presented = required(form, 'refresh_token');
    const hash = digest(presented);
    const rec = await this.o.store.getRefreshToken(hash);
    const now = Date.now();
    if (rec === undefined) throw new OAuthError('invalid_grant', 'unknown refresh token');
    // RFC 6749 §6: the refresh token is bound to the client it was issued to.
    if (rec.consumerKey !== auth.client.consumerKey)
      throw new OAuthError('invalid_grant', 'the refresh token was not issued to this client');
    if (rec.revoked) throw new OAuthError('invalid_grant', 'the refresh token is revoked');
    // A user's grant lives only as long as the user may sign in: deleted, or held by a sign-up awaiting approval, it ends.
    if (rec.family.startsWith(USER_FAMILY)) {
      const gone = (await findIdentity(this.users, this.o.store, rec.subject)) === undefined;
      if (gone || (await awaitingApproval(this.o.store, rec.subject))) {
        const n = await this.revokeFamily(rec.family, rec.consumerKey);
        this.o.logger.log('warn', 'refresh_token_user_gone', { client_id: rec.consumerKey, sub: rec.subject, access_tokens_revoked: n });
        throw new OAuthError(
          'invalid_grant',
          gone ? 'the user of this refresh token no longer exists' : 'the user of this refresh token may not sign in',
        );
      }
    }
    if (rec.usedAt !== null || !(await this.o.store.markRefreshTokenUsed(hash, now))) {
      // A rotated token presented again: someone holds a copy. Revoke the family (RFC 9700 §4.14.2).
      const n = await this.revokeFamily(rec.family, rec.consumerKey);
      this.o.logger.log('warn', 'refresh_token_reuse', {
        client_id: rec.consumerKey,
        sub: rec.subject,
        family: rec.family,
        access_tokens_revoked: n,
      });
      throw new OAuthError('invalid_grant', 'the refresh token was already used; every token of its grant is revoked');
    }
    if (rec.expiresAt <= now) throw new OAuthError('invalid_grant', 'the refresh token has expired');
    let scope = rec.scope;
    const asked = param(form, 'scope');
    if (asked !== undefined) {
      // RFC 6749 §6: a narrower scope may be asked for, never a wider one.
      const original = new Set(rec.scope.split(' '));
      const wanted = asked.split(' ').filter((s) => s !== '');
      const extra = wanted.filter((s) => !original.has(s));
      if (extra.length > 0) throw new OAuthError('invalid_scope', `scope ${extra.join(' ')} was not granted originally`);
      scope = [...new Set(wanted)].join(' ');
    }
    const aut = rec.authorizedUserType === 'APPLICATION' ? 'APPLICATION' : 'APPLICATION_USER';
    return this.issue(auth, {
      grant: 'refresh_token',
      subject: rec.subject,
      aut,
      scope,
      validity: aut === 'APPLICATION' ? this.o.settings.appTokenValidity : this.o.settings.userTokenValidity,
      refresh: true,
      idToken: aut === 'APPLICATION_USER' || this.o.settings.clientCredentialsIdToken,
      family: rec.family,
    });
  }

  /**
   * Revokes every grant of a user (DELETE /admin/v1/users/{name}): each refresh token family issued for
   * the subject, with the access tokens issued alongside (as revokeFamily). Resolves to the number of
   * access tokens revoked.
   */
  async revokeUser(username: string): Promise<number> {
    let n = 0;
    const families = new Map<string, string>();
    for (const r of await this.o.store.listRefreshTokensOf(username))
      if (r.authorizedUserType !== 'APPLICATION') families.set(r.family, r.consumerKey);
    for (const [family, consumerKey] of families) n += await this.revokeFamily(family, consumerKey);
    return n;
  }

  /**
   * Revokes a refresh token family and the access tokens issued with its members that have not expired
   * (RFC 7009 §2.1: revoking a refresh token SHOULD invalidate the access tokens of the same grant).
   * Resolves to the number of access tokens revoked.
   */
  private async revokeFamily(family: string, consumerKey: string): Promise<number> {
    await this.o.store.revokeRefreshFamily(family);
    const now = Date.now();
    let n = 0;
    for (const r of await this.o.store.listRefreshFamily(family)) {
      if (r.accessJti === null || r.accessExpiresAt === null || r.accessExpiresAt <= now) continue;
      if (await this.o.store.isRevoked(r.accessJti, now)) continue;
      await this.o.store.revokeToken(r.accessJti, r.accessExpiresAt, now);
      if (this.o.settings.realtimeRevocation)
        this.o.bus.publish('token.revoked', { jti: r.accessJti, expiresAt: r.accessExpiresAt, consumerKey, revokedAt: now });
      n++;
    }
    return n;
  }

  /**
   * A JWT signed by a trusted issuer ([[apim.jwt.issuer]] name and jwks.url), for one of `audiences`, with
   * exp and sub, not issued in the future; `what` names it in the refusals (invalid_grant).
   */
  private async verifyTrusted(token: string, what: string, audiences: readonly string[]): Promise<JWTPayload> {
    let iss: string | undefined;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw new OAuthError('invalid_grant', `the ${what} is not a JWT`);
    }
    const trusted = this.o.settings.trustedIssuers.find((i) => i.name === iss);
    if (iss === undefined || trusted === undefined) {
      throw new OAuthError(
        'invalid_grant',
        `${what} issuer ${JSON.stringify(iss ?? '')} is not trusted (add it as [[apim.jwt.issuer]] name with jwks.url)`,
      );
    }
    let jwks = this.remoteJwks.get(trusted.jwksUrl);
    if (jwks === undefined) {
      jwks = createRemoteJWKSet(new URL(trusted.jwksUrl), { timeoutDuration: 5000 });
      this.remoteJwks.set(trusted.jwksUrl, jwks);
    }
    let claims: JWTPayload;
    try {
      const r = await jwtVerify(token, jwks, {
        issuer: trusted.name,
        audience: [...audiences],
        requiredClaims: ['exp', 'sub'],
        clockTolerance: Math.round(this.o.settings.skew / 1000),
      });
      claims = r.payload;
    } catch (err) {
      throw new OAuthError('invalid_grant', `the ${what} is not valid: ${(err as Error).message}`);
    }
    if (issuedInFuture(claims, Date.now(), this.o.settings.skew))
      throw new OAuthError('invalid_grant', `the ${what} was issued in the future (iat beyond [oauth] timestamp_skew)`);
    return claims;
  }

  /**
   * The subject a grant asserts (a trusted issuer's JWT `sub`, a SAML NameID) names no user of another tenant
   * than the client's: as for the password grant (docs/tenants.md), a name of the form `name@<tenant
   * domain>` belongs to that tenant whether or not the store holds it, so a federated subject cannot take
   * another tenant's name. `prefix` starts the refusal's description, `event` is the warning logged.
   */
  private subjectOfClientTenant(
    auth: AuthenticatedClient,
    subject: string,
    refusal: { prefix: string; event: string; code?: string },
  ): void {
    const tenants = this.o.tenants;
    if (tenants === undefined) return;
    const appTenant = auth.application.tenant;
    const subjectTenant = tenants.tenantOf(subject);
    if (subjectTenant === appTenant) return;
    this.o.logger.log('warn', refusal.event, { client_id: auth.client.consumerKey, code: refusal.code, tenant: subjectTenant });
    throw new OAuthError(
      'invalid_grant',
      `${refusal.prefix}${subject} is a user name of tenant ${subjectTenant}, not of the client's tenant ${appTenant}` +
        (appTenant === SUPER_TENANT ? '' : ` (a user of ${appTenant} is named <name>@${appTenant})`),
    );
  }

  /**
   * This authorization server as an audience: its issuer and its token endpoint (RFC 7523 §3); for a
   * tenant's client the tenant's issuer too (docs/tenants.md, "Signing keys").
   */
  private ownAudiences(auth: AuthenticatedClient): readonly string[] {
    const own = [this.o.settings.issuer, `${this.o.settings.baseUrl}/oauth2/token`];
    const tenant = auth.application.tenant;
    return tenant === SUPER_TENANT ? own : [...own, tenantIssuer(this.o.settings.issuer, tenant)];
  }

  /** RFC 7523 §2.1: a JWT from a trusted issuer ([[apim.jwt.issuer]]) as the authorization grant. */
  private async jwtBearer(auth: AuthenticatedClient, form: Form): Promise<TokenResponse> {
    // RFC 7523 §3: aud identifies this authorization server (its issuer or token endpoint); exp required.
    const claims = await this.verifyTrusted(required(form, 'assertion'), 'assertion', this.ownAudiences(auth));
    this.subjectOfClientTenant(auth, String(claims.sub), { prefix: "the assertion's subject ", event: 'subject_tenant_refused' });
    // An asserted subject has no roles here: it gets allowed_scopes and subscribed scopes without roles.
    const scope = await this.resolveScope(param(form, 'scope'), { roles: [], applicationId: auth.application.id });
    return this.issue(auth, {
      grant: JWT_BEARER,
      subject: String(claims.sub),
      aut: 'APPLICATION_USER',
      scope,
      validity: this.o.settings.userTokenValidity,
      refresh: true,
      idToken: true,
    });
  }

  /**
   * RFC 7522 §2.1: a SAML 2.0 assertion signed by a trusted identity provider (saml-bearer.ts checks it).
   * Its NameID names a user of the store (of the client's tenant) who gets their roles, or else is taken as
   * a federated subject without roles, as jwt-bearer's subjects are.
   */
  private async samlBearer(auth: AuthenticatedClient, form: Form): Promise<TokenResponse> {
    const saml = this.o.saml;
    const assertion = required(form, 'assertion');
    if (saml === undefined || saml.providers.length === 0)
      throw new OAuthError(
        'invalid_grant',
        'SAML_ISSUER: no identity provider is trusted ([[oauth.grant_type.saml_bearer.identity_provider]])',
      );
    const r = saml.assertions.check({
      assertion,
      providers: saml.providers,
      endpoints: this.ownAudiences(auth),
      now: Date.now(),
      skew: this.o.settings.skew,
    });
    if (!r.ok) {
      this.o.logger.log('warn', 'saml_assertion_refused', { client_id: auth.client.consumerKey, code: r.code, reason: r.reason });
      throw new OAuthError('invalid_grant', `${r.code}: ${r.reason}`);
    }
    const user = await findIdentity(this.users, this.o.store, r.subject);
    this.subjectOfClientTenant(auth, user?.username ?? r.subject, {
      prefix: 'SAML_TENANT: ',
      event: 'saml_assertion_refused',
      code: 'SAML_TENANT',
    });
    const scope = await this.resolveScope(param(form, 'scope'), { roles: user?.roles ?? [], applicationId: auth.application.id });
    return this.issue(auth, {
      grant: SAML2_BEARER,
      subject: user?.username ?? r.subject,
      aut: 'APPLICATION_USER',
      scope,
      validity: this.o.settings.userTokenValidity,
      refresh: true,
      idToken: true,
      ...(user !== undefined ? { family: userFamily() } : {}),
    });
  }

  /**
   * RFC 8693 §2.1: a subject token, a JWT of a trusted issuer ([[apim.jwt.issuer]]) or an access token of
   * this server, for an access token of this server (docs/key-manager.md, "Token exchange"). The subject
   * token is for this server or for the requesting client (aud), issued within iat_validity_period; an
   * access token of this server must be unrevoked and the client's own. Delegation (actor_token) and token
   * types other than access tokens are refused with invalid_request.
   */
  private async tokenExchange(auth: AuthenticatedClient, form: Form): Promise<TokenResponse> {
    const subjectToken = required(form, 'subject_token');
    const subjectType = required(form, 'subject_token_type');
    if (subjectType !== JWT_TOKEN_TYPE && subjectType !== ACCESS_TOKEN_TYPE) {
      throw new OAuthError(
        'invalid_request',
        `subject_token_type ${subjectType} is not supported: use ${JWT_TOKEN_TYPE} or ${ACCESS_TOKEN_TYPE} (RFC 8693 §3)`,
      );
    }
    const requested = param(form, 'requested_token_type');
    if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE && requested !== JWT_TOKEN_TYPE) {
      throw new OAuthError(
        'invalid_request',
        `requested_token_type ${requested} is not issued here: only ${ACCESS_TOKEN_TYPE} (RFC 8693 §2.1)`,
      );
    }
    if (param(form, 'actor_token') !== undefined || param(form, 'actor_token_type') !== undefined) {
      throw new OAuthError('invalid_request', 'actor_token (delegation, RFC 8693 §1.1) is not supported: exchange the subject token alone');
    }
    let iss: string | undefined;
    try {
      iss = decodeJwt(subjectToken).iss;
    } catch {
      throw new OAuthError('invalid_grant', 'the subject_token is not a JWT');
    }
    let subject: string;
    let iat: number | undefined;
    // An access token of this server keeps its kind (an application token stays one) and its scopes at most.
    let aut: 'APPLICATION' | 'APPLICATION_USER' = 'APPLICATION_USER';
    let within: Set<string> | undefined;
    if (iss !== undefined && issuerTenant(this.o.settings.issuer, iss) !== undefined) {
      // Issued to the same client (checked below), so of the same tenant (verifyAccessToken checks its key's).
      const own = await this.verifyAccessToken(subjectToken);
      if (own === undefined)
        throw new OAuthError(
          'invalid_grant',
          'the subject_token is not a valid access token of this server (signature, expiry or revocation)',
        );
      if (own.client_id !== auth.client.consumerKey)
        throw new OAuthError('invalid_grant', 'the subject_token was issued to another client');
      subject = String(own.sub);
      iat = typeof own.iat === 'number' ? own.iat : undefined;
      aut = own.aut;
      within = new Set(own.scope.split(' '));
    } else {
      const claims = await this.verifyTrusted(subjectToken, 'subject_token', [...this.ownAudiences(auth), auth.client.consumerKey]);
      subject = String(claims.sub);
      this.subjectOfClientTenant(auth, subject, { prefix: "the subject_token's subject ", event: 'subject_tenant_refused' });
      iat = claims.iat;
    }
    const te = this.o.settings.tokenExchange;
    if (iat === undefined || Date.now() - iat * 1000 > te.iatValidity + this.o.settings.skew) {
      throw new OAuthError(
        'invalid_grant',
        `the subject_token was issued more than [oauth.grant_type.token_exchange] iat_validity_period (${Math.round(te.iatValidity / 1000)} s) ago, or has no iat`,
      );
    }
    // An exchanged subject has no roles here (as for jwt-bearer): allowed_scopes and subscribed scopes without roles.
    let scope = await this.resolveScope(param(form, 'scope'), { roles: [], applicationId: auth.application.id });
    if (within !== undefined)
      scope =
        scope
          .split(' ')
          .filter((x) => within.has(x))
          .join(' ') || 'default';
    const validity = aut === 'APPLICATION' ? this.o.settings.appTokenValidity : this.o.settings.userTokenValidity;
    const res = await this.issue(auth, { grant: TOKEN_EXCHANGE, subject, aut, scope, validity, refresh: te.refresh, idToken: false });
    res.issued_token_type = ACCESS_TOKEN_TYPE;
    return res;
  }

  private async issue(
    auth: AuthenticatedClient,
    t: {
      grant: string;
      subject: string;
      aut: 'APPLICATION' | 'APPLICATION_USER';
      scope: string;
      validity: number;
      refresh: boolean;
      idToken: boolean;
      family?: string;
      nonce?: string | undefined;
      authTime?: number;
    },
  ): Promise<TokenResponse> {
    const s = this.o.settings;
    const { client, application } = auth;
    // Each tenant signs with its own ring and names itself in iss (docs/tenants.md, "Signing keys").
    const tenant = application.tenant;
    const key = tenant === SUPER_TENANT ? this.o.keys.current() : await this.o.keys.signingKey(tenant);
    const issuer = tenantIssuer(s.issuer, tenant);
    const now = Math.floor(Date.now() / 1000);
    const expiresIn = Math.max(1, Math.floor(t.validity / 1000));
    const jti = randomUUID();
    const claims: AccessTokenClaims = {
      client_id: client.consumerKey,
      azp: client.consumerKey,
      scope: t.scope,
      keytype: client.keyType,
      aut: t.aut,
      application: { id: application.id, name: application.name, owner: application.owner, tier: application.tier },
    };
    const accessToken = await new SignJWT(claims)
      // RFC 9068 §2.1: typ at+jwt marks an access token, so an ID token cannot be replayed as one.
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject(t.subject)
      .setAudience(client.consumerKey)
      .setJti(jti)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + expiresIn)
      .sign(key.privateKey);
    const res: TokenResponse = { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, scope: t.scope };
    // A refresh token needs the refresh_token grant enabled and allowed for the client.
    const refreshAllowed =
      t.refresh && s.grants.refresh_token && (client.grantTypes.length === 0 || client.grantTypes.includes('refresh_token'));
    if (refreshAllowed) {
      let value = randomToken();
      const save = (): Promise<void> =>
        this.o.store.saveRefreshToken({
          tokenHash: digest(value),
          family: t.family ?? randomUUID(),
          consumerKey: client.consumerKey,
          subject: t.subject,
          scope: t.scope,
          authorizedUserType: t.aut,
          keyType: client.keyType,
          issuedAt: now * 1000,
          expiresAt: now * 1000 + s.refreshTokenValidity,
          accessJti: jti,
          accessExpiresAt: (now + expiresIn) * 1000 + s.skew,
        });
      for (let attempt = 0; ; attempt++) {
        try {
          await save();
          break;
        } catch (err) {
          if (!(err instanceof StoreError && err.code === 'STORE_CONFLICT') || attempt >= s.persistenceRetries) throw err;
          value = randomToken();
        }
      }
      res.refresh_token = value;
    }
    if (t.idToken && t.scope.split(' ').includes('openid')) {
      // OpenID Connect Core §2: the ID token's audience is the client; azp when it is the only one.
      res.id_token = await signIdToken(
        key,
        {
          issuer,
          subject: t.subject,
          clientId: client.consumerKey,
          validity: Math.floor(s.idTokenValidity / 1000),
          accessToken,
          ...(t.nonce !== undefined ? { nonce: t.nonce } : {}),
          ...(t.authTime !== undefined ? { authTime: t.authTime } : {}),
        },
        now,
      );
    }
    this.o.logger.log('info', 'token_issued', {
      grant_type: t.grant,
      client_id: client.consumerKey,
      sub: t.subject,
      jti,
      scope: t.scope,
      keytype: client.keyType,
      refresh: res.refresh_token !== undefined,
    });
    return res;
  }

  /**
   * Verifies an access token this server issued (signature by a published key, issuer, expiry, not
   * revoked). The `iss` says whose ring must hold the key (docs/tenants.md, "Signing keys"): the super
   * tenant's for the key manager's issuer, a tenant's for its tenant issuer, whose token must also name an
   * application of that tenant, an active one. A super tenant key's token of a tenant's application (issued
   * before tenants had rings) is valid until it expires.
   */
  async verifyAccessToken(token: string): Promise<AccessTokenClaims | undefined> {
    let payload: JWTPayload;
    let tenant: string | undefined;
    try {
      const iss = decodeJwt(token).iss;
      tenant = iss === undefined ? undefined : issuerTenant(this.o.settings.issuer, iss);
      if (iss === undefined || tenant === undefined) return undefined;
      const keys = tenant === SUPER_TENANT ? this.o.keys.publicJwks() : await this.tenantKeys(token, tenant);
      const r = await jwtVerify(token, createLocalJWKSet({ keys }), {
        issuer: iss,
        typ: 'at+jwt',
        clockTolerance: Math.round(this.o.settings.skew / 1000),
      });
      payload = r.payload;
    } catch {
      return undefined;
    }
    if (issuedInFuture(payload, Date.now(), this.o.settings.skew)) return undefined;
    if (tenant !== SUPER_TENANT && !(await this.ofTenant(payload, tenant))) return undefined;
    if (typeof payload.jti === 'string' && (await this.o.store.isRevoked(payload.jti, Date.now()))) return undefined;
    return payload as AccessTokenClaims;
  }

  /** The key of `tenant`'s ring a token's header names (none when its kid is another tenant's or unknown). */
  private async tenantKeys(token: string, tenant: string): Promise<JWK[]> {
    const kid = decodeProtectedHeader(token).kid;
    const k = typeof kid === 'string' ? await this.o.keys.findTenantKey(kid) : undefined;
    return k !== undefined && k.tenant === tenant ? [k.jwk] : [];
  }

  /** Whether a tenant key's token names a client of that tenant's, and the tenant is active. */
  private async ofTenant(payload: JWTPayload, tenant: string): Promise<boolean> {
    if (this.o.tenants !== undefined && this.o.tenants.state(tenant) !== 'active') return false;
    const client = typeof payload.client_id === 'string' ? await this.o.store.getClient(payload.client_id) : undefined;
    const app = client === undefined ? undefined : await this.o.store.getApplication(client.applicationId);
    return app?.tenant === tenant;
  }

  /**
   * POST /oauth2/revoke (RFC 7009 §2.1). The client authenticates; an access token's jti is kept revoked
   * until its exp and announced as `token.revoked`; a refresh token revokes its family. An unknown or
   * invalid token is still a 200 (§2.2).
   */
  async revoke(authorization: string | undefined, form: Form): Promise<void> {
    const { client } = await this.authenticateClient(authorization, form);
    const token = required(form, 'token');
    const hint = param(form, 'token_type_hint');
    if (hint !== undefined && hint !== 'access_token' && hint !== 'refresh_token') {
      throw new OAuthError('unsupported_token_type', `token_type_hint ${hint} is not a token type this server issues`);
    }
    // The hint only orders the look-ups (§2.1); both kinds are tried.
    const rec = hint === 'access_token' ? undefined : await this.o.store.getRefreshToken(digest(token));
    if (rec !== undefined) {
      if (rec.consumerKey !== client.consumerKey) throw new OAuthError('unauthorized_client', 'the token was not issued to this client');
      const n = await this.revokeFamily(rec.family, client.consumerKey);
      this.o.logger.log('info', 'refresh_token_revoked', { client_id: client.consumerKey, family: rec.family, access_tokens_revoked: n });
      return;
    }
    const claims = await this.verifyAccessToken(token);
    if (claims === undefined || typeof claims.jti !== 'string' || typeof claims.exp !== 'number') return;
    if (claims.client_id !== client.consumerKey) throw new OAuthError('unauthorized_client', 'the token was not issued to this client');
    const now = Date.now();
    const expiresAt = claims.exp * 1000 + this.o.settings.skew;
    await this.o.store.revokeToken(claims.jti, expiresAt, now);
    if (this.o.settings.realtimeRevocation)
      this.o.bus.publish('token.revoked', { jti: claims.jti, expiresAt, consumerKey: client.consumerKey, revokedAt: now });
    this.o.logger.log('info', 'access_token_revoked', { client_id: client.consumerKey, jti: claims.jti });
  }

  /** POST /oauth2/introspect (RFC 7662 §2.2): `{ active: false }` for anything not currently valid. */
  async introspect(form: Form): Promise<Record<string, unknown>> {
    const token = required(form, 'token');
    const hint = param(form, 'token_type_hint');
    if (hint !== 'access_token') {
      const rec = await this.o.store.getRefreshToken(digest(token));
      if (rec !== undefined) {
        const active = !rec.revoked && rec.usedAt === null && rec.expiresAt > Date.now();
        if (!active) return { active: false };
        return {
          active: true,
          token_type: 'refresh_token',
          client_id: rec.consumerKey,
          sub: rec.subject,
          username: rec.subject,
          scope: rec.scope,
          iat: Math.floor(rec.issuedAt / 1000),
          exp: Math.floor(rec.expiresAt / 1000),
          keytype: rec.keyType,
          aut: rec.authorizedUserType,
        };
      }
    }
    const claims = await this.verifyAccessToken(token);
    if (claims === undefined) return { active: false };
    return {
      active: true,
      token_type: 'Bearer',
      scope: claims.scope,
      client_id: claims.client_id,
      username: claims.sub,
      sub: claims.sub,
      aud: claims.aud,
      iss: claims.iss,
      jti: claims.jti,
      iat: claims.iat,
      nbf: claims.nbf,
      exp: claims.exp,
      keytype: claims.keytype,
      aut: claims.aut,
    };
  }
}
