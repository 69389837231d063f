/**
 * The throttle engine: one decision per call, in the reference's order (spec 002 part 7):
 *
 *   blocking (900805) -> API level (900800) or resource level (900802) -> subscription (900804)
 *   -> burst (900807) -> application (900803) -> custom (900806) -> hard limit per endpoint (900801, 503)
 *
 * Every level is checked before any is counted: a call refused at one level uses up nobody's quota, and a
 * call let through is counted at every level it passed. The first level (in that order) whose limit is
 * reached gives the code. Counting goes through a CounterStore (counters.ts): synchronous, no network
 * round trip per call. Levels whose policy counts `exact` or `leased` (docs/throttling.md, "Counting
 * modes") go through SharedQuotas (shared.ts) instead: a leased level with local quota answers at once;
 * an exact level, or a leased one waiting for quota, makes the verdict `pending`.
 *
 * The decision object and the level arrays are reused from call to call (the engine is synchronous and a
 * process runs one call at a time), so a call allocates only the counter keys it needs.
 */
import { ApiCode } from '../faults';
import type { BlockingConditions, BlockingType } from './blocking';
import { MemoryCounterStore, type Counter, type CounterStore } from './counters';
import {
  ipNumber,
  ipMatcher,
  type ApiPolicy,
  type Condition,
  type ConditionGroup,
  type CountingMode,
  type CustomPolicy,
  type Policies,
  type PolicyOptions,
  type Quota,
} from './policies';
import { Take, type SharedQuotas } from './shared';
import { headerValue } from '../transport/headers';

/** The throttling codes of spec 002 part 7, taken from the one fault table (lib/faults/index.ts). */
export const Code = {
  ALLOWED: 0,
  THROTTLED_OUT: ApiCode.THROTTLED_OUT,
  HARD_LIMIT_EXCEEDED: ApiCode.HARD_LIMIT_EXCEEDED,
  RESOURCE_THROTTLED: ApiCode.RESOURCE_THROTTLED,
  APPLICATION_THROTTLED: ApiCode.APPLICATION_THROTTLED,
  SUBSCRIPTION_THROTTLED: ApiCode.SUBSCRIPTION_THROTTLED,
  BLOCKED: ApiCode.BLOCKED,
  CUSTOM_POLICY_THROTTLED: ApiCode.CUSTOM_POLICY_THROTTLED,
  BURST_THROTTLED: ApiCode.BURST_THROTTLED,
} as const;
export type ThrottleCode = (typeof Code)[keyof typeof Code];

/**
 * Who the call is, as throttling keys read it (spec 000, [apim.throttling]): the fields of the
 * authentication context it counts by (lib/security's AuthContext has them all).
 */
