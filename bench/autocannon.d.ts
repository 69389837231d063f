/**
 * The part of autocannon 8's programmatic API the benchmarks use (the package ships no types).
 * Shapes follow autocannon/lib/aggregateResult.js and lib/run.js.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      method?: string;
      body?: Buffer | string;
      headers?: Record<string, string>;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      pipelining?: number;
      /** Sent in turn on each connection, looping; a request's own headers replace `headers`. */
      requests?: Array<{ method?: string; path?: string; headers?: Record<string, string>; body?: Buffer | string }>;
      workers?: number;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p50: number;
      p90: number;
      p99: number;
      total: number;
    }

    interface Result {
      /** Seconds, to 0.01. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      mismatches: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds. */
      latency: Histogram;
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
