/**
 * What the key manager keeps (docs/key-manager.md): applications and their OAuth clients, subscriptions,
 * users, refresh tokens, revoked token ids and signing keys. One interface, three implementations over
 * SQL (embedded SQLite for `[database.apim_db] type = "h2"`, PostgreSQL for `postgre`, MySQL/MariaDB for
 * `mysql`; lib/store/open.ts picks one).
 *
 * Secrets never leave the store in clear: client secrets and refresh tokens are kept as SHA-256 digests
 * (both are 256-bit random values, so an unsalted digest is not open to guessing), user passwords as the
 * scrypt with a salt (older `[user_store.properties] PasswordHashMethod` digests until the next sign-in),
 * generated signing keys encrypted when `[throughway.management] signing_key_secret` is set
 * (lib/keymanager/keys.ts).
 */

import type { BlockingType } from '../events/blocking';
import type { KeyType, SubscriptionPayload, SubscriptionState } from '../events/payloads';
import type { SelfServiceStore } from './selfservice-types';
import { ThroughwayError } from '../errors';

// Subscription states and key types are event vocabulary (lib/events/payloads.ts): the store keeps them.
export { SUBSCRIPTION_STATES, type KeyType, type SubscriptionState } from '../events/payloads';

/** `[user_store.properties] PasswordHashMethod` values (spec 001). */
export type PasswordHashMethod = 'SHA' | 'SHA-1' | 'SHA-256' | 'MD5' | 'PLAIN_TEXT';
/** How a stored password is hashed: scrypt for every password set by throughway, or an imported PasswordHashMethod (lib/store/passwords.ts). */
export type StoredHashMethod = PasswordHashMethod | 'SCRYPT';

/**
 * The super tenant: the deployment's own organisation, named as the reference names it. Every row written
 * before tenants existed is its (lib/store/migrations.ts, version 4), and a deployment that never creates a
 * tenant has no other (docs/tenants.md).
 */
export const SUPER_TENANT = 'carbon.super';

/** A tenant (docs/tenants.md): an organisation named by its domain, with its admin and billing package. */
export interface Tenant {
  readonly domain: string;
  /** The tenant admin's user name, qualified (`admin@acme.test`). */
  readonly admin: string;
  /** `[multi_tenancy.billing.package.<key>]` key (demo, smb, custom), or '' for none. */
  readonly package: string;
  readonly active: boolean;
  readonly createdAt: number;
}

/**
 * An application's approval state (docs/workflows.md): APPROVED once its creation workflow approved it
 * (at once with the `simple` executor), ON_HOLD while a task waits, REJECTED when it was refused. The
 * reference's names; rows from before workflows are APPROVED (lib/store/migrations.ts, version 5).
 */
export const APPLICATION_STATUSES = ['APPROVED', 'ON_HOLD', 'REJECTED'] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

export interface Application {
  readonly id: string;
  /** The tenant whose application it is (its owner's). */
  readonly tenant: string;
  readonly name: string;
  readonly owner: string;
  /** Application throttling tier (policy name). */
  readonly tier: string;
  readonly description: string;
  readonly status: ApplicationStatus;
  readonly createdAt: number;
}

/** An OAuth client (consumer key) of an application; an application has at most one per key type. */
export interface OAuthClient {
  readonly consumerKey: string;
  /** SHA-256 of the consumer secret, hex. */
  readonly secretHash: string;
  readonly applicationId: string;
  readonly keyType: KeyType;
  readonly grantTypes: readonly string[];
  readonly callbackUrl: string;
  readonly createdAt: number;
}

/** A stored subscription: what the bus carries of it (events/payloads.ts), and when it was made. */
export interface Subscription extends SubscriptionPayload {
  readonly createdAt: number;
}

export interface User {
  readonly username: string;
  /** The tenant of the user: a tenant user's name ends with `@<domain>` (docs/tenants.md). */
  readonly tenant: string;
  readonly passwordHash: string;
  readonly salt: string;
  readonly hashMethod: StoredHashMethod;
  readonly roles: readonly string[];
  readonly createdAt: number;
}