export interface ThrottleIdentity {
  /** 'none': an open resource, counted like a call without authentication. */
  readonly kind: string;
  readonly applicationId: string;
  readonly applicationName: string;
  readonly applicationTier: string;
  readonly subscriber: string;
  readonly subscriptionTier: string;
  readonly endUser: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

/** What the engine needs of a call (the gateway's throttling phase fills it from the call). */
export interface ThrottleCall {
  readonly ip: string;
  /** The versioned context (/pizzashack/1.0.0), the context as written, version and name of the API. */
  readonly apiPath: string;
  readonly apiContext: string;
  readonly apiVersion: string;
  readonly apiName: string;
  /** "GET /menu/{id}": the resource as defined. */
  readonly resourceKey: string;
  /** `policy` of the API, and of the resource (used only when the API has none). */
  readonly apiPolicy: string | undefined;
  readonly resourcePolicy: string | undefined;
  /** The subscription tier of calls without authentication (resource, else API, else "Unauthenticated"). */
  readonly unauthenticatedPolicy: string;
  /** undefined (authentication not run, or the resource needs none) counts per client IP. */
  readonly auth: ThrottleIdentity | undefined;
  /** Flat [name, value, ...] request fields, and the query with its '?' ('' for none). */
  readonly headers: readonly string[];
  readonly query: string;
  /** Request body bytes as declared (Content-Length; 0 when absent or chunked): what bandwidth quotas count. */
  readonly bytes: number;
  /**
   * More resource-level policies of the call, as [resource key, policy] pairs: a GraphQL query's fields
   * that carry one (docs/graphql.md). Each is counted like `resourcePolicy` (900802), under its own key;
   * ignored when the API has a policy.
   */
  readonly fieldPolicies?: readonly (readonly [string, string])[];
  /** The endpoint's pool key and its hard limit (requests per second), when it has one. */
  readonly endpointKey: string | undefined;
  readonly maxTps: number | undefined;
}

/** The engine's answer; the same object is returned for every call (read it before the next call). */
export interface Verdict {
  code: ThrottleCode;
  /** The blocking condition type, for 900805. */
  blockedBy: BlockingType | undefined;
  /** ms until the refusing level's window ends (Retry-After, nextAccessTime); -1 when not throttled. */
  retryAfterMs: number;
  /** The most restrictive finite level of this call (IETF RateLimit fields); limit -1 when none. */
  limit: number;
  remaining: number;
  resetMs: number;
  /**
   * A level counted `exact`, or `leased` without local quota, waits for Redis: the verdict is then this
   * Promise's (a verdict object of its own); `code` stays ALLOWED meanwhile and must not be read.
   */
  pending: Promise<Verdict> | undefined;
  /** The refusal is a fail = "closed" policy's while Redis is unreachable, not a reached limit. */
  unavailable: boolean;
}

export interface EngineOptions {
  readonly policies: Policies;
  readonly counters: CounterStore;
  readonly blocking: BlockingConditions;
  /** Condition types in force ([apim.throttling] switches). */
  readonly switches: Pick<PolicyOptions, 'headerConditions' | 'queryConditions' | 'claimConditions'>;
  /** [apim.throttling] enable_blacklist_condition. */
  readonly blockingEnabled: boolean;
  /** A tier named by a token or an API file that the policies do not define (once per name). */
  readonly onUnknownPolicy?: (kind: 'subscription' | 'application' | 'api', name: string) => void;
  /** `[throughway.throttling] counting`: the mode of policies without their own `counting` (default async). */
  readonly counting?: CountingMode;
  /** The exact and leased counters, made on first use (createThrottle: the Redis link). */
  readonly shared?: () => SharedQuotas;
}

/** Counting modes of a level: 0 through the CounterStore, else through SharedQuotas. */
const MODE = { async: 0, exact: 1, leased: 2 } as const;
const MODE_NAME = ['async', 'exact', 'leased'] as const;

const MAX_LEVELS = 16;
/** Entries of the level-key cache per map before it starts over. */
const KEY_CACHE_MAX = 4096;

type TemplatePart = string | ((c: ThrottleCall) => string);

/** An identity's counter keys: `s|<application>|<api path>`, its burst key `bs|...`, and `a|<application>|<end user>`. */
interface IdentityKeys {
  readonly apiPath: string;
  readonly subscription: string;
  readonly burst: string;
  readonly application: string;
}

const TEMPLATE_VALUES: Record<string, (c: ThrottleCall) => string> = {
  $userId: (c) => c.auth?.endUser ?? '',
  $appId: (c) => c.auth?.applicationId ?? '',
  $appName: (c) => c.auth?.applicationName ?? '',
  $subscriber: (c) => c.auth?.subscriber ?? '',
  $apiContext: (c) => c.apiContext,
  $apiVersion: (c) => c.apiVersion,
  $apiName: (c) => c.apiName,
  $clientIp: (c) => c.ip,
  $resource: (c) => c.resourceKey,
};

function compileTemplate(t: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let last = 0;
  for (const m of t.matchAll(/\$[A-Za-z]+/g)) {
    if (m.index > last) parts.push(t.slice(last, m.index));
    parts.push(TEMPLATE_VALUES[m[0]] ?? m[0]);
    last = m.index + m[0].length;
  }
  if (last < t.length) parts.push(t.slice(last));
  return parts;
}

export class ThrottleEngine {
  policies: Policies;
  readonly counters: CounterStore;
  /**
   * The counters when they are exactly a MemoryCounterStore (a subclass may count differently): decide()
   * then reads each level's entry once and adds to it in place, one Map look-up per level instead of a
   * peek and an add (docs/performance.md, "Counting instructions").
   */
  private readonly memory: MemoryCounterStore | undefined;
  readonly blocking: BlockingConditions;
  private readonly options: EngineOptions;
  /** Tier names already reported unknown, per kind (looked up without building a string per call). */
  private readonly unknown = { subscription: new Set<string>(), application: new Set<string>(), api: new Set<string>() };
  /**
   * Counter keys that only depend on the API and resource definitions (`p|...`, `r|...`), per API path and
   * resource key: the same string each call, its hash computed once. Bounded by the APIs' resources; cleared
   * past KEY_CACHE_MAX (a redeploy leaves old paths behind).
   */
  private readonly levelKeys = new Map<string, Map<string, string>>();
  private lastApiPath: string | undefined;
  private lastApiKey = '';
  /**
   * The counter keys of an identity (the security cache hands the same object to every call of one token on
   * one API): one look-up per call gives the subscription, burst and application keys.
   */
  private readonly identityKeys = new WeakMap<ThrottleIdentity, IdentityKeys>();
  private templates = new Map<CustomPolicy, TemplatePart[]>();
  /** Subscription tiers that count nothing, when no custom policy counts every call either. */
  private freeTiers = new Set<string>();
  private readonly ipRanges = new WeakMap<Condition, readonly [bigint, bigint]>();
  /** The levels of the call being decided (reused). */
  private n = 0;
  private readonly keys: string[] = new Array<string>(MAX_LEVELS).fill('');
  private readonly quotas: Quota[] = [];
  private readonly codes: ThrottleCode[] = [];
  private readonly enforced: boolean[] = [];
  private readonly costs: number[] = [];
  private readonly modes: number[] = [];
  private readonly takes: (Take | Promise<Take> | undefined)[] = [];
  private readonly defaultMode: number;
  private sharedQuotas: SharedQuotas | undefined;
  /** The live entry of each level read by decide() on a MemoryCounterStore (undefined: none, or its window ended). */
  private readonly entries: (Counter | undefined)[] = new Array<Counter | undefined>(MAX_LEVELS).fill(undefined);
  private readonly verdict: Verdict = {
    code: Code.ALLOWED,
    blockedBy: undefined,
    retryAfterMs: -1,
    limit: -1,
    remaining: 0,
    resetMs: 0,
    pending: undefined,
    unavailable: false,
  };

