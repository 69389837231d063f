/**
 * The gateway's hook points: plain interfaces that the floors above fill in at creation. The gateway calls
 * them and knows nothing of who is behind them: lib/observability puts tracing and analytics behind
 * CallObserver, lib/embed its events and embedding paths behind the tap (docs/embedding.md).
 */
import type { GatewayOwnCode } from '../faults';
import type { ExchangeRecord, LocalResponse, TransportEvents } from '../transport/types';
import type { CallContext, CallTrace, PhaseObserver } from './phases/context';

export type { CallTrace };

/** Told when a call's chain starts, then around each phase (tracing: one span per call, one per phase). */
export interface ChainObserver extends PhaseObserver {
  /**
   * The call's chain starts. True: observe each of its phases (runChainObserved); false: nothing per
   * phase (an unsampled trace), so the chain runs as without an observer.
   */
  start(ctx: CallContext): boolean;
}

/**
 * What watches every call (the access log, tracing, analytics: docs/operations.md, docs/tracing.md,
 * docs/analytics.md). Fixed at creation: without one the gateway makes no exchange records for it, keeps
 * no call per exchange and runs the chain without stamps.
 */
export interface CallObserver {
  /** With it the chain runs through runChainObserved (phases.ts). */
  readonly chain?: ChainObserver;
  /** ended() reads the call behind each exchange: the gateway then keeps one per exchange in flight. */
  readonly calls: boolean;
  /** An exchange ended; `ctx` is the call behind it, undefined when none is kept or no chain ran for it. */
  ended(ctx: CallContext | undefined, r: ExchangeRecord): void;
  /** Flushes and stops; called last in the gateway's close(), after the transport has drained. */
  close(): Promise<void>;
}

/** The controls a wrapper of the gateway (lib/embed) receives with its tap. */
export interface GatewayControls {
  /**
   * Exchange records start (idempotent). A gateway that needed none starts them here, for a first event
   * listener; their timings then have the sweep's precision (the transport decides at creation whether
   * to read the clock per exchange).
   */
  recordExchanges(): void;
  /** A fault of the gateway's own table answered outside the transport, rendered with the current templates. */
  ownFault(code: (typeof GatewayOwnCode)[keyof typeof GatewayOwnCode]): LocalResponse;
}

/** Made once at creation with the controls; told of every fault and exchange after the gateway's own handling. */
export type GatewayTap = (controls: GatewayControls) => TransportEvents;
