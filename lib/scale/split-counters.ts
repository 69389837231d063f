/**
 * The per-worker split of throttle limits in cluster mode without a shared counter store
 * (docs/scale-out.md, "Cluster mode: all cores": a documented per-worker split of the limits). Each worker counts alone and
 * reports every count multiplied by the number of workers, so a limit of L admits about L / N calls per
 * worker and about L in all (docs/scale-out.md). Exact when the kernel spreads connections evenly; a
 * worker that gets more than its share refuses early, never admits more than L in all. The engine is
 * unchanged: only the counts it reads are scaled.
 */
import type { CounterStore } from '../throttle/counters';

export class SplitCounterStore implements CounterStore {
  constructor(
    private readonly inner: CounterStore,
    private readonly workers: number,
  ) {}

  get size(): number {
    return this.inner.size;
  }

  peek(key: string, windowMs: number, now: number): number {
    return this.inner.peek(key, windowMs, now) * this.workers;
  }

  add(key: string, cost: number, windowMs: number, now: number, limit?: number): number {
    return this.inner.add(key, cost, windowMs, now, limit) * this.workers;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