  constructor(options: EngineOptions) {
    this.options = options;
    this.policies = options.policies;
    this.counters = options.counters;
    this.memory = options.counters.constructor === MemoryCounterStore ? (options.counters as MemoryCounterStore) : undefined;
    this.blocking = options.blocking;
    this.defaultMode = MODE[options.counting ?? 'async'];
    this.setPolicies(options.policies);
  }

  /** The exact and leased counters, when a level has used them (or startShared() made them). */
  get shared(): SharedQuotas | undefined {
    return this.sharedQuotas;
  }

  /** Makes the exact and leased counters now: the gateway joins the membership set from its start. */
  startShared(): SharedQuotas | undefined {
    if (this.options.shared !== undefined) this.sharedQuotas ??= this.options.shared();
    return this.sharedQuotas;
  }

  /** New policies: counters keep counting under the same keys. */
  setPolicies(p: Policies): void {
    this.policies = p;
    this.templates = new Map(p.custom.map((c) => [c, compileTemplate(c.keyTemplate)]));
    const free = new Set<string>();
    for (const [name, sp] of p.subscription) if (sp.quota.kind === 'unlimited' && sp.burst === undefined) free.add(name);
    this.freeTiers = p.custom.length === 0 ? free : new Set();
  }

  /**
   * True when a call without authentication, to an API and resource without policies or hard limit,
   * would be counted nowhere: the phase then skips building the call (the pass-through path of an
   * Unlimited API allocates nothing for throttling).
   */
  nothingToCount(unauthenticatedPolicy: string): boolean {
    return this.freeTiers.has(unauthenticatedPolicy) && (!this.options.blockingEnabled || this.blocking.size === 0);
  }

