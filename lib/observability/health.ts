/**
 * Health checks (spec 001, [server_health_check]; docs/operations.md): `GET /health` on the management
 * port runs every registered checker, in the order of its `order` (ties: the order of registration), and
 * answers 200 when all are healthy, 503 naming the failing ones otherwise. `GET /health/live` never runs
 * a checker: a process that answers it is alive (a liveness probe must not fail because a database is
 * down, or the orchestrator restarts a gateway that could still serve cached tokens).
 *
 * Checkers run concurrently, each bounded by `[throughway.operations] health_check_timeout`: one that
 * hangs (an unreachable database) is reported DOWN rather than hanging the probe.
 *
 * Other parts add theirs with `register()` (worker pool saturation, Redis, JWKS reachability):
 * docs/operations.md.
 */
import type { HealthChecker, HealthResult } from '../events/observed';
import type { Store } from '../store/types';
import type { Transport } from '../transport';
import { ThroughwayError } from '../errors';

// The checkers' shape is vocabulary (lib/events/observed.ts): the parts below offer checkers without importing this.
export type { HealthChecker, HealthResult } from '../events/observed';

export interface CheckReport {
  readonly name: string;
  readonly order: number;
  readonly status: 'UP' | 'DOWN';
  readonly message?: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface HealthReport {
  readonly status: 'UP' | 'DOWN';
  /** Names of the checkers that are DOWN, in order. */
  readonly failing: readonly string[];
  readonly checks: readonly CheckReport[];
}

export class HealthError extends ThroughwayError {
  readonly code = 'HEALTH_CHECKER_DUPLICATE';
}

export class Health {
  private readonly checkers: HealthChecker[] = [];
  private stopping = false;

  constructor(readonly timeoutMs = 5000) {}

  /**
   * The node is shutting down: /health answers 503 (failing: "shutdown") from now on, so a load balancer
   * stops sending new calls while in-flight ones finish.
   */
  shuttingDown(): void {
    this.stopping = true;
  }

  /** Adds a checker; a second one with the same name is refused (HealthError). */
  register(checker: HealthChecker): void {
    if (this.checkers.some((c) => c.name === checker.name))
      throw new HealthError(`a health checker named ${checker.name} is already registered`);
    this.checkers.push(checker);
  }

  list(): readonly HealthChecker[] {
    // Array.prototype.sort is stable: equal orders keep their registration order.
    return [...this.checkers].sort((a, b) => a.order - b.order);
  }

  async run(): Promise<HealthReport> {
    if (this.stopping)
      return {
        status: 'DOWN',
        failing: ['shutdown'],
        checks: [{ name: 'shutdown', order: -1, status: 'DOWN', message: 'the node is shutting down' }],
      };
    const ordered = this.list();
    const checks = await Promise.all(ordered.map((c) => this.runOne(c)));
    const failing = checks.filter((c) => c.status === 'DOWN').map((c) => c.name);
    return { status: failing.length === 0 ? 'UP' : 'DOWN', failing, checks };
  }

  private async runOne(c: HealthChecker): Promise<CheckReport> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<HealthResult>((resolve) => {
      timer = setTimeout(() => resolve({ healthy: false, message: `no answer within ${this.timeoutMs} ms` }), this.timeoutMs);
    });
    let r: HealthResult;
    try {
      r = await Promise.race([Promise.resolve().then(() => c.check()), timeout]);
    } catch (err) {
      r = { healthy: false, message: err instanceof Error ? err.message : String(err) };
    } finally {
      clearTimeout(timer);
    }
    return {
      name: c.name,
      order: c.order,
      status: r.healthy ? 'UP' : 'DOWN',
      ...(r.message !== undefined ? { message: r.message } : {}),
      ...(r.details !== undefined ? { details: r.details } : {}),
    };
  }
}

/**
 * `data_source_health_checker` (spec 001): pool usage against `pool_usage_limit_percentage`, then a real
 * connection obtained (a query on the store's schema table). The embedded SQLite store has no pool: only
 * the query runs.
 */
export function dataSourceChecker(
  store: Store,
  options: { readonly order: number; readonly limitPercentage: number; readonly name?: string },
): HealthChecker {
  return {
    name: options.name ?? 'data_source_health_checker',
    order: options.order,
    async check() {
      const details: Record<string, unknown> = { datasource: 'apim_db', database: store.kind };
      const usage = store.poolUsage?.();
      if (usage !== undefined) {
        const percent = usage.max > 0 ? Math.round((usage.active / usage.max) * 100) : 0;
        Object.assign(details, {
          poolActive: usage.active,
          poolMax: usage.max,
          poolUsagePercentage: percent,
          poolUsageLimitPercentage: options.limitPercentage,
        });
        if (percent > options.limitPercentage) {
          return {
            healthy: false,
            message: `pool usage ${percent}% is above pool_usage_limit_percentage ${options.limitPercentage}%`,
            details,
          };
        }
      }
      try {
        details.schemaVersion = await store.schemaVersion();
      } catch (err) {
        return { healthy: false, message: `no connection obtained: ${(err as Error).message}`, details };
      }
      return { healthy: true, details };
    },
  };
}

/**
 * `backend_pool_health_checker` (throughway's own): the gateway's keep-alive pools per backend host:port.
 * DOWN when a route uses at least `limitPercentage` of 'http.max.connection.per.host.port' and calls wait
 * for a connection: new calls to it queue until the connect timeout (101504 at state 0, 503).
 */
export function backendPoolChecker(
  transport: () => Transport | undefined,
  options: { readonly order: number; readonly limitPercentage: number },
): HealthChecker {
  return {
    name: 'backend_pool_health_checker',
    order: options.order,
    check() {
      const t = transport();
      if (t === undefined) return { healthy: true, message: 'no gateway runs on this node' };
      const pools = t.pools();
      const conn = t.connections();
      const saturated: string[] = [];
      const list = pools.map((p) => {
        const percent = p.max > 0 ? Math.round((p.open / p.max) * 100) : 0;
        if (p.waiting > 0 && percent >= options.limitPercentage) saturated.push(p.key);
        return { target: p.key, open: p.open, idle: p.idle, waiting: p.waiting, max: p.max, usagePercentage: percent };
      });
      const details = { pools: list, inFlight: conn.inFlight, queued: conn.queued };
      if (saturated.length > 0) return { healthy: false, message: `calls wait for a backend connection: ${saturated.join(', ')}`, details };
      return { healthy: true, details };
    },
  };
}

/**
 * `super_tenant_health_checker` (spec 001): the super tenant's user store. throughway's only user store is
 * the store's user table (no secondary user stores: `monitored.user.stores` has nothing to name), so the
 * check is a read of it: the super admin's record.
 */
export function userStoreChecker(store: Store, options: { readonly order: number; readonly username: string }): HealthChecker {
  return {
    name: 'super_tenant_health_checker',
    order: options.order,
    async check() {
      try {
        const found = (await store.getUser(options.username)) !== undefined;
        return { healthy: true, details: { userStore: 'PRIMARY', superAdminPresent: found } };
      } catch (err) {
        return { healthy: false, message: `the user store cannot be read: ${(err as Error).message}`, details: { userStore: 'PRIMARY' } };
      }
    },
  };
}
