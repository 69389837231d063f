/**
 * Management operations on applications, keys, subscriptions and users: one implementation behind the
 * admin API (lib/keymanager/admin.ts), dynamic client registration and the CLI's local mode. Every
 * change a gateway must know is published on the event bus (docs/events.md).
 *
 * Secrets: a consumer secret is returned once, by the call that creates it, and only its digest is kept.
 */
import { randomBytes } from 'node:crypto';
import type { ApplicationPayload, EventBus, SubscriptionPayload } from '../events/bus';
import { digest, newPasswordHash, randomToken } from '../store/passwords';
import {
  SUBSCRIPTION_STATES,
  StoreError,
  type Application,
  type BlockingConditionRecord,
  type KeyType,
  type OAuthClient,
  type StoredHashMethod,
  type Store,
  type Subscription,
  type SubscriptionState,
} from '../store/types';
import { findIdentity, type UserStore } from '../store/users';
import { OAuthError } from './errors';
import { checkBlockingCondition, type BlockingCondition } from '../events/blocking';
import { DEFAULT_CLIENT_GRANTS, isGrantType } from './settings';
import { SUPER_TENANT, TenantError, tenantDomainOf, type Tenants } from '../tenants';
import { type WorkflowStart, type WorkflowType, type Workflows } from '../workflows';
import type { WorkflowTaskRecord } from '../store/types';

export interface ApplicationView extends Application {
  readonly keys: readonly {
    readonly consumerKey: string;
    readonly keyType: KeyType;
    readonly grantTypes: readonly string[];
    readonly callbackUrl: string;
  }[];
  /** The call's workflow, when it started one (docs/workflows.md): pending, with its task. */
  readonly workflow?: WorkflowStart;
}

export interface GeneratedKeys {
  readonly application: string;
  readonly applicationId: string;
  readonly keyType: KeyType;
  readonly consumerKey: string;
  /** Shown once. */
  readonly consumerSecret: string;
  readonly grantTypes: readonly string[];
  readonly callbackUrl: string;
  /** The consumer key these keys replace, when the application had keys of this type. */
  readonly replaced: string | null;
  /** Pending registration (docs/workflows.md): the key and secret work once the task is approved. */
  readonly workflow?: WorkflowStart;
}

export interface SubscriptionView extends Subscription {
  readonly application: string;
  /** The call's workflow when it waits (docs/workflows.md): a tier change or removal not yet made. */
  readonly workflow?: WorkflowStart;
}

export interface UserView {
  readonly username: string;
  readonly tenant: string;
  readonly roles: readonly string[];
  readonly hashMethod: StoredHashMethod;
  readonly createdAt: number;
}

/** Longest name or description: the columns are 255 characters on PostgreSQL and MariaDB (lib/store/migrations.ts). */
export const MAX_TEXT = 255;

/** C0 controls, DEL, C1 controls, and U+2028/U+2029 (line breaks to a terminal or a log reader). */
export const CONTROL_CHARS = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029';
const CONTROL = new RegExp(`[${CONTROL_CHARS}]`, 'u');

/**
 * A name or description as stored: at most `max` characters (code points) and no control character
 * (CR, LF, NUL, the C0 and C1 sets), so it cannot forge a line of `apps list` or of a log. A 400
 * invalid_request naming the field otherwise.
 */
/** Bidirectional formatting characters (UAX #9): LRM, RLM, ALM, embeddings and overrides, isolates. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/**
 * A name shown to other people (an application's, a client's): checkText's rules, and no bidirectional
 * formatting character, which could make "gpj.exe" read as "exe.jpg" or hide part of a name
 * (invalid_request naming the character and its position).
 */
export function checkName(field: string, value: string, max = MAX_TEXT): void {
  checkText(field, value, max);
  const m = BIDI.exec(value);
  if (m !== null)
    throw new OAuthError(
      'invalid_request',
      `${field} contains the bidirectional formatting character U+${(m[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} at position ${m.index}`,
    );
}

export function checkText(field: string, value: string, max = MAX_TEXT): void {
  let n = 0;
  for (const _ of value) if (++n > max) throw new OAuthError('invalid_request', `${field} is longer than ${max} characters`);
  const m = CONTROL.exec(value);
  if (m !== null)
    throw new OAuthError(
      'invalid_request',
      `${field} contains the control character U+${(m[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} at position ${m.index}`,
    );
}

/** A consumer key: 28 characters of [A-Za-z0-9_], like the reference's. */
function newConsumerKey(): string {
  return randomBytes(21).toString('base64url').replace(/-/g, '_');
}

/** A caller-given consumer key that is in use: the answer names neither the tenant nor the application holding it. */
function keyTaken(): OAuthError {
  return new OAuthError('conflict', 'this consumer key cannot be used: choose another one (or leave consumerKey out to have one made)');
}

