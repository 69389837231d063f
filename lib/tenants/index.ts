/**
 * Tenants (docs/tenants.md): organisations named by domain beside the super tenant `carbon.super`. This
 * service owns the rules: which domains are valid, who a user name belongs to, whether a tenant is active.
 * The key manager asks it when a user signs in and when the admin API is called; the gateway's route and
 * authentication phases ask it (synchronously, from memory) whether a tenant exists and is active. The
 * transport never knows.
 *
 * The tenants live in the store's tw_tenant table (lib/store/migrations.ts, version 4) and are read into
 * memory at start and again every `refreshMs` (500 ms by default), so a tenant activated or deactivated, or
 * given another package, by another process on the same store (the CLI, another node) takes effect within
 * a second, without restart. Their bandwidth counts are kept in tw_tenant_bandwidth (version 10), shared by
 * every gateway of the store (BandwidthMeter, lib/tenants/packages.ts).
 */
import { newPasswordHash } from '../store/passwords';
import { StoreError, SUPER_TENANT, type Store, type Tenant } from '../store/types';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { type UserStore, withSignInCheck } from '../store/users';
import { ThroughwayError } from '../errors';
import {
  BandwidthMeter,
  bandwidthRefusal,
  limitText,
  NO_LIMITS,
  PACKAGES,
  packageLimits,
  tenantSamples,
  type BandwidthSink,
  type PackageLimits,
} from './packages';
import type { MetricSource } from '../events/observed';
import type { Logger } from '../log';

export { SUPER_TENANT, type Tenant } from '../store/types';
export { PACKAGES, PackageLimitError, type PackageLimits } from './packages';

/** How often a gateway process sends its tenants' bytes and reads the shared counts back (docs/tenants.md, "Billing packages"). */
export const BANDWIDTH_SYNC_MS = 1000;

/** What a control plane answers a gateway-worker's bandwidth report (`POST /admin/v1/tenant-bandwidth`, docs/admin-api.md). */
export interface BandwidthReport {
  readonly month: string;
  /** Whether any billing package of the control plane limits bandwidth (else the worker counts nothing). */
  readonly meters: boolean;
  /** Every tenant whose package limits bandwidth: its package, the limit in bytes and the month's count of every gateway. */
  readonly tenants: readonly { readonly domain: string; readonly package: string; readonly limit: number; readonly used: number }[];
}

/** Longest domain: a DNS name is at most 253 characters in text form (RFC 1035 §2.3.4, RFC 2181 §11). */
export const MAX_DOMAIN = 253;

/** Error codes of tenant management (docs/tenants.md, "Errors"). */
export type TenantErrorCode =
  | 'TENANT_DOMAIN_INVALID'
  | 'TENANT_RESERVED'
  | 'TENANT_EXISTS'
  | 'TENANT_NOT_FOUND'
  | 'TENANT_PACKAGE_UNKNOWN'
  | 'TENANT_ADMIN_INVALID'
  | 'TENANT_LIMIT_REACHED';

export class TenantError extends ThroughwayError {
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
  /** `[multi_tenancy.billing.package.<key>]` limits, by package key (lib/tenants/packages.ts). */
  readonly packages: ReadonlyMap<string, PackageLimits>;
  /**
   * `[apim.devportal] login_username_case_insensitive`: a name typed at sign-in finds its user of the key
   * manager's store in any letter case, within the tenant it names (lib/store/passwords.ts findSignInUser).
   */
  readonly signInIgnoresCase: boolean;
}

