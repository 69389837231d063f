/**
 * The mediation worker pool: piscina, sized from [mediation] engine.core_threads / max_threads /
 * threads_queue_length (spec 001), created on the first task that needs it: a gateway that only passes
 * bodies through starts no worker thread. A full finite queue refuses at once (103060) instead of letting
 * the request hang; the spec's alert that worker threads were blocked is logged at most once a minute
 * (spec 002 part 7).
 */
import * as path from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type Piscina from 'piscina';
import { load } from '../config/packages';
import type { Logger } from '../log';
import type { PoolSettings } from './settings';
import type { MediateResult, MediateTask } from './steps';
import { ThroughwayError } from '../errors';

/** Why a pooled task did not give a result. */
export type PoolFailure =
  /** queue at engine.threads_queue_length */
  | 'queue_full'
  /** the task ran past its time limit; its worker thread was ended */
  | 'timeout'
  /** the worker thread ran out of heap (worker_heap_mb); it was ended */
  | 'out_of_memory'
  /** the worker thread died or the pool is closed */
  | 'failed';

/** PoolError's code: the failure's name in capitals (`MEDIATION_POOL_QUEUE_FULL`, ...). */
export type PoolErrorCode = `MEDIATION_POOL_${Uppercase<PoolFailure>}`;

export class PoolError extends ThroughwayError {
  readonly code: PoolErrorCode;
  constructor(
    readonly kind: PoolFailure,
    message: string,
  ) {
    super(message);
    this.name = 'PoolError';
    this.code = `MEDIATION_POOL_${kind.toUpperCase() as Uppercase<PoolFailure>}`;
  }
}

const MINUTE = 60_000;

/**
 * "When all worker threads are in use at the maximum pool size the server logs an alert that worker
 * threads were blocked during the last minute" (spec 002 part 7). Saturation is noted when a task is
 * submitted while every thread up to the maximum is busy; once a minute has passed since the window
 * began, a window that saw it logs the alert once. Driven by the pool's submissions and completions (no
 * timer), with an injectable clock.
 */
export class BlockedThreadsAlert {
  private windowStart: number;
  private saturated = 0;
  private peakQueued = 0;

  constructor(
    private readonly logger: Logger,
    private readonly maxThreads: number,
    private readonly now: () => number = Date.now,
  ) {
    this.windowStart = now();
  }

  /** A task was submitted; `inFlight` counts it, running and queued. */
  submitted(inFlight: number): void {
    if (inFlight > this.maxThreads) {
      this.saturated++;
      this.peakQueued = Math.max(this.peakQueued, inFlight - this.maxThreads);
    }
    this.check();
  }

  /** Closes the minute when it is over; logs the alert when it saw saturation. */
  check(): void {
    const now = this.now();
    if (now - this.windowStart < MINUTE) return;
    if (this.saturated > 0) {
      this.logger.log('warn', 'worker_threads_blocked', {
        message: 'worker threads were blocked during the last minute',
        maxThreads: this.maxThreads,
        blockedTasks: this.saturated,
        peakQueued: this.peakQueued,
        windowMs: now - this.windowStart,
      });
    }
    this.windowStart = now;
    this.saturated = 0;
    this.peakQueued = 0;
  }
}

export interface PoolOptions {
  readonly logger: Logger;
  /** Clock of the blocked-threads alert (tests pass a fake one). */
  readonly now?: () => number;
  /** The worker module (default: the compiled lib/mediation/worker.js beside this file). */
  readonly filename?: string;
}

export class MediationPool {
  private piscina: Piscina | undefined;
  private inFlight = 0;
  /** Tasks given to piscina since the start, by worker module: 'mediation' (run), or runFile's `kind`. */
  readonly submitted = new Map<string, number>();
  readonly alert: BlockedThreadsAlert;
  private closed = false;

  constructor(
    readonly settings: PoolSettings,
    private readonly options: PoolOptions,
  ) {
    this.alert = new BlockedThreadsAlert(options.logger, settings.maxThreads, options.now);
  }

  /** Whether any worker thread was started (false for a gateway that never needed one). */
  get started(): boolean {
    return this.piscina !== undefined;
  }

  /** Tasks submitted and not settled: running plus queued. */
  get pending(): number {
    return this.inFlight;
  }

  get threads(): number {
    return this.piscina?.threads.length ?? 0;
  }

  /** Tasks waiting for a thread (engine.threads_queue_length bounds it): the metrics and the health checker. */
  get queued(): number {
    return this.piscina?.queueSize ?? 0;
  }

  /** piscina's utilisation of the pool's threads since it started, 0..1 (0 before the first task). */
  get utilization(): number {
    return this.piscina?.utilization ?? 0;
  }