  private unknownPolicy(kind: 'subscription' | 'application' | 'api', name: string): void {
    const seen = this.unknown[kind];
    if (seen.has(name)) return;
    seen.add(name);
    this.options.onUnknownPolicy?.(kind, name);
  }

  /** `p|<api path>` (API level) or `r|<api path>|<resource>` (resource level), made once per pair. */
  private levelKey(apiLevel: boolean, apiPath: string, resourceKey: string): string {
    // The last API-level key answers the next call on the same API without the two look-ups below.
    if (apiLevel && apiPath === this.lastApiPath) return this.lastApiKey;
    let byResource = this.levelKeys.get(apiPath);
    if (byResource === undefined) {
      if (this.levelKeys.size >= KEY_CACHE_MAX) this.levelKeys.clear();
      byResource = new Map();
      this.levelKeys.set(apiPath, byResource);
    }
    // The API-level key is kept under '' (no resource key is empty: they start with the method).
    const k = apiLevel ? '' : resourceKey;
    let key = byResource.get(k);
    if (key === undefined) {
      key = apiLevel ? `p|${apiPath}` : `r|${apiPath}|${resourceKey}`;
      if (byResource.size >= KEY_CACHE_MAX) byResource.clear();
      byResource.set(k, key);
    }
    if (apiLevel) {
      this.lastApiPath = apiPath;
      this.lastApiKey = key;
    }
    return key;
  }

  /** The keys of an identity on `apiPath`, made once per identity object (and again for another API path). */
  private keysOf(auth: ThrottleIdentity, apiPath: string): IdentityKeys {
    let e = this.identityKeys.get(auth);
    if (e === undefined || e.apiPath !== apiPath) {
      const subscription = `s|${auth.applicationId}|${apiPath}`;
      e = { apiPath, subscription, burst: `b${subscription}`, application: e?.application ?? `a|${auth.applicationId}|${auth.endUser}` };
      this.identityKeys.set(auth, e);
    }
    return e;
  }

  private level(key: string, quota: Quota, code: ThrottleCode, enforced: boolean, bytes: number): void {
    if (quota.kind === 'unlimited') return;
    const i = this.n++;
    this.keys[i] = key;
    this.quotas[i] = quota;
    this.codes[i] = code;
    this.enforced[i] = enforced;
    this.costs[i] = quota.kind === 'bandwidth' ? bytes : 1;
    // A level that never refuses (stop_on_quota_reach = false) gains nothing from a shared decision.
    this.modes[i] =
      !enforced || this.options.shared === undefined ? 0 : quota.counting === undefined ? this.defaultMode : MODE[quota.counting];
  }

  private holds(c: Condition, call: ThrottleCall): boolean {
    switch (c.type) {
      case 'ip':
      case 'ip_range': {
        let r = this.ipRanges.get(c);
        if (r === undefined) {
          r = ipMatcher(c.type, c.value) ?? [1n, 0n];
          this.ipRanges.set(c, r);
        }
        const n = ipNumber(call.ip);
        return n !== undefined && n >= r[0] && n <= r[1];
      }
      case 'header': {
        const v = headerValue(call.headers, c.name);
        return v !== undefined && (c.pattern as RegExp).test(v);
      }
      case 'query': {
        if (call.query.length < 2) return false;
        for (const v of new URLSearchParams(call.query.slice(1)).getAll(c.name)) if ((c.pattern as RegExp).test(v)) return true;
        return false;
      }
      case 'claim': {
        const v = call.auth?.claims[c.name];
        if (v === undefined || v === null) return false;
        const list = Array.isArray(v) ? v : [v];
        for (const x of list) if ((c.pattern as RegExp).test(typeof x === 'string' ? x : JSON.stringify(x))) return true;
        return false;
      }
    }
  }

  /** The first condition group that applies: every condition in force holds (inverted ones do not). */
  private group(p: ApiPolicy, call: ThrottleCall): number {
    const sw = this.options.switches;
    outer: for (let g = 0; g < p.groups.length; g++) {
      const group = p.groups[g] as ConditionGroup;
      for (const c of group.conditions) {
        // A condition type switched off in [apim.throttling] makes its group never apply.
        if (
          (c.type === 'header' && !sw.headerConditions) ||
          (c.type === 'query' && !sw.queryConditions) ||
          (c.type === 'claim' && !sw.claimConditions)
        )
          continue outer;
        if (this.holds(c, call) === c.invert) continue outer;
      }
      return g;
    }
    return -1;
  }