function conflict(err: unknown, what: string): never {
  if (err instanceof StoreError && err.code === 'STORE_CONFLICT') throw new OAuthError('conflict', `${what} already exists`);
  throw err;
}

/** The tenant of an API by its context: `/t/<domain>/...` is that tenant's (docs/tenants.md), any other the super tenant's. */
export function tenantOfContext(context: string): string {
  return tenantDomainOf(context) ?? SUPER_TENANT;
}

/** A tenant rule broken by an admin call, as the admin API answers it (docs/tenants.md, "Errors"). */
export function tenantRefusal(err: unknown): never {
  if (!(err instanceof TenantError)) throw err;
  const error =
    err.code === 'TENANT_EXISTS'
      ? 'conflict'
      : err.code === 'TENANT_NOT_FOUND'
        ? 'not_found'
        : err.code === 'TENANT_LIMIT_REACHED'
          ? 'access_denied'
          : 'invalid_request';
  throw new OAuthError(error, `${err.code}: ${err.message}`);
}

export class Manager {
  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    /** Where users sign in ([user_store] type); the store's own users when not given. */
    private readonly users?: UserStore,
    /** The tenants (lib/tenants): whose a user name or an application is. Absent: everything is the super tenant's. */
    readonly tenants?: Tenants,
    /**
     * Undefined: every tenant's rows (the snapshot, the CLI's local mode, the consoles). A domain: only that
     * tenant's applications, subscriptions and users are found, listed and changed (an admin API caller's).
     */
    readonly scope?: string,
    /** Approval workflows (lib/workflows, docs/workflows.md); absent: every action at once, as the `simple` executor. */
    readonly workflows?: Workflows,
  ) {}

  /** The same operations, restricted to one tenant's rows (docs/tenants.md, "Admins"). */
  forTenant(tenant: string): Manager {
    return new Manager(this.store, this.bus, this.users, this.tenants, tenant, this.workflows);
  }

  /** The executor of a workflow type for a tenant: `simple` without workflows. */
  private executor(tenant: string, type: WorkflowType): Promise<'simple' | 'approval' | 'external'> {
    return this.workflows === undefined ? Promise.resolve('simple') : this.workflows.executorOf(tenant, type);
  }

  /** Starts a task for an executor already looked up (not `simple`); approved at once without workflows. */
  private async pending(
    executor: 'approval' | 'external',
    r: { type: WorkflowType; tenant: string; requester: string; entity: string; description: string; attributes?: Record<string, string> },
  ): Promise<WorkflowStart> {
    if (this.workflows === undefined) return { status: 'approved' };
    return this.workflows.start({ ...r, executor });
  }

  /**
   * What the decisions of the key manager's workflow types do (docs/workflows.md, "What a decision
   * does"): registered once on the engine by createKeyManager.
   */
  registerWorkflowEffects(w: Workflows): void {
    const appStatus =
      (status: 'APPROVED' | 'REJECTED') =>
      async (t: WorkflowTaskRecord): Promise<void> => {
        const after = await this.store.updateApplication(t.entity, { status });
        if (after !== undefined) this.bus.publish('application.changed', { application: this.payload(await this.view(after)) });
      };
    w.register('AM_APPLICATION_CREATION', { approved: appStatus('APPROVED'), rejected: appStatus('REJECTED') });
    const registration = { approved: (t: WorkflowTaskRecord) => this.createPendingClient(t), rejected: async () => undefined };
    w.register('AM_APPLICATION_REGISTRATION_PRODUCTION', registration);
    w.register('AM_APPLICATION_REGISTRATION_SANDBOX', registration);
    const subState =
      (approved: boolean) =>
      async (t: WorkflowTaskRecord): Promise<void> => {
        const wanted = t.attributes.state;
        const state: SubscriptionState = !approved
          ? 'REJECTED'
          : wanted !== undefined && (SUBSCRIPTION_STATES as readonly string[]).includes(wanted)
            ? (wanted as SubscriptionState)
            : 'UNBLOCKED';
        await this.setSubscriptionState({ id: t.entity }, state);
      };
    w.register('AM_SUBSCRIPTION_CREATION', { approved: subState(true), rejected: subState(false) });
    w.register('AM_SUBSCRIPTION_UPDATE', {
      approved: async (t) => void (await this.applyTier(t.entity, t.attributes.tier ?? '')),
      rejected: async () => undefined,
    });
    w.register('AM_SUBSCRIPTION_DELETION', {
      approved: async (t) => {
        const sub = await this.store.getSubscription(t.entity);
        if (sub === undefined) return;
        await this.store.deleteSubscription(sub.id);
        this.bus.publish('subscription.removed', { subscription: subscriptionPayload(sub) });
      },
      rejected: async () => undefined,
    });
  }

  /** An approved registration: the client whose key and secret digest the request made (the secret was shown then). */
  private async createPendingClient(t: WorkflowTaskRecord): Promise<void> {
    const a = t.attributes;
    const app = await this.store.getApplication(t.entity);
    if (app === undefined || a.consumerKey === undefined || a.secretHash === undefined)
      throw new StoreError('STORE_NOT_FOUND', `application ${t.entity} or its pending key is gone`);
    const keyType: KeyType = a.keyType === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
    for (const c of await this.store.listClients(app.id)) if (c.keyType === keyType) await this.store.deleteClient(c.consumerKey);
    await this.store.createClient({
      consumerKey: a.consumerKey,
      secretHash: a.secretHash,
      applicationId: app.id,
      keyType,
      grantTypes: (a.grantTypes ?? '').split(' ').filter((g) => g !== ''),
      callbackUrl: a.callbackUrl ?? '',
    });
    this.bus.publish('application.changed', { application: this.payload(await this.view(app)) });
  }

  private async applyTier(id: string, tier: string): Promise<Subscription> {
    const before = await this.store.getSubscription(id);
    if (before === undefined) throw new OAuthError('not_found', `no subscription ${id}`);
    const after = await this.store.setSubscriptionTier(id, tier);
    if (after === undefined) throw new OAuthError('not_found', `no subscription ${id}`);
    if (before.tier !== tier)
      this.bus.publish('subscription.changed', { subscription: subscriptionPayload(after), previousState: before.state });
    return after;
  }

  /** The tenant of a user name: its own tenant's for a scoped manager (qualified into it), else by its suffix. */
  private ownerIn(owner: string): { owner: string; tenant: string } {
    if (this.scope === undefined) return { owner, tenant: this.tenants?.tenantOf(owner) ?? SUPER_TENANT };
    if (this.tenants === undefined || this.scope === SUPER_TENANT) return { owner, tenant: SUPER_TENANT };
    try {
      return { owner: this.tenants.qualify(owner, this.scope), tenant: this.scope };
    } catch (err) {
      return tenantRefusal(err);
    }
  }

  private async view(app: Application): Promise<ApplicationView> {
    const clients = await this.store.listClients(app.id);
    return {
      ...app,
      keys: clients.map((c) => ({ consumerKey: c.consumerKey, keyType: c.keyType, grantTypes: c.grantTypes, callbackUrl: c.callbackUrl })),
    };
  }

  private payload(v: ApplicationView): ApplicationPayload {
    const p = {
      id: v.id,
      name: v.name,
      owner: v.owner,
      tier: v.tier,
      keys: v.keys.map((k) => ({ consumerKey: k.consumerKey, keyType: k.keyType })),
    };
    // The super tenant's payloads are as they were before tenants (docs/events.md).
    return v.tenant === SUPER_TENANT ? p : { ...p, tenant: v.tenant };
  }

  /** An application by name (optionally of one owner) or id; a scoped manager finds only its tenant's. */
  async application(nameOrId: string, owner?: string): Promise<Application> {
    let app: Application | undefined;
    if (this.scope === undefined)
      app =
        (await this.store.findApplication(nameOrId, owner)) ??
        (owner === undefined ? await this.store.getApplication(nameOrId) : undefined);
    else {
      const list = await this.store.listApplications(owner === undefined ? undefined : this.ownerIn(owner).owner, this.scope);
      app = list.find((a) => a.name === nameOrId) ?? (owner === undefined ? list.find((a) => a.id === nameOrId) : undefined);
    }
    if (app === undefined)
      throw new OAuthError('not_found', `no application ${JSON.stringify(nameOrId)}${owner !== undefined ? ` owned by ${owner}` : ''}`);
    return app;
  }

  async createApplication(input: {
    name: string;
    owner: string;
    tier?: string;
    description?: string;
    requester?: string;
  }): Promise<ApplicationView> {
    if (input.name.trim() === '') throw new OAuthError('invalid_request', 'an application needs a name');
    checkName('name', input.name);
    checkText('owner', input.owner);
    if (input.tier !== undefined) checkText('tier', input.tier);
    if (input.description !== undefined) checkText('description', input.description);
    const { owner, tenant } = this.ownerIn(input.owner);
    // Created ON_HOLD while its creation workflow waits (docs/workflows.md): it gets no keys until approved.
    const executor = await this.executor(tenant, 'AM_APPLICATION_CREATION');
    const app = await this.store
      .createApplication({
        name: input.name,
        owner,
        tenant,
        tier: input.tier ?? 'Unlimited',
        description: input.description ?? '',
        status: executor === 'simple' ? 'APPROVED' : 'ON_HOLD',
      })
      .catch((err: unknown) => conflict(err, `application ${input.name} of ${owner}`));
    const v = await this.view(app);
    this.bus.publish('application.added', { application: this.payload(v) });
    if (executor === 'simple') return v;
    const workflow = await this.pending(executor, {
      type: 'AM_APPLICATION_CREATION',
      tenant,
      requester: input.requester ?? owner,
      entity: app.id,
      description: `Application ${app.name} of ${owner} (tier ${app.tier})`,
      attributes: { name: app.name, owner, tier: app.tier },
    });
    return { ...v, workflow };
  }

  /**
   * Gives an application to another user of its tenant (the admin console's "change owner"); gateways
   * hear the owner in `application.changed`.
   */
  async changeOwner(nameOrId: string, newOwner: string, currentOwner?: string): Promise<ApplicationView> {
    checkText('owner', newOwner);
    if (newOwner.trim() === '') throw new OAuthError('invalid_request', 'owner must not be empty');
    const app = await this.application(nameOrId, currentOwner);
    const { owner } = this.ownerIn(newOwner);
    // By the name's own suffix: a super tenant scope qualifies nothing (ownerIn), yet jane@acme.test is acme.test's.
    const tenant = this.tenants?.tenantOf(owner) ?? SUPER_TENANT;
    if (tenant !== app.tenant)
      throw new OAuthError('invalid_request', `${owner} is a user of tenant ${tenant}, ${app.name} an application of ${app.tenant}`);
    if ((this.users === undefined || this.users.kind === 'database') && (await this.store.getUser(owner)) === undefined)
      throw new OAuthError('invalid_request', `no user ${owner}`);
    const after = await this.store
      .updateApplication(app.id, { owner })
      .catch((err: unknown) => conflict(err, `application ${app.name} of ${owner}`));
    if (after === undefined) throw new OAuthError('not_found', `no application ${JSON.stringify(nameOrId)}`);
    const v = await this.view(after);
    this.bus.publish('application.changed', { application: this.payload(v) });
    return v;
  }

  async listApplications(owner?: string): Promise<ApplicationView[]> {
    const o = owner === undefined || this.scope === undefined ? owner : this.ownerIn(owner).owner;
    return Promise.all((await this.store.listApplications(o, this.scope)).map((a) => this.view(a)));
  }

  async getApplication(nameOrId: string, owner?: string): Promise<ApplicationView> {
    return this.view(await this.application(nameOrId, owner));
  }

  /** The application's tier and description; gateways hear the tier in `application.changed` (docs/events.md). */
  async updateApplication(nameOrId: string, change: { tier?: string; description?: string; owner?: string }): Promise<ApplicationView> {
    const app = await this.application(nameOrId, change.owner);
    if (change.tier !== undefined) {
      if (change.tier.trim() === '') throw new OAuthError('invalid_request', 'tier must not be empty');
      checkText('tier', change.tier);
    }
    if (change.description !== undefined) checkText('description', change.description);
    const after = await this.store.updateApplication(app.id, {
      ...(change.tier !== undefined ? { tier: change.tier } : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
    });
    if (after === undefined) throw new OAuthError('not_found', `no application ${JSON.stringify(nameOrId)}`);
    const v = await this.view(after);
    this.bus.publish('application.changed', { application: this.payload(v) });
    return v;
  }

  async deleteApplication(nameOrId: string, owner?: string): Promise<ApplicationView> {
    const app = await this.application(nameOrId, owner);
    const v = await this.view(app);
    const subs = await this.store.listSubscriptions({ applicationId: app.id });
    await this.store.deleteApplication(app.id);
    for (const s of subs) this.bus.publish('subscription.removed', { subscription: subscriptionPayload(s) });
    this.bus.publish('application.removed', { application: this.payload(v) });
    return v;
  }

  /**
   * New consumer key and secret of one key type. An application has one client per key type: generating
   * again replaces it (tokens of the old key stop mapping to the application).
   */
  async generateKeys(
    nameOrId: string,
    input: {
      keyType?: KeyType;
      grantTypes?: readonly string[];
      callbackUrl?: string;
      owner?: string;
      consumerKey?: string;
      requester?: string;
    } = {},
  ): Promise<GeneratedKeys> {
    const app = await this.application(nameOrId, input.owner);
    // A pending or rejected application gets no keys (docs/workflows.md, "Pending means pending everywhere").
    if (app.status !== 'APPROVED')
      throw new OAuthError('conflict', `application ${app.name} is ${app.status}: keys are generated once its creation is approved`);
    const keyType = input.keyType ?? 'PRODUCTION';
    const grantTypes = input.grantTypes !== undefined && input.grantTypes.length > 0 ? [...input.grantTypes] : [...DEFAULT_CLIENT_GRANTS];
    for (const g of grantTypes) if (!isGrantType(g)) throw new OAuthError('invalid_client_metadata', `unknown grant type ${g}`);
    const type: WorkflowType = keyType === 'SANDBOX' ? 'AM_APPLICATION_REGISTRATION_SANDBOX' : 'AM_APPLICATION_REGISTRATION_PRODUCTION';
    const executor = await this.executor(app.tenant, type);
    // A caller-given key is checked before anything changes: a refusal leaves the application's keys as they were.
    if (input.consumerKey !== undefined) await this.keyAvailable(input.consumerKey, app.id, keyType);
    if (executor !== 'simple') {
      // The key and secret are made now and shown once; the client exists (and gets tokens) once approved:
      // the task keeps the secret's digest only, as the client table does.
      const consumerKey = input.consumerKey ?? newConsumerKey();
      const secret = randomToken();
      const callbackUrl = input.callbackUrl ?? '';
      const workflow = await this.pending(executor, {
        type,
        tenant: app.tenant,
        requester: input.requester ?? app.owner,
        entity: app.id,
        description: `${keyType} keys of application ${app.name} of ${app.owner}`,
        attributes: { keyType, consumerKey, secretHash: digest(secret), grantTypes: grantTypes.join(' '), callbackUrl },
      });
      return {
        application: app.name,
        applicationId: app.id,
        keyType,
        consumerKey,
        consumerSecret: secret,
        grantTypes,
        callbackUrl,
        replaced: null,
        workflow,
      };
    }
    // One client per application and key type (the store's unique key): the old one goes first. A taken key
    // was refused above, before this.
    let replaced: string | null = null;
    for (const c of await this.store.listClients(app.id)) {
      if (c.keyType !== keyType) continue;
      await this.store.deleteClient(c.consumerKey);
      replaced = c.consumerKey;
    }
    const secret = randomToken();
    const client: OAuthClient = await this.store
      .createClient({
        consumerKey: input.consumerKey ?? newConsumerKey(),
        secretHash: digest(secret),
        applicationId: app.id,
        keyType,
        grantTypes,
        callbackUrl: input.callbackUrl ?? '',
      })
      .catch((err: unknown) => {
        if (err instanceof StoreError && err.code === 'STORE_CONFLICT') throw keyTaken();
        throw err;
      });
    this.bus.publish('application.changed', { application: this.payload(await this.view(app)) });
    return {
      application: app.name,
      applicationId: app.id,
      keyType,
      consumerKey: client.consumerKey,
      consumerSecret: secret,
      grantTypes: client.grantTypes,
      callbackUrl: client.callbackUrl,
      replaced,
    };
  }

  /**
   * Whether a caller-given consumer key may become this application's key of this type: free, or already
   * that very client (generating again with the same key replaces it). Consumer keys are one namespace over
   * all tenants, so a key held elsewhere is refused with the same answer whoever holds it.
   */
  private async keyAvailable(consumerKey: string, applicationId: string, keyType: KeyType): Promise<void> {
    const held = await this.store.getClient(consumerKey);
    if (held !== undefined && !(held.applicationId === applicationId && held.keyType === keyType)) throw keyTaken();
  }

  private async subscriptionView(s: Subscription): Promise<SubscriptionView> {
    const app = await this.store.getApplication(s.applicationId);
    return { ...s, application: app?.name ?? '' };
  }

  async addSubscription(input: {
    application: string;
    owner?: string;
    apiContext: string;
    apiVersion: string;
    tier?: string;
    state?: SubscriptionState;
    requester?: string;
  }): Promise<SubscriptionView> {
    const app = await this.application(input.application, input.owner);
    const requested = input.state ?? 'UNBLOCKED';
    let state = requested;
    if (!SUBSCRIPTION_STATES.includes(state))
      throw new OAuthError('invalid_request', `state must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
    const apiContext = input.apiContext.startsWith('/') ? input.apiContext : `/${input.apiContext}`;
    // An API of another tenant only with [apim.devportal] enable_cross_tenant_subscriptions (docs/tenants.md).
    const apiTenant = tenantOfContext(apiContext);
    if (apiTenant !== app.tenant && this.tenants?.settings.crossTenantSubscriptions !== true) {
      throw new OAuthError(
        'access_denied',
        `${apiContext} is an API of tenant ${apiTenant}, ${app.name} an application of ${app.tenant}: cross-tenant subscriptions are off ([apim.devportal] enable_cross_tenant_subscriptions)`,
      );
    }
    if (app.status !== 'APPROVED')
      throw new OAuthError('conflict', `application ${app.name} is ${app.status}: it subscribes once its creation is approved`);
    // ON_HOLD while its creation workflow waits: the gateway refuses its calls with 900909 (docs/workflows.md).
    // The API's tenant decides, as the API's provider approves subscriptions to it.
    const executor = await this.executor(apiTenant, 'AM_SUBSCRIPTION_CREATION');
    if (executor !== 'simple') state = 'ON_HOLD';
    const tier = input.tier ?? 'Unlimited';
    const sub = await this.store
      .addSubscription({ applicationId: app.id, apiContext, apiVersion: input.apiVersion, tier, state })
      .catch((err: unknown) => conflict(err, `subscription of ${app.name} to ${apiContext} ${input.apiVersion}`));
    this.bus.publish('subscription.added', { subscription: subscriptionPayload(sub) });
    if (executor === 'simple') return this.subscriptionView(sub);
    const workflow = await this.pending(executor, {
      type: 'AM_SUBSCRIPTION_CREATION',
      tenant: apiTenant,
      requester: input.requester ?? app.owner,
      entity: sub.id,
      description: `Subscription of ${app.name} (${app.owner}) to ${apiContext} ${input.apiVersion} on tier ${tier}`,
      attributes: { application: app.name, applicationId: app.id, api: apiContext, version: input.apiVersion, tier, state: requested },
    });
    return { ...(await this.subscriptionView(sub)), workflow };
  }

  /**
   * A subscription's tier: at once with the `simple` executor of AM_SUBSCRIPTION_UPDATE, else the old tier
   * stays until the task is approved (docs/workflows.md).
   */
  async setSubscriptionTier(ref: Parameters<Manager['findSubscription']>[0], tier: string, requester?: string): Promise<SubscriptionView> {
    if (tier.trim() === '') throw new OAuthError('invalid_request', 'tier must not be empty');
    checkText('tier', tier);
    const sub = await this.findSubscription(ref);
    const apiTenant = tenantOfContext(sub.apiContext);
    const executor = await this.executor(apiTenant, 'AM_SUBSCRIPTION_UPDATE');
    if (executor === 'simple') return this.subscriptionView(await this.applyTier(sub.id, tier));
    const app = await this.store.getApplication(sub.applicationId);
    const workflow = await this.pending(executor, {
      type: 'AM_SUBSCRIPTION_UPDATE',
      tenant: apiTenant,
      requester: requester ?? app?.owner ?? '',
      entity: sub.id,
      description: `Tier of ${app?.name ?? sub.applicationId}'s subscription to ${sub.apiContext} ${sub.apiVersion}: ${sub.tier} → ${tier}`,
      attributes: { tier, previousTier: sub.tier },
    });
    return { ...(await this.subscriptionView(sub)), workflow };
  }

  async listSubscriptions(filter: { application?: string; owner?: string; apiContext?: string } = {}): Promise<SubscriptionView[]> {
    const applicationId = filter.application !== undefined ? (await this.application(filter.application, filter.owner)).id : undefined;
    let subs = await this.store.listSubscriptions({
      ...(applicationId !== undefined ? { applicationId } : {}),
      ...(filter.apiContext !== undefined ? { apiContext: filter.apiContext } : {}),
    });
    if (this.scope !== undefined && applicationId === undefined) {
      const own = new Set((await this.store.listApplications(undefined, this.scope)).map((a) => a.id));
      subs = subs.filter((x) => own.has(x.applicationId));
    }
    return Promise.all(subs.map((s) => this.subscriptionView(s)));
  }

  /** A subscription by id, or by application + API context (+ version when the application has several). */
  async findSubscription(ref: {
    id?: string;
    application?: string;
    owner?: string;
    apiContext?: string;
    apiVersion?: string;
  }): Promise<Subscription> {
    if (ref.id !== undefined) {
      const s = await this.store.getSubscription(ref.id);
      const inScope =
        s !== undefined && (this.scope === undefined || (await this.store.getApplication(s.applicationId))?.tenant === this.scope);
      if (s === undefined || !inScope) throw new OAuthError('not_found', `no subscription ${ref.id}`);
      return s;
    }
    if (ref.application === undefined || ref.apiContext === undefined)
      throw new OAuthError('invalid_request', 'name the subscription by id, or by application and API context');
    const app = await this.application(ref.application, ref.owner);
    const ctx = ref.apiContext.startsWith('/') ? ref.apiContext : `/${ref.apiContext}`;
    const subs = (await this.store.listSubscriptions({ applicationId: app.id, apiContext: ctx })).filter(
      (s) => ref.apiVersion === undefined || s.apiVersion === ref.apiVersion,
    );
    if (subs.length === 0)
      throw new OAuthError(
        'not_found',
        `${app.name} has no subscription to ${ctx}${ref.apiVersion !== undefined ? ` ${ref.apiVersion}` : ''}`,
      );
    if (subs.length > 1)
      throw new OAuthError('invalid_request', `${app.name} subscribes to ${subs.length} versions of ${ctx}: name the version`);
    return subs[0] as Subscription;
  }

  async setSubscriptionState(ref: Parameters<Manager['findSubscription']>[0], state: SubscriptionState): Promise<SubscriptionView> {
    if (!SUBSCRIPTION_STATES.includes(state))
      throw new OAuthError('invalid_request', `state must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
    const before = await this.findSubscription(ref);
    const after = await this.store.setSubscriptionState(before.id, state);
    if (after === undefined) throw new OAuthError('not_found', `no subscription ${before.id}`);
    if (before.state !== state)
      this.bus.publish('subscription.changed', { subscription: subscriptionPayload(after), previousState: before.state });
    return this.subscriptionView(after);
  }

  async removeSubscription(ref: Parameters<Manager['findSubscription']>[0], requester?: string): Promise<SubscriptionView> {
    const sub = await this.findSubscription(ref);
    // Kept, and served, until its deletion workflow is approved (docs/workflows.md).
    const apiTenant = tenantOfContext(sub.apiContext);
    const executor = await this.executor(apiTenant, 'AM_SUBSCRIPTION_DELETION');
    if (executor !== 'simple') {
      const app = await this.store.getApplication(sub.applicationId);
      const workflow = await this.pending(executor, {
        type: 'AM_SUBSCRIPTION_DELETION',
        tenant: apiTenant,
        requester: requester ?? app?.owner ?? '',
        entity: sub.id,
        description: `Removal of ${app?.name ?? sub.applicationId}'s subscription to ${sub.apiContext} ${sub.apiVersion}`,
      });
      return { ...(await this.subscriptionView(sub)), workflow };
    }
    await this.store.deleteSubscription(sub.id);
    this.bus.publish('subscription.removed', { subscription: subscriptionPayload(sub) });
    return this.subscriptionView(sub);
  }

  /**
   * Everything a gateway needs to start from, consistent enough to be followed by events: applications
   * with their consumer keys, subscriptions, and revoked token ids not yet expired (docs/events.md).
   */
  async snapshot(now = Date.now()): Promise<{
    time: number;
    applications: ApplicationPayload[];
    subscriptions: SubscriptionPayload[];
    revoked: { jti: string; expiresAt: number }[];
  }> {
    const applications = (await this.listApplications()).map((v) => this.payload(v));
    const subscriptions = (await this.store.listSubscriptions()).map(subscriptionPayload);
    const revoked = (await this.store.listRevoked(now)).map((r) => ({ jti: r.jti, expiresAt: r.expiresAt }));
    return { time: now, applications, subscriptions, revoked };
  }

  async addUser(
    input: { username: string; password: string; roles?: readonly string[] },
    rules?: { username: RegExp; password: RegExp },
  ): Promise<UserView> {
    checkNewUser(input, rules);
    // Every password throughway sets is kept as scrypt (lib/store/passwords.ts).
    const hash = await newPasswordHash(input.password);
    const { owner: username, tenant } = this.ownerIn(input.username);
    // The package's users.limit (docs/tenants.md, "Billing packages").
    await this.tenants?.checkUserRoom(tenant).catch(tenantRefusal);
    const u = await this.store
      .addUser({ username, tenant, ...hash, roles: [...(input.roles ?? ['subscriber'])] })
      .catch((err: unknown) => conflict(err, `user ${username}`));
    return { username: u.username, tenant: u.tenant, roles: u.roles, hashMethod: u.hashMethod, createdAt: u.createdAt };
  }

  /**
   * The claims of a user of the store that go into backend JWTs ([apim.jwt] enable_user_claims): `role`,
   * the roles comma-separated as the reference writes its role claim. Undefined for an unknown user.
   */
  async userClaims(username: string): Promise<Record<string, string> | undefined> {
    const u = this.users === undefined ? await this.store.getUser(username) : await findIdentity(this.users, this.store, username);
    return u === undefined ? undefined : { role: u.roles.join(',') };
  }

  async listUsers(): Promise<UserView[]> {
    return (await this.store.listUsers(this.scope)).map((u) => ({
      username: u.username,
      tenant: u.tenant,
      roles: u.roles,
      hashMethod: u.hashMethod,
      createdAt: u.createdAt,
    }));
  }

  /** A user's roles replaced (the declarative sync's role change, docs/sync.md); its tenant's only for a scoped manager. */
  async setUserRoles(username: string, roles: readonly string[]): Promise<UserView> {
    for (const r of roles) checkText('roles', r);
    if ((await this.findUser(username)) === undefined || !(await this.store.setUserRoles(username, roles)))
      throw new OAuthError('not_found', `no user ${username}`);
    return (await this.findUser(username)) as UserView;
  }

  /** A user removed (the declarative sync's prune, docs/sync.md); its tenant's only for a scoped manager. */
  async deleteUser(username: string): Promise<UserView> {
    const u = await this.findUser(username);
    if (u === undefined || !(await this.store.deleteUser(username))) throw new OAuthError('not_found', `no user ${username}`);
    return u;
  }

  /** A user of this manager's tenant (any, unscoped) by name; undefined when there is none. */
  async findUser(username: string): Promise<UserView | undefined> {
    const u = await this.store.getUser(username);
    if (u === undefined || (this.scope !== undefined && u.tenant !== this.scope)) return undefined;
    return { username: u.username, tenant: u.tenant, roles: u.roles, hashMethod: u.hashMethod, createdAt: u.createdAt };
  }
  /**
   * Blocking conditions (900805): stored, then published so gateways apply them at once (docs/throttling.md).
   * Each is its tenant's (docs/tenants.md, "Blocking conditions"): this manager's tenant's, the super
   * tenant's when unscoped (the CLI's local mode); listed and removed within this manager's tenant only
   * (every tenant's when unscoped), so another tenant's id is not found.
   */
  async addBlockingCondition(input: { type: string; value: string; invert?: boolean }): Promise<BlockingConditionRecord> {
    const tenant = this.scope ?? SUPER_TENANT;
    const value = input.value.trim();
    const why = checkBlockingCondition(input.type, value) ?? contextOutside(input.type, value, tenant);
    if (why !== undefined) throw new OAuthError('invalid_request', why);
    const invert = input.invert === true;
    if (invert && input.type !== 'IP' && input.type !== 'IP_RANGE')
      throw new OAuthError('invalid_request', 'invert applies to IP and IP_RANGE conditions only');
    const rec = await this.store
      .addBlockingCondition({ tenant, type: input.type as BlockingConditionRecord['type'], value, invert })
      .catch((err: unknown) => conflict(err, `a ${input.type} condition on ${value} of tenant ${tenant}`));
    this.bus.publish('blocking.added', { condition: blockingPayload(rec) });
    return rec;
  }

  listBlockingConditions(): Promise<BlockingConditionRecord[]> {
    return this.store.listBlockingConditions(this.scope);
  }

  async removeBlockingCondition(id: string): Promise<BlockingConditionRecord> {
    const rec = await this.store.deleteBlockingCondition(id, this.scope);
    if (rec === undefined) throw new OAuthError('not_found', `no blocking condition ${id}`);
    this.bus.publish('blocking.removed', { condition: blockingPayload(rec) });
    return rec;
  }
}

