/**
 * Cluster mode (docs/scale-out.md): `[throughway.cluster] workers` > 1 runs that many
 * gateway workers with node:cluster; they share the gateway's listening ports (the primary accepts and
 * hands connections round-robin). The primary runs the control plane half of the role (the key manager
 * and store for `default`, nothing for `gateway-worker`) and no gateway: the workers are gateway-workers
 * of it (docs/scale-out.md). They read its keys and snapshot over its management port and get its events
 * over the IPC channel (or, for a `gateway-worker` role, from the Redis event hub).
 *
 *  - a worker that dies is restarted after restart_delay_min, doubled for each one that dies within 5 s
 *    of its start, up to restart_delay_max;
 *  - SIGHUP rolls the workers one at a time: a new one is started and ready before the old one is told to
 *    stop, and the old one drains (node.close(): in-flight calls finish, a request arriving on a kept-alive
 *    connection is answered with Connection: close, idle connections close after the transport's drain
 *    window; docs/transport.md, "Graceful close"), so no request is lost;
 *  - SIGTERM/SIGINT: no more restarts, every worker stops gracefully, then the primary's own node.
 *
 * IPC messages are `{ tw: ... }` objects: hello? (worker -> primary, once it listens: a message sent
 * before would be lost), hello (the answer: control plane URL), event, ready (worker -> primary), stop,
 * metrics? (primary -> worker at each scrape of the primary's GET /metrics) and metrics (the answer: the
 * worker's registry as JSON; lib/scale/cluster-ops.ts merges them).
 *
 * The workers have no operations port: the primary's /metrics shows theirs merged with its own, and its
 * /health and /health/ready have the `cluster_workers` checker (docs/operations.md, "Cluster mode").
 */
import cluster, { type Worker } from 'node:cluster';
import * as os from 'node:os';
import { createEventBus, type AnyEvent } from '../events/bus';
import type { LoadResult } from '../config/load';
import type { EventBus } from '../events/bus';
import type { HealthChecker, MetricRegistry } from '../events/observed';
import { clusterWorkersChecker, mergeMetrics, WorkerMetrics, type ExitedWorker, type MetricsAnswer, type MetricJson } from './cluster-ops';
import { ConfigInvalidError } from '../config/diagnostics';

type Message =
  | { tw: 'hello?' }
  | { tw: 'hello'; controlPlane?: string }
  | { tw: 'event'; event: AnyEvent }
  | { tw: 'ready'; pid: number }
  | { tw: 'stop' }
  | { tw: 'metrics?'; id: number }
  | MetricsAnswer;

/** ms between a stopping worker's last accepted connection and its graceful close (a roll). */
const STOP_GRACE_MS = 250;

const isMessage = (m: unknown): m is Message => typeof m === 'object' && m !== null && typeof (m as { tw?: unknown }).tw === 'string';

/** `[throughway.cluster] workers`: a whole number, or "auto" for one per core. */
export function clusterWorkers(value: string): number {
  if (value.trim().toLowerCase() === 'auto') return Math.max(1, os.availableParallelism());
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigInvalidError(
      `[throughway.cluster] workers must be a whole number of at least 1 or "auto", got ${JSON.stringify(value)}`,
    );
  return n;
}

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

/** Which part of the cluster a node started by the boot is (its StartOptions.cluster). */
export interface ClusterPart {
  /** primary: the key manager and store (when the role has them), no gateway; worker: the gateway only. */
  readonly role: 'primary' | 'worker';
  readonly workers: number;
  /** worker: the primary's management port, when the primary runs the key manager. */
  readonly controlPlane?: string;
  /** worker: the bus the primary's events arrive on (over IPC). */
  readonly events?: EventBus;
}

/** What the cluster reads of a node's metrics (lib/observability/metrics.ts Metrics). */
export interface ClusterMetrics extends MetricRegistry {
  readonly registry: { getMetricsAsJSON(): Promise<unknown> };
  readonly perProcess: ReadonlySet<string>;
  /** The primary answers GET /metrics with the workers' metrics merged with its own; undefined: its own only. */
  exposeWith(text: (() => Promise<string>) | undefined): void;
}

/** What the cluster uses of a node the boot started (lib/node RunningNode). */
export interface ClusterNode {
  readonly keyManager: unknown;
  readonly events: EventBus;
  readonly metrics: ClusterMetrics | undefined;
  readonly health: { register(checker: HealthChecker): void } | undefined;
  /** GET /health/ready's checks: the primary is ready when its workers are. */
  readonly readiness: { register(checker: HealthChecker): void };
  readonly ports: { readonly management: number | undefined };
  close(): Promise<void>;
}

/** The boot's start of one node (lib/node startNode), handed in so that scale/ does not import the boot. */
type Start<N extends ClusterNode> = (
  loaded: LoadResult,
  options: { readonly log: (line: string) => void; readonly reload?: () => LoadResult; readonly cluster: ClusterPart },
) => Promise<N>;

