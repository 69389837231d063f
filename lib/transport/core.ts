/**
 * What all connections of one transport share: settings, the router, pools, in-flight slots, counters,
 * the fault reporter and the sweep.
 *
 * Timers: no timer is armed per request or per connection. One sweep per transport, every
 * min(timeouts)/4 (5 to 250 ms), compares each connection's last activity with its limits: header timeout,
 * keep-alive idle, socket inactivity, connect timeout, pool wait, idle eviction. Connections stamp their
 * activity with `now`, a clock the sweep advances, so the hot path reads a field instead of a clock.
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import { faultJson, type TransportFault } from './codes';
import { stateName } from './states';
import { trustedMatcher } from './trusted';
import type { TransportSettings } from './settings';
import type { Logger } from '../log';
import { SlotHold, type Exchange } from './exchange';
import type { ProtocolState } from './states';
import type { FaultRenderer, LocalResponse, RouteFn, SourceRequest, TargetEndpoint, TransportEvents, TunnelInfo } from './types';

/**
 * Opens a backend socket. `onread` asks for reads into connection-owned buffers (net's onread option);
 * a function that ignores it (tests injecting failures) still works: the socket then emits 'data'.
 */
export type ConnectFn = (host: string, port: number, onread: net.OnReadOpts) => net.Socket;

export interface TransportStats {
  sourcesAccepted: number;
  requests: number;
  faults: number;
  /** Faults by "side:base:state" (metrics label material: code = base + state). */
  readonly faultsByKey: Map<string, number>;
  targetsCreated: number;
  targetsReused: number;
  retries: number;
  /** Transitions outside states.ts's table: always 0 unless there is a bug (tests assert it). */
  illegalTransitions: number;
}

/**
 * The most bytes of spare read buffers kept for reuse: 64 buffers of the default 256 KiB, fewer when
 * read_buffer_size is larger, and always one even when a single buffer is larger than this.
 */
export const SPARE_READ_BYTES = 16 * 1024 * 1024;

const JSON_FIELDS: readonly string[] = Object.freeze(['Content-Type', 'application/json; charset=UTF-8']);

export const defaultRenderFault: FaultRenderer = (fault) => ({
  status: fault.httpStatus,
  headers: JSON_FIELDS,
  body: faultJson(fault.code, fault.message, fault.description),
  faultCode: fault.code,
});

/**
 * What the sweep, shutdown and stats use of the connections and pools registered here. The classes
 * (source.ts, target.ts, pool.ts) depend on this file, never the reverse.
 */
export interface CoreSource {
  readonly state: ProtocolState;
  /** The client socket: its localPort names the listener that accepted it (the runtime view). */
  readonly socket: net.Socket;
  checkTimeouts(now: number): void;
  shutdown(): void;
  abort(): void;
}

export interface CoreTarget {
  readonly state: ProtocolState;
  checkTimeouts(now: number): void;
  destroy(): void;
}

export interface CorePool {
  readonly endpoint: TargetEndpoint;
  /** Connections open or opening, idle ones, and exchanges waiting for one. */
  readonly total: number;
  readonly idle: readonly unknown[];
  readonly waiters: readonly unknown[];
  sweep(now: number): void;
  destroyIdle(): void;
}

