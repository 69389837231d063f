/**
 * Metrics for `GET /metrics` on the management port (docs/operations.md), in the Prometheus text
 * exposition format (version 0.0.4).
 *
 * Why prom-client: the exposition format has escaping rules (label values, HELP text), cumulative
 * histogram buckets with `le="+Inf"`, and naming rules that a hand-written writer gets subtly wrong; and
 * prom-client's default metrics give process and event-loop figures (nodejs_eventloop_lag_seconds, heap,
 * handles, CPU) from perf_hooks without code of ours. It is used only at scrape time.
 *
 * Why not prom-client per request: its Counter.inc/Histogram.observe hash the label set on every call.
 * The pass-through path instead counts in plain numbers: a Map from a label key to a number, histogram
 * buckets in a Float64Array, and the transport's own counters (TransportStats, connection states, pools)
 * are read where they already are. Every metric here is a collector that prom-client calls when
 * Prometheus scrapes (docs/operations.md lists names and labels).
 *
 * Other parts plug in with `register()` (a collect callback, same idea) or by registering prom-client
 * metrics on `registry` directly.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { MetricSource, MetricType, Sample } from '../events/observed';
import type { ExchangeRecord } from '../transport/types';
import type { Transport } from '../transport';
import { STATE_NAMES } from '../transport/states';
import { InternalError } from '../errors';

// The metric sources' shape is vocabulary (lib/events/observed.ts): the parts below offer them without importing this.
export type { MetricSource, MetricType, Sample } from '../events/observed';

/** What prom-client's Registry calls on a metric: `get()` for its name, help, type and values. */
interface PromValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}
interface PromMetric {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: PromValue[]; aggregator: 'sum' }>;
  reset(): void;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** prom-client default gauges left out of the exposition (docs/operations.md, "Metrics"). */
export const DROPPED_DEFAULT_METRICS: readonly string[] = Object.freeze([
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]);

/** Latency buckets in seconds: a pass-through call is sub-millisecond, a slow backend seconds. */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
]);

/** Histogram counts in plain arrays: one increment per observation, made cumulative at scrape. */
export class HistogramCounts {
  readonly counts: Float64Array;
  /**
   * The bounds as a typed array: indexing the plain `buckets` arrays (of several element kinds across the
   * node's histograms) went through V8's generic keyed-load builtin, 1.4k instructions per call on the
   * deployed node under callgrind (docs/performance.md, "The deployed node").
   */
  private readonly bounds: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly buckets: readonly number[]) {
    this.counts = new Float64Array(buckets.length + 1);
    this.bounds = Float64Array.from(buckets);
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > (b[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += v;
    this.count++;
  }

  /** Prometheus samples: cumulative `_bucket` with `le`, `_sum`, `_count`. */
  samples(name: string, labels: Record<string, string | number>): PromValue[] {
    const out: PromValue[] = [];
    let acc = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      acc += this.counts[i] as number;
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: this.buckets[i] as number }, value: acc });
    }
    acc += this.counts[this.buckets.length] as number;
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: acc });
    out.push({ metricName: `${name}_sum`, labels, value: this.sum });
    out.push({ metricName: `${name}_count`, labels, value: this.count });
    return out;
  }
}

/** One status and fault code's count, added to in place (one Map look-up per new key, not a get and a set). */
interface StatusCount {
  n: number;
}

interface ApiCounts {
  /** Calls by status * 10^6 + fault code (0: none). */
  readonly byStatus: Map<number, StatusCount>;
  readonly total: HistogramCounts;
  readonly backend: HistogramCounts;
  /** The key and count of this API's last exchange: most calls of an API answer as the one before. */
  lastKey: number;
  lastCount: StatusCount;
}

export interface MetricsOptions {
  /** prom-client's default process metrics (event-loop lag, heap, CPU); default true. */
  readonly processMetrics?: boolean;
}

/** What the gateway gives the metrics: its transport, and the API a request target belongs to. */
export interface MetricsTarget {
  readonly transport: Transport;
  apiOf(url: string): string | undefined;
}

/** The period of prom-client's event-loop delay samples (monitorEventLoopDelay's resolution), in ms. */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * The node's metrics. One per node (never prom-client's global registry: embedders and tests run several).
 */
