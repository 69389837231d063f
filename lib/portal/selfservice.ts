/**
 * The developer portal's self-service (docs/self-service.md): what the sign-up, account links,
 * application sharing, comments, ratings, forum, SDK and notification pages share. It exists on a node
 * whose consoles use the key manager of their own process (a `default` node, or a console node over the
 * key manager's database); a console node with a remote key manager serves none of it.
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';
import type { KeyManager } from '../keymanager';
import { OAuthError } from '../keymanager/errors';
import { checkNewUser } from '../keymanager/manage';
import { signUpEffect } from '../keymanager/signup-effect';
import type { Logger } from '../log';
import type { Mailer } from '../mail/outbox';
import { SDK_DEFAULTS, type SdkSettings } from '../sdk';
import { newPasswordHash } from '../store/passwords';
import type { SelfServiceStore } from '../store/selfservice';
import type { Store } from '../store/types';
import type { Tenants } from '../tenants';
import type { Workflows } from '../workflows';

/** The reference's organisation claim, `[apim.devportal] application_sharing_claim`'s default (spec 000). */
export const ORGANIZATION_CLAIM = 'http://wso2.org/claims/organization';

export interface SelfServiceSettings {
  /** `[throughway.portal] self_sign_up`, on a node whose user store is the key manager's store. */
  readonly signUp: boolean;
  /** `[multi_tenancy.platform] email_validation_mandatory_for_login`. */
  readonly emailValidation: boolean;
  /** `[throughway.portal] confirmation_link_validity`, `recovery_link_validity` (ms). */
  readonly confirmValidity: number;
  readonly recoverValidity: number;
  /** The developer portal's public base (`[apim.devportal] url`, else the consoles' origin + /devportal): links in mail. */
  readonly portalUrl: string;
  /** `[apim.devportal] enable_application_sharing`, `application_sharing_type` (saml shares as default: no SAML response is read), `application_sharing_claim`. */
  readonly sharing: { readonly enabled: boolean; readonly type: 'default' | 'saml'; readonly claim: string };
  /** `[apim.devportal] enable_comments`, `enable_ratings`, `enable_forum`. */
  readonly comments: boolean;
  readonly ratings: boolean;
  readonly forum: boolean;
  /** `[apim.sdk]`. */
  readonly sdk: SdkSettings;
}

/** The default of `[apim.devportal] url` (spec 000): not a URL a deployment serves, so links take the consoles' origin. */
const DEFAULT_PORTAL_URL = 'https://localhost:9443/devportal';

export function selfServiceSettings(config: DeploymentConfig, consolesOrigin: string, database: boolean): SelfServiceSettings {
  const dp = config.apim.devportal;
  const sdk = config.apim.sdk;
  const p = config.throughway.portal;
  return {
    signUp: p.self_sign_up && database,
    emailValidation: config.multi_tenancy.platform.email_validation_mandatory_for_login,
    confirmValidity: p.confirmation_link_validity,
    recoverValidity: p.recovery_link_validity,
    portalUrl: (dp.url === DEFAULT_PORTAL_URL ? `${consolesOrigin}/devportal` : dp.url).replace(/\/+$/, ''),
    sharing: {
      enabled: dp.enable_application_sharing,
      type: dp.application_sharing_type ?? 'default',
      claim: dp.application_sharing_claim ?? ORGANIZATION_CLAIM,
    },
    comments: dp.enable_comments,
    ratings: dp.enable_ratings,
    forum: dp.enable_forum,
    sdk: {
      groupId: sdk.group_id ?? SDK_DEFAULTS.groupId,
      artifactId: sdk.artifact_id ?? SDK_DEFAULTS.artifactId,
      modelPackage: sdk.model_package ?? SDK_DEFAULTS.modelPackage,
      apiPackage: sdk.api_package ?? SDK_DEFAULTS.apiPackage,
      languages: sdk.supported_languages,
    },
  };
}

/** Requests of one kind from one client address within a window (sign-up and recovery forms): bounded, in memory. */
export class AddressLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request; false when the address has had `max` within the window. */
  take(address: string): boolean {
    const now = this.now();
    const recent = (this.hits.get(address) ?? []).filter((t) => t > now - this.windowMs);
    if (recent.length >= this.max) {
      this.hits.set(address, recent);
      return false;
    }
    recent.push(now);
    this.hits.delete(address);
    this.hits.set(address, recent);
    // At most 10,000 addresses remembered: the oldest goes first.
    while (this.hits.size > 10_000) this.hits.delete(this.hits.keys().next().value as string);
    return true;
  }
}

export interface SelfService {
  readonly settings: SelfServiceSettings;
  readonly store: SelfServiceStore;
  readonly mailer: Mailer;
  readonly tenants: Tenants;
  /** The key manager's workflow engine: every sign-up starts an AM_USER_SIGNUP workflow (docs/workflows.md). */
  readonly workflows: Workflows;
  /** Sign-up and recovery requests: 20 an hour per client address (an IPv6 client by its /64). */
  readonly limiter: AddressLimiter;
  /** Adds a user to the key manager's store under `[user_store.properties]` UsernameJavaRegEx and PasswordJavaRegEx (OAuthError otherwise). */
  addUser(username: string, password: string): Promise<string>;
  /** Checks a new password against PasswordJavaRegEx (OAuthError otherwise). */
  checkPassword(username: string, password: string): void;
  /** Checks a new user's name and password against the rules (OAuthError otherwise) and that the name is free (OAuthError conflict). */
  checkNewUser(username: string, password: string): Promise<void>;
  /** Replaces a user's password (scrypt); false for an unknown user. */
  setPassword(username: string, password: string): Promise<boolean>;
  /** Roles of a user of the key manager's store. */
  roles(username: string): Promise<readonly string[]>;
}

/**
 * The self-service of a node whose consoles use this process's key manager. It registers the effect of
 * sign-up decisions on the key manager's workflows (lib/keymanager/signup-effect.ts), mailing through
 * this node's outbox.
 */
export function localSelfService(o: {
  km: KeyManager;
  store: Store;
  mailer: Mailer;
  settings: SelfServiceSettings;
  rules: { username: RegExp; password: RegExp };
  logger: Logger;
}): SelfService {
  o.km.workflows.register(
    'AM_USER_SIGNUP',
    signUpEffect({ store: o.store, logger: o.logger, mail: (m) => o.mailer.send(m), portalUrl: o.settings.portalUrl }),
  );
  return {
    settings: o.settings,
    store: o.store.selfService,
    mailer: o.mailer,
    tenants: o.km.tenants,
    workflows: o.km.workflows,
    limiter: new AddressLimiter(20, 60 * 60_000),
    async addUser(username, password) {
      // The reference's self sign-up gives the subscriber role (Internal/subscriber).
      return (await o.km.manager.addUser({ username, password, roles: ['subscriber'] }, o.rules)).username;
    },
    checkPassword(username, password) {
      checkNewUser({ username, password }, { username: /[\s\S]*/, password: o.rules.password });
    },
    async checkNewUser(username, password) {
      checkNewUser({ username, password }, o.rules);
      if ((await o.store.getUser(username)) !== undefined) throw new OAuthError('conflict', `user ${username} already exists`);
    },
    async setPassword(username, password) {
      return o.store.setUserPassword(username, await newPasswordHash(password));
    },
    roles: async (username) => (await o.store.getUser(username))?.roles ?? [],
  };
}
