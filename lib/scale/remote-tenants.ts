/**
 * A gateway-worker's or remote console node's tenants (docs/scale-out.md, "Tenants"; docs/tenants.md): which tenants its control plane
 * has and whether each is active, read from `GET /admin/v1/tenants` at start and again every `refreshMs`
 * (1 s by default), so a tenant deactivated on the control plane (its admin API, its CLI on the same store)
 * is refused by the worker (103011, its tokens 900901) within about a second, without a restart. The route
 * and authentication phases ask state() synchronously, from memory. A control plane that does not answer
 * leaves the last list in place (logged once until it answers again).
 *
 * A gateway-worker (`meter`) also counts its tenants' bytes against their packages' bandwidth.limit: it has
 * no store, so every BANDWIDTH_SYNC_MS it sends the bytes counted since to `POST /admin/v1/tenant-bandwidth`,
 * which adds them to the control plane's store, and takes back each limited tenant's package, limit and
 * month's count of every gateway (the BandwidthMeter of lib/tenants/packages.ts, as a node with a store).
 */
import type { Logger } from '../log';
import type { BandwidthReport, TenantDirectory, TenantState } from '../tenants';
import { BANDWIDTH_SYNC_MS, SUPER_TENANT, tenantOfUserName } from '../tenants';
import { BandwidthMeter, bandwidthRefusal, type BandwidthSink } from '../tenants/packages';
import type { ControlPlane } from './control-plane';

/** How long a closing worker waits for its last bandwidth report. */
const CLOSE_SYNC_MS = 2000;

/** A limited tenant as the control plane answers it. */
interface RemoteLimit {
  readonly package: string;
  readonly limit: number;
}

export class RemoteTenants implements TenantDirectory {
  private active = new Map<string, boolean>();
  private timer: NodeJS.Timeout | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private failing = false;
  private syncFailing = false;
  /** The tenants whose package limits bandwidth, by domain (from the last bandwidth answer). */
  private limited = new Map<string, RemoteLimit>();
  /** Whether the control plane's packages limit bandwidth (its first answer): else no byte is counted. */
  metersBandwidth = false;
  /** The `meters` of the control plane's last answer. */
  private meters = false;
  readonly bandwidth: BandwidthMeter;
  private readonly sink: BandwidthSink;

  private constructor(
    private readonly cp: ControlPlane,
    private readonly logger: Logger,
    now: () => number,
  ) {
    this.bandwidth = new BandwidthMeter((d) => this.limited.get(d)?.limit ?? Infinity, now);
    this.sink = {
      exchange: async (month, bytes) => {
        const r = (await this.cp.request('POST', '/admin/v1/tenant-bandwidth', {
          month,
          bytes: Object.fromEntries(bytes),
        })) as unknown as Partial<BandwidthReport>;
        const limited = new Map<string, RemoteLimit>();
        const used = new Map<string, number>();
        for (const x of Array.isArray(r.tenants) ? r.tenants : []) {
          if (typeof x.domain !== 'string' || typeof x.limit !== 'number') continue;
          limited.set(x.domain, { package: String(x.package), limit: x.limit });
          used.set(x.domain, typeof x.used === 'number' ? x.used : 0);
        }
        // Only the current month's answer says which tenants are limited now.
        if (r.month === this.bandwidth.currentMonth()) this.limited = limited;
        this.meters = r.meters === true;
        return used;
      },
    };
  }

  /**
   * Reads the list once (a failure is logged and leaves no tenant), then every `refreshMs` (0: never again).
   * `meter` (a gateway-worker): the bandwidth counts too, first read before it answers, then synced every
   * `bandwidthSyncMs`; a control plane that does not take them (an older one: 404) leaves nothing counted.
   */
  static async open(
    cp: ControlPlane,
    logger: Logger,
    refreshMs = 1000,
    o: { readonly meter?: boolean; readonly bandwidthSyncMs?: number; readonly now?: () => number } = {},
  ): Promise<RemoteTenants> {
    const t = new RemoteTenants(cp, logger, o.now ?? Date.now);
    await t.refresh();
    if (refreshMs > 0) {
      t.timer = setInterval(() => void t.refresh(), refreshMs);
      t.timer.unref();
    }
    if (o.meter === true) {
      await t.syncBandwidth(true);
      const ms = o.bandwidthSyncMs ?? BANDWIDTH_SYNC_MS;
      if (t.metersBandwidth && ms > 0) {
        t.syncTimer = setInterval(() => void t.syncBandwidth(), ms);
        t.syncTimer.unref();
      }
    }
    return t;
  }

