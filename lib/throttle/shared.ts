/**
 * The exact and leased counting modes (docs/throttling.md, "Counting modes"), over a QuotaLink
 * (lib/throttle/quota-link.ts). The engine (engine.ts) asks take() for each level of a call counted in one
 * of these modes; the answer is a Take, or a Promise of one when the call has to wait for Redis.
 *
 * exact: every call runs the `take` script, one round trip: Redis checks and counts in one atomic step, so
 * any number of gateways admit exactly the limit in a window.
 *
 * leased: a gateway takes blocks of quota with the `lease` script (atomic: a grant never passes the limit)
 * and spends them locally, synchronously. When its block runs down to half, it asks for the next one in the
 * background; a call that finds no local quota waits for one lease round trip (calls that find none meanwhile
 * wait for the same lease). The block follows the gateway's share of the window's traffic: its grants over
 * all the grants in the window, times the limit / BLOCK_DIVISOR, between 1 and MAX_BLOCK; the script caps a
 * grant at ceil(left / nodes), so near the limit every gateway can still get its part of what is left.
 * Unspent quota goes back (`give`) when its window ends and when the gateway stops (close()).
 * A window whose quota is all granted is known exhausted for RECHECK_MS: calls are refused without asking
 * Redis; after that one call asks again (another gateway may have stopped and given quota back).
 *
 * Redis unreachable (the link is down, a command failed or timed out): no call waits for it. A policy with
 * fail = "closed" refuses (Take.UNAVAILABLE); otherwise the gateway admits up to its share, limit / nodes
 * (the gateways it last saw), of what it admitted itself in the window (leased: unspent leased quota first),
 * and remembers what it admitted meanwhile. When the link is up again, those counts are added to the
 * window's count in Redis (`add`): the counts reconcile.
 *
 * Memory: at most maxCounters entries; ended windows are dropped first, then the oldest sixteenth (their
 * unspent leased quota given back).
 */
import { windowStart } from './counters';
import type { QuotaLink } from './quota-link';
import type { Quota } from './policies';

/** What take() answers for one level. */
export const Take = { ADMITTED: 0, LIMIT: 1, UNAVAILABLE: 2 } as const;
export type Take = (typeof Take)[keyof typeof Take];

/** Lease block: limit x share / BLOCK_DIVISOR, between 1 and MAX_BLOCK. */
const BLOCK_DIVISOR = 8;
const MAX_BLOCK = 1000;
/** ms a window found exhausted is refused without asking Redis. */
const RECHECK_MS = 1000;

class Entry {
  /** Admitted by this gateway in the window (leased: spent), Redis up or down. */
  own = 0;
  /** Admitted while Redis was away, not yet added to Redis. */
  unsynced = 0;
  /** leased: granted to this gateway and not spent yet. */
  tokens = 0;
  /** leased: granted to this gateway in the window. */
  granted = 0;
  /** The window's count in Redis as last replied. */
  total = 0;
  block: number;
  leasing: Promise<void> | undefined;
  /** Date.now() until which the window counts as exhausted (0: not known to be). */
  exhaustedUntil = 0;
  constructor(
    readonly key: string,
    readonly start: number,
    readonly end: number,
    readonly limit: number,
    block: number,
  ) {
    this.block = block;
  }
}

export interface SharedQuotasOptions {
  readonly link: QuotaLink;
  readonly maxCounters: number;
  /** The throttle clock (window starts and ends). */
  readonly clock: () => number;
}

export class SharedQuotas {
  readonly link: QuotaLink;
  private readonly map = new Map<string, Entry>();
  private closed = false;
  /**
   * Calls this gateway admitted while Redis was away, over its life: the outage counts and the leased quota
   * spent while the link was down. The share bounds both (docs/throttling.md, "Redis unreachable"), but for
   * a fail = "closed" policy's leased quota, which is spent whole.
   */
  offlineAdmitted = 0;

  constructor(private readonly o: SharedQuotasOptions) {
    this.link = o.link;
    this.link.onUp = () => void this.reconcile();
  }

  get size(): number {
    return this.map.size;
  }