export class TransportCore {
  /** Pools by TargetEndpoint.key, made by pool.ts poolFor(). */
  readonly pools = new Map<string, CorePool>();
  readonly sources = new Set<CoreSource>();
  readonly targets = new Set<CoreTarget>();
  /** Open WebSocket tunnels (tunnel.ts). */
  readonly tunnels = new Set<TunnelInfo>();
  readonly stats: TransportStats = {
    sourcesAccepted: 0,
    requests: 0,
    faults: 0,
    faultsByKey: new Map(),
    targetsCreated: 0,
    targetsReused: 0,
    retries: 0,
    illegalTransitions: 0,
  };
  /** Milliseconds (performance.now()), advanced by the sweep and on accept. */
  now = performance.now();
  nextConnectionId = 1;
  closing = false;
  /** Exchanges holding an in-flight slot, and those waiting for one (spec 001 [passthru_http] worker_pool_*). */
  inFlight = 0;
  /** [throughway] trusted_proxies, compiled once (null: no peer is trusted). */
  readonly trusted: net.BlockList | null;
  private readonly slotWaiters: Exchange[] = [];
  private readonly timed: boolean;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly sweepEvery: number;
  private drained: (() => void) | undefined;
  /** Spare read buffers (settings.readBufferSize each), reused across client and backend connections. */
  private readonly spareBuffers: Buffer[] = [];
  /** How many spare buffers SPARE_READ_BYTES holds at settings.readBufferSize. */
  private readonly maxSpareBuffers: number;

  constructor(
    readonly settings: TransportSettings,
    readonly route: RouteFn,
    readonly renderFault: FaultRenderer,
    readonly log: Logger,
    readonly events: TransportEvents,
    readonly connect: ConnectFn,
  ) {
    this.timed = events.onExchange !== undefined;
    const s = settings;
    const shortest = Math.min(
      s.socketTimeout,
      s.connectTimeout,
      s.headerTimeout,
      s.keepAliveTimeout,
      s.poolIdleTimeout,
      s.globalTimeout > 0 ? s.globalTimeout : Infinity,
      s.bodyTimeout > 0 ? s.bodyTimeout : Infinity,
    );
    this.sweepEvery = Math.max(5, Math.min(250, Math.floor(shortest / 4)));
    this.trusted = trustedMatcher(settings.trustedProxies);
    this.maxSpareBuffers = Math.max(1, Math.floor(SPARE_READ_BYTES / settings.readBufferSize));
  }

  takeReadBuffer(): Buffer {
    return this.spareBuffers.pop() ?? Buffer.allocUnsafeSlow(this.settings.readBufferSize);
  }

  giveReadBuffer(buf: Buffer): void {
    if (this.spareBuffers.length < this.maxSpareBuffers) this.spareBuffers.push(buf);
  }

  /**
   * A clock reading for exchange records: exact (performance.now()) when someone listens for them,
   * otherwise the sweep's clock, so the plain pass-through path reads no clock at all.
   */
  stamp(): number {
    return this.timed ? performance.now() : this.now;
  }

  /** Take an in-flight slot, or queue for one; a full bounded queue answers 503 (103002) at once. */
  takeSlot(ex: Exchange): boolean {
    if (this.inFlight < this.settings.maxInFlight) {
      this.inFlight++;
      ex.slot = SlotHold.HELD;
      return true;
    }
    const limit = this.settings.queueLength;
    if (limit < 0 || this.slotWaiters.length < limit) {
      ex.waitSince = this.now;
      ex.slot = SlotHold.QUEUED;
      this.slotWaiters.push(ex);
      return false;
    }
    ex.slots.queueFull(ex);
    return false;
  }

  releaseSlot(ex: Exchange): void {
    ex.slot = SlotHold.NONE;
    this.inFlight--;
    while (this.slotWaiters.length > 0 && this.inFlight < this.settings.maxInFlight) {
      const next = this.slotWaiters.shift() as Exchange;
      if (next.aborted) continue;
      this.inFlight++;
      next.slot = SlotHold.HELD;
      next.slots.startTarget(next);
    }
  }

  /** An exchange that was waiting for a slot ended (its client left): it gives up its place. */
  cancelSlotWait(ex: Exchange): void {
    ex.slot = SlotHold.NONE;
    const i = this.slotWaiters.indexOf(ex);
    if (i >= 0) this.slotWaiters.splice(i, 1);
  }