  /** Whether the control plane has any tenant (the start-up line). */
  get size(): number {
    return this.active.size;
  }

  async refresh(): Promise<void> {
    try {
      const r = await this.cp.request('GET', '/admin/v1/tenants');
      const list = Array.isArray(r.list) ? (r.list as { domain?: unknown; active?: unknown }[]) : [];
      const next = new Map<string, boolean>();
      for (const x of list) if (typeof x.domain === 'string' && x.domain !== SUPER_TENANT) next.set(x.domain, x.active === true);
      this.active = next;
      if (this.failing)
        this.logger.log('info', 'tenants_read', { tenants: next.size, message: 'the control plane answers the tenants list again' });
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.logger.log('warn', 'tenants_read_failed', {
          error: (err as Error).message,
          message: 'the tenants of the control plane cannot be read: the last list read stays in force',
        });
      this.failing = true;
    }
  }

  /**
   * Sends the bytes counted since the last sync and reads the shared counts back; a control plane that does
   * not answer keeps the bytes for the next (logged once until it answers again). Never rejects.
   */
  async syncBandwidth(first = false): Promise<void> {
    try {
      await this.bandwidth.sync(this.sink);
      if (first) this.metersBandwidth = this.meters;
      if (this.syncFailing)
        this.logger.log('info', 'tenant_bandwidth_synced', { message: "the control plane takes the tenants' bandwidth again" });
      this.syncFailing = false;
    } catch (err) {
      if (first) {
        // At start, before anything was counted: the control plane takes no reports (one without the route answers 404).
        this.logger.log('info', 'tenant_bandwidth_not_reported', {
          error: (err as Error).message,
          message: "the control plane does not take bandwidth reports: this worker counts no tenant's bytes",
        });
        return;
      }
      if (!this.syncFailing)
        this.logger.log('warn', 'tenant_bandwidth_sync_failed', {
          error: (err as Error).message,
          message: "the tenants' bandwidth cannot be sent to the control plane: counted here and sent when it answers",
        });
      this.syncFailing = true;
    }
  }

  /**
   * The tenant of a user name, as the control plane's Tenants.tenantOf reads it: the domain after the last
   * `@` when it is one of the control plane's tenants, else the super tenant.
   */
  tenantOf(username: string): string {
    return tenantOfUserName(username, this.active);
  }

  state(domain: string): TenantState {
    if (domain === SUPER_TENANT) return 'active';
    const a = this.active.get(domain);
    return a === undefined ? undefined : a ? 'active' : 'inactive';
  }

  countBytes(domain: string, bytes: number): void {
    if (this.limited.has(domain)) this.bandwidth.add(domain, bytes);
  }

  overBandwidth(domain: string): string | undefined {
    if (!this.bandwidth.over(domain)) return undefined;
    const l = this.limited.get(domain);
    return bandwidthRefusal(domain, this.bandwidth.usedBy(domain), l?.package ?? '', l?.limit ?? 0);
  }

  /** Stops reading; a gateway-worker sends the bytes counted since its last sync first. */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const synced = this.syncTimer !== undefined;
    if (this.syncTimer !== undefined) clearInterval(this.syncTimer);
    this.syncTimer = undefined;
    if (!synced) return;
    // Bounded: a control plane that does not answer must not hold the worker's shutdown for the request's 10 s.
    let t: NodeJS.Timeout | undefined;
    await Promise.race([this.syncBandwidth(), new Promise<void>((r) => (t = setTimeout(r, CLOSE_SYNC_MS)))]);
    clearTimeout(t);
  }
}
