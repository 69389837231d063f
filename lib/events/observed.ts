/**
 * What a part offers the observers (lib/observability, docs/operations.md): a health checker run by
 * `GET /health` and metrics read at each scrape of `GET /metrics`. Plain shapes, so the throttle, scale-out
 * and key manager parts hand them to the boot without importing an observer; and the operations routes'
 * handler the management server asks first (lib/observability/routes.ts).
 */
import type * as http from 'node:http';

export interface HealthResult {
  readonly healthy: boolean;
  /** Why it is unhealthy (or a note when healthy). */
  readonly message?: string;
  /** Figures behind the verdict (pool usage, ...). Never credentials. */
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface HealthChecker {
  /** Shown in the report; the spec's checker names where there is one (data_source_health_checker). */
  readonly name: string;
  /** Lower runs (and is listed) first, like the reference's `order`. */
  readonly order: number;
  check(): HealthResult | Promise<HealthResult>;
}

export type MetricType = 'counter' | 'gauge';

export interface Sample {
  readonly labels?: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/**
 * A metric whose values are read at scrape time: the registration interface for the parts of the gateway
 * (throttled requests by level, token cache hit ratio, worker pool queue, Redis, ...). `collect` must be
 * cheap and synchronous or return a promise; it runs once per scrape.
 */
export interface MetricSource {
  /** Prometheus name: [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total. Prefix with `throughway_`. */
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  collect(): number | readonly Sample[] | Promise<number | readonly Sample[]>;
  /**
   * Cluster mode (lib/scale/cluster-ops.ts): the primary sums each metric over the workers unless it is a
   * figure of one process that a sum would falsify (a ratio, a utilisation, keys held per process): those
   * set `perProcess` and keep one series per process, labelled `process`.
   */
  readonly perProcess?: boolean;
}

/** Where a part registers its metrics (lib/observability/metrics.ts Metrics). */
export interface MetricRegistry {
  register(source: MetricSource): void;
}

/** Answers a management request it knows and resolves true; false: not its path, the caller goes on. */
export type OpsHandler = (req: http.IncomingMessage, res: http.ServerResponse, path: string) => Promise<boolean>;
