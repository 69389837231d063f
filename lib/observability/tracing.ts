/**
 * Tracing ([apim.open_tracer], spec 000; docs/tracing.md): per request one SERVER span for the call, one
 * span per gateway phase, and one CLIENT span for the backend call, written to the log (log_tracer) and/or
 * sent in batches to a Zipkin-compatible collector (remote_tracer: Zipkin v2 JSON, POST /api/v2/spans)
 * and/or to an OpenTelemetry collector ([throughway.tracing] otlp.*: OTLP/HTTP, protobuf or JSON, lib/observability/otlp.ts).
 *
 * Trace context (W3C Trace Context): an incoming valid `traceparent` keeps its trace id and becomes the
 * parent of the gateway's span; without one a new trace starts. The backend receives a traceparent whose
 * parent id is the CLIENT span's id, and the incoming `tracestate` unchanged (§3.3: a vendor that adds
 * nothing passes it on). An incoming traceparent whose sampled flag is off is honoured: the context is
 * propagated, no span is recorded.
 *
 * Cost: none when tracing is off — the gateway then runs the plain chain (phases.ts runChain) and never
 * calls in here. When on, the request path only takes clock readings and pushes span objects; serialising
 * and sending happen on the exporter's timer, one batch in flight at a time, into a bounded queue whose
 * overflow is dropped and counted (a collector that is down never slows a request).
 */
import { performance } from 'node:perf_hooks';
import type { CallTrace } from '../gateway/hooks';
import type { CallContext, ChainStep, Outcome, Phase } from '../gateway/phases';
import type { ExchangeRecord } from '../transport/types';
import type { Logger } from '../log';
import { postBody, postTarget, type PostResult, type PostTarget } from './post';
import type { TracingSettings } from './settings';
import { callTenant } from './tenant';
import { formatTraceParent, newSpanId, newTraceId, traceContextOf, withTraceFields } from './trace-context';

/** A span in Zipkin's v2 model (zipkin-api zipkin2-api.yaml, `Span`). Times in µs. */
export interface Span {
  readonly traceId: string;
  readonly id: string;
  readonly parentId?: string;
  readonly name: string;
  readonly kind?: 'SERVER' | 'CLIENT';
  /** Epoch microseconds. */
  readonly timestamp: number;
  readonly duration: number;
  readonly localEndpoint?: { readonly serviceName: string };
  readonly remoteEndpoint?: { readonly ipv4?: string; readonly ipv6?: string; readonly port?: number; readonly serviceName?: string };
  readonly tags?: Readonly<Record<string, string>>;
}

export interface TracingStats {
  /** Spans finished (written to the log and/or handed to the exporter). */
  readonly spansRecorded: number;
  /** Spans the collector accepted (2xx). */
  readonly spansSent: number;
  /** Spans lost: queue full, or their batch failed (collector down, timeout, non-2xx). */
  readonly spansDropped: number;
  /** Spans waiting to be sent now. */
  readonly spansQueued: number;
  readonly batchesSent: number;
  readonly batchesFailed: number;
}

/** One request's trace, kept on its CallContext (`ctx.trace`, typed there as CallTrace) while tracing is on. */
export class RequestTrace implements CallTrace {
  /** Phase spans, finished in order. */
  readonly spans: Span[] = [];
  /** Set when the backend's traceparent was built. */
  propagated = false;
  constructor(
    readonly traceId: string,
    /** The caller's span id (incoming traceparent), or undefined for a trace started here. */
    readonly parentId: string | undefined,
    /** The gateway's SERVER span ('' when the call is not sampled: it is never reported). */
    readonly spanId: string,
    /** The CLIENT span of the backend call: the parent id the backend sees. */
    readonly backendSpanId: string,
    readonly flags: number,
    readonly state: string | undefined,
    readonly sampled: boolean,
  ) {}
}

export interface TracerOptions {
  readonly logger: Logger;
  /** Where spans are POSTed (default http://<hostname>:<port>/api/v2/spans from the settings). */
  readonly collectorUrl?: string;
}

/** A batch as one POST body: the exporter's format. */
type Encode = (batch: readonly Span[]) => { readonly body: string | Buffer; readonly contentType: string };

