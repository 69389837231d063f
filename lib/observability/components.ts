/**
 * Metrics and health of the gateway's components (docs/operations.md: throttled requests by level, token cache hit
 * ratio, worker pool queue; health of worker pool saturation, Redis and JWKS reachability when
 * configured). Every metric here reads counters the components keep in plain numbers (the throttling
 * phase's refusals by code, the token cache's hits and misses, the pool's queue, the tracer's and the
 * analytics sender's stats()) at scrape time: nothing is added per request.
 *
 * The gateway is passed as a getter: the node registers these before the gateway exists (the management
 * port opens first), and a node of a role without a gateway answers zero / no samples.
 */
import type { Gateway as GatewayCore } from '../gateway';
import { RedisCounterStore } from '../throttle/redis';
import type { Analytics } from './analytics';
import type { Tracer } from './tracing';
import type { HealthChecker, HealthResult } from './health';
import type { Metrics, Sample } from './metrics';

/** The throttling level behind each code (spec 002 part 7). */
export const THROTTLE_LEVELS: Readonly<Record<number, string>> = {
  900800: 'api',
  900801: 'hard_limit',
  900802: 'resource',
  900803: 'application',
  900804: 'subscription',
  900805: 'blocked',
  900806: 'custom',
  900807: 'burst',
};

/** What these metrics read of a gateway: its components, and the call observers lib/embed adds to it. */
type Gateway = Pick<GatewayCore, 'throttle' | 'security' | 'mediation'> & {
  readonly tracer: Tracer | undefined;
  readonly analytics: Analytics | undefined;
};
type GatewayRef = () => Gateway | undefined;

/** Registers the component metrics (docs/operations.md lists each name). */
export function registerComponentMetrics(metrics: Metrics, gateway: GatewayRef): void {
  const samples =
    (pick: (g: Gateway) => readonly Sample[]): (() => readonly Sample[]) =>
    () => {
      const g = gateway();
      return g === undefined ? [] : pick(g);
    };
  const number =
    (pick: (g: Gateway) => number): (() => number) =>
    () => {
      const g = gateway();
      return g === undefined ? 0 : pick(g);
    };

  metrics.register({
    name: 'throughway_throttled_requests_total',
    help: 'Calls refused by throttling, by level (api, resource, subscription, burst, application, custom, hard_limit, blocked) and fault code.',
    type: 'counter',
    collect: samples((g) =>
      [...g.throttle.refused].map(([code, value]) => ({ labels: { level: THROTTLE_LEVELS[code] ?? 'other', code }, value })),
    ),
  });
  metrics.register({
    name: 'throughway_token_cache_lookups_total',
    help: 'Gateway token cache lookups ([apim.cache.gateway_token]) by result: hit, or miss (absent or expired).',
    type: 'counter',
    collect: samples((g) => [
      { labels: { result: 'hit' }, value: g.security.cache.hits },
      { labels: { result: 'miss' }, value: g.security.cache.misses },
    ]),
  });
  metrics.register({
    name: 'throughway_token_cache_hit_ratio',
    help: 'Token cache hits / lookups since start (0 before the first lookup).',
    type: 'gauge',
    perProcess: true,
    collect: number((g) => {
      const c = g.security.cache;
      const n = c.hits + c.misses;
      return n === 0 ? 0 : c.hits / n;
    }),
  });
  metrics.register({
    name: 'throughway_token_cache_entries',
    help: 'Validated tokens held in the token cache.',
    type: 'gauge',
    collect: number((g) => g.security.cache.size),
  });
  metrics.register({
    name: 'throughway_jwks_keys',
    help: 'Keys held per external issuer JWKS; a labelled sample per issuer with up = 0 when its last fetch failed.',
    type: 'gauge',
    perProcess: true,
    collect: samples((g) =>
      g.security.health().issuers.map((i) => ({ labels: { issuer: i.issuer, up: i.error === undefined ? 1 : 0 }, value: i.keys })),
    ),
  });
  metrics.register({
    name: 'throughway_worker_pool_threads',
    help: 'Mediation worker threads running ([mediation] engine.max_threads bounds them).',
    type: 'gauge',
    collect: number((g) => g.mediation.pool.threads),
  });
  metrics.register({
    name: 'throughway_worker_pool_pending',
    help: 'Mediation tasks submitted and not settled (running plus queued).',
    type: 'gauge',
    collect: number((g) => g.mediation.pool.pending),
  });
  metrics.register({
    name: 'throughway_worker_pool_queue',
    help: 'Mediation tasks waiting for a thread (engine.threads_queue_length bounds them).',
    type: 'gauge',
    collect: number((g) => g.mediation.pool.queued),
  });
  metrics.register({
    name: 'throughway_worker_pool_utilization',
    help: "Mediation threads' utilisation since the pool started, 0..1.",
    type: 'gauge',
    perProcess: true,
    collect: number((g) => g.mediation.pool.utilization),
  });
  metrics.register({
    name: 'throughway_tracing_spans_total',
    help: 'Spans by outcome: recorded, sent (acknowledged by the collector), dropped (queue full or batch failed).',
    type: 'counter',
    collect: samples((g) => {
      const s = g.tracer?.stats();
      if (s === undefined) return [];
      return [
        { labels: { outcome: 'recorded' }, value: s.spansRecorded },
        { labels: { outcome: 'sent' }, value: s.spansSent },
        { labels: { outcome: 'dropped' }, value: s.spansDropped },
      ];
    }),
  });
  metrics.register({
    name: 'throughway_tracing_spans_queued',
    help: 'Spans waiting to be sent.',
    type: 'gauge',
    collect: number((g) => g.tracer?.stats().spansQueued ?? 0),
  });
  metrics.register({
    name: 'throughway_analytics_events_total',
    help: 'Analytics events by outcome: recorded (one per request), sent (per receiver group and file), dropped.',
    type: 'counter',
    collect: samples((g) => {
      const s = g.analytics?.stats();
      if (s === undefined) return [];
      return [
        { labels: { outcome: 'recorded' }, value: s.eventsRecorded },
        { labels: { outcome: 'sent' }, value: s.eventsSent },
        { labels: { outcome: 'dropped' }, value: s.eventsDropped },
      ];
    }),
  });
  metrics.register({
    name: 'throughway_analytics_events_queued',
    help: 'Analytics deliveries waiting.',
    type: 'gauge',
    collect: number((g) => g.analytics?.stats().eventsQueued ?? 0),
  });
}

