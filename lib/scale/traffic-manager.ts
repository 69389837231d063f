/**
 * The traffic manager's decision service (docs/scale-out.md: a `traffic-manager` owns throttling policies and
 * blocking conditions and publishes decisions; spec 002 part 6: throttle data from the gateways, throttle
 * decisions on the topic throttleData). It runs on a `traffic-manager` node, and on a `default` node whose
 * `[throughway.throttling] counter_store` is "traffic-manager" (one node can then serve a deployment of
 * gateway-workers; two aggregators publish the same decisions, which is harmless).
 *
 * It subscribes to the gateways' throttle data (lib/throttle/decisions.ts: per key and window, what a
 * gateway counted since its last batch, and the limit it applied), adds the batches up per key@window,
 * and when a key's total reaches its limit publishes one decision `{key, windowStart, until, limit}` for
 * that window (until = the window's end). Memory is bounded: windows that ended are swept, and past
 * `maxKeys` the oldest entries go (those keys then under-count, as in counters.ts).
 *
 * Pub/sub is at most once: a gateway that was disconnected when a decision went out decides on its own
 * count for the rest of that window (still exact per node). Redis away: one warning per outage,
 * reconnect with back-off, the `traffic_manager` health checker is DOWN.
 */
import type { Redis } from 'ioredis';
import type * as IORedis from 'ioredis';
import { load } from '../config/packages';

/** ioredis, loaded when the first client is made (lib/config/packages.ts). */
const redisClass = (): typeof IORedis.Redis =>
  load<typeof IORedis>('ioredis', '[apim.throttling] throttle_decision_endpoints (a traffic-manager role)').Redis;
import type { HealthChecker } from '../events/observed';
import type { Logger } from '../log';
import type { MetricRegistry } from '../events/observed';
import { decodeData, encodeDecisions, redacted, type Decision, type ThrottleData } from '../throttle/decisions';

class Window {
  decided = false;
  constructor(
    readonly key: string,
    readonly windowStart: number,
    readonly until: number,
    public total: number,
    public limit: number,
  ) {}
}

/** The sums and the decisions, without any I/O (unit tests drive it with a fake clock). */
export class DecisionAggregator {
  private readonly windows = new Map<string, Window>();
  /** Counts added up, counts that arrived after their window ended, batches, decisions made. */
  counted = 0;
  late = 0;
  batches = 0;
  decisions = 0;
  evicted = 0;

  constructor(readonly maxKeys = 100_000) {}

  get size(): number {
    return this.windows.size;
  }

  /** The total of `key` in the window starting at `windowStart` (0 for none). */
  total(key: string, windowStart: number): number {
    return this.windows.get(`${key}@${windowStart}`)?.total ?? 0;
  }

  /** Adds one gateway's batch; returns the decisions it triggers (each key@window decided once). */
  receive(data: readonly ThrottleData[], now: number): Decision[] {
    this.batches++;
    const out: Decision[] = [];
    for (const d of data) {
      const until = d.windowStart + d.windowMs;
      if (now >= until) {
        this.late += d.count;
        continue;
      }
      const id = `${d.key}@${d.windowStart}`;
      let w = this.windows.get(id);
      if (w === undefined) {
        this.makeRoom(now);
        w = new Window(d.key, d.windowStart, until, 0, d.limit);
        this.windows.set(id, w);
      }
      w.total += d.count;
      this.counted += d.count;
      // The latest limit a gateway applied (a policy reload changes it for every node alike).
      if (d.limit > 0) w.limit = d.limit;
      if (!w.decided && w.limit > 0 && w.total >= w.limit) {
        w.decided = true;
        this.decisions++;
        out.push({ key: w.key, windowStart: w.windowStart, until: w.until, limit: w.limit });
      }
    }
    return out;
  }

  /** Removes every window that has ended. */
  sweep(now: number): number {
    let n = 0;
    for (const [id, w] of this.windows) {
      if (now >= w.until) {
        this.windows.delete(id);
        n++;
      }
    }
    return n;
  }

  /** As MemoryCounterStore.makeRoom: ended windows, then the oldest sixteenth, in one pass. */
  private makeRoom(now: number): void {
    if (this.windows.size < this.maxKeys) return;
    this.sweep(now);
    let drop = this.windows.size - (this.maxKeys - Math.max(1, this.maxKeys >> 4));
    for (const id of this.windows.keys()) {
      if (drop-- <= 0) break;
      this.windows.delete(id);
      this.evicted++;
    }
  }
}

export interface TrafficManagerOptions {
  readonly url: string;
  readonly channels: { readonly data: string; readonly decisions: string };
  readonly maxKeys: number;
  readonly reconnectMin: number;
  readonly reconnectMax: number;
  readonly logger: Logger;
  readonly clock?: () => number;
}

