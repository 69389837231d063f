/**
 * The plain data events carry about applications and subscriptions (docs/events.md): the key manager
 * publishes them, the gateway and the store keep them; subscription states and key types belong here so
 * that neither needs the other.
 */

/**
 * Subscription states (spec 002, part 3, "Subscription conditions that affect invocation"); REJECTED is
 * where a refused subscription workflow leaves it, refused at the gateway as ON_HOLD is (900909,
 * docs/workflows.md).
 */
export const SUBSCRIPTION_STATES = ['UNBLOCKED', 'BLOCKED', 'PROD_ONLY_BLOCKED', 'ON_HOLD', 'REJECTED'] as const;
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];

/** Key types of an application's OAuth client: production or sandbox keys (the `keytype` token claim). */
export type KeyType = 'PRODUCTION' | 'SANDBOX';

export interface ApplicationPayload {
  readonly id: string;
  readonly name: string;
  readonly owner: string;
  /** Application throttling tier. */
  readonly tier: string;
  /** The application's OAuth clients: the `client_id` / `azp` a token carries maps to the application. */
  readonly keys: readonly { readonly consumerKey: string; readonly keyType: KeyType }[];
  /** The application's tenant (docs/tenants.md); absent for the super tenant's, as before tenants existed. */
  readonly tenant?: string;
}

export interface SubscriptionPayload {
  readonly id: string;
  readonly applicationId: string;
  readonly apiContext: string;
  readonly apiVersion: string;
  readonly tier: string;
  readonly state: SubscriptionState;
}