  private pool(): Piscina {
    if (this.piscina !== undefined) return this.piscina;
    const s = this.settings;
    this.piscina = new (load<typeof Piscina>('piscina', 'mediation scripts (the worker pool)'))({
      filename: this.options.filename ?? path.join(__dirname, 'worker.js'),
      minThreads: s.minThreads,
      maxThreads: s.maxThreads,
      maxQueue: s.maxQueue,
      // piscina's default (0) stops a thread above minThreads the moment it is idle: every burst then pays
      // for new isolates (measured 67 req/s for 64 KiB JSON); keep them for the next burst instead.
      idleTimeout: s.idleTimeout ?? 60_000,
      resourceLimits: { maxOldGenerationSizeMb: s.workerHeapMb },
    });
    // A worker that dies (out of memory, ended by an abort) is replaced by piscina; the error is the
    // task's, reported through its promise, not a process-wide event.
    this.piscina.on('error', (err: unknown) =>
      this.options.logger.log('error', 'mediation_worker_error', { error: err instanceof Error ? err.message : String(err) }),
    );
    return this.piscina;
  }

  /**
   * Runs one mediation with `task.body` transferred (it is detached here afterwards; the result carries
   * the body back). Rejects with PoolError. `limitMs` bounds the task from the moment a worker thread
   * starts it (the worker says so on a port of its own), so time spent queued or while a thread starts
   * does not count; past it the thread is ended.
   */
  async run(task: MediateTask, limitMs?: number): Promise<MediateResult> {
    const pool = this.admit('mediation');
    const body = task.body;
    const transferList: (ArrayBuffer | MessagePort)[] = [];
    if (body.byteLength > 0 && body.byteOffset === 0 && body.byteLength === body.buffer.byteLength)
      transferList.push(body.buffer as ArrayBuffer);
    let abort: AbortController | undefined;
    let timer: NodeJS.Timeout | undefined;
    let channel: MessageChannel | undefined;
    let sent: MediateTask = task;
    if (limitMs !== undefined) {
      const ac = new AbortController();
      const ch = new MessageChannel();
      abort = ac;
      channel = ch;
      ch.port1.once('message', () => {
        timer = setTimeout(() => ac.abort(), limitMs);
      });
      ch.port1.unref();
      sent = { ...task, started: ch.port2 };
      transferList.push(ch.port2);
    }
    try {
      return (await pool.run(sent, { transferList: transferList as never, signal: abort?.signal })) as MediateResult;
    } catch (err) {
      throw classify(err, limitMs);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      channel?.port1.close();
      this.inFlight--;
      this.alert.check();
    }
  }

  /** A task counted in flight (the queue bound and the blocked-threads alert), or PoolError queue_full. */
  private admit(kind: string): Piscina {
    if (this.closed) throw new PoolError('failed', 'the mediation pool is closed');
    const s = this.settings;
    if (this.inFlight >= s.maxThreads + s.maxQueue) {
      this.alert.submitted(this.inFlight + 1);
      throw new PoolError(
        'queue_full',
        `all ${s.maxThreads} mediation threads are busy and ${s.maxQueue} tasks wait (engine.threads_queue_length)`,
      );
    }
    const pool = this.pool();
    this.inFlight++;
    this.submitted.set(kind, (this.submitted.get(kind) ?? 0) + 1);
    this.alert.submitted(this.inFlight);
    return pool;
  }

  /**
   * Runs `task` on the same threads with another worker module (`filename`, its default export): work of
   * other services kept off the event loop (a GraphQL API's large queries: lib/graphql/worker.ts). The
   * task is copied (structured clone), not transferred; counted in flight like run()'s. Rejects with PoolError.
   */
  async runFile<T>(kind: string, filename: string, task: unknown): Promise<T> {
    const pool = this.admit(kind);
    try {
      return (await pool.run(task, { filename })) as T;
    } catch (err) {
      throw classify(err, undefined);
    } finally {
      this.inFlight--;
      this.alert.check();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const p = this.piscina;
    this.piscina = undefined;
    if (p !== undefined) await p.destroy();
  }
}

function classify(err: unknown, timeoutMs: number | undefined): PoolError {
  const e = err as { name?: string; code?: string; message?: string };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  if (e?.name === 'AbortError')
    return new PoolError('timeout', `mediation did not finish within ${timeoutMs} ms; its worker thread was ended`);
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY')
    return new PoolError('out_of_memory', 'the worker thread ran out of memory (throughway.mediation.worker_heap_mb); it was ended');
  // piscina's own words (piscina throws plain Errors without a code).
  if (/queue is at limit|No task queue available/i.test(message)) return new PoolError('queue_full', message);
  return new PoolError('failed', message);
}