export class TrafficManager {
  readonly aggregator: DecisionAggregator;
  private readonly sub: Redis;
  private readonly pub: Redis;
  private readonly timer: NodeJS.Timeout;
  private readonly clock: () => number;
  private down = false;
  private closed = false;
  published = 0;
  badMessages = 0;

  constructor(private readonly o: TrafficManagerOptions) {
    this.clock = o.clock ?? Date.now;
    this.aggregator = new DecisionAggregator(o.maxKeys);
    const retryStrategy = (times: number): number => Math.min(o.reconnectMax, o.reconnectMin * 2 ** Math.min(20, times - 1));
    // No offline queue on the publisher: a decision is only worth sending while its window runs.
    this.pub = new (redisClass())(o.url, { retryStrategy, enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true });
    this.sub = new (redisClass())(o.url, { retryStrategy, maxRetriesPerRequest: null, lazyConnect: true });
    for (const c of [this.pub, this.sub]) {
      c.on('error', (err: Error) => this.outage(err));
      c.on('close', () => this.outage(new Error('connection closed')));
      c.on('ready', () => {
        if (!this.down || !this.connected) return;
        this.down = false;
        o.logger.log('warn', 'traffic_manager_reconnected', { url: redacted(o.url) });
      });
    }
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === o.channels.data) this.onData(message);
    });
    this.timer = setInterval(() => this.aggregator.sweep(this.clock()), 10_000);
    this.timer.unref();
  }

  /** Connects and subscribes; resolves when subscribed, or after `waitMs` with Redis still away. */
  async start(waitMs = 2000): Promise<void> {
    this.pub.connect().catch((err: Error) => this.outage(err));
    // The first command connects the lazy subscriber; queued (offline queue, no retry limit) until Redis
    // answers, so a traffic manager started while Redis is away subscribes when it comes; ioredis
    // subscribes again after every reconnect.
    const subscribed = this.sub.subscribe(this.o.channels.data);
    subscribed.catch((err: Error) => this.outage(err));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([subscribed.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  get connected(): boolean {
    return this.pub.status === 'ready' && this.sub.status === 'ready';
  }

  private outage(err: Error): void {
    if (this.down || this.closed) return;
    this.down = true;
    this.o.logger.log('warn', 'traffic_manager_unavailable', {
      url: redacted(this.o.url),
      message: `${err.message}: no throttle data, no decisions until Redis is back`,
    });
  }

  private onData(message: string): void {
    const data = decodeData(message);
    if (data === undefined) {
      this.badMessages++;
      this.o.logger.log('warn', 'traffic_manager_bad_message', { length: message.length });
      return;
    }
    const decisions = this.aggregator.receive(data, this.clock());
    if (decisions.length === 0) return;
    this.published += decisions.length;
    this.pub.publish(this.o.channels.decisions, encodeDecisions(decisions)).catch((err: Error) => this.outage(err));
    if (this.o.logger.enabled('debug'))
      for (const d of decisions)
        this.o.logger.log('debug', 'throttle_decision', { key: d.key, windowStart: d.windowStart, until: d.until, limit: d.limit });
  }

  /** Its counts and decisions in `GET /metrics` (read at scrape time). */
  register(metrics: MetricRegistry): void {
    const a = this.aggregator;
    metrics.register({
      name: 'throughway_traffic_manager_batches_total',
      help: 'Throttle data batches received from gateways.',
      type: 'counter',
      collect: () => a.batches,
    });
    metrics.register({
      name: 'throughway_traffic_manager_counts_total',
      help: 'Calls the gateways reported (summed per key and window).',
      type: 'counter',
      collect: () => a.counted,
    });
    metrics.register({
      name: 'throughway_traffic_manager_late_counts_total',
      help: 'Calls reported after their window had ended (not counted).',
      type: 'counter',
      collect: () => a.late,
    });
    metrics.register({
      name: 'throughway_traffic_manager_decisions_total',
      help: 'Throttle decisions published (one per key and window whose total reached its limit).',
      type: 'counter',
      collect: () => a.decisions,
    });
    metrics.register({
      name: 'throughway_traffic_manager_windows',
      help: 'Key windows summed in memory now.',
      type: 'gauge',
      collect: () => a.size,
    });
  }

  checker(order: number): HealthChecker {
    return {
      name: 'traffic_manager',
      order,
      check: () => {
        const a = this.aggregator;
        const details = { url: redacted(this.o.url), batches: a.batches, counted: a.counted, decisions: a.decisions, windows: a.size };
        return this.connected
          ? { healthy: true, details }
          : { healthy: false, message: 'traffic manager Redis unreachable: no throttle data, no decisions', details };
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const c of [this.pub, this.sub]) {
      try {
        if (c.status === 'ready') await c.quit();
        else c.disconnect();
      } catch {
        c.disconnect();
      }
    }
  }
}