/**
 * `worker_pool_health_checker`: DOWN when the mediation pool is saturated, i.e. every thread is busy and
 * the queue is full (the next script call is refused with 103060), or, for an unbounded queue
 * (threads_queue_length = -1), when at least `queueLimit` tasks wait. A pool never started is UP.
 */
export function workerPoolChecker(gateway: GatewayRef, options: { readonly order: number; readonly queueLimit: number }): HealthChecker {
  return {
    name: 'worker_pool_health_checker',
    order: options.order,
    check(): HealthResult {
      const g = gateway();
      if (g === undefined) return { healthy: true, message: 'no gateway runs on this node' };
      const pool = g.mediation.pool;
      const s = pool.settings;
      const details = {
        started: pool.started,
        threads: pool.threads,
        maxThreads: s.maxThreads,
        pending: pool.pending,
        queued: pool.queued,
        maxQueue: Number.isFinite(s.maxQueue) ? s.maxQueue : -1,
      };
      const busy = pool.pending >= s.maxThreads;
      const limit = Number.isFinite(s.maxQueue) ? s.maxQueue : options.queueLimit;
      if (busy && pool.queued >= limit && pool.queued > 0)
        return { healthy: false, message: `all ${s.maxThreads} mediation threads are busy and ${pool.queued} tasks wait`, details };
      return { healthy: true, details };
    },
  };
}

/**
 * `jwks_health_checker` (registered when external issuers with a `jwks_endpoint` are configured): DOWN
 * when an issuer's JWKS could not be read at its last fetch. A set never fetched, or one whose last fetch
 * failed, is fetched now (one fetch per issuer at a time, shared with the calls), so the probe reports
 * reachability rather than the last call's luck; a healthy set is not fetched again by the probe.
 */
export function jwksChecker(gateway: GatewayRef, options: { readonly order: number }): HealthChecker {
  return {
    name: 'jwks_health_checker',
    order: options.order,
    async check(): Promise<HealthResult> {
      const g = gateway();
      if (g === undefined) return { healthy: true, message: 'no gateway runs on this node' };
      const remote = [...g.security.validator.remote.values()];
      await Promise.all(
        remote.map((r) => (r.keys.state().lastFetchAt === undefined || r.keys.state().error !== undefined ? r.keys.refresh() : undefined)),
      );
      const issuers = g.security.health().issuers;
      const failing = issuers.filter((i) => i.error !== undefined);
      const details = {
        issuers: issuers.map((i) => ({ issuer: i.issuer, url: i.url, keys: i.keys, ...(i.error !== undefined ? { error: i.error } : {}) })),
      };
      if (failing.length > 0)
        return {
          healthy: false,
          message: `JWKS not reachable: ${failing.map((i) => `${i.issuer} (${i.error ?? ''})`).join(', ')}`,
          details,
        };
      return { healthy: true, details };
    },
  };
}

/**
 * `redis_health_checker` (registered with `[apim.throttling] counter_store = "redis"`): DOWN while the
 * connection is not ready or does not answer PING. Throttling goes on counting locally meanwhile
 * (docs/throttling.md): DOWN says the limits are per node, not cluster-wide. The URL's password is never
 * reported.
 */
export function redisChecker(gateway: GatewayRef, options: { readonly order: number }): HealthChecker {
  return {
    name: 'redis_health_checker',
    order: options.order,
    async check(): Promise<HealthResult> {
      const counters = gateway()?.throttle.counters;
      if (!(counters instanceof RedisCounterStore)) return { healthy: true, message: 'counters are kept in memory' };
      const status = counters.client.status;
      if (status !== 'ready')
        return { healthy: false, message: `Redis connection is ${status}: throttling counts per node`, details: { status } };
      try {
        await counters.client.ping();
      } catch (err) {
        return { healthy: false, message: `Redis does not answer PING: ${(err as Error).message}`, details: { status } };
      }
      return { healthy: true, details: { status } };
    },
  };
}

/** Whether the gateway validates tokens of external issuers against a JWKS (the JWKS checker applies). */
export function hasRemoteIssuers(gateway: Gateway): boolean {
  return gateway.security.validator.remote.size > 0;
}
