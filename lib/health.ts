/**
 * What a component reports of its health: a named checker the node's Health runs on `GET /health`
 * (spec 001, [server_health_check]; docs/operations.md). A plain interface on the ground floor, so that a
 * component (throttle decisions, the event hub) offers its checker without importing the observer.
 */
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