  private readonly tps = new Map<number, Quota>();

  /** The hard limit's quota, one object per distinct max_tps. */
  private perSecond(n: number): Quota {
    let q = this.tps.get(n);
    if (q === undefined) {
      q = Object.freeze({ kind: 'requests', limit: n, windowMs: 1000 });
      this.tps.set(n, q);
    }
    return q;
  }

  /** One advanced ([[api]]) policy's level under `base`: its quota, or the quota of the condition group the call matches. */
  private advanced(name: string, base: string, code: ThrottleCode, call: ThrottleCall, bytes: number): void {
    const ap = this.policies.api.get(name);
    if (ap === undefined) {
      this.unknownPolicy('api', name);
      return;
    }
    const g = ap.groups.length > 0 ? this.group(ap, call) : -1;
    const q = g < 0 ? ap.quota : (ap.groups[g] as ConditionGroup).quota;
    this.level(g < 0 ? base : `${base}|g${g}`, q, code, true, bytes);
  }

  /** Decides one call at `now` (epoch ms) and counts it when it is allowed. */
  check(call: ThrottleCall, now: number): Verdict {
    const v = this.fresh();
    const auth = call.auth !== undefined && call.auth.kind !== 'none' ? call.auth : undefined;

    // 900805: blocking conditions.
    if (this.options.blockingEnabled && this.blocking.size > 0) {
      const by = this.blocking.blocks({
        ip: call.ip,
        apiPath: call.apiPath,
        apiContext: call.apiContext,
        application: auth !== undefined ? { id: auth.applicationId, name: auth.applicationName, owner: auth.subscriber } : undefined,
        user: auth?.endUser,
      });
      if (by !== undefined) {
        v.code = Code.BLOCKED;
        v.blockedBy = by;
        return v;
      }
    }

    const p = this.policies;
    const bytes = call.bytes > 0 ? call.bytes : 0;
    this.n = 0;

    // 900800 / 900802: the API's advanced policy, or else the resource's.
    const advanced = call.apiPolicy ?? call.resourcePolicy;
    if (advanced !== undefined) {
      const apiLevel = call.apiPolicy !== undefined;
      this.advanced(
        advanced,
        this.levelKey(apiLevel, call.apiPath, call.resourceKey),
        apiLevel ? Code.THROTTLED_OUT : Code.RESOURCE_THROTTLED,
        call,
        bytes,
      );
    }
    const fields = call.fieldPolicies;
    if (fields !== undefined && call.apiPolicy === undefined)
      for (const [key, policy] of fields) this.advanced(policy, `r|${call.apiPath}|${key}`, Code.RESOURCE_THROTTLED, call, bytes);

    // 900804 / 900807: the subscription tier, or the unauthenticated tier per client IP.
    const tier = auth !== undefined ? auth.subscriptionTier : call.unauthenticatedPolicy;
    const sp = p.subscription.get(tier);
    // The identity's keys, looked up once for both levels below and only when one of them counts.
    let keys: IdentityKeys | undefined;
    if (sp === undefined) this.unknownPolicy('subscription', tier);
    else if (sp.quota.kind !== 'unlimited' || sp.burst !== undefined) {
      if (auth !== undefined) keys = this.keysOf(auth, call.apiPath);
      const key = keys !== undefined ? keys.subscription : `u|${call.apiPath}|${call.ip}`;
      this.level(key, sp.quota, Code.SUBSCRIPTION_THROTTLED, sp.stopOnQuotaReach, bytes);
      if (sp.burst !== undefined) this.level(keys !== undefined ? keys.burst : `b${key}`, sp.burst, Code.BURST_THROTTLED, true, bytes);
    }

    // 900803: the application tier, per application and end user (the reference's appId:authorizedUser).
    if (auth !== undefined) {
      const app = p.application.get(auth.applicationTier);
      if (app === undefined) this.unknownPolicy('application', auth.applicationTier);
      else if (app.quota.kind !== 'unlimited')
        this.level((keys ?? this.keysOf(auth, call.apiPath)).application, app.quota, Code.APPLICATION_THROTTLED, true, bytes);
    }

    // 900806: custom policies, one counter per value of the key template.
    for (const c of p.custom) {
      const parts = this.templates.get(c) as TemplatePart[];
      let key = `c|${c.name}|`;
      for (const part of parts) key += typeof part === 'string' ? part : part(call);
      this.level(key, c.quota, Code.CUSTOM_POLICY_THROTTLED, true, bytes);
    }

    // 900801: the endpoint's hard limit, over every caller.
    if (call.maxTps !== undefined && call.endpointKey !== undefined)
      this.level(`h|${call.endpointKey}`, this.perSecond(call.maxTps), Code.HARD_LIMIT_EXCEEDED, true, bytes);

    return this.decide(v, now);
  }

