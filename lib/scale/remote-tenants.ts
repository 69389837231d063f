/**
 * A gateway-worker's or remote console node's tenants (docs/scale-out.md, "Tenants"; docs/tenants.md): which tenants its control plane
 * has and whether each is active, read from `GET /admin/v1/tenants` at start and again every `refreshMs`
 * (1 s by default), so a tenant deactivated on the control plane (its admin API, its CLI on the same store)
 * is refused by the worker (103011, its tokens 900901) within about a second, without a restart. The route
 * and authentication phases ask state() synchronously, from memory. A control plane that does not answer
 * leaves the last list in place (logged once until it answers again).
 */
import type { Logger } from '../log';
import type { TenantDirectory, TenantState } from '../tenants';
import { SUPER_TENANT, tenantOfUserName } from '../tenants';
import type { ControlPlane } from './control-plane';

export class RemoteTenants implements TenantDirectory {
  private active = new Map<string, boolean>();
  private timer: NodeJS.Timeout | undefined;
  private failing = false;

  private constructor(
    private readonly cp: ControlPlane,
    private readonly logger: Logger,
  ) {}

  /** Reads the list once (a failure is logged and leaves no tenant), then every `refreshMs` (0: never again). */
  static async open(cp: ControlPlane, logger: Logger, refreshMs = 1000): Promise<RemoteTenants> {
    const t = new RemoteTenants(cp, logger);
    await t.refresh();
    if (refreshMs > 0) {
      t.timer = setInterval(() => void t.refresh(), refreshMs);
      t.timer.unref();
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

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