/** A refresh token as stored: only its digest; `family` ties every rotation of one grant together. */
export interface RefreshTokenRecord {
  readonly tokenHash: string;
  readonly family: string;
  readonly consumerKey: string;
  readonly subject: string;
  readonly scope: string;
  /** `aut` claim of the access tokens it refreshes: APPLICATION or APPLICATION_USER. */
  readonly authorizedUserType: string;
  readonly keyType: KeyType;
  readonly issuedAt: number;
  readonly expiresAt: number;
  /** When it was exchanged (rotated); a second use is a replay (RFC 6749 §10.4, OAuth 2.0 Security BCP §4.14). */
  readonly usedAt: number | null;
  readonly revoked: boolean;
  /** The access token issued together with this refresh token (revoked with the family on reuse). */
  readonly accessJti: string | null;
  readonly accessExpiresAt: number | null;
}

export interface RevokedToken {
  readonly jti: string;
  /** Kept until the token would have expired anyway ([apim.token.revocation] persistent notifier). */
  readonly expiresAt: number;
  readonly revokedAt: number;
}

/** A signing key pair of the key manager, as JWKs (RFC 7517). The newest active key of a tenant signs its tokens. */
export interface SigningKey {
  readonly kid: string;
  /** Whose key it is (docs/tenants.md, "Signing keys"); keys from before tenants had their own are the super tenant's. */
  readonly tenant: string;
  readonly alg: string;
  readonly privateJwk: string;
  readonly publicJwk: string;
  readonly createdAt: number;
  /** Set when rotated out: the key no longer signs but stays published until its tokens expire. */
  readonly retiredAt: number | null;
}

/** A signing key to add: its tenant the super tenant's unless given. */
export type NewSigningKey = Omit<SigningKey, 'retiredAt' | 'tenant'> & { readonly tenant?: string };

/** A blocking condition as stored (lib/events/blocking.ts gives the types and values). */
export interface BlockingConditionRecord {
  readonly id: string;
  /** The tenant whose condition it is (docs/tenants.md, "Blocking conditions"); rows from before tenants are the super tenant's. */
  readonly tenant: string;
  readonly type: BlockingType;
  readonly value: string;
  readonly invert: boolean;
  readonly createdAt: number;
}

/**
 * A workflow task as stored (lib/workflows owns the types and rules, docs/workflows.md): what waits for a
 * decision, who asked and when, the entity it is about, and the state of its delivery to an external engine.
 */
export interface WorkflowTaskRecord {
  readonly id: string;
  /** The reference's workflow type name (AM_SUBSCRIPTION_CREATION, ...). */
  readonly type: string;
  readonly tenant: string;
  readonly requester: string;
  /** The id of what the task is about: an application, a subscription, an API file, a user name. */
  readonly entity: string;
  readonly description: string;
  /** What the decision applies (the requested tier, the pending client's key), as strings. */
  readonly attributes: Readonly<Record<string, string>>;
  /** `approval` or `external`. */
  readonly executor: string;
  readonly createdAt: number;
  /** External executor: when the engine took the request (null: not yet), attempts so far, the last error. */
  readonly deliveredAt: number | null;
  readonly attempts: number;
  readonly lastError: string;
  readonly nextAttemptAt: number | null;
  readonly decision: WorkflowDecisionRecord | null;
}

/** The one decision of a task (a second one is refused by the store's primary key). */
export interface WorkflowDecisionRecord {
  readonly status: 'APPROVED' | 'REJECTED';
  readonly by: string;
  readonly at: number;
  readonly comment: string;
}

export interface Store {
  /** `sqlite`, `postgres` or `mysql`. */
  readonly kind: string;
  /** Where it is, for start-up lines (never credentials). */
  readonly description: string;
  /** Schema version after migrations. */
  schemaVersion(): Promise<number>;
  /** Connections in use and the pool's maximum, for pooled databases (the data source health checker). */
  poolUsage?(): { readonly active: number; readonly max: number } | undefined;

  /** Tenants other than the super tenant, by domain (docs/tenants.md). */
  addTenant(t: Omit<Tenant, 'createdAt'>): Promise<Tenant>;
  getTenant(domain: string): Promise<Tenant | undefined>;
  listTenants(): Promise<Tenant[]>;
  /** Activates or deactivates a tenant; the tenant after the change, undefined for an unknown domain. */
  setTenantActive(domain: string, active: boolean): Promise<Tenant | undefined>;
  /** Changes a tenant's billing package; the tenant after the change, undefined for an unknown domain. */
  setTenantPackage(domain: string, pkg: string): Promise<Tenant | undefined>;
  /**
   * Adds each tenant's bytes to its count of `month` ('YYYY-MM', UTC) kept for every gateway of the store
   * (docs/tenants.md, "Billing packages"); two processes adding at once both count.
   */
  addTenantBandwidth(month: string, bytes: ReadonlyMap<string, number>, at: number): Promise<void>;
  /** Every tenant's bytes of `month` ('YYYY-MM'). */
  listTenantBandwidth(month: string): Promise<Map<string, number>>;