export interface Primary {
  /** Workers ready now. */
  readonly ready: number;
  roll(): Promise<void>;
  close(): Promise<void>;
}

/** The primary: its part of the node, then the workers. */
export async function runPrimary(
  loaded: LoadResult,
  o: {
    start: Start<ClusterNode>;
    workers: number;
    log: (line: string) => void;
    reload?: () => LoadResult;
    restartMin: number;
    restartMax: number;
  },
): Promise<Primary> {
  const node = await o.start(loaded, {
    log: o.log,
    ...(o.reload !== undefined ? { reload: o.reload } : {}),
    cluster: { role: 'primary', workers: o.workers },
  });
  const controlPlane =
    node.keyManager !== undefined && node.ports.management !== undefined ? `http://127.0.0.1:${node.ports.management}` : undefined;
  const live = new Map<number, { worker: Worker; started: number; ready: boolean }>();
  /** Workers that died, until a replacement is ready: /health names them. */
  const exited: ExitedWorker[] = [];
  const scrape = new WorkerMetrics();
  const lastScrape = { answered: 0, silent: 0 };
  const waiting = new Map<number, () => void>();
  let stopping = false;
  const retiring = new Set<number>();
  let quickDeaths = 0;
  // The key manager's events go to every worker (they subscribed before pulling the snapshot).
  const unforward =
    controlPlane !== undefined
      ? node.events.subscribe((event) => {
          for (const w of live.values()) if (w.worker.isConnected()) w.worker.send({ tw: 'event', event } satisfies Message);
        })
      : () => undefined;

  const fork = (): Worker => {
    const w = cluster.fork();
    live.set(w.id, { worker: w, started: Date.now(), ready: false });
    w.on('message', (m: unknown) => {
      if (isMessage(m) && m.tw === 'hello?')
        w.send({ tw: 'hello', ...(controlPlane !== undefined ? { controlPlane } : {}) } satisfies Message);
      if (isMessage(m) && m.tw === 'metrics') scrape.receive(m);
      if (!isMessage(m) || m.tw !== 'ready') return;
      const e = live.get(w.id);
      if (e !== undefined) e.ready = true;
      // A ready worker replaces the one that died first (a rolled worker replaced nothing: exited is empty).
      exited.shift();
      o.log(`cluster: worker ${w.id} (pid ${m.pid}) ready`);
      waiting.get(w.id)?.();
    });
    // The worker's own errors (a closed IPC channel while it exits) must not end the primary.
    w.on('error', () => undefined);
    return w;
  };
  const whenReady = (w: Worker): Promise<boolean> =>
    new Promise((resolve) => {
      const done = (ok: boolean): void => {
        waiting.delete(w.id);
        w.removeListener('exit', gone);
        resolve(ok);
      };
      const gone = (): void => done(false);
      waiting.set(w.id, () => done(true));
      w.once('exit', gone);
    });
  cluster.on('exit', (w, code, signal) => {
    const e = live.get(w.id);
    live.delete(w.id);
    if (stopping || retiring.delete(w.id)) return;
    const lived = e === undefined ? 0 : Date.now() - e.started;
    quickDeaths = lived < 5000 ? quickDeaths + 1 : 0;
    const delay = Math.min(o.restartMax, o.restartMin * 2 ** Math.max(0, quickDeaths - 1));
    o.log(`cluster: worker ${w.id} died (${signal ?? `exit ${code}`}); restarting in ${delay} ms`);
    exited.push({ id: w.id, pid: w.process.pid ?? 0, reason: signal ?? `exit ${code}`, at: Date.now(), restartAt: Date.now() + delay });
    setTimeout(() => {
      if (!stopping) fork();
    }, delay);
  });
  // The operations port speaks for the workers (they have none): merged metrics, their health.
  const metrics = node.metrics;
  if (metrics !== undefined) {
    metrics.register({
      name: 'throughway_cluster_workers',
      help: 'Cluster workers at the last scrape, by state: answered (its metrics are in this scrape), silent (ready, no answer within the scrape timeout), starting (not ready yet).',
      type: 'gauge',
      collect: () => [
        { labels: { state: 'answered' }, value: lastScrape.answered },
        { labels: { state: 'silent' }, value: lastScrape.silent },
        { labels: { state: 'starting' }, value: [...live.values()].filter((e) => !e.ready).length },
      ],
    });
    metrics.register({
      name: 'throughway_cluster_workers_configured',
      help: '[throughway.cluster] workers.',
      type: 'gauge',
      collect: () => o.workers,
    });
    metrics.exposeWith(async () => {
      const peers = [...live.values()]
        .filter((e) => e.ready && e.worker.isConnected())
        .map((e) => ({ pid: e.worker.process.pid ?? 0, send: (m: unknown) => e.worker.send(m as Message) }));
      const g = await scrape.gather(peers);
      lastScrape.answered = g.answered.length;
      lastScrape.silent = g.silent.length;
      if (g.silent.length > 0)
        o.log(
          `cluster: worker(s) pid ${g.silent.join(', ')} did not answer the metrics scrape within ${scrape.timeoutMs} ms: left out of it`,
        );
      // Its own metrics after the workers answered, so throughway_cluster_workers tells of this scrape.
      const own = {
        process: 'primary',
        metrics: (await metrics.registry.getMetricsAsJSON()) as unknown as MetricJson[],
        perProcess: [...metrics.perProcess],
      };
      return mergeMetrics([own, ...g.answered]).metrics();
    });
  }
  const status = () => ({
    configured: o.workers,
    workers: [...live.values()].map((e) => ({ id: e.worker.id, pid: e.worker.process.pid ?? 0, ready: e.ready, startedAt: e.started })),
    exited,
  });
  node.health?.register(clusterWorkersChecker(status, { order: loaded.config.throughway.operations.backend_pool_checker_order }));
  node.readiness.register(clusterWorkersChecker(status, { order: 3 }));
  const first = Array.from({ length: o.workers }, () => fork());
  const results = await Promise.all(first.map(whenReady));
  o.log(`cluster: ${results.filter((r) => r).length} of ${o.workers} workers ready (docs/scale-out.md)`);

  const stopWorker = (w: Worker): Promise<void> =>
    new Promise((resolve) => {
      if (w.isDead()) return resolve();
      w.once('exit', () => resolve());
      if (w.isConnected()) w.send({ tw: 'stop' } satisfies Message);
      else w.kill('SIGTERM');
    });
  let rolling: Promise<void> | undefined;
  const roll = (): Promise<void> => {
    rolling ??= (async () => {
      const old = [...live.values()].map((e) => e.worker);
      for (const w of old) {
        if (stopping) break;
        const next = fork();
        if (!(await whenReady(next))) continue;
        retiring.add(w.id);
        await stopWorker(w);
      }
      o.log(`cluster: rolled ${old.length} worker(s)`);
    })().finally(() => (rolling = undefined));
    return rolling;
  };
  const onHup = (): void => void roll();
  process.on('SIGHUP', onHup);
  return {
    get ready() {
      return [...live.values()].filter((e) => e.ready).length;
    },
    roll,
    async close() {
      stopping = true;
      process.removeListener('SIGHUP', onHup);
      unforward();
      await Promise.all([...live.values()].map((e) => stopWorker(e.worker)));
      metrics?.exposeWith(undefined);
      await node.close();
    },
  };
}

