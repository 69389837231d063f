/**
 * What the authentication phase learns about a call, for every phase after it (throttling, mediation,
 * backend JWT, access log, analytics, metrics). One frozen object per validated token; the token cache
 * hands the same object to every call with that token, so later phases must not mutate it.
 *
 * Field names follow the reference's authentication context (spec 002, part 5) so that throttling keys
 * (spec 000, [apim.throttling]) and analytics events (spec 002, part 6) can be written from it directly.
 */
import type { KeyType } from './phases';

/** How the call was authenticated. 'none': the resource needs no authentication (auth = "none"). */
export type AuthKind = 'oauth2' | 'mutual-ssl' | 'none';

/** APPLICATION: a client-credentials token; APPLICATION_USER: a token issued to an end user. */
export type UserType = 'APPLICATION' | 'APPLICATION_USER';

export interface AuthContext {
  readonly kind: AuthKind;
  /** Token id (`jti`), or a digest of an opaque token; '' for auth = "none". */
  readonly tokenId: string;
  /** Issuer (`iss`) of the token. */
  readonly issuer: string;
  /** Consumer key (`client_id` / `azp`) of the application. */
  readonly consumerKey: string;
  readonly applicationId: string;
  readonly applicationName: string;
  /** The application's throttling tier (application level, 900803). */
  readonly applicationTier: string;
  /** Owner of the application (the reference's "subscriber"). */
  readonly subscriber: string;
  /** Subscription tier of this application to the called API (subscription level, 900804). */
  readonly subscriptionTier: string;
  readonly keyType: KeyType;
  readonly userType: UserType;
  /** End user (`sub`) for APPLICATION_USER tokens; the application owner otherwise. */
  readonly endUser: string;
  readonly scopes: readonly string[];
  /** The token's claims after `claim_mapping` (remote -> local names). */
  readonly claims: Readonly<Record<string, unknown>>;
  /** Expiry of the token (ms since the epoch); caches never keep the context beyond it. */
  readonly expiresAt: number;
}