const zipkinEncode: Encode = (batch) => ({ body: JSON.stringify(batch), contentType: 'application/json' });

/** ms on the performance clock -> epoch µs (Zipkin timestamps). */
const epochMicros = (perfMs: number): number => Math.round((performance.timeOrigin + perfMs) * 1000);

function outcomeTag(o: Outcome): string {
  if (o === undefined) return 'continue';
  if ('fault' in o) return 'fault';
  if ('answer' in o) return 'answer';
  return 'forward';
}

/** The remote endpoint of a "host:port" pool key (Zipkin wants ipv4/ipv6 apart). */
function remoteOf(key: string | undefined): Span['remoteEndpoint'] {
  if (key === undefined) return undefined;
  const colon = key.lastIndexOf(':');
  const host = key.slice(0, colon);
  const port = Number(key.slice(colon + 1));
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) return { ipv4: host, port };
  if (host.includes(':')) return { ipv6: host, port };
  return { serviceName: host, port };
}

/** CallContext.beforeSend of a traced call: the traceparent (and tracestate) the backend sees. */
function propagate(ctx: CallContext): void {
  const trace = ctx.trace as RequestTrace | undefined;
  if (trace === undefined) return;
  ctx.outHeaders = withTraceFields(
    ctx.outHeaders ?? ctx.req.headers,
    formatTraceParent(trace.traceId, trace.backendSpanId, trace.flags),
    trace.state,
  );
  trace.propagated = true;
}

export class Tracer {
  /** Zipkin (remote_tracer) and OTLP ([throughway.tracing] otlp.*), each with its own bounded queue. */
  private readonly exporters: SpanExporter[] = [];
  private readonly local: { readonly serviceName: string };
  private recorded = 0;

  constructor(
    readonly settings: TracingSettings,
    private readonly options: TracerOptions,
  ) {
    this.local = Object.freeze({ serviceName: settings.serviceName });
    if (settings.remote) {
      const url =
        options.collectorUrl ??
        `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${settings.port}/api/v2/spans`;
      this.exporters.push(new SpanExporter(postTarget(url), settings, options.logger, zipkinEncode));
      if (settings.remoteName !== undefined && settings.remoteName.toLowerCase() !== 'zipkin') {
        options.logger.log('warn', 'tracer_format', {
          name: settings.remoteName,
          message: `remote_tracer.name ${JSON.stringify(settings.remoteName)}: spans are sent as Zipkin v2 JSON to ${url}`,
        });
      }
    }
    const otlp = settings.otlp;
    if (otlp !== undefined) {
      const service = settings.serviceName;
      // The OTLP encoders load with the first OTLP exporter (require('throughway') stays small:
      // test/package/module-count.test.ts).
      const { otlpJson, otlpProtobuf } = require('./otlp') as typeof import('./otlp');
      const encode: Encode =
        otlp.encoding === 'json'
          ? (batch) => ({ body: otlpJson(batch, service), contentType: 'application/json' })
          : (batch) => ({ body: otlpProtobuf(batch, service), contentType: 'application/x-protobuf' });
      this.exporters.push(new SpanExporter(postTarget(otlp.url), settings, options.logger, encode));
    }
  }

  /**
   * Starts the trace of a call from its request fields; true when it is sampled. An unsampled call runs
   * its phases without begin()/end() around each (they would record nothing): about 0.4 µs per call in
   * perf at 1 % sampling (docs/performance.md). Its traceparent still goes to the backend (beforeSend).
   */
  start(ctx: CallContext): boolean {
    const { parent, state } = traceContextOf(ctx.req.headers);
    // A trace started here is sampled; an unsampled call reports no span, so it needs no SERVER span id:
    // only the backend's parent id (its CLIENT span) is ever seen.
    const sampled = parent === undefined || (parent.flags & 1) === 1;
    const trace = new RequestTrace(
      parent?.traceId ?? newTraceId(),
      parent?.parentId,
      sampled ? newSpanId() : '',
      newSpanId(),
      parent?.flags ?? 1,
      state,
      sampled,
    );
    ctx.trace = trace;
    ctx.beforeSend = propagate;
    return trace.sampled;
  }

  // --- PhaseObserver (phases.ts runChainObserved) ---

