/**
 * Billing packages (`[multi_tenancy.billing.package.<package_key>]`, spec 000, "Billing packages";
 * docs/tenants.md, "Billing packages"): the limits of a tenant's package. `users.limit` bounds the
 * tenant's users, `resource_volume.limit` its APIs, `bandwidth.limit` the bytes through the gateway per
 * calendar month (UTC). Charges (`subscription_charge`, `charge`, `overuse_charge`) are accepted and not
 * acted on: throughway bills nothing.
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { ThroughwayError } from '../errors';

/** The package keys the spec names (spec 000: package_key demo, smb, custom). */
export const PACKAGES = ['demo', 'smb', 'custom'] as const;

/** A package's limits; `Infinity` for `unlimited` or a limit not written. */
export interface PackageLimits {
  readonly key: string;
  readonly users: number;
  readonly apis: number;
  /** Bytes per calendar month (UTC). */
  readonly bandwidth: number;
}

/** A tenant without a package, or whose package sets nothing: no limit. */
export const NO_LIMITS: PackageLimits = Object.freeze({ key: '', users: Infinity, apis: Infinity, bandwidth: Infinity });

export class PackageLimitError extends ThroughwayError {
  readonly code = 'TENANT_PACKAGE_LIMIT_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'PackageLimitError';
  }
}

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3, tb: 1024 ** 4 };

/**
 * A limit as written: `unlimited` (any case; spec 000 names the word for users.limit and throughway takes it
 * for every limit), or a whole number; a bandwidth may carry a unit (`500MB`, `2 GB`, 1024-based; a bare
 * number is bytes).
 */
export function limitOf(where: string, text: string | undefined, bytes: boolean): number {
  if (text === undefined) return Infinity;
  const v = text.trim().toLowerCase();
  if (v === 'unlimited') return Infinity;
  const m = bytes ? /^(\d{1,15})\s*(b|kb|mb|gb|tb)?$/.exec(v) : /^(\d{1,15})()$/.exec(v);
  if (m === null)
    throw new PackageLimitError(
      `${where} = ${JSON.stringify(text.slice(0, 40))}: a whole number${bytes ? ' of bytes, or with a unit (500MB, 2GB)' : ''}, or unlimited`,
    );
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
}

/** The packages written in the configuration, by key; a key not written has no limits. */
export function packageLimits(config: DeploymentConfig): ReadonlyMap<string, PackageLimits> {
  const out = new Map<string, PackageLimits>();
  const written = config.multi_tenancy.billing.package;
  for (const key of Object.keys(written).sort()) {
    const p = written[key];
    if (p === undefined) continue;
    const at = `[multi_tenancy.billing.package.${key}`;
    out.set(key, {
      key,
      users: limitOf(`${at}.users] limit`, p.users.limit, false),
      apis: limitOf(`${at}.resource_volume] limit`, p.resource_volume.limit, false),
      bandwidth: limitOf(`${at}.bandwidth] limit`, p.bandwidth.limit, true),
    });
  }
  return out;
}

/** A limit as the errors write it. */
export function limitText(n: number, bytes = false): string {
  if (n === Infinity) return 'unlimited';
  return bytes ? `${n} bytes` : String(n);
}

/** The start of the next calendar month (UTC) after a time, in ms. */
export function nextMonthAt(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/**
 * Bytes through the gateway per tenant in the current calendar month (UTC): added at each exchange's end
 * (the transport's request body and response byte counts, no work per chunk), compared with the package's
 * bandwidth by the route phase, which reads one Set. Kept by each gateway process; a new month starts from
 * zero.
 */
export class BandwidthMeter {
  private next: number;
  private readonly used = new Map<string, number>();
  /** Tenants at or past their limit this month: what the route phase asks. */
  private readonly spent = new Set<string>();
  /** Calls refused for bandwidth, per tenant, since start (the metric). */
  readonly refused = new Map<string, number>();
  /** Exchanges of each tenant's URLs since start (the metric). */
  readonly requests = new Map<string, number>();

  constructor(
    /** The bandwidth limit of a tenant (Infinity: none). */
    private readonly limitOfTenant: (domain: string) => number,
    private readonly now: () => number = Date.now,
  ) {
    this.next = nextMonthAt(now());
  }

  /** A new month: every count starts again. */
  private roll(): void {
    const t = this.now();
    if (t < this.next) return;
    this.next = nextMonthAt(t);
    this.used.clear();
    this.spent.clear();
  }

  /** A call routed to a tenant's URL. */
  call(domain: string): void {
    this.requests.set(domain, (this.requests.get(domain) ?? 0) + 1);
  }

  add(domain: string, bytes: number): void {
    if (bytes <= 0) return;
    this.roll();
    const n = (this.used.get(domain) ?? 0) + bytes;
    this.used.set(domain, n);
    if (n >= this.limitOfTenant(domain)) this.spent.add(domain);
  }

  /** Bytes counted this month for a tenant. */
  usedBy(domain: string): number {
    this.roll();
    return this.used.get(domain) ?? 0;
  }

  /** Whether a tenant has used up its package's bandwidth this month (counted as a refusal when so). */
  over(domain: string): boolean {
    if (this.spent.size === 0 || !this.spent.has(domain)) return false;
    this.roll();
    if (!this.spent.has(domain)) return false;
    this.refused.set(domain, (this.refused.get(domain) ?? 0) + 1);
    return true;
  }

  /** Every tenant with bytes this month (for metrics). */
  entries(): IterableIterator<[string, number]> {
    this.roll();
    return this.used.entries();
  }
}

/** Distinct tenant label values a tenant metric carries at most; the others are summed as `other`. */
export const TENANT_LABELS = 100;

/**
 * Samples labelled by tenant, bounded: the `cap` tenants with the largest values keep their label, the
 * rest are summed under `tenant="other"` (a thousand tenants must not make a thousand series per metric).
 */
export function tenantSamples(values: Iterable<[string, number]>, cap = TENANT_LABELS): { labels: { tenant: string }; value: number }[] {
  const all = [...values].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const out = all.slice(0, cap).map(([tenant, value]) => ({ labels: { tenant }, value }));
  if (all.length > cap) out.push({ labels: { tenant: 'other' }, value: all.slice(cap).reduce((s, x) => s + x[1], 0) });
  return out;
}
