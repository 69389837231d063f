/**
 * Analytics events ([apim.analytics], spec 000; spec 002 part 6 "Analytics events: gateway -> analytics
 * node"; docs/analytics.md): one event per finished request, published in batches.
 *
 * Receivers: every [[apim.analytics.url_group]] receives every event; within a group the http(s):// URLs
 * are used by `type`: failover (the first receiver that is up gets each batch; the next on failure) or
 * loadbalance (batches rotate over the receivers that are up; a failing one hands its batch to the next).
 * The spec's tcp:// and ssl:// receivers speak the reference's binary protocol, which throughway does not:
 * they are named once in a warning at start and not used. [throughway.analytics] file appends the same
 * events as JSON lines.
 *
 * Never blocking requests: the request path builds the event and serialises it once; batching and sending
 * run on a timer, one batch in flight per group, so each group receives events in order. A group's buffer
 * is bounded (buffer_size): when its receivers are down it fills, and further events are dropped and counted.
 * A batch that no receiver accepted stays at the head and is retried once a receiver's retry_interval has
 * passed; one that every receiver refused as malformed (4xx other than 408/429) is dropped and counted, so a
 * bad batch cannot stall the stream. Close flushes what it can and counts the rest as dropped.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallContext } from '../gateway/phases';
import type { ExchangeRecord } from '../transport/types';
import { headerValue } from '../transport/headers';
import type { Logger } from '../log';
import { postJson, postTarget, redactUrl, type PostResult, type PostTarget } from './post';
import type { AnalyticsSettings } from './settings';
import { callTenant } from './tenant';

/** One event (docs/analytics.md); field names follow the reference's analytics event where it has one. */
export interface AnalyticsEvent {
  readonly requestTimestamp: string;
  readonly correlationId: string;
  readonly gatewayHost: string;
  readonly apiName: string | null;
  readonly apiVersion: string | null;
  readonly apiContext: string | null;
  /** The call's tenant (observability/tenant.ts): `carbon.super` for the super tenant's; null for a /t/<domain>/ URL of no tenant. */
  readonly apiCreatorTenantDomain: string | null;
  readonly apiResourceTemplate: string | null;
  readonly apiMethod: string;
  readonly destination: string | null;
  readonly keyType: string | null;
  readonly applicationId: string | null;
  readonly applicationName: string | null;
  readonly applicationOwner: string | null;
  readonly subscriptionTier: string | null;
  readonly userName: string | null;
  readonly userType: string | null;
  readonly userIp: string;
  readonly userAgent: string | null;
  readonly proxyResponseCode: number;
  readonly targetResponseCode: number | null;
  readonly errorType: 'gateway' | 'transport' | null;
  readonly errorCode: number | null;
  readonly responseLatency: number;
  readonly backendLatency: number | null;
  readonly requestSize: number;
  readonly responseSize?: number;
  readonly retries: number;
  /** GraphQL APIs: the operation's type (QUERY, MUTATION, SUBSCRIPTION) and name ('' for an anonymous one). */
  readonly graphqlOperationType: string | null;
  readonly graphqlOperationName: string | null;
  /** The protocol of the call: "HTTP/1.1" (or "HTTP/1.0", "HTTP/2.0"), or "gRPC" for a call of a gRPC API (docs/grpc.md). */
  readonly protocol: string;
}

export interface AnalyticsStats {
  /** Events built (one per finished request). */
  readonly eventsRecorded: number;
  /** Deliveries acknowledged: an event counts once per receiver group (2xx) and once for the file. */
  readonly eventsSent: number;
  /** Deliveries lost: buffer full, refused as malformed, no usable receiver, or still queued at close. */
  readonly eventsDropped: number;
  /** Deliveries waiting now. */
  readonly eventsQueued: number;
  readonly batchesSent: number;
  readonly batchesFailed: number;
}

export interface AnalyticsOptions {
  readonly logger: Logger;
  /** Wall clock (ms since the epoch): event timestamps and receiver retry times. */
  readonly now?: () => number;
}