  /** The entry of `key` for the window of `now`; an entry of an ended window is replaced (its unspent quota given back). */
  private entry(key: string, q: Quota, now: number): Entry {
    let e = this.map.get(key);
    if (e !== undefined && now >= e.start && now < e.end) return e;
    if (e !== undefined) this.retire(e);
    else this.makeRoom(now);
    const start = windowStart(now, q.windowMs);
    e = new Entry(key, start, start + q.windowMs, q.limit, this.firstBlock(q.limit));
    this.map.set(key, e);
    return e;
  }

  private firstBlock(limit: number): number {
    return Math.max(1, Math.min(MAX_BLOCK, Math.ceil(limit / this.link.nodes / BLOCK_DIVISOR)));
  }

  /** An entry leaves the map: its unspent quota goes back, its outage counts are sent if they still can be. */
  private retire(e: Entry): void {
    if (e.tokens > 0 && this.link.isUp) {
      const n = e.tokens;
      e.tokens = 0;
      this.link.run('give', this.link.key(e.key, e.start), [n]).catch(() => undefined);
    }
    if (e.unsynced > 0 && this.link.isUp && this.o.clock() < e.end) void this.send(e);
  }

  private makeRoom(now: number): void {
    if (this.map.size < this.o.maxCounters) return;
    for (const [k, e] of this.map)
      if (now >= e.end) {
        this.retire(e);
        this.map.delete(k);
      }
    let drop = this.map.size - (this.o.maxCounters - Math.max(1, this.o.maxCounters >> 4));
    for (const [k, e] of this.map) {
      if (drop-- <= 0) break;
      this.retire(e);
      this.map.delete(k);
    }
  }

  private ttl(e: Entry): number {
    return Math.max(1, e.end - this.o.clock());
  }

  /** This gateway's share of a limit while Redis is away: limit / the gateways it last saw. */
  private share(limit: number): number {
    return Math.floor(limit / this.link.nodes);
  }

  /**
   * Redis away: fail closed, or admit while this gateway's own calls in the window are under its share and
   * the window's count as Redis last replied (plus what was admitted since) is under the limit; counted for
   * the reconciliation.
   */
  private offline(e: Entry, q: Quota, cost: number): Take {
    if (q.failClosed === true) return Take.UNAVAILABLE;
    if (e.own >= this.share(q.limit) || e.total + e.unsynced >= q.limit) return Take.LIMIT;
    e.own += cost;
    e.unsynced += cost;
    this.offlineAdmitted += cost;
    return Take.ADMITTED;
  }

  /** One level of a call: `mode` exact or leased (a bandwidth quota is always counted exactly). */
  take(mode: 'exact' | 'leased', key: string, q: Quota, cost: number, now: number): Take | Promise<Take> {
    const e = this.entry(key, q, now);
    if (mode === 'leased' && q.kind === 'requests') return this.spend(e, q, cost);
    if (this.closed || !this.link.usable()) return this.offline(e, q, cost);
    return this.link.run('take', this.link.key(key, e.start), [cost, q.limit, this.ttl(e)]).then(
      ([ok, total]) => {
        e.total = total;
        if (ok !== 1) return Take.LIMIT;
        e.own += cost;
        return Take.ADMITTED;
      },
      () => this.offline(e, q, cost),
    );
  }

  /** A level admitted by take() whose call another level refused: its count goes back. */
  refund(mode: 'exact' | 'leased', key: string, q: Quota, cost: number, now: number): void {
    const e = this.map.get(key);
    if (e === undefined || now < e.start || now >= e.end) return;
    e.own = Math.max(0, e.own - cost);
    if (e.unsynced >= cost) {
      e.unsynced -= cost;
      return;
    }
    if (mode === 'leased' && q.kind === 'requests') {
      e.tokens += cost;
      return;
    }
    if (this.link.isUp) this.link.run('give', this.link.key(key, e.start), [cost]).catch(() => undefined);
  }

  /** What is left of the limit as this gateway knows it (leased: its unspent quota plus what Redis had not granted). */
  remaining(key: string, limit: number): number {
    const e = this.map.get(key);
    if (e === undefined) return limit;
    const seen = Math.max(e.total - e.tokens, e.own);
    return Math.max(0, limit - seen);
  }