/** A worker: waits for the primary's hello, then runs the gateway part; `stop` closes it gracefully. */
export async function runWorker<N extends ClusterNode>(
  loaded: LoadResult,
  o: { start: Start<N>; workers: number; log: (line: string) => void },
): Promise<N> {
  const bus = createEventBus();
  const hello = await new Promise<Extract<Message, { tw: 'hello' }>>((resolve) => {
    const on = (m: unknown): void => {
      if (!isMessage(m)) return;
      if (m.tw === 'hello') resolve(m);
    };
    process.on('message', on);
    process.send?.({ tw: 'hello?' } satisfies Message);
  });
  process.on('message', (m: unknown) => {
    if (isMessage(m) && m.tw === 'event') bus.deliver(m.event);
  });
  const node = await o.start(loaded, {
    log: o.log,
    cluster: {
      role: 'worker',
      workers: o.workers,
      events: bus,
      ...(hello.controlPlane !== undefined ? { controlPlane: hello.controlPlane } : {}),
    },
  });
  process.on('message', (m: unknown) => {
    if (!isMessage(m) || m.tw !== 'metrics?') return;
    const metrics = node.metrics;
    const answer = async (): Promise<MetricsAnswer> => ({
      tw: 'metrics',
      id: m.id,
      pid: process.pid,
      metrics: metrics === undefined ? [] : ((await metrics.registry.getMetricsAsJSON()) as unknown as MetricJson[]),
      perProcess: metrics === undefined ? [] : [...metrics.perProcess],
    });
    // A worker being stopped may have closed its channel: its answer is then lost, the primary's scrape says so.
    answer().then(
      (a) => (process.connected ? process.send?.(a, undefined, undefined, () => undefined) : undefined),
      () => undefined,
    );
  });
  process.on('message', (m: unknown) => {
    if (!isMessage(m) || m.tw !== 'stop') return;
    // First stop taking connections (the primary hands new ones to the other workers), then give the
    // ones just handed over a moment to send their request: the graceful close ends idle connections.
    cluster.worker?.disconnect();
    const grace = new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS));
    grace
      .then(() => node.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
  process.send?.({ tw: 'ready', pid: process.pid } satisfies Message);
  return node;
}