const ms3 = (x: number): number => Math.round(x * 1000) / 1000;

/** The event of one finished exchange; `ctx` is undefined when the request never reached the router. */
export function buildEvent(ctx: CallContext | undefined, r: ExchangeRecord, settings: AnalyticsSettings, nowMs: number): AnalyticsEvent {
  const api = ctx?.api;
  // An open resource (auth = "none") carries the shared NO_AUTH context: no application, no user.
  const auth = ctx?.auth !== undefined && ctx.auth.kind !== 'none' ? ctx.auth : undefined;
  const code = r.faultCode ?? r.fault?.code;
  const forwarded = r.upstreamMs >= 0;
  const event: AnalyticsEvent = {
    requestTimestamp: new Date(Math.round(nowMs - r.durationMs)).toISOString(),
    correlationId: ctx?.trace?.traceId ?? randomUUID(),
    gatewayHost: settings.gatewayHost,
    apiName: api?.def.name ?? null,
    apiVersion: api?.def.version ?? null,
    apiContext: api?.path ?? null,
    apiCreatorTenantDomain: callTenant(ctx, r.url) ?? null,
    apiResourceTemplate: ctx?.resource?.def.path ?? null,
    apiMethod: r.method,
    destination: ctx?.endpoint?.def.url ?? (r.target !== undefined ? `http://${r.target}` : null),
    keyType: auth?.keyType ?? (api !== undefined && ctx !== undefined ? ctx.keyType : null),
    applicationId: auth?.applicationId ?? null,
    applicationName: auth?.applicationName ?? null,
    applicationOwner: auth?.subscriber ?? null,
    subscriptionTier: auth?.subscriptionTier ?? null,
    userName: auth?.endUser ?? null,
    userType: auth?.userType ?? null,
    userIp: r.remoteAddress,
    userAgent: r.request !== undefined ? (headerValue(r.request.headers, 'user-agent') ?? null) : null,
    proxyResponseCode: r.status,
    // The backend's status, when the response relayed is the backend's (no fault replaced or cut it).
    targetResponseCode: forwarded && code === undefined ? r.status : null,
    errorType: code === undefined ? null : r.fault !== undefined && r.fault.code === code ? 'transport' : 'gateway',
    errorCode: code ?? null,
    responseLatency: ms3(r.durationMs),
    backendLatency: forwarded ? ms3(r.upstreamMs) : null,
    requestSize: r.requestBytes,
    retries: r.retries,
    graphqlOperationType: ctx?.graphql?.operation.type ?? null,
    graphqlOperationName: ctx?.graphql?.operation.name ?? null,
    protocol: api?.def.type === 'GRPC' && r.httpVersion === '2.0' ? 'gRPC' : `HTTP/${r.httpVersion}`,
  };
  return settings.publishResponseSize ? { ...event, responseSize: r.responseBytes } : event;
}

interface Receiver {
  /** For log lines (credentials in the URL masked). */
  readonly url: string;
  readonly target: PostTarget;
  /** Not tried before this time (ms since the epoch) after a failure. */
  downUntil: number;
  down: boolean;
}

/** A non-retryable answer: the receiver refuses the batch itself (RFC 9110 §15.5), not its load. */
const refused = (r: PostResult): boolean => r.status >= 400 && r.status < 500 && r.status !== 408 && r.status !== 429;

class ReceiverGroup {
  readonly queue: string[] = [];
  /** The drain in progress: one batch in flight per group keeps the group's events in order. */
  running: Promise<void> | undefined = undefined;
  private next = 0;
  constructor(
    readonly receivers: readonly Receiver[],
    readonly type: 'loadbalance' | 'failover',
  ) {}

  /** Receivers in the order this batch tries them, those waiting out retry_interval left out. */
  order(now: number): Receiver[] {
    const n = this.receivers.length;
    const start = this.type === 'loadbalance' ? this.next++ % n : 0;
    const out: Receiver[] = [];
    for (let k = 0; k < n; k++) {
      const r = this.receivers[(start + k) % n] as Receiver;
      if (r.downUntil <= now) out.push(r);
    }
    return out;
  }
}

