/**
 * Throttle decisions from a traffic manager (docs/scale-out.md; spec 002
 * part 6: "Request and throttle data publishing | gateway | traffic manager | enable_data_publishing" and
 * "Throttle decision messages on JMS topic (default name throttleData) | traffic manager | gateway |
 * enable_decision_connection"). `[throughway.throttling] counter_store = "traffic-manager"`.
 *
 * The gateway counts every key exactly, on its own (a MemoryCounterStore inside: no network round trip
 * per call). Every `sync_interval` it publishes one batch of what it counted since the last batch
 * (throttle data: key, window start, window length, count, and the limit the engine applied) on the
 * Redis channel `<[throughway.scale] channel>:throttleRequests`. The traffic manager
 * (lib/scale/traffic-manager.ts) adds up the nodes' batches per key and window and, when a key's total
 * reaches its limit, publishes a decision `{key, windowStart, until, limit}` on
 * `<channel>:throttleData`. Until `until`, and only in that window, this store reports the key at least
 * at its limit, so the engine refuses it with its usual code and headers.
 *
 * Overshoot bound (docs/throttling.md): the limit-th call across nodes reaches the traffic manager at
 * most one sync interval after it was counted, and its decision reaches the nodes one round trip later;
 * the nodes admit what they admit in that time beyond the limit, and never more than K x limit in all
 * (each node's own count is exact).
 *
 * Redis or the traffic manager away: decisions go on with the local counts (never a refusal because they
 * are away), one warning per outage, and the `throttle_decisions` health checker is DOWN. A PUBLISH answers
 * how many subscribers received it: 0 means no traffic manager listens (a batch, or an empty one every
 * second as a heartbeat, tells).
 */
import type { Redis } from 'ioredis';
import type * as IORedis from 'ioredis';
import { load } from '../config/packages';

/** ioredis, loaded when the first client is made (lib/config/packages.ts). */
const redisClass = (): typeof IORedis.Redis =>
  load<typeof IORedis>('ioredis', '[throughway.throttling] counter_store = "traffic-manager"').Redis;
import type { HealthChecker } from '../events/observed';
import type { Logger } from '../log';
import { MemoryCounterStore, windowStart, type CounterStore } from './counters';

/** One key's counts in one window, as a gateway publishes them. */
export interface ThrottleData {
  readonly key: string;
  readonly windowStart: number;
  readonly windowMs: number;
  readonly count: number;
  /** The limit the engine applied to the key (0 when not known). */
  readonly limit: number;
}

/** A traffic manager's decision: `key` is refused in the window starting at `windowStart` until `until`. */
export interface Decision {
  readonly key: string;
  readonly windowStart: number;
  readonly until: number;
  readonly limit: number;
}

