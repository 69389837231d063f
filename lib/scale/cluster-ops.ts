/**
 * The operations port of a cluster (docs/scale-out.md; docs/operations.md, "Cluster
 * mode"): the workers have no management port, so the primary's GET /metrics and GET /health speak for
 * them.
 *
 * Metrics: at each scrape the primary asks every ready worker over the IPC channel (`{ tw: 'metrics?' }`)
 * for its registry's getMetricsAsJSON() and merges the answers with its own using prom-client's
 * AggregatorRegistry.aggregate (the merge arithmetic, escaping and text format are prom-client's):
 *  - throughway's counters and histograms are summed: the node's calls are the sum of its workers' calls
 *    (a restarted worker starts again from zero, which Prometheus's rate() reads as a counter reset);
 *  - throughway's gauges are summed too (connections, pools, in-flight slots, queues, cache entries are
 *    the node's totals: every worker has its own), except those marked `perProcess` (a hit ratio, a
 *    utilisation, JWKS keys held) and prom-client's process metrics (`process_*`, `nodejs_*`: event-loop
 *    lag, memory, CPU of one process): a sum or an average of those would be a figure no process has, so
 *    they keep one series per process, labelled `process="primary"` or `process="worker:<pid>"`.
 * A worker that does not answer within the scrape timeout is left out of that scrape (a stuck worker
 * cannot hang Prometheus): `throughway_cluster_workers{state}` says how many answered, and the primary
 * prints the silent ones' pids (lib/scale/cluster.ts).
 *
 * Health: the `cluster_workers` checker is DOWN while fewer workers than configured are ready (one died
 * and is not restarted yet, or the first ones are still starting), with each worker's pid.
 */
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { HealthChecker } from '../events/observed';

/** ms a scrape waits for the workers' answers: Prometheus's own scrape_timeout defaults to 10 s. */
export const CLUSTER_SCRAPE_TIMEOUT_MS = 3000;

/** One metric family as prom-client's getMetricsAsJSON() gives it (and as it crosses the IPC channel). */
export interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly aggregator?: string;
  readonly values: readonly {
    readonly labels?: Readonly<Record<string, string | number>>;
    readonly value: number | null;
    readonly metricName?: string;
  }[];
}

/** What one process contributes to a cluster scrape. */
export interface ProcessMetrics {
  /** The `process` label of its per-process series: "primary" or "worker:<pid>". */
  readonly process: string;
  readonly metrics: readonly MetricJson[];
  /** Names registered with MetricSource.perProcess. */
  readonly perProcess: readonly string[];
}

/** A worker as the primary asks it (node:cluster's Worker; a fake in the unit tests). */
export interface MetricsPeer {
  readonly pid: number;
  /** Its errors (a channel closed while it exits) are the caller's: an unsent question is a silent worker. */
  send(message: unknown): unknown;
}

/** The worker's answer: `{ tw: 'metrics', id, pid, metrics, perProcess }`. */
export interface MetricsAnswer {
  readonly tw: 'metrics';
  readonly id: number;
  readonly pid: number;
  readonly metrics: readonly MetricJson[];
  readonly perProcess: readonly string[];
}

export interface Gathered {
  readonly answered: readonly ProcessMetrics[];
  /** Pids of the workers asked that did not answer within the timeout. */
  readonly silent: readonly number[];
}

const isProcessMetric = (name: string): boolean => name.startsWith('process_') || name.startsWith('nodejs_');

/** Asks workers for their metrics; answers arrive through receive() (the primary's message handler). */
export class WorkerMetrics {
  private seq = 0;
  private readonly waiting = new Map<string, (a: MetricsAnswer) => void>();

  constructor(readonly timeoutMs = CLUSTER_SCRAPE_TIMEOUT_MS) {}

  /** A worker's `metrics` message. An answer to a scrape that already gave up is dropped. */
  receive(a: MetricsAnswer): void {
    this.waiting.get(`${a.id}:${a.pid}`)?.(a);
  }

  /** Every peer asked at once; resolves when all answered or the timeout passed, whichever is first. */
  async gather(peers: readonly MetricsPeer[]): Promise<Gathered> {
    const id = ++this.seq;
    const answered: ProcessMetrics[] = [];
    const silent: number[] = [];
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.timeoutMs)));
    await Promise.all(
      peers.map(async (p) => {
        const key = `${id}:${p.pid}`;
        const answer = new Promise<MetricsAnswer>((resolve) => this.waiting.set(key, resolve));
        let a: MetricsAnswer | undefined;
        try {
          p.send({ tw: 'metrics?', id });
          a = await Promise.race([answer, expired.then(() => undefined)]);
        } catch {
          a = undefined;
        }
        this.waiting.delete(key);
        if (a === undefined) silent.push(p.pid);
        else answered.push({ process: `worker:${a.pid}`, metrics: a.metrics, perProcess: a.perProcess });
      }),
    );
    clearTimeout(timer);
    return { answered, silent };
  }
}

/**
 * One registry of every process's metrics: per-process series labelled `process`, the rest merged by
 * their aggregator (throughway's are `sum`). Values that crossed the IPC channel as null (JSON has no NaN)
 * are NaN again.
 */
export function mergeMetrics(processes: readonly ProcessMetrics[]): Registry {
  const lists = processes.map((p) => {
    const own = new Set(p.perProcess);
    return p.metrics.map((m) => {
      const values = m.values.map((v) => ({ ...v, value: typeof v.value === 'number' ? v.value : NaN }));
      if (!own.has(m.name) && !isProcessMetric(m.name)) return { ...m, values };
      // Series of one process: never merged with another's (any aggregator keeps a lone series as it is).
      return { ...m, aggregator: 'sum', values: values.map((v) => ({ ...v, labels: { ...(v.labels ?? {}), process: p.process } })) };
    });
  });
  return AggregatorRegistry.aggregate(lists as never);
}

export interface WorkerStatus {
  readonly id: number;
  readonly pid: number;
  readonly ready: boolean;
  readonly startedAt: number;
}

export interface ExitedWorker {
  readonly id: number;
  readonly pid: number;
  /** "SIGKILL", "exit 1", ... */
  readonly reason: string;
  readonly at: number;
  /** When its replacement is started (epoch ms). */
  readonly restartAt: number;
}

export interface ClusterStatus {
  readonly configured: number;
  readonly workers: readonly WorkerStatus[];
  /** Workers that died and whose replacement is not ready yet. */
  readonly exited: readonly ExitedWorker[];
}

/** `cluster_workers`: DOWN while fewer than the configured workers are ready. */
export function clusterWorkersChecker(status: () => ClusterStatus, options: { readonly order: number }): HealthChecker {
  return {
    name: 'cluster_workers',
    order: options.order,
    check() {
      const s = status();
      const ready = s.workers.filter((w) => w.ready).length;
      const now = Date.now();
      const details = {
        configured: s.configured,
        ready,
        workers: s.workers.map((w) => ({ pid: w.pid, id: w.id, state: w.ready ? 'ready' : 'starting', upMs: now - w.startedAt })),
        ...(s.exited.length > 0
          ? {
              exited: s.exited.map((e) => ({
                pid: e.pid,
                id: e.id,
                reason: e.reason,
                downMs: now - e.at,
                restartInMs: Math.max(0, e.restartAt - now),
              })),
            }
          : {}),
      };
      if (ready >= s.configured) return { healthy: true, details };
      const why = s.exited.map((e) => `worker pid ${e.pid} died (${e.reason})`).join(', ');
      return { healthy: false, message: `${ready} of ${s.configured} workers ready${why !== '' ? `: ${why}, restarting` : ''}`, details };
    },
  };
}