  /**
   * Only the field policies of `call` (a GraphQL subscribe message on a tunnel whose frames are counted
   * already: docs/graphql.md), counted as check() counts them: 900802 when one is exhausted, nothing
   * counted then. Ignored when the API has a policy, as in check().
   */
  checkFields(call: ThrottleCall, now: number): Verdict {
    const v = this.fresh();
    this.n = 0;
    const fields = call.fieldPolicies;
    if (fields !== undefined && call.apiPolicy === undefined)
      for (const [key, policy] of fields) this.advanced(policy, `r|${call.apiPath}|${key}`, Code.RESOURCE_THROTTLED, call, 0);
    return this.decide(v, now);
  }

  /** The verdict object, reset to "allowed, no limit". */
  private fresh(): Verdict {
    const v = this.verdict;
    v.code = Code.ALLOWED;
    v.blockedBy = undefined;
    v.retryAfterMs = -1;
    v.limit = -1;
    v.remaining = 0;
    v.resetMs = 0;
    v.pending = undefined;
    v.unavailable = false;
    return v;
  }

  /** Every level gathered is checked before any is counted: the first exhausted one refuses. */
  private decide(v: Verdict, now: number): Verdict {
    const n = this.n;
    if (n === 0) return v;
    const store = this.counters;
    const memory = this.memory;
    const entries = this.entries;
    let best = Infinity;
    let shared = false;
    for (let i = 0; i < n; i++) {
      if (this.modes[i] !== 0) {
        shared = true;
        continue;
      }
      const q = this.quotas[i] as Quota;
      let count: number;
      if (memory !== undefined) {
        const c = memory.live(this.keys[i] as string, now);
        entries[i] = c;
        count = c === undefined ? 0 : c.count;
      } else count = store.peek(this.keys[i] as string, q.windowMs, now);
      const resetMs = q.windowMs - (now % q.windowMs);
      if (count >= q.limit && this.enforced[i] === true) {
        v.code = this.codes[i] as ThrottleCode;
        v.retryAfterMs = resetMs;
        v.limit = q.limit;
        v.remaining = 0;
        v.resetMs = resetMs;
        return v;
      }
      const left = Math.max(0, q.limit - count - (this.costs[i] as number));
      if (this.enforced[i] === true && left < best) {
        best = left;
        v.limit = q.limit;
        v.remaining = left;
        v.resetMs = resetMs;
      }
    }
    if (shared) return this.decideShared(v, now, best);
    // An entry read above is live for `now` still and counted in place, until the store is asked to add: a
    // new entry may make room by evicting others (MemoryCounterStore.makeRoom), so from then on every level
    // goes through the store, as without the entries.
    let viaStore = memory === undefined;
    for (let i = 0; i < n; i++) {
      const cost = this.costs[i] as number;
      if (cost <= 0) continue;
      const c = viaStore ? undefined : entries[i];
      if (c !== undefined) c.count += cost;
      else {
        viaStore = true;
        const q = this.quotas[i] as Quota;
        store.add(this.keys[i] as string, cost, q.windowMs, now, q.limit);
      }
    }
    return v;
  }