/** The pub/sub channels under the event hub's channel name (spec 002 part 6: the topic throttleData). */
export function throttleChannels(prefix: string): { readonly data: string; readonly decisions: string } {
  return { data: `${prefix}:throttleRequests`, decisions: `${prefix}:throttleData` };
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** `{"d":[[key, windowStart, windowMs, count, limit], ...]}`: one message per batch. */
export function encodeData(data: readonly ThrottleData[]): string {
  return JSON.stringify({ d: data.map((x) => [x.key, x.windowStart, x.windowMs, x.count, x.limit]) });
}

export function decodeData(text: string): ThrottleData[] | undefined {
  const rows = rowsOf(text);
  if (rows === undefined) return undefined;
  const out: ThrottleData[] = [];
  for (const r of rows) {
    if (!Array.isArray(r) || typeof r[0] !== 'string' || !isNum(r[1]) || !isNum(r[2]) || !isNum(r[3]) || !isNum(r[4]) || r[2] <= 0)
      return undefined;
    out.push({ key: r[0], windowStart: r[1], windowMs: r[2], count: r[3], limit: r[4] });
  }
  return out;
}

/** `{"d":[[key, windowStart, until, limit], ...]}`: the decisions of one traffic manager batch. */
export function encodeDecisions(list: readonly Decision[]): string {
  return JSON.stringify({ d: list.map((x) => [x.key, x.windowStart, x.until, x.limit]) });
}

export function decodeDecisions(text: string): Decision[] | undefined {
  const rows = rowsOf(text);
  if (rows === undefined) return undefined;
  const out: Decision[] = [];
  for (const r of rows) {
    if (!Array.isArray(r) || typeof r[0] !== 'string' || !isNum(r[1]) || !isNum(r[2]) || !isNum(r[3])) return undefined;
    out.push({ key: r[0], windowStart: r[1], until: r[2], limit: r[3] });
  }
  return out;
}

function rowsOf(text: string): unknown[] | undefined {
  try {
    const m = JSON.parse(text) as { d?: unknown } | null;
    return typeof m === 'object' && m !== null && Array.isArray(m.d) ? m.d : undefined;
  } catch {
    return undefined;
  }
}

/** What a key counted since the last batch (one object per key, reused from batch to batch). */
class Pending {
  constructor(
    public windowStart: number,
    public windowMs: number,
    public count: number,
    public limit: number,
  ) {}
}

class Held {
  constructor(
    public windowStart: number,
    public until: number,
    public limit: number,
  ) {}
}

export interface DecisionLinkOptions {
  /** The decision hub's Redis (lib/config/hub.ts decisionHubUrl). */
  readonly url: string;
  /** `throttleChannels(prefix)`. */
  readonly channels: { readonly data: string; readonly decisions: string };
  /** [apim.throttling] enable_data_publishing: batches are sent. */
  readonly publish: boolean;
  /** [apim.throttling] enable_decision_connection: decisions are received. */
  readonly subscribe: boolean;
  readonly syncInterval: number;
  readonly logger: Logger;
}

export interface DecisionStoreOptions {
  readonly maxCounters: number;
  readonly clock?: () => number;
  /** Without it the store only counts and keeps what it is given (unit tests drive takeBatch / decide). */
  readonly link?: DecisionLinkOptions;
}

/** ms between two empty batches (heartbeats) that tell whether a traffic manager listens. */
const HEARTBEAT_MS = 1000;

export class DecisionCounterStore implements CounterStore {
  readonly local: MemoryCounterStore;
  private readonly pending = new Map<string, Pending>();
  private readonly decisions = new Map<string, Held>();
  private readonly clock: () => number;
  private readonly maxCounters: number;
  private pub: Redis | undefined;
  private sub: Redis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastSent = 0;
  private closed = false;
  /** Redis unreachable; no traffic manager received the last batch. */
  redisDown = false;
  tmAway = false;
  /** Counts published, decisions received (and applied), batches sent. */
  published = 0;
  received = 0;
  batches = 0;

  constructor(private readonly o: DecisionStoreOptions) {
    this.clock = o.clock ?? Date.now;
    this.maxCounters = o.maxCounters;
    this.local = new MemoryCounterStore(o.maxCounters, 10_000, this.clock);
    const link = o.link;
    if (link === undefined) return;
    const retryStrategy = (times: number): number => Math.min(2000, 50 * 2 ** Math.min(10, times));
    if (link.publish) {
      // No offline queue: a batch while Redis is away fails at once; its counts stay local (the traffic
      // manager's totals of a window are only useful while the window runs).
      this.pub = new (redisClass())(link.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy });
      this.watch(this.pub);
      this.timer = setInterval(() => void this.flush(), link.syncInterval);
      this.timer.unref();
    }
    if (link.subscribe) {
      this.sub = new (redisClass())(link.url, { maxRetriesPerRequest: null, retryStrategy });
      this.watch(this.sub);
      this.sub.on('message', (channel: string, message: string) => {
        if (channel !== link.channels.decisions) return;
        const list = decodeDecisions(message);
        if (list === undefined) {
          link.logger.log('warn', 'throttle_decision_bad_message', { length: message.length });
          return;
        }
        const now = this.clock();
        for (const d of list) this.decide(d, now);
      });
      this.sub.subscribe(link.channels.decisions).catch((err: Error) => this.redisOutage(err));
    }
  }

  private watch(c: Redis): void {
    c.on('error', (err: Error) => this.redisOutage(err));
    c.on('close', () => this.redisOutage(new Error('connection closed')));
    c.on('ready', () => {
      if (!this.redisDown || [this.pub, this.sub].some((x) => x !== undefined && x.status !== 'ready')) return;
      this.redisDown = false;
      this.o.link?.logger.log('warn', 'throttle_decisions_reconnected', { url: redacted(this.o.link.url) });
    });
  }

  private redisOutage(err: Error): void {
    if (this.redisDown || this.closed) return;
    this.redisDown = true;
    this.o.link?.logger.log('warn', 'throttle_decisions_unavailable', {
      url: redacted(this.o.link.url),
      message: `${err.message}: deciding on this node's own counts until Redis is back`,
    });
  }

  get size(): number {
    return this.local.size;
  }

  /** The local count, or at least the limit while a decision of this window holds the key. */
  peek(key: string, windowMs: number, now: number): number {
    const count = this.local.peek(key, windowMs, now);
    if (this.decisions.size === 0) return count;
    const d = this.decisions.get(key);
    if (d === undefined) return count;
    if (now >= d.until) {
      this.decisions.delete(key);
      return count;
    }
    // A decision of another window (an old one arriving late, or the next window's) refuses nothing now.
    return d.windowStart === windowStart(now, windowMs) && d.limit > count ? d.limit : count;
  }

  add(key: string, cost: number, windowMs: number, now: number, limit?: number): number {
    const n = this.local.add(key, cost, windowMs, now);
    const ws = windowStart(now, windowMs);
    const p = this.pending.get(key);
    if (p === undefined) {
      // Past the bound, new keys are counted locally but not published (the flood case of counters.ts).
      if (this.pending.size < this.maxCounters) this.pending.set(key, new Pending(ws, windowMs, cost, limit ?? 0));
    } else {
      if (p.windowStart !== ws || p.windowMs !== windowMs) {
        // The window rolled over: what was not sent of the last one no longer matters to anyone.
        p.windowStart = ws;
        p.windowMs = windowMs;
        p.count = 0;
      }
      p.count += cost;
      if (limit !== undefined) p.limit = limit;
    }
    return n;
  }

  /** What was counted since the last batch; keys idle for a whole batch are dropped. */
  takeBatch(now: number): ThrottleData[] {
    const out: ThrottleData[] = [];
    for (const [key, p] of this.pending) {
      if (p.count === 0 || now >= p.windowStart + p.windowMs) {
        this.pending.delete(key);
        continue;
      }
      out.push({ key, windowStart: p.windowStart, windowMs: p.windowMs, count: p.count, limit: p.limit });
      p.count = 0;
    }
    for (const [key, d] of this.decisions) if (now >= d.until) this.decisions.delete(key);
    return out;
  }

  /** A decision received: held until `until` (ignored when already over). */
  decide(d: Decision, now: number): void {
    if (now >= d.until) return;
    const h = this.decisions.get(d.key);
    if (h !== undefined) {
      h.windowStart = d.windowStart;
      h.until = d.until;
      h.limit = d.limit;
    } else if (this.decisions.size < this.maxCounters) this.decisions.set(d.key, new Held(d.windowStart, d.until, d.limit));
    this.received++;
  }

  /** Decisions held now. */
  get held(): number {
    return this.decisions.size;
  }

  /** One batch to the traffic manager (a heartbeat every second when nothing was counted). */
  async flush(): Promise<void> {
    const pub = this.pub;
    const link = this.o.link;
    if (pub === undefined || link === undefined || this.closed) return;
    const now = this.clock();
    const batch = this.takeBatch(now);
    if (batch.length === 0 && now - this.lastSent < HEARTBEAT_MS) return;
    if (pub.status !== 'ready') return;
    this.lastSent = now;
    try {
      const receivers = await pub.publish(link.channels.data, encodeData(batch));
      this.batches++;
      for (const b of batch) this.published += b.count;
      const away = receivers === 0;
      if (away !== this.tmAway) {
        this.tmAway = away;
        if (away)
          link.logger.log('warn', 'throttle_traffic_manager_unavailable', {
            channel: link.channels.data,
            message: "no traffic manager receives this node's throttle data: deciding on this node's own counts",
          });
        else link.logger.log('warn', 'throttle_traffic_manager_available', { channel: link.channels.data });
      }
    } catch (err) {
      this.redisOutage(err as Error);
    }
  }

  checker(order: number): HealthChecker {
    return {
      name: 'throttle_decisions',
      order,
      check: () => {
        const details = {
          url: redacted(this.o.link?.url ?? ''),
          published: this.published,
          decisions: this.received,
          held: this.decisions.size,
        };
        if (this.redisDown) return { healthy: false, message: 'throttle decision Redis unreachable: limits are counted per node', details };
        if (this.tmAway)
          return { healthy: false, message: 'no traffic manager receives the throttle data: limits are counted per node', details };
        return { healthy: true, details };
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    for (const c of [this.pub, this.sub]) c?.disconnect();
    this.pending.clear();
    this.decisions.clear();
    await this.local.close();
  }
}

/** A URL without its password (logs and health details). */
export function redacted(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//****@');
}
