/**
 * Throttle counters: fixed windows aligned to multiples of the policy's unit time since the epoch.
 *
 * Why fixed and aligned rather than sliding: the count is exact (N allowed, N+1 refused, the reference's
 * "requests per unit time"), one key costs one small entry whatever the rate, `RateLimit-Reset` is exact,
 * and every node names the same window the same way (`key@windowStart`), so the Redis store can add up
 * the nodes' counts without clocks agreeing on anything but the window boundary. The known cost, up to 2N
 * across a boundary, is what burst control (900807) is for.
 *
 * Checking is separate from counting: the engine peeks every level first and counts the request at every
 * level only when all of them allow it, so a request refused at the application level does not use up
 * the subscription's quota. One process is single-threaded, so peek + add is exact under any concurrency.
 */

/** Where counters live. Both operations are synchronous: no network round trip per request. */
export interface CounterStore {
  /** The count of `key` in the window containing `now` (0 for none). */
  peek(key: string, windowMs: number, now: number): number;
  /**
   * Adds `cost` to `key` in the window containing `now`; returns the new count. `limit` is the limit the
   * engine applies to the key: a store that reports counts to a traffic manager sends it along
   * (decisions.ts); the others ignore it.
   */
  add(key: string, cost: number, windowMs: number, now: number, limit?: number): number;
  /** Counters held in memory now. */
  readonly size: number;
  close(): Promise<void>;
}

/** One counter: the window it counts and how much it counted. */
export class Counter {
  constructor(
    public start: number,
    public end: number,
    public count: number,
  ) {}
}

export function windowStart(now: number, windowMs: number): number {
  return now - (now % windowMs);
}

/**
 * Exact counters of one process with bounded memory: at most `maxCounters` entries. Idle keys (their
 * window ended) are removed by a sweep every `sweepMs` (unref'd) and whenever the store is full. When it is
 * full of live counters, the oldest go (a Map keeps insertion order) even though their window still runs:
 * that under-counts the evicted keys (they may get more than their limit). It only happens under a flood
 * of distinct keys larger than the bound, and is what keeps such a flood from exhausting memory.
 */
export class MemoryCounterStore implements CounterStore {
  readonly map = new Map<string, Counter>();
  /** Entries evicted while their window still ran (memory bound reached). */
  evictedLive = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly maxCounters = 100_000,
    sweepMs = 10_000,
    private readonly clock: () => number = Date.now,
  ) {
    if (sweepMs > 0) {
      this.timer = setInterval(() => this.sweep(this.clock()), sweepMs);
      this.timer.unref();
    }
  }

  get size(): number {
    return this.map.size;
  }

  peek(key: string, windowMs: number, now: number): number {
    const c = this.live(key, now);
    return c === undefined ? 0 : c.count;
  }

  /**
   * The entry of a key while its window contains `now`, else undefined. One look-up: the throttle engine
   * reads a level's count here and adds to the same entry when the call is allowed (engine.ts decide()).
   */
  live(key: string, now: number): Counter | undefined {
    const c = this.map.get(key);
    return c === undefined || now >= c.end || now < c.start ? undefined : c;
  }

  add(key: string, cost: number, windowMs: number, now: number): number {
    const c = this.map.get(key);
    if (c !== undefined) {
      if (now >= c.end || now < c.start) {
        c.start = windowStart(now, windowMs);
        c.end = c.start + windowMs;
        c.count = 0;
      }
      c.count += cost;
      return c.count;
    }
    this.makeRoom(now);
    const start = windowStart(now, windowMs);
    this.map.set(key, new Counter(start, start + windowMs, cost));
    return cost;
  }

  /** The entry of a key, for stores that layer on this one. */
  entry(key: string): Counter | undefined {
    return this.map.get(key);
  }

  /**
   * Called when the store is full: drops every expired entry, and when that frees less than a sixteenth of
   * the bound, the oldest entries up to that sixteenth (live or not). Working in batches keeps the cost
   * amortised O(1) per insert: V8's Map leaves holes at its front until it rehashes, so evicting one entry
   * per insert from the front would scan those holes every time.
   */
  private makeRoom(now: number): void {
    if (this.map.size < this.maxCounters) return;
    const batch = Math.max(1, this.maxCounters >> 4);
    const target = this.maxCounters - batch;
    this.sweep(now);
    if (this.map.size <= target) return;
    let drop = this.map.size - target;
    for (const k of this.map.keys()) {
      if (drop-- <= 0) break;
      this.map.delete(k);
      this.evictedLive++;
    }
  }

  /** Removes every counter whose window has ended. */
  sweep(now: number): number {
    let n = 0;
    for (const [k, c] of this.map) {
      if (now >= c.end) {
        this.map.delete(k);
        n++;
      }
    }
    return n;
  }

  close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.map.clear();
    return Promise.resolve();
  }
}