  /**
   * The levels counted exact or leased, after the others allowed the call: each is taken (SharedQuotas.take);
   * when all are admitted the other levels are counted, else the taken ones are refunded and the first
   * refusing level (in the levels' order) answers. Synchronous when no level has to wait (a leased level
   * with local quota): the reused arrays serve then, nothing is copied.
   */
  private decideShared(v: Verdict, now: number, best: number): Verdict {
    const sq = (this.sharedQuotas ??= (this.options.shared as () => SharedQuotas)());
    const n = this.n;
    const takes = this.takes;
    let waits = false;
    for (let i = 0; i < n; i++) takes[i] = undefined;
    for (let i = 0; i < n; i++) {
      const m = this.modes[i] as number;
      if (m === 0) continue;
      const t = sq.take(MODE_NAME[m] as 'exact' | 'leased', this.keys[i] as string, this.quotas[i] as Quota, this.costs[i] as number, now);
      takes[i] = t;
      if (typeof t !== 'number') waits = true;
      else if (t !== Take.ADMITTED) break;
    }
    if (!waits)
      return this.settle(
        sq,
        { n, keys: this.keys, quotas: this.quotas, codes: this.codes, costs: this.costs, modes: this.modes },
        takes as (Take | undefined)[],
        v,
        now,
        best,
      );
    // The call waits: its levels are copied out of the reused arrays (the next call refills them).
    const levels: Levels = {
      n,
      keys: this.keys.slice(0, n),
      quotas: this.quotas.slice(0, n),
      codes: this.codes.slice(0, n),
      costs: this.costs.slice(0, n),
      modes: this.modes.slice(0, n),
    };
    const out: Verdict = {
      code: Code.ALLOWED,
      blockedBy: undefined,
      retryAfterMs: -1,
      limit: v.limit,
      remaining: v.remaining,
      resetMs: v.resetMs,
      pending: undefined,
      unavailable: false,
    };
    v.pending = Promise.all(takes.slice(0, n)).then((results) => this.settle(sq, levels, results, out, now, best));
    return v;
  }

  /** The shared levels' answers (undefined: not taken) into `out`; an allowed call's other levels are counted. */
  private settle(sq: SharedQuotas, l: Levels, results: readonly (Take | undefined)[], out: Verdict, now: number, best: number): Verdict {
    const n = l.n;
    let refused = -1;
    for (let i = 0; i < n && refused < 0; i++) if (results[i] !== undefined && results[i] !== Take.ADMITTED) refused = i;
    if (refused >= 0) {
      for (let i = 0; i < n; i++)
        if (results[i] === Take.ADMITTED)
          sq.refund(
            MODE_NAME[l.modes[i] as number] as 'exact' | 'leased',
            l.keys[i] as string,
            l.quotas[i] as Quota,
            l.costs[i] as number,
            now,
          );
      const q = l.quotas[refused] as Quota;
      const resetMs = q.windowMs - (now % q.windowMs);
      out.code = l.codes[refused] as ThrottleCode;
      out.unavailable = results[refused] === Take.UNAVAILABLE;
      // Fail closed: try again in a second, not at the window's end (the limit was not reached).
      out.retryAfterMs = out.unavailable ? Math.min(1000, resetMs) : resetMs;
      out.limit = q.limit;
      out.remaining = 0;
      out.resetMs = resetMs;
      return out;
    }
    let low = best;
    for (let i = 0; i < n; i++) {
      const q = l.quotas[i] as Quota;
      const cost = l.costs[i] as number;
      if (l.modes[i] === 0) {
        if (cost > 0) this.counters.add(l.keys[i] as string, cost, q.windowMs, now, q.limit);
        continue;
      }
      const left = sq.remaining(l.keys[i] as string, q.limit);
      if (left < low) {
        low = left;
        out.limit = q.limit;
        out.remaining = left;
        out.resetMs = q.windowMs - (now % q.windowMs);
      }
    }
    return out;
  }
}

/** The levels of one call, as decideShared hands them to settle (the engine's arrays, or copies of them). */
interface Levels {
  readonly n: number;
  readonly keys: readonly string[];
  readonly quotas: readonly Quota[];
  readonly codes: readonly ThrottleCode[];
  readonly costs: readonly number[];
  readonly modes: readonly number[];
}
