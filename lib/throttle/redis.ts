/**
 * Shared counters for several processes or machines (docs/throttling.md; the deployment is wired by scale-out, docs/scale-out.md):
 * every node counts locally and synchronises with Redis in batches, so no request waits for a network
 * round trip.
 *
 * Per counter a node keeps `known` (the shared total Redis last reported, its own sent counts included)
 * and `unsent` (what it counted since). A decision uses known + unsent. Every `syncInterval` one pipeline
 * carries, for each counter used since the last batch, INCRBY of its unsent count (or GET when there is
 * nothing to send) on `tw:thr:<key>@<window start>`, with PEXPIRE at the window's end; the replies become
 * the new `known`. Windows are aligned to the epoch (counters.ts), so all nodes name a window the same.
 *
 * Overshoot bound: a node decides on a view at most one sync interval (plus one round trip) old, so with
 * K nodes a limit of N can be exceeded by at most (K - 1) x (calls one node admits in sync_interval + RTT),
 * and never by more than (K - 1) x N in one window. Per node the count is exact. docs/throttling.md.
 * Two refinements make the stale part of the view smaller (measured with two gateway processes in
 * test/scale/shared-limit.test.ts: a 300-call burst at a limit of 100 admitted 172-199 before them):
 *  - the others' calls are predicted: between two batches a node adds to the known total its own unsent
 *    calls times (1 + share), `share` being the other nodes' calls per call of its own in the last batch
 *    interval of that counter (the total's growth minus its own sends, over its own sends). A new counter
 *    starts with share = K - 1, K the nodes counting in this Redis (each registers itself every second
 *    under `<prefix>nodes`): before anyone has read the others' counts, together they admit about N, not
 *    K x N. A wrong guess lasts one interval: the next reply replaces both the total and the share. The
 *    cost is the other way round: a node whose calls grow faster than it predicted may refuse a call
 *    within one interval that a fresher view would have allowed;
 *  - a counter at half its limit or more is read back at every batch even when this node did not use it
 *    since the last one, so a decision near the limit never rests on a view older than one interval.
 *
 * [apim.throttling] switches: enable_data_publishing false: nothing is sent (the node counts alone);
 * enable_decision_connection false: the other nodes' counts are not read back (replies are ignored, known
 * counts only this node's own sends); enable_persistence true: window keys are kept one window longer
 * than their end, so the last window's counts stay readable in Redis.
 *
 * Redis unreachable: decisions go on with the local counts (never a refusal because Redis is down);
 * unsent counts are kept and sent when it is back. One warning per outage.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type * as IORedis from 'ioredis';
import { load } from '../config/packages';

/** ioredis, loaded when the first client is made (lib/config/packages.ts). */
const redisClass = (): typeof IORedis.Redis => load<typeof IORedis>('ioredis', '[throughway.throttling] counter_store = "redis"').Redis;
import type { Logger } from '../log';
import { windowStart, type CounterStore } from './counters';

/** How often a node registers itself, and how long a node that stopped doing so still counts. */
const HEARTBEAT_MS = 1000;
const NODE_TTL_MS = 5000;
/** The most other nodes' calls predicted per call of this node (one burst elsewhere must not lock it out). */
const MAX_SHARE = 16;

class SharedCounter {
  touched = true;
  /** Other nodes' calls per call of this node in the last batch interval (starts at nodes - 1). */
  share = 0;
  /** The limit the engine applies to the key (0: not told). */
  limit = 0;
  constructor(
    public start: number,
    public end: number,
    public known: number,
    public unsent: number,
  ) {}
}

export interface RedisCounterOptions {
  readonly url: string;
  readonly syncInterval: number;
  readonly maxCounters: number;
  readonly publish: boolean;
  readonly read: boolean;
  readonly persistence: boolean;
  readonly logger: Logger;
  readonly clock?: () => number;
  /** Key prefix (tests isolate themselves with their own). */
  readonly prefix?: string;
}

export class RedisCounterStore implements CounterStore {
  readonly map = new Map<string, SharedCounter>();
  readonly client: Redis;
  private readonly timer: NodeJS.Timeout;
  private syncing: Promise<void> | undefined;
  private down = false;
  private closed = false;
  private readonly prefix: string;
  private readonly clock: () => number;
  private readonly nodeId = randomUUID();
  private readonly beat: NodeJS.Timeout;
  /** Nodes counting in this Redis under this prefix (this one included), as of the last heartbeat. */
  nodes = 1;

