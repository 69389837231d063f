/**
 * The event hub over Redis pub/sub (docs/scale-out.md; spec 002, part 6: token
 * revocation notifications and control plane events). The in-process EventBus (lib/events/bus.ts) stays
 * the interface: on a control plane node (default, api-key-manager, traffic-manager) every event its key
 * manager publishes is also sent to the channel, as the plain JSON envelope `{ name, id, time, payload }`;
 * on a gateway-worker every envelope from the channel is delivered to its local bus, after
 * `[apim.event_hub] event_waiting_time`.
 *
 * Nothing is lost while disconnected: the publisher queues while its connection is down (ioredis offline
 * queue) and a gateway-worker, after every reconnect, subscribes again and then pulls the control plane's
 * snapshot (ControlPlane.pull), turning the difference to what it knew into events on its local bus:
 * `*.changed` for what is there, `*.removed` for what went away, `token.revoked` for revoked ids (each
 * kept until the token's own expiry), and for the API files and policies it pulls (lib/scale/deployments.ts)
 * `policies.updated`, `api.deployed` and `api.undeployed` for what differs by revision. Applying an event twice is harmless (lib/security/subscriptions.ts).
 *
 * Revoked token ids are also kept in Redis: a publisher writes each as `<channel>:revoked:<jti>` (value:
 * the token's expiry, epoch ms) with PX = the token's remaining life, so Redis forgets it when the token
 * could no longer be used anyway. A gateway-worker, at start and after every reconnect, once subscribed,
 * SCANs `<channel>:revoked:*` (COUNT 100 per step: no step blocks Redis for long) on a connection of its
 * own (a subscribed connection may not SCAN) and delivers `token.revoked` for every id it does not know
 * yet. So a revocation made while this gateway was cut off from Redis arrives even when its control plane
 * is unreachable by then (the snapshot pull fails: `event_hub_resync_failed`).
 *
 * Redis unreachable: the node keeps serving with its last state, logs one warning per outage, reconnects
 * with doubling waits ([throughway.scale] reconnect_min .. reconnect_max), and its `event_hub` health
 * checker is DOWN until the hub is back (docs/scale-out.md).
 */
import type { Redis } from 'ioredis';
import type * as IORedis from 'ioredis';
import { load } from '../config/packages';

/** ioredis, loaded when the first client is made (lib/config/packages.ts). */
const redisClass = (): typeof IORedis.Redis =>
  load<typeof IORedis>('ioredis', '[apim.event_hub] event_listening_endpoints (a redis:// event hub)').Redis;
import {
  EVENT_NAMES,
  type AnyEvent,
  type ApiDeploymentPayload,
  type ApplicationPayload,
  type EventBus,
  type SubscriptionPayload,
} from '../events/bus';
import type { HealthChecker } from '../events/observed';
import type { Logger } from '../log';
import type { BlockingCondition } from '../events/blocking';
import type { FullSnapshot } from './control-plane';
import { randomUUID } from 'node:crypto';

export interface EventHubOptions {
  readonly url: string;
  readonly channel: string;
  readonly bus: EventBus;
  /** Send the local bus's events to the channel (control plane roles). */
  readonly publish: boolean;
  /** Deliver the channel's events to the local bus (gateway-worker). */
  readonly subscribe: boolean;
  /** ms before a received event is applied. */
  readonly waitingTime: number;
  readonly reconnectMin: number;
  readonly reconnectMax: number;
  readonly logger: Logger;
  /** The control plane's snapshot, pulled after every reconnect (subscribers). */
  readonly resync?: () => Promise<FullSnapshot>;
  readonly healthOrder?: number;
}

const KNOWN = new Set<string>(EVENT_NAMES);