  /** `tenant` defaults to the super tenant. */
  /** `status` defaults to APPROVED. */
  createApplication(
    app: Omit<Application, 'id' | 'createdAt' | 'tenant' | 'status'> & { tenant?: string; status?: ApplicationStatus },
  ): Promise<Application>;
  getApplication(id: string): Promise<Application | undefined>;
  findApplication(name: string, owner?: string): Promise<Application | undefined>;
  /** All applications, or one owner's; `tenant`: only that tenant's. */
  listApplications(owner?: string, tenant?: string): Promise<Application[]>;
  updateApplication(
    id: string,
    change: Partial<Pick<Application, 'tier' | 'description' | 'owner' | 'status'>>,
  ): Promise<Application | undefined>;
  /** Deletes the application with its clients and subscriptions. */
  deleteApplication(id: string): Promise<boolean>;

  createClient(client: Omit<OAuthClient, 'createdAt'>): Promise<OAuthClient>;
  getClient(consumerKey: string): Promise<OAuthClient | undefined>;
  listClients(applicationId: string): Promise<OAuthClient[]>;
  deleteClient(consumerKey: string): Promise<boolean>;

  addSubscription(sub: Omit<Subscription, 'id' | 'createdAt'>): Promise<Subscription>;
  getSubscription(id: string): Promise<Subscription | undefined>;
  findSubscription(applicationId: string, apiContext: string, apiVersion: string): Promise<Subscription | undefined>;
  listSubscriptions(filter?: { applicationId?: string; apiContext?: string }): Promise<Subscription[]>;
  setSubscriptionState(id: string, state: SubscriptionState): Promise<Subscription | undefined>;
  setSubscriptionTier(id: string, tier: string): Promise<Subscription | undefined>;
  deleteSubscription(id: string): Promise<boolean>;

  /** `tenant` defaults to the super tenant. */
  addUser(user: Omit<User, 'createdAt' | 'tenant'> & { tenant?: string }): Promise<User>;
  getUser(username: string): Promise<User | undefined>;
  /**
   * The users whose name is `username` but for letter case (a sign-in with
   * `[apim.devportal] login_username_case_insensitive`, lib/store/passwords.ts): compared by the database's
   * LOWER(), which SQLite applies to ASCII letters only, then by JavaScript's lower case.
   */
  getUsersIgnoringCase(username: string): Promise<User[]>;
  /** All users, or one tenant's. */
  listUsers(tenant?: string): Promise<User[]>;
  deleteUser(username: string): Promise<boolean>;
  /** Replaces a user's roles; false when there is no such user. */
  setUserRoles(username: string, roles: readonly string[]): Promise<boolean>;
  /** Replaces a user's stored password (an upgrade to scrypt after a sign-in); false for an unknown user. */
  setUserPassword(username: string, hash: { passwordHash: string; salt: string; hashMethod: StoredHashMethod }): Promise<boolean>;

  saveRefreshToken(
    token: Omit<RefreshTokenRecord, 'usedAt' | 'revoked' | 'accessJti' | 'accessExpiresAt'> & {
      accessJti?: string;
      accessExpiresAt?: number;
    },
  ): Promise<void>;
  getRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
  /** Marks a refresh token used; true only for the one caller that did it (rotation is atomic). */
  markRefreshTokenUsed(tokenHash: string, at: number): Promise<boolean>;
  /** Revokes every refresh token of a family (reuse detection, revocation); returns how many. */
  revokeRefreshFamily(family: string): Promise<number>;
  /** Every refresh token of a family (to find the access tokens issued with them). */
  listRefreshFamily(family: string): Promise<RefreshTokenRecord[]>;
  /** The refresh tokens issued for a subject that are not revoked (a user deleted revokes them). */
  listRefreshTokensOf(subject: string): Promise<RefreshTokenRecord[]>;