  constructor(private readonly o: RedisCounterOptions) {
    this.prefix = o.prefix ?? 'tw:thr:';
    this.clock = o.clock ?? Date.now;
    // No offline queue: while Redis is away a batch fails at once instead of piling up.
    this.client = new (redisClass())(o.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
    this.client.on('error', (err: Error) => this.outage(err));
    this.timer = setInterval(() => void this.sync(), o.syncInterval);
    this.timer.unref();
    this.client.on('ready', () => void this.heartbeat());
    this.beat = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.beat.unref();
  }

  /**
   * Registers this node under `<prefix>nodes` (a sorted set scored by time) and counts the nodes seen in
   * the last NODE_TTL_MS. Only with the decision connection: a node that does not read the others' counts
   * never weighs its own.
   */
  async heartbeat(): Promise<void> {
    if (!this.o.read || this.closed || this.client.status !== 'ready') return;
    const now = this.clock();
    const key = `${this.prefix}nodes`;
    try {
      const r = await this.client
        .multi()
        .zadd(key, now, this.nodeId)
        .zremrangebyscore(key, '-inf', now - NODE_TTL_MS)
        .zcard(key)
        .pexpire(key, NODE_TTL_MS * 2)
        .exec();
      const card = Number(r?.[2]?.[1]);
      if (Number.isFinite(card)) this.nodes = Math.max(1, card);
    } catch (err) {
      this.outage(err as Error);
    }
  }

  get size(): number {
    return this.map.size;
  }

  private outage(err: Error): void {
    if (this.down) return;
    this.down = true;
    this.o.logger.log('warn', 'throttle_redis_unavailable', {
      url: this.o.url,
      message: `${err.message}: counting locally until Redis is back`,
    });
  }

  peek(key: string, windowMs: number, now: number): number {
    const c = this.map.get(key);
    if (c === undefined || now >= c.end || now < c.start) {
      // A key this node has not counted yet may have a shared total: the next batch reads it.
      this.add(key, 0, windowMs, now);
      return 0;
    }
    c.touched = true;
    return c.share === 0 ? c.known + c.unsent : c.known + c.unsent * (1 + c.share);
  }

  add(key: string, cost: number, windowMs: number, now: number, limit?: number): number {
    let c = this.map.get(key);
    if (c === undefined) {
      this.makeRoom(now);
      const start = windowStart(now, windowMs);
      c = new SharedCounter(start, start + windowMs, 0, 0);
      if (this.o.read) c.share = this.nodes - 1;
      this.map.set(key, c);
    } else if (now >= c.end || now < c.start) {
      c.start = windowStart(now, windowMs);
      c.end = c.start + windowMs;
      c.known = 0;
      c.unsent = 0;
    }
    c.touched = true;
    if (limit !== undefined) c.limit = limit;
    c.unsent += cost;
    return c.known + c.unsent;
  }

  /** As MemoryCounterStore.makeRoom: expired entries, then the oldest sixteenth, in one pass. */
  private makeRoom(now: number): void {
    if (this.map.size < this.o.maxCounters) return;
    const target = this.o.maxCounters - Math.max(1, this.o.maxCounters >> 4);
    for (const [k, c] of this.map) if (now >= c.end && c.unsent === 0) this.map.delete(k);
    let drop = this.map.size - target;
    for (const k of this.map.keys()) {
      if (drop-- <= 0) break;
      this.map.delete(k);
    }
  }

  /** One batch: sends unsent counts, reads shared totals back. Resolves when the replies are applied. */
  sync(): Promise<void> {
    if (this.syncing !== undefined) return this.syncing;
    if (this.closed && this.map.size === 0) return Promise.resolve();
    const now = this.clock();
    const batch: { key: string; c: SharedCounter; sent: number; start: number }[] = [];
    const pipe = this.client.pipeline();
    for (const [key, c] of this.map) {
      if (now >= c.end && c.unsent === 0) {
        this.map.delete(key);
        continue;
      }
      // Untouched since the last batch: nothing to send, and its total matters only near the limit.
      if (!c.touched && c.unsent === 0 && !(this.o.read && c.limit > 0 && now < c.end && 2 * c.known >= c.limit)) continue;
      const rk = `${this.prefix}${key}@${c.start}`;
      const sent = this.o.publish ? c.unsent : 0;
      if (sent > 0) {
        pipe.incrby(rk, sent);
        const ttl = c.end - now + (this.o.persistence ? c.end - c.start : 0);
        pipe.pexpire(rk, Math.max(1, ttl));
      } else if (this.o.read) pipe.get(rk);
      else continue;
      c.touched = false;
      batch.push({ key, c, sent, start: c.start });
    }
    if (batch.length === 0) return Promise.resolve();
    const run = pipe
      .exec()
      .then((replies) => {
        // Without the offline queue a batch on a closed connection resolves with an error per command.
        const failed = replies?.find((x) => x[0] !== null)?.[0];
        if (failed !== undefined && failed !== null && replies?.every((x) => x[0] !== null) === true) {
          this.outage(failed);
          return;
        }
        if (this.down) {
          this.down = false;
          this.o.logger.log('info', 'throttle_redis_available', { url: this.o.url });
        }
        let r = 0;
        for (const b of batch) {
          const reply = replies?.[r];
          r += b.sent > 0 ? 2 : 1;
          if (b.c.start !== b.start) continue; // the window rolled over meanwhile
          if (reply === undefined || reply[0] !== null) {
            continue;
          }
          const total = reply[1] === null ? 0 : Number(reply[1]);
          b.c.unsent -= b.sent;
          if (this.o.read) {
            const before = b.c.known;
            b.c.known = Number.isFinite(total) ? Math.max(total, before + b.sent) : before + b.sent;
            // Own calls in this interval: b.sent; the others': the rest of the growth.
            if (b.sent > 0) b.c.share = Math.min(MAX_SHARE, (b.c.known - before - b.sent) / b.sent);
          } else b.c.known += b.sent;
        }
      })
      .catch((err: Error) => this.outage(err))
      .finally(() => {
        this.syncing = undefined;
      });
    this.syncing = run;
    return run;
  }

  /** Resolves when the connection is ready, or false after `ms` (still connecting, or down). */
  ready(ms: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ok);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.client.on('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.beat);
    if (this.client.status === 'ready') await this.client.zrem(`${this.prefix}nodes`, this.nodeId).catch(() => undefined);
    // The last counts go out if Redis is (or within a second becomes) reachable.
    if (this.map.size > 0 && this.client.status !== 'end') await this.ready(1000);
    if (this.client.status === 'ready') {
      await this.syncing;
      await this.sync();
    }
    this.client.disconnect();
    this.map.clear();
  }
}
