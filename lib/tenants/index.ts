/**
 * Tenants (docs/tenants.md): organisations named by domain beside the super tenant `carbon.super`. This
 * service owns the rules: which domains are valid, who a user name belongs to, whether a tenant is active.
 * The key manager asks it when a user signs in and when the admin API is called; the gateway's route and
 * authentication phases ask it (synchronously, from memory) whether a tenant exists and is active. The
 * transport never knows.
 *
 * The tenants live in the store's tw_tenant table (lib/store/migrations.ts, version 4) and are read into
 * memory at start and again every `refreshMs` (500 ms by default), so a tenant activated or deactivated by
 * another process on the same store (the CLI, another node) takes effect within a second, without restart.
 */
import { newPasswordHash } from '../store/passwords';
import { StoreError, SUPER_TENANT, type Store, type Tenant } from '../store/types';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { type UserStore, withSignInCheck } from '../store/users';

export { SUPER_TENANT, type Tenant } from '../store/types';

/** The billing packages of `[multi_tenancy.billing.package.<package_key>]` (spec 000). */
export const PACKAGES = ['demo', 'smb', 'custom'] as const;

/** Longest domain: a DNS name is at most 253 characters in text form (RFC 1035 §2.3.4, RFC 2181 §11). */
export const MAX_DOMAIN = 253;

/** Error codes of tenant management (docs/tenants.md, "Errors"). */
export type TenantErrorCode = 'TENANT_DOMAIN_INVALID' | 'TENANT_RESERVED' | 'TENANT_EXISTS' | 'TENANT_NOT_FOUND' | 'TENANT_PACKAGE_UNKNOWN' | 'TENANT_ADMIN_INVALID';

export class TenantError extends Error {
  readonly code: TenantErrorCode;
  constructor(code: TenantErrorCode, message: string) {
    super(message);
    this.name = 'TenantError';
    this.code = code;
  }
}

/** What the tenant rules read from the configuration. */
export interface TenantSettings {
  /** `[multi_tenancy.platform] tenant_activation_moderated`: a new tenant starts inactive. */
  readonly activationModerated: boolean;
  /** `[tenant_mgt] enable_email_domain`: a tenant user's own name may be an e-mail address (`jane@example.org@acme.test`). */
  readonly emailDomain: boolean;
  /** `[apim.devportal] enable_cross_tenant_subscriptions`: an application may subscribe to another tenant's API. */
  readonly crossTenantSubscriptions: boolean;
}