  begin(ctx: CallContext, _phase: ChainStep): number {
    const trace = ctx.trace as RequestTrace | undefined;
    // An unsampled call records no span (end() and finish() return at once): no clock reading for it.
    return trace !== undefined && trace.sampled ? performance.now() : 0;
  }

  end(ctx: CallContext, phase: ChainStep, started: number, outcome: Outcome, error?: unknown): void {
    const trace = ctx.trace as RequestTrace | undefined;
    if (trace === undefined || !trace.sampled) return;
    const tags: Record<string, string> = { outcome: error !== undefined ? 'error' : outcomeTag(outcome) };
    // Built-in phases say whether they enforce anything yet; an embedder's custom phase always runs.
    if ((phase as Partial<Phase>).enforced === false) tags['throughway.enforced'] = 'false';
    if (outcome !== undefined && 'fault' in outcome) tags.error = String(outcome.fault.def.code);
    if (error !== undefined) tags.error = error instanceof Error ? error.message : String(error);
    trace.spans.push({
      traceId: trace.traceId,
      id: newSpanId(),
      parentId: trace.spanId,
      name: phase.name,
      timestamp: epochMicros(started),
      duration: Math.max(1, Math.round((performance.now() - started) * 1000)),
      localEndpoint: this.local,
      tags,
    });
  }

  /** The exchange is over: the SERVER span, the backend's CLIENT span, and the phases' spans go out. */
  finish(ctx: CallContext, r: ExchangeRecord): void {
    const trace = ctx.trace as RequestTrace | undefined;
    if (trace === undefined || !trace.sampled) return;
    const end = performance.now();
    const code = r.faultCode ?? r.fault?.code;
    const api = ctx.api;
    const serverTags: Record<string, string> = { 'http.method': r.method, 'http.path': ctx.path, 'http.status_code': String(r.status) };
    if (api !== undefined) serverTags['throughway.api'] = api.id;
    const tenant = callTenant(ctx, r.url);
    if (tenant !== undefined) serverTags['throughway.tenant'] = tenant;
    if (ctx.resource !== undefined) serverTags['throughway.resource'] = ctx.resource.def.path;
    if (code !== undefined) serverTags.error = String(code);
    const server: Span = {
      traceId: trace.traceId,
      id: trace.spanId,
      ...(trace.parentId !== undefined ? { parentId: trace.parentId } : {}),
      name: `${r.method} ${api !== undefined ? api.path + (ctx.resource?.def.path ?? '') : 'unmatched'}`,
      kind: 'SERVER',
      timestamp: epochMicros(end - r.durationMs),
      duration: Math.max(1, Math.round(r.durationMs * 1000)),
      localEndpoint: this.local,
      ...(r.remoteAddress !== ''
        ? { remoteEndpoint: r.remoteAddress.includes(':') ? { ipv6: r.remoteAddress } : { ipv4: r.remoteAddress } }
        : {}),
      tags: serverTags,
    };
    const out: Span[] = [server, ...trace.spans];
    if (r.upstreamMs >= 0 && trace.propagated) {
      const tags: Record<string, string> = { 'http.status_code': String(r.status) };
      if (r.fault !== undefined) tags.error = `${r.fault.code} (${r.fault.base}+${r.fault.state})`;
      if (r.retries > 0) tags['throughway.retries'] = String(r.retries);
      const remote = remoteOf(r.target);
      out.push({
        traceId: trace.traceId,
        id: trace.backendSpanId,
        parentId: trace.spanId,
        name: 'backend',
        kind: 'CLIENT',
        timestamp: epochMicros(end - r.upstreamMs),
        duration: Math.max(1, Math.round(r.upstreamMs * 1000)),
        localEndpoint: this.local,
        ...(remote !== undefined ? { remoteEndpoint: remote } : {}),
        tags,
      });
    }
    this.emit(out);
  }

  private emit(spans: readonly Span[]): void {
    this.recorded += spans.length;
    const log = this.options.logger;
    if (this.settings.logTracer && log.enabled('info')) {
      for (const s of spans) {
        log.log('info', 'span', {
          traceId: s.traceId,
          spanId: s.id,
          parentId: s.parentId,
          name: s.name,
          kind: s.kind,
          timestampUs: s.timestamp,
          durationUs: s.duration,
          tags: s.tags,
        });
      }
    }
    for (const e of this.exporters) e.add(spans);
  }