export function tenantSettings(config: DeploymentConfig): TenantSettings {
  return {
    activationModerated: config.multi_tenancy.platform.tenant_activation_moderated,
    emailDomain: config.tenant_mgt.enable_email_domain === true,
    crossTenantSubscriptions: config.apim.devportal.enable_cross_tenant_subscriptions === true,
    packages: packageLimits(config),
    signInIgnoresCase: config.apim.devportal.login_username_case_insensitive,
  };
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The domain of a `/t/<domain>/...` path or context (docs/tenants.md, the reference's URL form); undefined for any other. */
export function tenantDomainOf(path: string): string | undefined {
  if (path.charCodeAt(0) !== 47 || path.charCodeAt(1) !== 116 || path.charCodeAt(2) !== 47) return undefined;
  const end = path.indexOf('/', 3);
  return end < 0 ? path.slice(3) : path.slice(3, end);
}

/**
 * The tenant of a user name: the domain after its last `@` when `tenants` has it (an e-mail
 * user name of the super tenant keeps its own `@`), else the super tenant.
 */
export function tenantOfUserName(username: string, tenants: { has(domain: string): boolean }): string {
  const at = username.lastIndexOf('@');
  if (at < 0) return SUPER_TENANT;
  const d = username.slice(at + 1);
  return tenants.has(d) ? d : SUPER_TENANT;
}

/**
 * The request header with which a super tenant admin acts within a tenant on the applications and
 * subscriptions routes (a remote console node, for its signed-in tenant user: docs/tenants.md, "Console
 * nodes"): the call is then that tenant's, as its own admin's would be. Tasks, executors, users and API
 * files are not reached this way: a tenant's tasks stay its own admins' (docs/workflows.md, "Who decides").
 */
export const ACTING_TENANT = 'throughway-tenant';

/** The tenant an API file id names (docs/tenants.md): `t:<domain>:<file>` that domain as written (maybe no valid domain), any other id the super tenant. */
export function tenantOfFileId(id: string): string {
  if (!id.startsWith('t:')) return SUPER_TENANT;
  const end = id.indexOf(':', 2);
  return end < 0 ? '' : id.slice(2, end);
}

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

/** The origin of an issuer URL (`https://host:9443`) and its path (`/oauth2/token`, '' at the root). */
function issuerParts(issuer: string): { readonly origin: string; readonly path: string } {
  const scheme = issuer.indexOf('://');
  const slash = scheme < 0 ? -1 : issuer.indexOf('/', scheme + 3);
  return slash < 0 ? { origin: issuer, path: '' } : { origin: issuer.slice(0, slash), path: issuer.slice(slash).replace(/\/+$/, '') };
}

/**
 * The `iss` of a tenant's tokens (docs/tenants.md, "Signing keys"): the key manager's issuer with
 * `/t/<domain>` before its path, the reference's tenant-qualified form
 * (`https://localhost:9443/oauth2/token` becomes `https://localhost:9443/t/acme.test/oauth2/token`).
 * The super tenant's is the issuer itself.
 */
export function tenantIssuer(issuer: string, tenant: string): string {
  if (tenant === SUPER_TENANT) return issuer;
  const p = issuerParts(issuer);
  return `${p.origin}/t/${tenant}${p.path}`;
}

/**
 * Whose tokens an `iss` names, given the key manager's issuer: the super tenant for the issuer itself, a
 * domain for a tenant's issuer (tenantIssuer), undefined for anything else. The domain is well-formed
 * (domainProblem) but not checked to be a tenant.
 */
export function issuerTenant(issuer: string, iss: string): string | undefined {
  if (iss === issuer) return SUPER_TENANT;
  const p = issuerParts(issuer);
  const head = `${p.origin}/t/`;
  if (!iss.startsWith(head) || !iss.endsWith(p.path) || iss.length <= head.length + p.path.length) return undefined;
  const domain = iss.slice(head.length, iss.length - p.path.length);
  return domainProblem(domain) === undefined ? domain : undefined;
}

/** A tenant as the service answers it: the super tenant included, always active. */
export const SUPER_TENANT_RECORD: Tenant = Object.freeze({ domain: SUPER_TENANT, admin: '', package: '', active: true, createdAt: 0 });

/** Whether a domain is served, and how: what the gateway's route phase asks on the tenant branch. */
export type TenantState = 'active' | 'inactive' | undefined;

/** What the gateway asks of tenants: plain, synchronous, from memory. */
export interface TenantDirectory {
  /** 'active', 'inactive', or undefined for a domain that is no tenant. The super tenant is always active. */
  state(domain: string): TenantState;
  /**
   * Undefined while the tenant is within its package's `bandwidth.limit` this calendar month; past it, the
   * fault's description, naming the package and the limit (docs/tenants.md, "Billing packages").
   */
  overBandwidth?(domain: string): string | undefined;
  /**
   * Whether any billing package written limits bandwidth: else no exchange's bytes are counted (the
   * configuration's packages are fixed at start).
   */
  readonly metersBandwidth?: boolean;
  /** Counts bytes of an exchange of a tenant's URL (`/t/<domain>/...`) against its bandwidth: only for a tenant whose package limits it. */
  countBytes?(domain: string, bytes: number): void;
  /** Counts a call routed to a tenant's URL (the route phase: the tenant is known there; the metric throughway_tenant_requests_total). */
  countCall?(domain: string): void;
  /** The package and its `resource_volume.limit` (the tenant's API count), for deploying its API files. */
  apiLimit?(domain: string): { readonly package: string; readonly limit: number };
}

export class Tenants implements TenantDirectory {
  private byDomain = new Map<string, Tenant>();
  private timer: NodeJS.Timeout | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private syncFailing = false;
  /** Bytes through the gateway per tenant this month, against the package's `bandwidth.limit`, shared through the store. */
  readonly bandwidth: BandwidthMeter;
  readonly metersBandwidth: boolean;
  /** The store as the meter's sink: adds this process's bytes, reads every gateway's. */
  private readonly sink: BandwidthSink;

  private constructor(
    private readonly store: Store,
    readonly settings: TenantSettings,
    private readonly now: () => number,
    private readonly logger: Logger | undefined,
  ) {
    this.bandwidth = new BandwidthMeter((d) => this.limits(d).bandwidth, now);
    this.metersBandwidth = [...settings.packages.values()].some((p) => p.bandwidth !== Infinity);
    this.sink = {
      exchange: async (month, bytes) => {
        if (bytes.size > 0) await store.addTenantBandwidth(month, bytes, now());
        return store.listTenantBandwidth(month);
      },
    };
  }

  /**
   * Reads the tenants of `store`; `refreshMs` > 0 reads them again that often (0: only on changes made here).
   * When a package limits bandwidth, the month's counts are read before it answers and synced every
   * `bandwidthSyncMs` (BANDWIDTH_SYNC_MS; by default none when `refreshMs` is 0: the CLI counts no bytes).
   * `now` is the clock of the calendar month (tests move it).
   */
  static async open(
    store: Store,
    settings: TenantSettings,
    refreshMs = 500,
    o: { readonly bandwidthSyncMs?: number; readonly now?: () => number; readonly logger?: Logger } = {},
  ): Promise<Tenants> {
    const t = new Tenants(store, settings, o.now ?? Date.now, o.logger);
    await t.refresh();
    if (refreshMs > 0) {
      t.timer = setInterval(() => void t.refresh().catch(() => undefined), refreshMs);
      t.timer.unref();
    }
    const syncMs = o.bandwidthSyncMs ?? (refreshMs > 0 ? BANDWIDTH_SYNC_MS : 0);
    if (t.metersBandwidth && syncMs > 0) {
      await t.syncBandwidth();
      t.syncTimer = setInterval(() => void t.syncBandwidth(), syncMs);
      t.syncTimer.unref();
    }
    return t;
  }

  /**
   * Sends this process's bytes to the store and reads every gateway's counts of the month back. A store
   * that fails keeps the bytes for the next sync (logged once until it answers again); never rejects.
   */
  async syncBandwidth(): Promise<void> {
    try {
      await this.bandwidth.sync(this.sink);
      if (this.syncFailing)
        this.logger?.log('info', 'tenant_bandwidth_synced', { message: "the store takes the tenants' bandwidth again" });
      this.syncFailing = false;
    } catch (err) {
      if (!this.syncFailing)
        this.logger?.log('warn', 'tenant_bandwidth_sync_failed', {
          error: (err as Error).message,
          message: "the tenants' bandwidth cannot be written to the store: counted here and sent when it answers",
        });
      this.syncFailing = true;
    }
  }

  /**
   * A gateway-worker's bytes of `month` ('YYYY-MM'), added to the store (only of tenants whose package
   * limits bandwidth), and the month's counts of every gateway for it (docs/scale-out.md, "Tenants").
   */
  async reportBandwidth(month: string, bytes: ReadonlyMap<string, number>): Promise<BandwidthReport> {
    const counted = new Map<string, number>();
    for (const [d, n] of bytes) if (this.byDomain.has(d) && this.limits(d).bandwidth !== Infinity && n > 0) counted.set(d, n);
    if (counted.size > 0) await this.store.addTenantBandwidth(month, counted, this.now());
    const totals = this.metersBandwidth ? await this.store.listTenantBandwidth(month) : new Map<string, number>();
    const tenants: { domain: string; package: string; limit: number; used: number }[] = [];
    for (const t of this.list()) {
      const l = this.limits(t.domain);
      if (l.bandwidth !== Infinity) tenants.push({ domain: t.domain, package: l.key, limit: l.bandwidth, used: totals.get(t.domain) ?? 0 });
    }
    return { month, meters: this.metersBandwidth, tenants };
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

  /** Stops reading; the bytes counted since the last sync are sent to the store (docs/tenants.md: a restart keeps the count). */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const synced = this.syncTimer !== undefined;
    if (this.syncTimer !== undefined) clearInterval(this.syncTimer);
    this.syncTimer = undefined;
    if (synced) await this.syncBandwidth();
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

  /** The limits of a tenant's package (none for the super tenant, a tenant without a package, or a package not written). */
  limits(domain: string): PackageLimits {
    const pkg = this.byDomain.get(domain)?.package;
    return pkg === undefined || pkg === '' ? NO_LIMITS : (this.settings.packages.get(pkg) ?? NO_LIMITS);
  }

  overBandwidth(domain: string): string | undefined {
    if (!this.bandwidth.over(domain)) return undefined;
    const l = this.limits(domain);
    return bandwidthRefusal(domain, this.bandwidth.usedBy(domain), l.key, l.bandwidth);
  }

  countBytes(domain: string, bytes: number): void {
    // A tenant without a bandwidth limit: nothing to act on, no month to keep.
    if (this.byDomain.has(domain) && this.limits(domain).bandwidth !== Infinity) this.bandwidth.add(domain, bytes);
  }

  countCall(domain: string): void {
    if (this.byDomain.has(domain)) this.bandwidth.call(domain);
  }

  apiLimit(domain: string): { readonly package: string; readonly limit: number } {
    const l = this.limits(domain);
    return { package: l.key, limit: l.apis };
  }

  /**
   * Refuses a new user of `tenant` when it has `users.limit` users already (the tenant's admin counts):
   * TENANT_LIMIT_REACHED naming the package and the limit.
   */
  async checkUserRoom(tenant: string): Promise<void> {
    if (tenant === SUPER_TENANT) return;
    const l = this.limits(tenant);
    if (l.users === Infinity) return;
    const n = (await this.store.listUsers(tenant)).length;
    if (n >= l.users)
      throw new TenantError(
        'TENANT_LIMIT_REACHED',
        `tenant ${tenant} has ${n} users: package ${l.key} allows ${limitText(l.users)} ([multi_tenancy.billing.package.${l.key}.users] limit)`,
      );
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
    return this.byDomain.size === 0 ? SUPER_TENANT : tenantOfUserName(username, this.byDomain);
  }

  /**
   * A user name of `tenant` as stored: the super tenant's as given; a tenant's with `@<domain>` (added
   * unless given). A tenant user's own part holds an `@` only with `[tenant_mgt] enable_email_domain`.
   */
  qualify(username: string, tenant: string): string {
    if (tenant === SUPER_TENANT) {
      if (this.tenantOf(username) !== SUPER_TENANT)
        throw new TenantError('TENANT_ADMIN_INVALID', `${username} names a user of tenant ${this.tenantOf(username)}: its admin adds it`);
      return username;
    }
    const suffix = `@${tenant}`;
    const own = username.endsWith(suffix) ? username.slice(0, -suffix.length) : username;
    if (own === '') throw new TenantError('TENANT_ADMIN_INVALID', 'a user name needs a part before @<domain>');
    if (own.includes('@') && !this.settings.emailDomain)
      throw new TenantError('TENANT_ADMIN_INVALID', `${own} holds an @: e-mail user names need [tenant_mgt] enable_email_domain = true`);
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
    if (pkg !== '' && !(PACKAGES as readonly string[]).includes(pkg))
      throw new TenantError('TENANT_PACKAGE_UNKNOWN', `package ${JSON.stringify(pkg)} is none of ${PACKAGES.join(', ')}`);
    if (input.admin === '') throw new TenantError('TENANT_ADMIN_INVALID', 'a tenant needs an admin name');
    if (input.password === '') throw new TenantError('TENANT_ADMIN_INVALID', 'the tenant admin needs a password');
    await this.refresh();
    if (this.byDomain.has(domain)) throw new TenantError('TENANT_EXISTS', `tenant ${domain} exists`);
    const suffix = `@${domain}`;
    const own = input.admin.endsWith(suffix) ? input.admin.slice(0, -suffix.length) : input.admin;
    if (own === '' || (own.includes('@') && !this.settings.emailDomain))
      throw new TenantError(
        'TENANT_ADMIN_INVALID',
        `admin ${JSON.stringify(input.admin)}: a name without @ (e-mail names need [tenant_mgt] enable_email_domain = true)`,
      );
    const admin = `${own}${suffix}`;
    let t: Tenant;
    try {
      t = await this.store.addTenant({ domain, admin, package: pkg, active: !this.settings.activationModerated });
    } catch (err) {
      if (err instanceof StoreError && err.code === 'STORE_CONFLICT') throw new TenantError('TENANT_EXISTS', `tenant ${domain} exists`);
      throw err;
    }
    await this.store
      .addUser({ username: admin, tenant: domain, ...(await newPasswordHash(input.password)), roles: ['admin'] })
      .catch((err: unknown) => {
        if (err instanceof StoreError && err.code === 'STORE_CONFLICT') return; // an admin user left by an earlier attempt keeps its password
        throw err;
      });
    this.byDomain.set(domain, t);
    return t;
  }

  /**
   * Gives a tenant another billing package (docs/tenants.md, "Billing packages"): its limits are the new
   * package's at once in this process, and within `refreshMs` in the others of the store. Users and APIs
   * it has past the new limits are kept; only new ones are refused.
   */
  async setPackage(domain: string, pkg: string): Promise<Tenant> {
    if (domain === SUPER_TENANT) throw new TenantError('TENANT_RESERVED', `${SUPER_TENANT} is the super tenant: it has no package`);
    if (!(PACKAGES as readonly string[]).includes(pkg))
      throw new TenantError('TENANT_PACKAGE_UNKNOWN', `package ${JSON.stringify(pkg.slice(0, 40))} is none of ${PACKAGES.join(', ')}`);
    const t = await this.store.setTenantPackage(domain, pkg);
    if (t === undefined) throw new TenantError('TENANT_NOT_FOUND', `no tenant ${domain.slice(0, 260)}`);
    this.byDomain.set(domain, t);
    this.bandwidth.recheck();
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
 * The tenants' metrics (docs/operations.md, "Metrics"), each labelled by tenant with at most
 * TENANT_LABELS values (the rest `other`): calls to tenants' URLs, bytes this month against the packages'
 * bandwidth, calls refused for it.
 */
export function tenantMetricSources(tenants: Tenants): MetricSource[] {
  const b = tenants.bandwidth;
  return [
    {
      name: 'throughway_tenant_requests_total',
      help: "Calls to tenants' URLs (/t/<domain>/...) by tenant; at most 100 tenant labels, the rest summed as other (docs/tenants.md).",
      type: 'counter',
      collect: () => tenantSamples(b.requests),
    },
    {
      name: 'throughway_tenant_bandwidth_bytes',
      help: 'Bytes through the gateway this calendar month (UTC) by tenant whose billing package has a bandwidth.limit, counted against it (docs/tenants.md).',
      type: 'gauge',
      collect: () => tenantSamples(b.entries()),
    },
    {
      name: 'throughway_tenant_bandwidth_refused_total',
      help: "Calls refused with 103012 because the tenant used its package's bandwidth.limit this month (docs/tenants.md).",
      type: 'counter',
      collect: () => tenantSamples(b.refused),
    },
  ];
}

/**
 * `users` with the tenant rule of sign-in: a user of a tenant that is not active is refused as an unknown
 * user would be (the password grant, the code flow's sign-in page, the consoles), within `refreshMs` of the
 * tenant's deactivation.
 */
export function signInUsers(users: UserStore, tenants: Tenants): UserStore {
  return withSignInCheck(users, (id) => tenants.signInAllowed(id.username));
}
