/**
 * Blocking conditions enforced (spec 002 part 7: 900805 "blocked by user, IP, application or API context";
 * spec 000 [apim.throttling] enable_blacklist_condition; their types and check: lib/events/blocking.ts).
 * Kept in the key manager's store, edited with the admin API and the CLI, and pushed to the gateway as events (docs/events.md: blocking.added, blocking.removed),
 * so a change is in force as soon as the event is delivered, not after a polling period.
 *
 * Matching is by set lookup (API, application, user, IP) and a short list of ranges, so a gateway with no
 * conditions pays one size check per request.
 */
import { ipMatcher, ipNumber, plainIp } from '../events/ip';
import type { BlockingCondition, BlockingType } from '../events/blocking';

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

export class BlockingConditions {
  private readonly byId = new Map<string, BlockingCondition>();
  private apis = new Set<string>();
  private apps = new Set<string>();
  private users = new Set<string>();
  private ranges: Range[] = [];
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
    const apis = new Set<string>();
    const apps = new Set<string>();
    const users = new Set<string>();
    const ranges: Range[] = [];
    for (const c of this.byId.values()) {
      switch (c.type) {
        case 'API':
          apis.add(c.value.replace(/\/+$/, ''));
          break;
        case 'APPLICATION':
          apps.add(c.value);
          break;
        case 'USER':
          users.add(c.value);
          break;
        default: {
          const m = ipMatcher(c.type === 'IP' ? 'ip' : 'ip_range', c.value);
          if (m !== undefined) ranges.push({ low: m[0], high: m[1], invert: c.invert });
        }
      }
    }
    this.apis = apis;
    this.apps = apps;
    this.users = users;
    this.ranges = ranges;
    this.version++;
  }

  /** The type of the first condition that blocks the call, or undefined. */
  blocks(s: BlockingSubject): BlockingType | undefined {
    if (this.byId.size === 0) return undefined;
    if (this.apis.size > 0 && (this.apis.has(s.apiPath) || this.apis.has(s.apiContext))) return 'API';
    const app = s.application;
    if (
      this.apps.size > 0 &&
      app !== undefined &&
      (this.apps.has(`${app.owner}:${app.name}`) || this.apps.has(app.name) || this.apps.has(app.id))
    )
      return 'APPLICATION';
    if (this.users.size > 0 && s.user !== undefined && this.users.has(s.user)) return 'USER';
    if (this.ranges.length > 0) {
      const n = ipNumber(plainIp(s.ip));
      for (const r of this.ranges) {
        const inside = n !== undefined && n >= r.low && n <= r.high;
        if (inside !== r.invert) return r.low === r.high ? 'IP' : 'IP_RANGE';
      }
    }
    return undefined;
  }
}