export class Analytics {
  private readonly groups: ReceiverGroup[] = [];
  private readonly fileQueue: string[] | undefined;
  private stream: fs.WriteStream | undefined;
  private readonly now: () => number;
  private readonly logger: Logger;
  private recorded = 0;
  private sent = 0;
  private dropped = 0;
  private batchesSent = 0;
  private batchesFailed = 0;
  private fileRunning: Promise<void> | undefined;
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** What the receivers are told (Basic credentials, receiver_username / receiver_password). */
  private readonly authorization: string;

  constructor(
    readonly settings: AnalyticsSettings,
    options: AnalyticsOptions,
  ) {
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.authorization = `Basic ${Buffer.from(`${settings.username}:${settings.password}`).toString('base64')}`;
    const unused: string[] = [];
    for (const g of settings.groups) {
      const receivers: Receiver[] = [];
      for (const url of g.urls) {
        if (!/^https?:\/\//i.test(url)) {
          unused.push(redactUrl(url));
          continue;
        }
        receivers.push({ url: redactUrl(url), target: postTarget(url, this.authorization), downUntil: 0, down: false });
      }
      if (receivers.length > 0) this.groups.push(new ReceiverGroup(receivers, g.type));
    }
    if (unused.length > 0) {
      this.logger.log('warn', 'analytics_receiver_unsupported', {
        urls: unused,
        message:
          'tcp:// and ssl:// receivers speak the reference binary event protocol, which throughway does not: they are not used; give http(s):// receiver URLs or [throughway.analytics] file (docs/analytics.md)',
      });
    }
    if (settings.file !== undefined) {
      fs.mkdirSync(path.dirname(settings.file), { recursive: true });
      this.stream = fs.createWriteStream(settings.file, { flags: 'a' });
      // A full disk must not crash the gateway: the events are lost, the traffic is not.
      this.stream.on('error', (err: NodeJS.ErrnoException) =>
        this.logger.log('error', 'analytics_file_failed', { file: settings.file, error: err.code ?? err.message }),
      );
      this.fileQueue = [];
    }
    if (this.groups.length === 0 && this.fileQueue === undefined) {
      this.logger.log('warn', 'analytics_no_receiver', {
        message: 'analytics is enabled but has no usable receiver: events are counted as dropped',
      });
    }
    this.timer = setInterval(() => void this.flush(), settings.flushInterval);
    this.timer.unref();
  }

  /** For the start-up lines: where events go (no credentials). */
  describe(): string {
    const parts = this.groups.map((g) => `${g.receivers.length} HTTP receiver(s) (${g.type})`);
    if (this.settings.file !== undefined) parts.push(`file ${this.settings.file}`);
    return parts.length === 0 ? 'no usable receiver (see the warning)' : parts.join(', ');
  }

