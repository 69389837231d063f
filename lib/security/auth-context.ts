/**
 * Who a call is, as security establishes it: one family of types owned here, read by the gateway's later
 * phases (throttling, mediation, backend JWT, access log, analytics, metrics).
 *
 * - TokenFacts: what any validated credential says about the caller.
 * - TokenIdentity: what a bearer token proves on its own (cached per token: token-cache.ts).
 * - AuthContext: what a call is admitted as on one API: the token's facts plus its application and
 *   subscription (per token and API, since the subscription tier depends on the API).
 *
 * Every object is frozen; the token cache hands the same one to every call with that token, so no phase
 * may mutate it. Field names follow the reference's authentication context (spec 002, part 5) so that
 * throttling keys (spec 000, [apim.throttling]) and analytics events (spec 002, part 6) can be written from
 * it directly.
 */
import type { KeyType } from '../store/types';

export type { KeyType };

/** How the call was authenticated. 'none': the resource needs no authentication (auth = "none"). */
export type AuthKind = 'oauth2' | 'mutual-ssl' | 'none';

/** APPLICATION: a client-credentials token; APPLICATION_USER: a token issued to an end user. */
export type UserType = 'APPLICATION' | 'APPLICATION_USER';

/** What a validated credential says about its caller, whatever API it is presented to. */
export interface TokenFacts {
  /** Token id (`jti`), or a digest of an opaque token; '' for auth = "none" and JWTs without `jti`. */
  readonly tokenId: string;
  /** Issuer (`iss`) of the token. */
  readonly issuer: string;
  /** Consumer key (`client_id` / `azp`) of the application. */
  readonly consumerKey: string;
  readonly keyType: KeyType;
  readonly userType: UserType;
  /** End user (`sub`) for APPLICATION_USER tokens; the application owner otherwise. */
  readonly endUser: string;
  readonly scopes: readonly string[];
  /** The token's claims after `claim_mapping` (remote -> local names). */
  readonly claims: Readonly<Record<string, unknown>>;
  /** Expiry of the token (ms since the epoch); caches never keep it beyond. */
  readonly expiresAt: number;
  /**
   * The end user's claims from the key manager's user store (local names, e.g. `role`), read when a token
   * is validated and [apim.jwt] enable_user_claims (or enable_claim_retrieval) asks for them: they go into
   * the backend JWT under claim_dialect. Cached with the token.
   */
  readonly userClaims?: Readonly<Record<string, string>>;
}

/** What a valid token proves (cached per token; the same object serves every call with it). */
export interface TokenIdentity extends TokenFacts {
  /** Issued by the built-in key manager (always checked against subscriptions). */
  readonly builtIn: boolean;
  /** Check against subscriptions ([[apim.jwt.issuer]] subscription_validation for other issuers). */
  readonly subscriptionValidation: boolean;
  /**
   * The tenant whose signing key signed a built-in key manager's token, when it is not the super tenant's
   * (docs/tenants.md, "Signing keys"): the token's application must be that tenant's.
   */
  readonly keyTenant?: string;
  /** `application` claim of the built-in key manager's tokens. */
  readonly application: { readonly id: string; readonly name: string; readonly owner: string; readonly tier: string } | undefined;
}

/** What the authentication phase learns about a call, for every phase after it. */
export interface AuthContext extends TokenFacts {
  readonly kind: AuthKind;
  readonly applicationId: string;
  readonly applicationName: string;
  /** The application's throttling tier (application level, 900803). */
  readonly applicationTier: string;
  /** Owner of the application (the reference's "subscriber"). */
  readonly subscriber: string;
  /** Subscription tier of this application to the called API (subscription level, 900804). */
  readonly subscriptionTier: string;
}
