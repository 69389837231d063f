/**
 * How a source connection's exchange ends when it cannot end normally: a request that does not parse,
 * a target that failed, a client that ended or closed its side mid-exchange, an abort (spec 002 part 7:
 * faults 101000/101001 on the client side, codes base + state). Module functions over the source
 * connection (source.ts).
 */
import { makeFault, type FaultReason, type TransportFault } from './codes';
import { ProtocolState as S, type ProtocolState } from './states';
import { Progress, SlotHold, type Exchange } from './exchange';
import { endCollect } from './body';
import { answerFault, type LocalAnswerer } from './local';
import { poolFor } from './pool';
import type { HttpParser } from './parser';

/** What ending an exchange uses of the source connection. */
export interface EndingSource extends LocalAnswerer {
  ex: Exchange | null;
  readonly state: ProtocolState;
  readonly parser: HttpParser;
  /** An exchange to answer a request whose head never parsed. */
  newErrorExchange(): Exchange;
  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void;
}

/** [throughway] max_request_body over a chunked body (a Content-Length one is refused at its head): 413, then close. */
export function bodyTooLarge(conn: EndingSource): boolean {
  const ex = conn.ex;
  const max = conn.core.settings.maxRequestBody;
  if (ex === null || max < 0 || ex.bodyBytes <= max) return false;
  const t = ex.target;
  if (t !== null) {
    ex.target = null;
    t.destroy();
  }
  answerFault(conn, ex, makeFault('body_too_large', conn.state), true);
  return true;
}

/** Waiting for a pooled connection took longer than the connect timeout (101504 at state 0). */
export function poolTimeout(conn: EndingSource, ex: Exchange): void {
  targetFailed(
    conn,
    ex,
    makeFault('pool_full', S.REQUEST_READY, false, `route at its maximum of ${conn.core.settings.maxConnectionsPerRoute} connections`),
  );
  conn.unblockIfReady(ex);
}

/** The in-flight queue is full (passthru_http worker_pool_queue_length): 503 at once. */
export function queueFull(conn: EndingSource, ex: Exchange): void {
  answerFault(conn, ex, makeFault('queue_full', conn.state), false);
}

/** The target failed before or during the response. */
export function targetFailed(conn: EndingSource, ex: Exchange, fault: TransportFault): void {
  if (conn.ex !== ex || ex.aborted) return;
  if (ex.responseStarted) {
    // The status line is already on the wire: the only honest signal left is an aborted connection.
    conn.core.reportFault(fault, ex);
    ex.faultCode = fault.code;
    ex.fault = fault;
    conn.endExchange(ex, fault);
    conn.abort();
    return;
  }
  answerFault(conn, ex, fault, !ex.requestComplete);
  conn.unblockIfReady(ex);
}

/** The parser refused the client's bytes: 400 (431 for a head too large), then close. */
export function parseError(conn: EndingSource): void {
  const name = conn.parser.errorName;
  const reason: FaultReason = name === 'HPE_HEADER_OVERFLOW' ? 'header_too_large' : 'client_protocol';
  const state = conn.state === S.REQUEST_READY ? S.REQUEST_HEAD : conn.state;
  const fault = makeFault(reason, state, false, name);
  let ex = conn.ex;
  if (ex !== null && ex.target !== null) {
    // Part of this request already went to the backend: that socket cannot be trusted again.
    const t = ex.target;
    ex.target = null;
    t.destroy();
  }
  if (ex === null || ex.requestComplete) {
    // The error is in a request that has no exchange yet (its head never completed).
    if (ex !== null && !ex.responseDone) {
      conn.core.reportFault(fault, ex);
      conn.abort();
      return;
    }
    ex = conn.newErrorExchange();
  }
  answerFault(conn, ex, fault, true);
}

/**
 * The client ended its side and every byte it sent has been parsed. allowHalfOpen: a client that
 * half-closes after a complete request still gets its response (RFC 9112 §9.6), and the connection
 * closes once nothing is in flight. A request cut short can never complete (RFC 9112 §8) and nobody is
 * left to answer it: its target is freed now, not at a timeout.
 */
export function inputEnded(conn: EndingSource): void {
  if (conn.state >= S.CLOSING) return;
  const ex = conn.ex;
  if (ex === null) {
    // Between requests, or inside a head that can no longer complete: nothing to answer.
    conn.close();
    return;
  }
  if (ex.requestComplete) return;
  if (ex.responseDone) {
    // Answered already (a local answer while the rest of the body was being read and dropped).
    conn.endExchange(ex, undefined);
    conn.close();
    return;
  }
  if (ex.responseStarted) return; // an early response: when it ends, the connection closes (closeAfter)
  const fault = makeFault('client_io_receive', conn.state, false, 'client ended the connection mid-request');
  conn.core.reportFault(fault, ex);
  ex.faultCode = fault.code;
  ex.fault = fault;
  conn.endExchange(ex, fault);
  conn.abort();
}

/** The client socket closed: an exchange still open is reported (nobody is left to answer it) and dropped. */
export function clientClosed(conn: EndingSource, lastErrorCode: string | undefined): void {
  const ex = conn.ex;
  if (ex === null) return;
  if (!ex.responseDone && !ex.aborted) {
    // The client went away mid-exchange: nobody to answer; log and count (spec 002 part 7, 101000/101001).
    const reason: FaultReason = conn.state >= S.RESPONSE_HEAD ? 'client_io_send' : 'client_io_receive';
    const fault = makeFault(reason, conn.state, false, lastErrorCode ?? 'client closed the connection');
    conn.core.reportFault(fault, ex);
    ex.faultCode = fault.code;
    conn.endExchange(ex, fault);
  }
  dropExchange(conn, ex);
}

/** Forget the exchange; a target still serving it cannot be reused (the request or response is cut). */
export function dropExchange(conn: EndingSource, ex: Exchange): void {
  const b = ex.body;
  if (b.kind === 'gather') endCollect(ex, b.collector, { ok: false, reason: 'aborted', size: b.collector.size });
  ex.progress = Progress.ABORTED;
  if (ex.slot === SlotHold.HELD) conn.core.releaseSlot(ex);
  else if (ex.slot === SlotHold.QUEUED) conn.core.cancelSlotWait(ex);
  if (ex.forward !== null && ex.target === null) poolFor(conn.core, ex.forward.target).cancelWait(ex);
  const t = ex.target;
  if (t !== null) {
    ex.target = null;
    t.ex = null;
    t.destroy();
  }
  conn.ex = null;
}

/** A bug of ours while parsing: 500 when nothing was answered yet, else the connection is aborted. */
export function internalError(conn: EndingSource, err: unknown): void {
  conn.core.log.log('error', 'internal_error', {
    connection: conn.id,
    error: err instanceof Error ? (err.stack ?? err.message) : String(err),
  });
  const ex = conn.ex;
  if (ex !== null && !ex.responseStarted) answerFault(conn, ex, makeFault('processing', conn.state, false, 'internal error'), true);
  else conn.abort();
}