export class RedisEventHub {
  private readonly pub: Redis | undefined;
  private readonly sub: Redis | undefined;
  /** Subscribers: SCAN and MGET of the revoked ids (the subscribed connection cannot). */
  private readonly reader: Redis | undefined;
  private readonly unfollow: () => void;
  private down = false;
  private downSince = 0;
  private readyOnce = false;
  private closed = false;
  private lastResync = 0;
  /** What this gateway knows, by id: the base of the difference after a reconnect. */
  private readonly apps = new Map<string, ApplicationPayload>();
  private readonly subs = new Map<string, SubscriptionPayload>();
  private readonly blocking = new Map<string, BlockingCondition>();
  /** Revoked token ids known, with their expiry (epoch ms): what a SCAN need not deliver again. */
  private readonly revoked = new Map<string, number>();
  /** API files by name, and the policies' revision (a gateway-worker pulling deployments). */
  private readonly apis = new Map<string, ApiDeploymentPayload>();
  private policiesRevision: string | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private firstReady: () => void = () => undefined;
  private readonly ready: Promise<void>;
  received = 0;
  published = 0;
  resyncs = 0;
  /** Revoked ids read from Redis that were not known (delivered as token.revoked). */
  revokedRead = 0;

  constructor(private readonly o: EventHubOptions) {
    this.ready = new Promise((resolve) => (this.firstReady = resolve));
    const retryStrategy = (times: number): number => Math.min(o.reconnectMax, o.reconnectMin * 2 ** Math.min(20, times - 1));
    const common = { retryStrategy, maxRetriesPerRequest: null, lazyConnect: true } as const;
    if (o.publish) {
      // Offline queue on: events published while Redis is away are sent when it is back.
      this.pub = new (redisClass())(o.url, { ...common, enableOfflineQueue: true });
      this.watch(this.pub);
      if (!o.subscribe) this.pub.once('ready', () => this.firstReady());
    }
    if (o.subscribe) {
      this.sub = new (redisClass())(o.url, { ...common, enableOfflineQueue: true, autoResubscribe: false });
      this.watch(this.sub);
      this.sub.on('message', (channel: string, message: string) => {
        if (channel === o.channel) this.receive(message);
      });
      this.sub.on('ready', () => void this.onReady());
      this.reader = new (redisClass())(o.url, { ...common, enableOfflineQueue: true });
      this.watch(this.reader);
    }
    this.unfollow = o.bus.subscribe((e) => this.local(e));
  }

  private watch(c: Redis): void {
    c.on('error', (err: Error) => this.outage(err));
    c.on('close', () => this.outage(new Error('connection closed')));
    c.on('ready', () => {
      if (!this.down) return;
      this.down = false;
      this.o.logger.log('warn', 'event_hub_reconnected', { url: this.o.url, downMs: Date.now() - this.downSince });
    });
  }

  private outage(err: Error): void {
    if (this.down || this.closed) return;
    this.down = true;
    this.downSince = Date.now();
    this.o.logger.log('warn', 'event_hub_unavailable', {
      url: this.o.url,
      message: `${err.message}: serving with the last known state, reconnecting`,
    });
  }

