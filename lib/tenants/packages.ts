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

/** The calendar month (UTC) of a time as the store keys it: 'YYYY-MM'. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** A month as the store keys it ('YYYY-MM', months 01 to 12). */
export const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** The refusal's description (fault 103012): who used what, and the package's limit. */
export function bandwidthRefusal(domain: string, used: number, key: string, limit: number): string {
  return `tenant ${domain} used ${used} bytes this month: package ${key} allows ${limitText(limit, true)} ([multi_tenancy.billing.package.${key}.bandwidth] limit)`;
}

/**
 * Where the gateways' counts meet (docs/tenants.md, "Billing packages"): the store for a process that has
 * one (every gateway on the database adds to one row per tenant and month), the control plane for a
 * gateway-worker (its admin API adds to its store).
 */
export interface BandwidthSink {
  /** Adds each tenant's bytes to `month`'s count ('YYYY-MM') and answers every tenant's count of that month after it. */
  exchange(month: string, bytes: ReadonlyMap<string, number>): Promise<ReadonlyMap<string, number>>;
}

/**
 * Bytes through the gateway per tenant in the current calendar month (UTC): added at each exchange's end
 * (the transport's request body and response byte counts, no work per chunk: two Map updates and a
 * compare), compared with the package's bandwidth by the route phase, which reads one Set.
 *
 * The count is shared through a BandwidthSink: sync() (every second, and at shutdown) sends the bytes added
 * since the last one and takes every tenant's total back, which includes the other gateways' bytes; between
 * two syncs this process adds its own to the last total read. So a restart keeps the month's count, and
 * several gateways reach the limit together, each at most one sync interval of its own traffic past it. A
 * new month starts from zero; bytes of the month before that were not sent yet are sent under that month.
 */
export class BandwidthMeter {
  private next: number;
  private month: string;
  /** The month's total of every gateway as last read, plus this process's bytes since. */
  private used = new Map<string, number>();
  /** This process's bytes not yet sent to the sink. */
  private pending = new Map<string, number>();
  /** A past month's bytes not yet sent (the month rolled between two syncs). */
  private carried: { month: string; bytes: Map<string, number> }[] = [];
  /** Tenants at or past their limit this month: what the route phase asks. */
  private spent = new Set<string>();
  private syncing: Promise<void> | undefined;
  /** Calls refused for bandwidth, per tenant, since start (the metric). */
  readonly refused = new Map<string, number>();
  /** Exchanges of each tenant's URLs since start (the metric). */
  readonly requests = new Map<string, number>();

  constructor(
    /** The bandwidth limit of a tenant (Infinity: none). */
    private readonly limitOfTenant: (domain: string) => number,
    private readonly now: () => number = Date.now,
  ) {
    const t = now();
    this.next = nextMonthAt(t);
    this.month = monthOf(t);
  }

  /** A new month: every count starts again; bytes of the month that ended not yet sent are kept to send. */
  private roll(): void {
    const t = this.now();
    if (t < this.next) return;
    if (this.pending.size > 0) this.carried.push({ month: this.month, bytes: this.pending });
    this.next = nextMonthAt(t);
    this.month = monthOf(t);
    this.used = new Map();
    this.pending = new Map();
    this.spent = new Set();
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
    this.pending.set(domain, (this.pending.get(domain) ?? 0) + bytes);
    if (n >= this.limitOfTenant(domain)) this.spent.add(domain);
  }

  /** Bytes counted this month for a tenant. */
  usedBy(domain: string): number {
    this.roll();
    return this.used.get(domain) ?? 0;
  }

  /** The current month ('YYYY-MM', UTC). */
  currentMonth(): string {
    this.roll();
    return this.month;
  }

  /** Whether a tenant has used up its package's bandwidth this month (counted as a refusal when so). */
  over(domain: string): boolean {
    if (this.spent.size === 0 || !this.spent.has(domain)) return false;
    this.roll();
    if (!this.spent.has(domain)) return false;
    this.refused.set(domain, (this.refused.get(domain) ?? 0) + 1);
    return true;
  }

  /** Compares every count with its tenant's limit again (a limit changed: another package). */
  recheck(): void {
    const spent = new Set<string>();
    for (const [d, n] of this.used) if (n >= this.limitOfTenant(d)) spent.add(d);
    this.spent = spent;
  }

  /** Every tenant with bytes this month (for metrics). */
  entries(): IterableIterator<[string, number]> {
    this.roll();
    return this.used.entries();
  }

  /**
   * Sends the bytes counted since the last sync and takes the month's totals back (one at a time: a call
   * while one runs waits for it). A failed exchange keeps the bytes to send at the next, and rejects.
   */
  sync(sink: BandwidthSink): Promise<void> {
    this.syncing ??= this.exchange(sink).finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async exchange(sink: BandwidthSink): Promise<void> {
    this.roll();
    while (this.carried.length > 0) {
      const c = this.carried[0] as { month: string; bytes: Map<string, number> };
      await sink.exchange(c.month, c.bytes);
      this.carried.shift();
    }
    const month = this.month;
    const batch = this.pending;
    this.pending = new Map();
    let totals: ReadonlyMap<string, number>;
    try {
      totals = await sink.exchange(month, batch);
    } catch (err) {
      if (this.month === month) for (const [d, n] of batch) this.pending.set(d, (this.pending.get(d) ?? 0) + n);
      else if (batch.size > 0) this.carried.push({ month, bytes: batch });
      throw err;
    }
    // The month rolled while the exchange ran: its totals are of the month before.
    if (this.month !== month) return;
    // The totals hold the batch; the bytes added since are this process's own, not yet sent.
    const used = new Map<string, number>();
    for (const [d, n] of totals) if (this.limitOfTenant(d) !== Infinity) used.set(d, n);
    for (const [d, n] of this.pending) used.set(d, (used.get(d) ?? 0) + n);
    this.used = used;
    this.recheck();
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