  /** One finished exchange. Builds and serialises the event; everything else happens on the timer. */
  record(ctx: CallContext | undefined, r: ExchangeRecord): void {
    this.recorded++;
    const line = JSON.stringify(buildEvent(ctx, r, this.settings, this.now()));
    if (this.closed || (this.groups.length === 0 && this.fileQueue === undefined)) {
      this.dropped++;
      return;
    }
    const max = this.settings.bufferSize;
    let full = false;
    for (const g of this.groups) {
      if (g.queue.length >= max) this.dropped++;
      else if (g.queue.push(line) >= this.settings.batchSize) full = true;
    }
    const fq = this.fileQueue;
    if (fq !== undefined) {
      if (fq.length >= max) this.dropped++;
      else if (fq.push(line) >= this.settings.batchSize) full = true;
    }
    if (full && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  stats(): AnalyticsStats {
    let queued = this.fileQueue?.length ?? 0;
    for (const g of this.groups) queued += g.queue.length;
    return {
      eventsRecorded: this.recorded,
      eventsSent: this.sent,
      eventsDropped: this.dropped,
      eventsQueued: queued,
      batchesSent: this.batchesSent,
      batchesFailed: this.batchesFailed,
    };
  }

  /**
   * Publishes what is buffered (the timer's work; also called by close and tests). Each group drains on its
   * own: a group whose receivers time out does not hold the others back. Resolves when every drain this
   * flush started or joined has ended.
   */
  flush(): Promise<void> {
    const all: Promise<void>[] = [];
    for (const g of this.groups) {
      if (g.running === undefined && g.queue.length > 0) {
        g.running = this.drain(g).finally(() => {
          g.running = undefined;
        });
      }
      if (g.running !== undefined) all.push(g.running);
    }
    if (this.fileRunning === undefined && this.fileQueue !== undefined && this.fileQueue.length > 0) {
      this.fileRunning = this.writeFile().finally(() => {
        this.fileRunning = undefined;
      });
    }
    if (this.fileRunning !== undefined) all.push(this.fileRunning);
    return Promise.all(all).then(() => undefined);
  }

  private writeFile(): Promise<void> {
    const fq = this.fileQueue;
    const stream = this.stream;
    if (fq === undefined || stream === undefined || fq.length === 0) return Promise.resolve();
    const lines = fq.splice(0, fq.length);
    return new Promise((resolve) => {
      stream.write(lines.join('\n') + '\n', (err) => {
        if (err == null) {
          this.sent += lines.length;
          this.batchesSent++;
        } else {
          this.dropped += lines.length;
          this.batchesFailed++;
        }
        resolve();
      });
    });
  }

  /** Sends the group's batches in order until it is empty or no receiver takes one. */
  private async drain(g: ReceiverGroup): Promise<void> {
    while (g.queue.length > 0) {
      const n = Math.min(this.settings.batchSize, g.queue.length);
      const body = `[${g.queue.slice(0, n).join(',')}]`;
      const tried = g.order(this.now());
      if (tried.length === 0) return; // every receiver waits out its retry_interval
      let ok = false;
      let allRefused = true;
      for (const rcv of tried) {
        const r = await postJson(rcv.target, body, this.settings.sendTimeout);
        if (r.ok) {
          ok = true;
          this.up(rcv);
          break;
        }
        // A refusal says nothing about the receiver's health: it stays up.
        if (refused(r)) continue;
        allRefused = false;
        this.failed(rcv, r);
      }
      if (ok) {
        g.queue.splice(0, n);
        this.sent += n;
        this.batchesSent++;
        continue;
      }
      this.batchesFailed++;
      if (allRefused && tried.length === g.receivers.length) {
        g.queue.splice(0, n);
        this.dropped += n;
        this.logger.log('error', 'analytics_batch_refused', { events: n, message: 'every receiver refused the batch; it is dropped' });
        continue;
      }
      return;
    }
  }

  private up(r: Receiver): void {
    r.downUntil = 0;
    if (r.down) {
      r.down = false;
      this.logger.log('info', 'analytics_receiver_up', { url: r.url });
    }
  }

  private failed(r: Receiver, result: PostResult): void {
    r.downUntil = this.now() + this.settings.retryInterval;
    // One line when a receiver goes away, not one per batch (the counters say the rest).
    if (!r.down) {
      r.down = true;
      this.logger.log('warn', 'analytics_receiver_down', { url: r.url, error: result.error, retryInMs: this.settings.retryInterval });
    }
  }

  /** Stops the timer, publishes what it can (one attempt), counts the rest as dropped, closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.all([this.fileRunning, ...this.groups.map((g) => g.running)]);
    // Receivers that just failed would be skipped: close gives each one last chance.
    for (const g of this.groups) for (const r of g.receivers) r.downUntil = 0;
    await this.flush();
    for (const g of this.groups) {
      this.dropped += g.queue.length;
      g.queue.length = 0;
      for (const r of g.receivers) r.target.agent.destroy();
    }
    const s = this.stream;
    this.stream = undefined;
    if (s !== undefined) await new Promise<void>((resolve) => s.end(() => resolve()));
  }
}