  private spend(e: Entry, q: Quota, cost: number): Take | Promise<Take> {
    // Redis away: leased quota is spent too only within the share (fail = "closed": all of it, then none).
    if (e.tokens >= cost && (this.link.isUp || q.failClosed === true || e.own < this.share(q.limit))) {
      e.tokens -= cost;
      e.own += cost;
      if (!this.link.isUp) this.offlineAdmitted += cost;
      // Low: the next block is asked for now, so that no call has to wait for it.
      if (e.tokens <= e.block >> 1 && e.leasing === undefined && e.exhaustedUntil === 0 && !this.closed && this.link.usable())
        void this.lease(e);
      return Take.ADMITTED;
    }
    if (e.exhaustedUntil !== 0 && Date.now() < e.exhaustedUntil) return Take.LIMIT;
    if (this.closed || (e.leasing === undefined && !this.link.usable())) return this.offline(e, q, cost);
    return this.wait(e, q, cost);
  }

  /** Waits for a lease (the one under way, or a new one) until this call's quota is there, the window is exhausted or Redis is away. */
  private async wait(e: Entry, q: Quota, cost: number): Promise<Take> {
    for (;;) {
      await (e.leasing ?? this.lease(e));
      if (e.tokens >= cost && (this.link.isUp || q.failClosed === true || e.own < this.share(q.limit))) {
        e.tokens -= cost;
        e.own += cost;
        if (!this.link.isUp) this.offlineAdmitted += cost;
        return Take.ADMITTED;
      }
      if (e.exhaustedUntil !== 0 && Date.now() < e.exhaustedUntil) return Take.LIMIT;
      if (this.closed || (e.leasing === undefined && !this.link.usable())) return this.offline(e, q, cost);
    }
  }

  private lease(e: Entry): Promise<void> {
    const run = this.link
      .run('lease', this.link.key(e.key, e.start), [e.block, e.limit, this.ttl(e), this.link.nodes])
      .then(([granted, total]) => {
        e.total = total;
        e.tokens += granted;
        e.granted += granted;
        if (granted === 0 || total >= e.limit) e.exhaustedUntil = Date.now() + RECHECK_MS;
        else e.exhaustedUntil = 0;
        // The gateway's share of the window's grants sizes its next block.
        const share = e.granted / Math.max(1, total);
        e.block = Math.max(1, Math.min(MAX_BLOCK, Math.ceil((e.limit * share) / BLOCK_DIVISOR)));
      })
      .catch(() => undefined)
      .finally(() => {
        e.leasing = undefined;
      });
    e.leasing = run;
    return run;
  }

  /** Adds what an entry admitted while Redis was away to its window's count. */
  private async send(e: Entry): Promise<void> {
    const n = e.unsynced;
    if (n <= 0) return;
    e.unsynced = 0;
    try {
      const [, total] = await this.link.run('add', this.link.key(e.key, e.start), [n, this.ttl(e)]);
      e.total = total;
    } catch {
      e.unsynced += n;
    }
  }

  /** Redis is back: every live window's outage counts go to Redis. */
  async reconcile(): Promise<void> {
    const now = this.o.clock();
    const sends: Promise<void>[] = [];
    for (const e of this.map.values()) if (e.unsynced > 0 && now < e.end) sends.push(this.send(e));
    await Promise.all(sends);
  }

  /** Gives unspent leased quota back, sends outage counts, leaves the membership set. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const now = this.o.clock();
    const work: Promise<unknown>[] = [];
    for (const e of this.map.values()) {
      if (e.leasing !== undefined) await e.leasing;
      if (now >= e.end || !this.link.isUp) continue;
      if (e.tokens > 0) {
        const n = e.tokens;
        e.tokens = 0;
        work.push(this.link.run('give', this.link.key(e.key, e.start), [n]).catch(() => undefined));
      }
      if (e.unsynced > 0) work.push(this.send(e));
    }
    await Promise.all(work);
    this.map.clear();
    await this.link.close();
  }
}