export function tenantSettings(config: DeploymentConfig): TenantSettings {
  return {
    activationModerated: config.multi_tenancy.platform.tenant_activation_moderated,
    emailDomain: config.tenant_mgt.enable_email_domain === true,
    crossTenantSubscriptions: config.apim.devportal.enable_cross_tenant_subscriptions === true,
  };
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Why `domain` is not a tenant domain, or undefined when it is one: lower-case DNS labels (letters, digits,
 * inner hyphens, 1 to 63 characters each, RFC 1035 §2.3.1) joined by dots, at least two labels, at most
 * 253 characters.
 */
export function domainProblem(domain: string): string | undefined {
  if (domain.length === 0) return 'is empty';
  if (domain.length > MAX_DOMAIN) return `is longer than ${MAX_DOMAIN} characters`;
  const labels = domain.split('.');
  if (labels.length < 2) return 'needs at least two labels (acme.test)';
  for (const l of labels) {
    if (!LABEL.test(l)) return `has the label ${JSON.stringify(l)}: labels are 1 to 63 lower-case letters, digits and inner hyphens`;
  }
  return undefined;
}

/** A tenant as the service answers it: the super tenant included, always active. */
export const SUPER_TENANT_RECORD: Tenant = Object.freeze({ domain: SUPER_TENANT, admin: '', package: '', active: true, createdAt: 0 });

/** Whether a domain is served, and how: what the gateway's route phase asks on the tenant branch. */
export type TenantState = 'active' | 'inactive' | undefined;

/** What the gateway asks of tenants: plain, synchronous, from memory. */
export interface TenantDirectory {
  /** 'active', 'inactive', or undefined for a domain that is no tenant. The super tenant is always active. */
  state(domain: string): TenantState;
}

export class Tenants implements TenantDirectory {
  private byDomain = new Map<string, Tenant>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  private constructor(
    private readonly store: Store,
    readonly settings: TenantSettings,
  ) {}

  /** Reads the tenants of `store`; `refreshMs` > 0 reads them again that often (0: only on changes made here). */
  static async open(store: Store, settings: TenantSettings, refreshMs = 500): Promise<Tenants> {
    const t = new Tenants(store, settings);
    await t.refresh();
    if (refreshMs > 0) {
      t.timer = setInterval(() => void t.refresh().catch(() => undefined), refreshMs);
      t.timer.unref();
    }
    return t;
  }

  /** Reads the tenants again (one SELECT of a small table); concurrent calls share one read. */
  refresh(): Promise<void> {
    this.refreshing ??= this.store
      .listTenants()
      .then((list) => {
        this.byDomain = new Map(list.map((x) => [x.domain, x]));
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Whether any tenant besides the super tenant exists (a deployment without one never takes a tenant branch). */
  get any(): boolean {
    return this.byDomain.size > 0;
  }

  state(domain: string): TenantState {
    if (domain === SUPER_TENANT) return 'active';
    const t = this.byDomain.get(domain);
    return t === undefined ? undefined : t.active ? 'active' : 'inactive';
  }

  get(domain: string): Tenant | undefined {
    return domain === SUPER_TENANT ? SUPER_TENANT_RECORD : this.byDomain.get(domain);
  }

  /** The super tenant first, then the tenants by domain. */
  list(): Tenant[] {
    return [SUPER_TENANT_RECORD, ...[...this.byDomain.values()].sort((a, b) => (a.domain < b.domain ? -1 : 1))];
  }

  /**
   * The tenant of a user name: the text after its last `@` when that is a tenant's domain
   * (`jane@acme.test`, `jane@example.org@acme.test`), else the super tenant: a name whose suffix is no
   * tenant is a super tenant name, as before tenants existed.
   */
  tenantOf(username: string): string {
    const at = username.lastIndexOf('@');
    if (at < 0 || this.byDomain.size === 0) return SUPER_TENANT;
    const d = username.slice(at + 1);
    return this.byDomain.has(d) ? d : SUPER_TENANT;
  }

  /**
   * A user name of `tenant` as stored: the super tenant's as given; a tenant's with `@<domain>` (added
   * unless given). A tenant user's own part holds an `@` only with `[tenant_mgt] enable_email_domain`.
   */
  qualify(username: string, tenant: string): string {
    if (tenant === SUPER_TENANT) {
      if (this.tenantOf(username) !== SUPER_TENANT) throw new TenantError('TENANT_ADMIN_INVALID', `${username} names a user of tenant ${this.tenantOf(username)}: its admin adds it`);
      return username;
    }
    const suffix = `@${tenant}`;
    const own = username.endsWith(suffix) ? username.slice(0, -suffix.length) : username;
    if (own === '') throw new TenantError('TENANT_ADMIN_INVALID', 'a user name needs a part before @<domain>');
    if (own.includes('@') && !this.settings.emailDomain) throw new TenantError('TENANT_ADMIN_INVALID', `${own} holds an @: e-mail user names need [tenant_mgt] enable_email_domain = true`);
    return `${own}${suffix}`;
  }

  /** Whether a user of this name may sign in: its tenant is active. */
  signInAllowed(username: string): boolean {
    return this.state(this.tenantOf(username)) === 'active';
  }

  /**
   * Creates a tenant and its admin (`<admin>@<domain>`, role admin, the password as scrypt). Active at once
   * unless `[multi_tenancy.platform] tenant_activation_moderated`.
   */
  async add(input: { domain: string; admin: string; password: string; package?: string }): Promise<Tenant> {
    const domain = input.domain;
    if (domain === SUPER_TENANT) throw new TenantError('TENANT_RESERVED', `${SUPER_TENANT} is the super tenant: it always exists`);
    const why = domainProblem(domain);
    if (why !== undefined) throw new TenantError('TENANT_DOMAIN_INVALID', `domain ${JSON.stringify(domain.slice(0, 300))} ${why}`);
    const pkg = input.package ?? '';
    if (pkg !== '' && !(PACKAGES as readonly string[]).includes(pkg)) throw new TenantError('TENANT_PACKAGE_UNKNOWN', `package ${JSON.stringify(pkg)} is none of ${PACKAGES.join(', ')}`);
    if (input.admin === '') throw new TenantError('TENANT_ADMIN_INVALID', 'a tenant needs an admin name');
    if (input.password === '') throw new TenantError('TENANT_ADMIN_INVALID', 'the tenant admin needs a password');
    await this.refresh();
    if (this.byDomain.has(domain)) throw new TenantError('TENANT_EXISTS', `tenant ${domain} exists`);
    const suffix = `@${domain}`;
    const own = input.admin.endsWith(suffix) ? input.admin.slice(0, -suffix.length) : input.admin;
    if (own === '' || (own.includes('@') && !this.settings.emailDomain)) throw new TenantError('TENANT_ADMIN_INVALID', `admin ${JSON.stringify(input.admin)}: a name without @ (e-mail names need [tenant_mgt] enable_email_domain = true)`);
    const admin = `${own}${suffix}`;
    let t: Tenant;
    try {
      t = await this.store.addTenant({ domain, admin, package: pkg, active: !this.settings.activationModerated });
    } catch (err) {
      if (err instanceof StoreError && err.code === 'STORE_CONFLICT') throw new TenantError('TENANT_EXISTS', `tenant ${domain} exists`);
      throw err;
    }
    await this.store.addUser({ username: admin, tenant: domain, ...(await newPasswordHash(input.password)), roles: ['admin'] }).catch((err: unknown) => {
      if (err instanceof StoreError && err.code === 'STORE_CONFLICT') return; // an admin user left by an earlier attempt keeps its password
      throw err;
    });
    this.byDomain.set(domain, t);
    return t;
  }

  /** Activates or deactivates a tenant: its APIs, tokens and sign-ins follow at once in this process. */
  async setActive(domain: string, active: boolean): Promise<Tenant> {
    if (domain === SUPER_TENANT) throw new TenantError('TENANT_RESERVED', `${SUPER_TENANT} is the super tenant: it is always active`);
    const t = await this.store.setTenantActive(domain, active);
    if (t === undefined) throw new TenantError('TENANT_NOT_FOUND', `no tenant ${domain}`);
    this.byDomain.set(domain, t);
    return t;
  }
}

/**
 * `users` with the tenant rule of sign-in: a user of a tenant that is not active is refused as an unknown
 * user would be (the password grant, the code flow's sign-in page, the consoles), within `refreshMs` of the
 * tenant's deactivation.
 */
export function signInUsers(users: UserStore, tenants: Tenants): UserStore {
  return withSignInCheck(users, (id) => tenants.signInAllowed(id.username));
}
