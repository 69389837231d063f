/**
 * Blocking conditions enforced (spec 002 part 7: 900805 "blocked by user, IP, application or API context";
 * spec 000 [apim.throttling] enable_blacklist_condition; their types and check: lib/events/blocking.ts).
 * Kept in the key manager's store, edited with the admin API and the CLI, and pushed to the gateway as events (docs/events.md: blocking.added, blocking.removed),
 * so a change is in force as soon as the event is delivered, not after a polling period.
 *
 * Matching is by set lookup (API, application, user, IP) and a short list of ranges, among the conditions
 * of the call's tenant only, so a gateway with no conditions pays one size check per request.
 */
import { ipMatcher, ipNumber, plainIp } from '../events/ip';
import type { BlockingCondition, BlockingType } from '../events/blocking';
import { SUPER_TENANT } from '../store/types';
import { tenantDomainOf } from '../tenants';

export { BLOCKING_TYPES, checkBlockingCondition, type BlockingCondition, type BlockingType } from '../events/blocking';

/** What a call offers to the conditions. */
export interface BlockingSubject {
  readonly ip: string;
  /** The versioned context, e.g. /pizzashack/1.0.0, and the context alone. */
  readonly apiPath: string;
  readonly apiContext: string;
  readonly application: { readonly id: string; readonly name: string; readonly owner: string } | undefined;
  readonly user: string | undefined;
}

interface Range {
  readonly low: bigint;
  readonly high: bigint;
  readonly invert: boolean;
}

/** One tenant's conditions, as sets and ranges. */
interface TenantIndex {
  readonly apis: Set<string>;
  readonly apps: Set<string>;
  readonly users: Set<string>;
  readonly ranges: Range[];
}

/**
 * The conditions of every tenant, each applied to its own tenant's calls only (docs/tenants.md, "Blocking
 * conditions"; the reference's deny policies are each tenant admin's). A call's tenant is its API's: the
 * domain of a `/t/<domain>/...` context, else the super tenant (a super tenant API's context never starts
 * with `/t/`, lib/gateway/apis.ts).
 */
export class BlockingConditions {
  private readonly byId = new Map<string, BlockingCondition>();
  private byTenant = new Map<string, TenantIndex>();
  /** Changes applied (tests and logs see that an event arrived). */
  version = 0;

  get size(): number {
    return this.byId.size;
  }

  list(): BlockingCondition[] {
    return [...this.byId.values()];
  }

  replace(list: readonly BlockingCondition[]): void {
    this.byId.clear();
    for (const c of list) this.byId.set(c.id, c);
    this.rebuild();
  }

  add(c: BlockingCondition): void {
    this.byId.set(c.id, c);
    this.rebuild();
  }

  remove(id: string): boolean {
    const had = this.byId.delete(id);
    if (had) this.rebuild();
    return had;
  }

  private rebuild(): void {
    const byTenant = new Map<string, TenantIndex>();
    for (const c of this.byId.values()) {
      const tenant = indexTenant(c);
      let ix = byTenant.get(tenant);
      if (ix === undefined) {
        ix = { apis: new Set(), apps: new Set(), users: new Set(), ranges: [] };
        byTenant.set(tenant, ix);
      }
      switch (c.type) {
        case 'API':
          ix.apis.add(tenantContext(tenant, c.value.replace(/\/+$/, '')));
          break;
        case 'APPLICATION':
          ix.apps.add(c.value);
          break;
        case 'USER':
          ix.users.add(c.value);
          break;
        default: {
          const m = ipMatcher(c.type === 'IP' ? 'ip' : 'ip_range', c.value);
          if (m !== undefined) ix.ranges.push({ low: m[0], high: m[1], invert: c.invert });
        }
      }
    }
    this.byTenant = byTenant;
    this.version++;
  }

  /** The type of the first condition of the call's tenant that blocks the call, or undefined. */
  blocks(s: BlockingSubject): BlockingType | undefined {
    if (this.byId.size === 0) return undefined;
    const ix = this.byTenant.get(tenantDomainOf(s.apiContext) ?? SUPER_TENANT);
    if (ix === undefined) return undefined;
    if (ix.apis.size > 0 && (ix.apis.has(s.apiPath) || ix.apis.has(s.apiContext))) return 'API';
    const app = s.application;
    if (ix.apps.size > 0 && app !== undefined && (ix.apps.has(`${app.owner}:${app.name}`) || ix.apps.has(app.name) || ix.apps.has(app.id)))
      return 'APPLICATION';
    if (ix.users.size > 0 && s.user !== undefined && ix.users.has(s.user)) return 'USER';
    if (ix.ranges.length > 0) {
      const n = ipNumber(plainIp(s.ip));
      for (const r of ix.ranges) {
        const inside = n !== undefined && n >= r.low && n <= r.high;
        if (inside !== r.invert) return r.low === r.high ? 'IP' : 'IP_RANGE';
      }
    }
    return undefined;
  }
}

/**
 * The tenant whose calls a condition applies to: its own, except for a super tenant API condition on a
 * tenant's `/t/<domain>/...` context. No such condition can be added now (the admin API answers 400); one
 * written before tenants had their own conditions blocked that tenant's API, and still does.
 */
function indexTenant(c: BlockingCondition): string {
  const own = c.tenant ?? SUPER_TENANT;
  return own === SUPER_TENANT && c.type === 'API' ? (tenantDomainOf(c.value) ?? own) : own;
}

/** A tenant's API condition as the URL context it is served at: `/pizza` of acme.test is `/t/acme.test/pizza`. */
function tenantContext(tenant: string, value: string): string {
  return tenant === SUPER_TENANT || value.startsWith(`/t/${tenant}/`) ? value : `/t/${tenant}${value}`;
}