  /** Announce an ended exchange to TransportEvents.onExchange (access log, metrics), when someone listens. */
  reportExchange(ex: Exchange, fault: TransportFault | undefined): void {
    const onExchange = this.events.onExchange;
    if (onExchange === undefined) return;
    const end = this.stamp();
    onExchange({
      method: ex.method,
      url: ex.url,
      httpVersion: ex.versionMinor === 0 ? '1.0' : (ex.clientVersion ?? '1.1'),
      remoteAddress: ex.remoteAddress,
      connectionId: ex.connectionId,
      requestNumber: ex.requestNumber,
      status: ex.status,
      requestBytes: ex.bodyBytes,
      responseBytes: ex.responseBytes,
      durationMs: end - ex.startedAt,
      upstreamMs: ex.forwardedAt < 0 ? -1 : end - ex.forwardedAt,
      target: ex.forward?.target.key,
      fault: fault ?? ex.fault,
      faultCode: ex.faultCode,
      retries: ex.retries + (ex.retried ? 1 : 0),
      request: ex,
    });
  }

  get queued(): number {
    return this.slotWaiters.length;
  }

  /** Log, count and announce one fault. Every line carries code, base and state (spec 002 part 7). */
  reportFault(fault: TransportFault, req: SourceRequest | undefined): void {
    const stats = this.stats;
    stats.faults++;
    const key = fault.side + ':' + fault.base + ':' + fault.state;
    stats.faultsByKey.set(key, (stats.faultsByKey.get(key) ?? 0) + 1);
    const level = fault.side === 'source' && (fault.reason === 'client_io_receive' || fault.reason === 'client_io_send') ? 'info' : 'warn';
    if (this.log.enabled(level)) {
      this.log.log(level, 'transport_fault', {
        code: fault.code,
        base: fault.base,
        state: fault.state,
        stateName: fault.stateName,
        side: fault.side,
        reason: fault.reason,
        reused: fault.reused,
        cause: fault.cause,
        status: fault.httpStatus,
        method: req?.method,
        url: req?.url,
        connection: req?.connectionId,
        // The request id of docs/operations.md: connection number '.' request number on it.
        requestId: req !== undefined ? req.connectionId + '.' + req.requestNumber : undefined,
      });
    }
    const onFault = this.events.onFault;
    if (onFault !== undefined) onFault(fault, req);
  }

  illegalTransition(side: 'source' | 'target', from: number, to: number): void {
    this.stats.illegalTransitions++;
    this.log.log('error', 'illegal_state_transition', { side, from, fromName: stateName(from), to, toName: stateName(to) });
  }

  startSweep(): void {
    if (this.sweepTimer !== undefined) return;
    this.sweepTimer = setInterval(() => this.sweep(), this.sweepEvery);
    this.sweepTimer.unref();
  }

  stopSweep(): void {
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  sweep(): void {
    const now = (this.now = performance.now());
    // Stamps read this clock, which can be up to one sweep old when taken; judging them against a time
    // one sweep back means no deadline fires early (and none more than two sweeps late).
    const due = now - this.sweepEvery;
    for (const s of this.sources) s.checkTimeouts(due);
    for (const t of this.targets) t.checkTimeouts(due);
    for (const p of this.pools.values()) p.sweep(due);
  }

  sourceClosed(): void {
    if (this.closing && this.sources.size === 0 && this.drained !== undefined) {
      const done = this.drained;
      this.drained = undefined;
      done();
    }
  }

  /** Graceful: idle connections close now, busy ones after their response; destroyed at the deadline. */
  async shutdown(deadlineMs: number): Promise<void> {
    this.closing = true;
    for (const s of this.sources) s.shutdown();
    if (this.sources.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          for (const s of this.sources) s.abort();
          resolve();
        }, deadlineMs);
        timer.unref();
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const p of this.pools.values()) p.destroyIdle();
    for (const t of this.targets) t.destroy();
    this.stopSweep();
  }
}

export function defaultConnect(highWaterMark: number): ConnectFn {
  // net.Socket hands its options to stream.Duplex, which honours highWaterMark; @types/node omits it.
  return (host, port, onread) => net.connect({ host, port, noDelay: true, highWaterMark, onread } as net.NetConnectOpts);
}

export type { LocalResponse };