  /** Sent, dropped, queued and batches: summed over the exporters (with both on, a span counts in each). */
  stats(): TracingStats {
    let sent = 0;
    let dropped = 0;
    let queued = 0;
    let batchesSent = 0;
    let batchesFailed = 0;
    for (const e of this.exporters) {
      sent += e.sent;
      dropped += e.dropped;
      queued += e.queue.length;
      batchesSent += e.batchesSent;
      batchesFailed += e.batchesFailed;
    }
    return { spansRecorded: this.recorded, spansSent: sent, spansDropped: dropped, spansQueued: queued, batchesSent, batchesFailed };
  }

  /** Sends what is queued now (one attempt per batch). */
  async flush(): Promise<void> {
    await Promise.all(this.exporters.map((e) => e.flush()));
  }

  /** Stops the timers and sends (or drops, counted) every queued span. */
  async close(): Promise<void> {
    await Promise.all(this.exporters.map((e) => e.close()));
  }
}

/**
 * The batching sender: a bounded queue, one POST in flight at a time, a flush timer (unref'd: it never
 * keeps the process alive), and an early flush when a batch is full. A failed batch is dropped and counted
 * rather than retried: spans are diagnostics, and a retry would only grow the backlog of a collector that is
 * down (Zipkin's own reporters do the same).
 */
class SpanExporter {
  readonly queue: Span[] = [];
  sent = 0;
  dropped = 0;
  batchesSent = 0;
  batchesFailed = 0;
  private running: Promise<void> | undefined;
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private down = false;
  private closed = false;

  constructor(
    private readonly target: PostTarget,
    private readonly settings: TracingSettings,
    private readonly logger: Logger,
    private readonly encode: Encode,
  ) {
    this.timer = setInterval(() => void this.flush(), settings.flushInterval);
    this.timer.unref();
  }

  add(spans: readonly Span[]): void {
    const q = this.queue;
    const max = this.settings.queueSize;
    for (const s of spans) {
      if (q.length >= max || this.closed) this.dropped++;
      else q.push(s);
    }
    if (q.length >= this.settings.batchSize && !this.scheduled && this.running === undefined) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.running === undefined) this.running = this.run(this.settings.batchSize);
      });
    }
  }

  /** Everything queued (the timer, close, tests). */
  flush(): Promise<void> {
    if (this.running !== undefined) return this.running;
    if (this.queue.length === 0) return Promise.resolve();
    this.running = this.run(1);
    return this.running;
  }

  private run(least: number): Promise<void> {
    return this.drain(least).finally(() => {
      this.running = undefined;
    });
  }

  /**
   * Batches while at least `least` spans wait (1: everything; batch_size: full batches only, the early
   * flush) or until a batch fails (the rest waits for the next flush).
   */
  private async drain(least: number): Promise<void> {
    while (this.queue.length >= least && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.settings.batchSize);
      const { body, contentType } = this.encode(batch);
      const r = await postBody(this.target, body, contentType, this.settings.sendTimeout);
      this.result(r, batch.length);
      if (!r.ok) return;
    }
  }

  private result(r: PostResult, n: number): void {
    if (r.ok) {
      this.sent += n;
      this.batchesSent++;
      if (this.down) {
        this.down = false;
        this.logger.log('info', 'tracer_collector_up', { url: this.target.url.href });
      }
      return;
    }
    this.dropped += n;
    this.batchesFailed++;
    // One line when the collector goes away, not one per batch.
    if (!this.down) {
      this.down = true;
      this.logger.log('warn', 'tracer_collector_down', {
        url: this.target.url.href,
        error: r.error,
        message: 'spans are dropped (counted) until the collector answers',
      });
    }
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.running !== undefined) await this.running;
    this.closed = true;
    await this.drain(1);
    // A collector that failed now gets no second wait per batch: shutdown stays bounded by one send_timeout.
    this.dropped += this.queue.length;
    this.queue.length = 0;
    this.target.agent.destroy();
  }
}