  revokeToken(jti: string, expiresAt: number, at: number): Promise<void>;
  isRevoked(jti: string, now: number): Promise<boolean>;
  listRevoked(now: number): Promise<RevokedToken[]>;

  /** Adds a key of `tenant` (the super tenant's when not given). */
  addSigningKey(key: NewSigningKey): Promise<void>;
  /** One tenant's keys, or every tenant's when `tenant` is not given; newest first. */
  listSigningKeys(tenant?: string): Promise<SigningKey[]>;
  retireSigningKey(kid: string, at: number): Promise<void>;
  deleteSigningKey(kid: string): Promise<void>;
  /** Replaces a key's stored private JWK (encrypting it at rest, lib/keymanager/keys.ts). */
  setSigningKeyPrivate(kid: string, privateJwk: string): Promise<void>;

  /**
   * Blocking conditions (throttling, 900805), oldest first: one tenant's, or every tenant's when `tenant`
   * is not given. A condition is unique within its tenant (STORE_CONFLICT for the same one twice).
   */
  addBlockingCondition(c: Omit<BlockingConditionRecord, 'id' | 'createdAt'>): Promise<BlockingConditionRecord>;
  listBlockingConditions(tenant?: string): Promise<BlockingConditionRecord[]>;
  /** Removes a condition of `tenant` (any tenant's when not given); undefined when there is none. */
  deleteBlockingCondition(id: string, tenant?: string): Promise<BlockingConditionRecord | undefined>;

  /** The developer portal's self-service: mail outbox, profiles, account links, posts, ratings (lib/store/selfservice.ts). */
  readonly selfService: SelfServiceStore;
  /** Workflow tasks and their decisions (docs/workflows.md). */
  addWorkflowTask(
    t: Omit<WorkflowTaskRecord, 'createdAt' | 'deliveredAt' | 'attempts' | 'lastError' | 'nextAttemptAt' | 'decision'>,
  ): Promise<WorkflowTaskRecord>;
  getWorkflowTask(id: string): Promise<WorkflowTaskRecord | undefined>;
  /** Newest first; `pending`: true only undecided tasks, false only decided ones. */
  listWorkflowTasks(filter?: { tenant?: string; type?: string; entity?: string; pending?: boolean }): Promise<WorkflowTaskRecord[]>;
  /** Records a task's delivery to an external engine (an attempt, its error, the next attempt, or done). */
  setWorkflowDelivery(
    id: string,
    d: { attempts: number; lastError: string; nextAttemptAt: number | null; deliveredAt: number | null },
  ): Promise<void>;
  /** The decision of a task; false when it already has one (STORE_CONFLICT settles a race of two). */
  decideWorkflowTask(id: string, d: WorkflowDecisionRecord): Promise<boolean>;
  /** The executor a tenant chose for a workflow type; undefined: none chosen (simple). */
  listWorkflowExecutors(tenant: string): Promise<{ type: string; executor: string }[]>;
  setWorkflowExecutor(tenant: string, type: string, executor: string): Promise<void>;

  /** Deletes expired refresh tokens and revocations, and retired keys older than `keysBefore` (`[oauth.token_cleanup]`). */
  cleanup(now: number, keysBefore: number): Promise<{ refreshTokens: number; revoked: number; keys: number }>;
  close(): Promise<void>;
}

/** Error codes of the store (one class, stable codes, as undici's errors). */
export type StoreErrorCode =
  | 'STORE_UNSUPPORTED'
  | 'STORE_CONNECT'
  | 'STORE_CONNECTION_LOST'
  | 'STORE_CONFLICT'
  | 'STORE_NOT_FOUND'
  | 'STORE_POOL_TIMEOUT'
  | 'STORE_MIGRATION'
  /** [database.shared_db] holds users, tenants or profiles of the same names as apim_db's, with other values (lib/store/split.ts). */
  | 'STORE_USERS_SPLIT';

/**
 * The codes that say the database cannot be used now (unreachable, its connection broken during a
 * statement, no free connection in time): the key manager answers them 503 with the code
 * (docs/operations.md, "Start-up errors"), and the same call may succeed once the database is back.
 */
export const STORE_UNAVAILABLE_CODES: ReadonlySet<StoreErrorCode> = new Set([
  'STORE_CONNECT',
  'STORE_CONNECTION_LOST',
  'STORE_POOL_TIMEOUT',
]);

export class StoreError extends ThroughwayError {
  readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
  }
}