export class Metrics {
  readonly registry = new Registry();
  /** Per API label: counts and latencies. */
  private readonly apis = new Map<string, ApiCounts>();
  /** The API label and counts of the last exchange, looked up again only when the label changes. */
  private lastApi: string | undefined = undefined;
  private lastCounts: ApiCounts | undefined = undefined;
  private readonly total = new Map<string, HistogramCounts>();
  private readonly backend = new Map<string, HistogramCounts>();
  private target: MetricsTarget | undefined;
  /** Names of the metrics registered with `perProcess` (sent with this process's metrics to a cluster primary). */
  readonly perProcess = new Set<string>();
  /** Cluster primary: the exposition of its own metrics merged with its workers' (lib/scale/cluster-ops.ts). */
  private exposition: (() => Promise<string>) | undefined;

  constructor(options: MetricsOptions = {}) {
    if (options.processMetrics !== false) {
      // prom-client samples the event loop's delay with a libuv timer of this period (its default, 10 ms,
      // woke every node 100 times a second, idle or not: 1,667 epoll_wait calls in 10 s of an idle default
      // node, strace -c; docs/performance.md, "The deployed node"). 100 ms still gives 150 samples between
      // two scrapes 15 s apart for nodejs_eventloop_lag_p99_seconds and the other percentiles.
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
      // Gauges named with a counter's `_total` suffix: `promtool check metrics` refuses them (exit 3). Their
      // figure is the sum of the labelled gauge of the same stem (`sum(nodejs_active_handles)`), which stays.
      for (const name of DROPPED_DEFAULT_METRICS) this.registry.removeSingleMetric(name);
    }
    this.registerBuiltins();
  }

  /** The gateway whose traffic is measured (connections, pools, faults are read from its transport). */
  attach(target: MetricsTarget | undefined): void {
    this.target = target;
  }

  /**
   * One finished exchange (the transport's onExchange): counted in plain numbers, nothing else. The API
   * label is the deployed API's "name:version" ('' for calls that matched none).
   */
  onExchange(r: ExchangeRecord): void {
    // The API id is the compiled API's own string: no string is built per request.
    const api = this.target?.apiOf(r.url) ?? '';
    // The deployed node's calls mostly repeat the last one's label and status: skipping the Map look-ups
    // counted 125 to 260 instructions fewer per exchange under callgrind (docs/performance.md, "The deployed
    // node's request path").
    let a = api === this.lastApi ? this.lastCounts : this.apis.get(api);
    if (a === undefined) {
      a = {
        byStatus: new Map(),
        total: new HistogramCounts(LATENCY_BUCKETS),
        backend: new HistogramCounts(LATENCY_BUCKETS),
        // No key is negative: the first exchange looks its key up.
        lastKey: -1,
        lastCount: { n: 0 },
      };
      this.apis.set(api, a);
      this.total.set(api, a.total);
    }
    this.lastApi = api;
    this.lastCounts = a;
    // status * 10^6 + fault code: fault codes are below 10^6 and never 0, so 0 means "no fault".
    const key = r.status * 1_000_000 + (r.faultCode ?? 0);
    if (key === a.lastKey) a.lastCount.n++;
    else {
      let c = a.byStatus.get(key);
      if (c === undefined) {
        c = { n: 0 };
        a.byStatus.set(key, c);
      }
      c.n++;
      a.lastKey = key;
      a.lastCount = c;
    }
    a.total.observe(r.durationMs / 1000);
    if (r.upstreamMs >= 0) {
      if (a.backend.count === 0) this.backend.set(api, a.backend);
      a.backend.observe(r.upstreamMs / 1000);
    }
  }

  /** Adds a metric read at scrape time (see MetricSource). Names must be unique. */
  register(source: MetricSource): void {
    if (!NAME.test(source.name)) throw new InternalError(`invalid metric name ${JSON.stringify(source.name)}`);
    const { name, help, type } = source;
    if (source.perProcess === true) this.perProcess.add(name);
    const metric: PromMetric = {
      name,
      help,
      type,
      aggregator: 'sum',
      async get() {
        const v = await source.collect();
        const values: PromValue[] =
          typeof v === 'number' ? [{ labels: {}, value: v }] : v.map((s) => ({ labels: { ...(s.labels ?? {}) }, value: s.value }));
        return { name, help, type, values, aggregator: 'sum' };
      },
      reset() {},
    };
    this.registry.registerMetric(metric as never);
  }

  /** A histogram kept in HistogramCounts (per label value of `label`), read at scrape time. */
  registerHistogram(name: string, help: string, label: string, source: () => ReadonlyMap<string, HistogramCounts>): void {
    const metric: PromMetric = {
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      async get() {
        const values: PromValue[] = [];
        for (const [value, h] of source()) values.push(...h.samples(name, { [label]: value }));
        return { name, help, type: 'histogram', values, aggregator: 'sum' };
      },
      reset() {},
    };
    this.registry.registerMetric(metric as never);
  }

