/**
 * Keep-alive pools of target connections, one per backend host:port
 * ([passthru_http] 'http.max.connection.per.host.port', spec 001).
 *
 * Idle connections are reused last-in first-out: the warmest socket serves next and the coldest ones age
 * out under the sweep's idle eviction. When the route is at its maximum, exchanges wait in FIFO order for
 * a connection; one that waits longer than the connect timeout fails with 101504 at state 0 (the
 * reference's code for "no connection could be had", spec 002, part 7), answered 503.
 */
import type { TransportFault } from './codes';
import type { CorePool, TransportCore } from './core';
import type { Exchange } from './exchange';
import { TargetConnection, type TargetPool } from './target';
import type { TargetEndpoint } from './types';

/** The pool of a backend host:port, made on first use. */
export function poolFor(core: TransportCore, target: TargetEndpoint): RoutePool {
  // Every pool in core.pools is made here.
  let pool = core.pools.get(target.key) as RoutePool | undefined;
  if (pool === undefined) {
    pool = new RoutePool(core, target);
    core.pools.set(target.key, pool);
  }
  return pool;
}

export class RoutePool implements CorePool, TargetPool {
  readonly idle: TargetConnection[] = [];
  readonly waiters: Exchange[] = [];
  /** Connections of this route that are open or opening. */
  total = 0;
  /** `https://` routes: the latest TLS session, offered by the next connection (session reuse). */
  tlsSession: Buffer | undefined = undefined;
  /** Faults of this route's connections since start (the runtime view, docs/operations.md). */
  failures = 0;
  /** The latest of them, with its wall-clock time (ms since the epoch). */
  lastFailure: TransportFault | undefined = undefined;
  lastFailureAt = 0;

  constructor(
    readonly core: TransportCore,
    readonly endpoint: TargetEndpoint,
  ) {}

  /**
   * A connection for `ex`: a reused idle one, a new one (still connecting: writes queue in the socket),
   * or undefined when the route is full (ex waits; the pool calls ex.slots.targetReady later).
   * `fresh` skips idle connections (the retry after a stale one).
   */
  acquire(ex: Exchange, fresh: boolean): TargetConnection | undefined {
    if (!fresh) {
      while (this.idle.length > 0) {
        const t = this.idle.pop() as TargetConnection;
        if (t.isUsable()) {
          this.core.stats.targetsReused++;
          return t;
        }
      }
    }
    if (this.total < this.core.settings.maxConnectionsPerRoute) return this.open();
    ex.waitSince = this.core.now;
    this.waiters.push(ex);
    return undefined;
  }

  private open(): TargetConnection {
    this.total++;
    this.core.stats.targetsCreated++;
    return new TargetConnection(this);
  }

  /** A connection finished an exchange and can serve another. */
  release(t: TargetConnection): void {
    const waiter = this.nextWaiter();
    if (waiter !== undefined) {
      this.core.stats.targetsReused++;
      waiter.slots.targetReady(waiter, t);
      return;
    }
    this.idle.push(t);
  }

  /** A connection of this route failed its exchange with `fault` (the failure path only). */
  failed(fault: TransportFault): void {
    this.failures++;
    this.lastFailure = fault;
    this.lastFailureAt = Date.now();
  }

  /** A connection of this pool closed or was destroyed. */
  removed(t: TargetConnection): void {
    this.total--;
    const i = this.idle.indexOf(t);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.waiters.length > 0 && this.total < this.core.settings.maxConnectionsPerRoute) {
      const waiter = this.nextWaiter();
      if (waiter !== undefined) waiter.slots.targetReady(waiter, this.open());
    }
  }

  /** A waiting exchange ended (its client left): it gives up its place. */
  cancelWait(ex: Exchange): void {
    const i = this.waiters.indexOf(ex);
    if (i >= 0) this.waiters.splice(i, 1);
  }

  private nextWaiter(): Exchange | undefined {
    while (this.waiters.length > 0) {
      const ex = this.waiters.shift() as Exchange;
      if (!ex.aborted) return ex;
    }
    return undefined;
  }

  /** Sweep: evict idle connections past their limit, fail waiters past the connect timeout. */
  sweep(now: number): void {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const t = this.idle[i] as TargetConnection;
      if (now - t.idleSince > t.idleLimit) t.destroy();
    }
    if (this.waiters.length === 0) return;
    const limit = this.core.settings.connectTimeout;
    while (this.waiters.length > 0) {
      const ex = this.waiters[0] as Exchange;
      if (!ex.aborted && now - ex.waitSince <= limit) break;
      this.waiters.shift();
      if (!ex.aborted) ex.slots.poolTimeout(ex);
    }
  }

  destroyIdle(): void {
    for (const t of this.idle.slice()) t.destroy();
  }
}