  /** Connects; resolves when subscribed, or after `waitMs` with Redis still away (it keeps trying). */
  async start(waitMs = 2000): Promise<void> {
    for (const c of [this.pub, this.sub, this.reader]) c?.connect().catch((err: Error) => this.outage(err));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ready, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  private async onReady(): Promise<void> {
    const sub = this.sub;
    if (sub === undefined || this.closed) return;
    try {
      await sub.subscribe(this.o.channel);
    } catch (err) {
      this.outage(err as Error);
      return;
    }
    // The first subscription made before the node pulled its first snapshot needs no resync.
    const first = !this.readyOnce;
    this.readyOnce = true;
    // Subscribed first: a revocation written after the SCAN passed its key arrives as an event. The
    // start waits for the SCAN too (its connection is then up: `connected` says so).
    await this.readRevoked();
    this.firstReady();
    if (!first || this.resyncNeededOnFirst) await this.resync();
  }

  /** SCANs `<channel>:revoked:*` and delivers token.revoked for each id not known yet; the number delivered. */
  async readRevoked(): Promise<number> {
    const r = this.reader;
    if (r === undefined || this.closed) return 0;
    const now = Date.now();
    for (const [jti, exp] of this.revoked) if (exp <= now) this.revoked.delete(jti);
    const prefix = `${this.o.channel}:revoked:`;
    // MATCH is a glob: the channel's own *, ?, [, ] and \ are matched literally.
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    let delivered = 0;
    try {
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 100);
        cursor = next;
        const fresh = keys.filter((k) => !this.revoked.has(k.slice(prefix.length)));
        if (fresh.length === 0) continue;
        const values = await r.mget(...fresh);
        fresh.forEach((k, i) => {
          const jti = k.slice(prefix.length);
          const expiresAt = Number(values[i]);
          // Expired between SCAN and MGET (null), or not written by a publisher of ours.
          if (values[i] === null || !Number.isFinite(expiresAt) || this.revoked.has(jti)) return;
          delivered++;
          this.o.bus.deliver({
            name: 'token.revoked',
            id: randomUUID(),
            time: Date.now(),
            payload: { jti, expiresAt, consumerKey: '', revokedAt: Date.now() },
          });
        });
      } while (cursor !== '0' && !this.closed);
    } catch (err) {
      this.o.logger.log('warn', 'event_hub_revoked_read_failed', { message: (err as Error).message });
      return delivered;
    }
    this.revokedRead += delivered;
    if (delivered > 0) this.o.logger.log('info', 'event_hub_revoked_read', { delivered });
    return delivered;
  }

  /** Set by the node when the first snapshot was pulled before the hub was subscribed (Redis was away). */
  resyncNeededOnFirst = false;

  /** Remembers a snapshot the node loaded (the first one): the base of later differences. */
  remember(s: FullSnapshot): void {
    for (const a of s.applications) this.apps.set(a.id, a);
    for (const x of s.subscriptions) this.subs.set(x.id, x);
    for (const b of s.blocking) this.blocking.set(b.id, b);
    for (const r of s.revoked) this.revoked.set(r.jti, r.expiresAt);
    for (const a of s.deployments?.apis ?? []) this.apis.set(a.file, a);
    if (s.deployments?.policies != null) this.policiesRevision = s.deployments.policies.revision;
  }

  /** Pulls the snapshot and delivers the difference as events on the local bus. */
  async resync(): Promise<void> {
    const pull = this.o.resync;
    if (pull === undefined || this.closed) return;
    let s: FullSnapshot;
    try {
      s = await pull();
    } catch (err) {
      this.o.logger.log('error', 'event_hub_resync_failed', { message: (err as Error).message });
      return;
    }
    const now = Date.now();
    const out: AnyEvent[] = [];
    const ev = <E extends AnyEvent>(name: E['name'], payload: E['payload']): void =>
      void out.push({ name, id: randomUUID(), time: now, payload } as AnyEvent);
    const apps = new Set(s.applications.map((a) => a.id));
    const subs = new Set(s.subscriptions.map((x) => x.id));
    const blocks = new Set(s.blocking.map((b) => b.id));
    // Deployments (a gateway-worker's): the policies first, so an API naming a new policy validates.
    const d = s.deployments;
    if (d !== undefined) {
      if (d.policies !== null && d.policies.revision !== this.policiesRevision)
        ev('policies.updated', { text: d.policies.text, revision: d.policies.revision });
      const files = new Set(d.apis.map((a) => a.file));
      for (const [file, a] of this.apis) if (!files.has(file)) ev('api.undeployed', { file, labels: a.labels });
      for (const a of d.apis) if (this.apis.get(a.file)?.revision !== a.revision) ev('api.deployed', a);
    }
    for (const [id, x] of this.subs) if (!subs.has(id)) ev('subscription.removed', { subscription: x });
    for (const [id, a] of this.apps) if (!apps.has(id)) ev('application.removed', { application: a });
    for (const [id, b] of this.blocking) if (!blocks.has(id)) ev('blocking.removed', { condition: b });
    for (const a of s.applications) ev('application.changed', { application: a });
    for (const x of s.subscriptions) ev('subscription.changed', { subscription: x });
    for (const b of s.blocking) ev('blocking.added', { condition: b });
    for (const r of s.revoked) ev('token.revoked', { jti: r.jti, expiresAt: r.expiresAt, consumerKey: '', revokedAt: now });
    for (const e of out) this.o.bus.deliver(e);
    this.resyncs++;
    this.lastResync = now;
    this.o.logger.log('info', 'event_hub_resynced', {
      applications: s.applications.length,
      subscriptions: s.subscriptions.length,
      revoked: s.revoked.length,
      blocking: s.blocking.length,
      apis: d?.apis.length,
      events: out.length,
    });
  }

  /** Every event on the local bus: tracked (subscribers) and sent (publishers). */
  private local(e: AnyEvent): void {
    switch (e.name) {
      case 'application.added':
      case 'application.changed':
        this.apps.set(e.payload.application.id, e.payload.application);
        break;
      case 'application.removed':
        this.apps.delete(e.payload.application.id);
        break;
      case 'subscription.added':
      case 'subscription.changed':
        this.subs.set(e.payload.subscription.id, e.payload.subscription);
        break;
      case 'subscription.removed':
        this.subs.delete(e.payload.subscription.id);
        break;
      case 'blocking.added':
        this.blocking.set(e.payload.condition.id, e.payload.condition);
        break;
      case 'blocking.removed':
        this.blocking.delete(e.payload.condition.id);
        break;
      case 'token.revoked':
        this.revoked.set(e.payload.jti, e.payload.expiresAt);
        break;
      case 'api.deployed':
        this.apis.set(e.payload.file, e.payload);
        break;
      case 'api.undeployed':
        this.apis.delete(e.payload.file);
        break;
      case 'policies.updated':
        this.policiesRevision = e.payload.revision;
        break;
      default:
        break;
    }
    if (this.pub !== undefined && !this.closed) {
      this.published++;
      this.pub.publish(this.o.channel, JSON.stringify(e)).catch((err: Error) => this.outage(err));
      if (e.name === 'token.revoked') this.writeRevoked(this.pub, e.payload.jti, e.payload.expiresAt);
    }
  }

  /** Whether Redis takes SET ... PXAT (6.2 and later); false after it refused it once. */
  private pxat = true;

  /**
   * The revoked id stays readable in Redis for the token's remaining life, not longer: PXAT expires the
   * key at the token's own expiry (a PX relative to our clock would outlive it by the time the command
   * took to reach Redis); a Redis older than 6.2 refuses PXAT and gets PX.
   */
  private writeRevoked(pub: Redis, jti: string, expiresAt: number): void {
    const key = `${this.o.channel}:revoked:${jti}`;
    const px = (): void => {
      const ttl = expiresAt - Date.now();
      if (ttl > 0) pub.set(key, String(expiresAt), 'PX', ttl).catch((err: Error) => this.outage(err));
    };
    if (expiresAt <= Date.now()) return;
    if (!this.pxat) return px();
    pub.set(key, String(expiresAt), 'PXAT', expiresAt).catch((err: Error) => {
      if (!/syntax error/i.test(err.message)) return this.outage(err);
      this.pxat = false;
      px();
    });
  }

  private receive(message: string): void {
    let e: AnyEvent;
    try {
      e = JSON.parse(message) as AnyEvent;
    } catch {
      this.o.logger.log('warn', 'event_hub_bad_message', { length: message.length });
      return;
    }
    if (typeof e !== 'object' || e === null || !KNOWN.has(e.name) || typeof e.payload !== 'object') {
      this.o.logger.log('warn', 'event_hub_bad_message', { name: String((e as { name?: unknown } | null)?.name) });
      return;
    }
    this.received++;
    if (this.o.waitingTime <= 0) {
      this.o.bus.deliver(e);
      return;
    }
    // event_waiting_time (spec 000, [apim.event_hub]): every event waits the same, so order is kept.
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) this.o.bus.deliver(e);
    }, this.o.waitingTime);
    this.timers.add(t);
  }

  get connected(): boolean {
    return !this.down && [this.pub, this.sub, this.reader].every((c) => c === undefined || c.status === 'ready');
  }

  checker(): HealthChecker {
    return {
      name: 'event_hub',
      order: this.o.healthOrder ?? 98,
      check: () => {
        const details = {
          url: this.o.url.replace(/\/\/[^@/]*@/, '//****@'),
          published: this.published,
          received: this.received,
          resyncs: this.resyncs,
          lastResync: this.lastResync,
          ...(this.reader !== undefined ? { revokedRead: this.revokedRead } : {}),
        };
        return this.connected
          ? { healthy: true, details }
          : { healthy: false, message: 'event hub Redis unreachable: serving with the last known state, reconnecting', details };
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unfollow();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const c of [this.pub, this.sub, this.reader]) {
      if (c === undefined) continue;
      try {
        if (c.status === 'ready') await c.quit();
        else c.disconnect();
      } catch {
        c.disconnect();
      }
    }
  }
}