  /** The exposition text. */
  text(): Promise<string> {
    return this.exposition !== undefined ? this.exposition() : this.registry.metrics();
  }

  /** A cluster primary answers GET /metrics with `text` (its own metrics and its workers'); undefined: its own only. */
  exposeWith(text: (() => Promise<string>) | undefined): void {
    this.exposition = text;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private registerBuiltins(): void {
    const t = (): Transport | undefined => this.target?.transport;
    this.register({
      name: 'throughway_requests_total',
      help: 'Requests answered by the gateway, by API ("name:version", "" for none), HTTP status (0: client left first) and fault code ("" for none).',
      type: 'counter',
      collect: () => {
        const out: Sample[] = [];
        for (const [api, a] of this.apis) {
          for (const [key, c] of a.byStatus) {
            const code = key % 1_000_000;
            out.push({ labels: { api, status: (key - code) / 1_000_000, fault_code: code === 0 ? '' : code }, value: c.n });
          }
        }
        return out;
      },
    });
    this.registerHistogram(
      'throughway_request_duration_seconds',
      'Time from the request head received to the response done, by API.',
      'api',
      () => this.total,
    );
    this.registerHistogram(
      'throughway_backend_duration_seconds',
      'Time from the request handed to a backend connection to its response done, by API.',
      'api',
      () => this.backend,
    );
    this.register({
      name: 'throughway_transport_faults_total',
      help: 'Transport faults (spec 002 part 7: code = base + state), by side, base code and protocol state.',
      type: 'counter',
      collect: () => {
        const out: Sample[] = [];
        for (const [key, value] of t()?.stats.faultsByKey ?? []) {
          const [side, base, state] = key.split(':') as [string, string, string];
          out.push({ labels: { side, base, state: STATE_NAMES[Number(state)] ?? state, code: Number(base) + Number(state) }, value });
        }
        return out;
      },
    });
    this.register({
      name: 'throughway_connections',
      help: 'Open connections by side (source: clients, target: backends, idle pooled ones included) and protocol state.',
      type: 'gauge',
      collect: () => {
        const tr = t();
        if (tr === undefined) return [];
        const { sources, targets } = tr.connectionStates();
        const out: Sample[] = [];
        for (let i = 0; i < sources.length; i++) {
          out.push({ labels: { side: 'source', state: STATE_NAMES[i] ?? String(i) }, value: sources[i] ?? 0 });
          out.push({ labels: { side: 'target', state: STATE_NAMES[i] ?? String(i) }, value: targets[i] ?? 0 });
        }
        return out;
      },
    });
    this.register({
      name: 'throughway_pool_connections',
      help: 'Backend keep-alive pools, by target host:port: connections open (or opening), idle, and calls waiting for one.',
      type: 'gauge',
      collect: () => {
        const out: Sample[] = [];
        for (const p of t()?.pools() ?? []) {
          out.push({ labels: { target: p.key, kind: 'open' }, value: p.open });
          out.push({ labels: { target: p.key, kind: 'idle' }, value: p.idle });
          out.push({ labels: { target: p.key, kind: 'waiting' }, value: p.waiting });
        }
        return out;
      },
    });
    this.register({
      name: 'throughway_pool_max_connections',
      help: "Most connections per backend host:port ([passthru_http] 'http.max.connection.per.host.port').",
      type: 'gauge',
      collect: () => t()?.settings.maxConnectionsPerRoute ?? 0,
    });
    this.register({
      name: 'throughway_in_flight',
      help: 'Calls holding an in-flight slot ([passthru_http] worker_pool_size_max).',
      type: 'gauge',
      collect: () => t()?.connections().inFlight ?? 0,
    });
    this.register({
      name: 'throughway_in_flight_queued',
      help: 'Calls waiting for an in-flight slot ([passthru_http] worker_pool_queue_length).',
      type: 'gauge',
      collect: () => t()?.connections().queued ?? 0,
    });
    const stat = (name: string, help: string, pick: (s: Transport['stats']) => number): void =>
      this.register({
        name,
        help,
        type: 'counter',
        collect: () => {
          const tr = t();
          return tr === undefined ? 0 : pick(tr.stats);
        },
      });
    stat('throughway_source_connections_accepted_total', 'Client connections accepted.', (s) => s.sourcesAccepted);
    stat('throughway_target_connections_created_total', 'Backend connections opened.', (s) => s.targetsCreated);
    stat('throughway_target_connections_reused_total', 'Requests sent on a pooled keep-alive backend connection.', (s) => s.targetsReused);
    stat('throughway_retries_total', 'Backend attempts beyond the first (stale connection and endpoint retry).', (s) => s.retries);
  }
}