export function subscriptionPayload(s: Subscription): SubscriptionPayload {
  return { id: s.id, applicationId: s.applicationId, apiContext: s.apiContext, apiVersion: s.apiVersion, tier: s.tier, state: s.state };
}

/**
 * A new user's name, roles and password checked as every user store takes them (the key manager's store
 * and a read_write_ldap directory): no control characters, `[user_store.properties]` UsernameJavaRegEx and
 * PasswordJavaRegEx. 400 invalid_request naming the field otherwise.
 */
export function checkNewUser(
  input: { username: string; password: string; roles?: readonly string[] },
  rules?: { username: RegExp; password: RegExp },
): void {
  checkText('username', input.username);
  for (const r of input.roles ?? []) checkText('roles', r);
  if (rules !== undefined && !rules.username.test(input.username))
    throw new OAuthError('invalid_request', `user name does not match [user_store.properties] UsernameJavaRegEx ${rules.username.source}`);
  if (rules !== undefined && !rules.password.test(input.password))
    throw new OAuthError('invalid_request', `password does not match [user_store.properties] PasswordJavaRegEx ${rules.password.source}`);
}

/**
 * Why an API condition's context is outside its tenant's URL space, or undefined: a tenant's is its own
 * `/t/<domain>/...` or a context written without it (`/pizza` is `/t/<domain>/pizza`, lib/throttle/blocking.ts);
 * the super tenant's APIs never start with `/t/` (docs/tenants.md, "Blocking conditions").
 */
function contextOutside(type: string, value: string, tenant: string): string | undefined {
  if (type !== 'API' || !value.startsWith('/t/') || value.startsWith(`/t/${tenant}/`)) return undefined;
  return tenant === SUPER_TENANT
    ? `${JSON.stringify(value)} is a tenant's API context: that tenant's admin blocks it (docs/tenants.md)`
    : `${JSON.stringify(value)} is not an API context of tenant ${tenant} (/t/${tenant}/...)`;
}

/** A stored condition as the blocking events carry it (docs/events.md), with its tenant. */
function blockingPayload(rec: BlockingConditionRecord): BlockingCondition {
  return { id: rec.id, tenant: rec.tenant, type: rec.type, value: rec.value, invert: rec.invert };
}
