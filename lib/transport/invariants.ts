/**
 * Invariants of the connection state machines: which of a connection's flags may be set in which
 * protocol state (states.ts, spec 002 part 3). Source and target connections check them at the entry of
 * feed, unblock, attach and finish.
 *
 * The one switch: the checks run when the process has `TAP=1` in its environment, which tap sets in
 * every test process (@tapjs/core spawn), so the whole test suite runs with them. Production pays one
 * well-predicted branch on the module constant CHECKS per call site; the checks themselves allocate
 * nothing unless one fails. A violated invariant throws an InvariantError (code ERR_TRANSPORT_INVARIANT).
 */
import { ProtocolState as S, stateName, type ProtocolState } from './states';

/** Read once at load: tap's TAP=1 (see above). */
export const CHECKS: boolean = process.env.TAP === '1';

export class InvariantError extends Error {
  readonly code = 'ERR_TRANSPORT_INVARIANT';
  constructor(side: 'source' | 'target', at: string, state: ProtocolState, rule: string) {
    super(`${side} connection invariant broken at ${at} in ${stateName(state)}: ${rule}`);
    this.name = 'InvariantError';
  }
}

/**
 * A source connection (source.ts). The rules:
 *  - a request body is relayed one way at a time: parsed (inBody, chunked) or counted (clRemaining,
 *    Content-Length), never both;
 *  - in CLOSING and CLOSED nothing more is parsed, and the other rules no longer apply; otherwise:
 *  - a body is in progress only while an exchange exists;
 *  - a bodiless head waiting for completion (headPending) has no exchange yet;
 *  - REQUEST_READY is between exchanges: no exchange, no body in progress;
 *  - a closing connection is in CLOSING or CLOSED;
 *  - an exchange whose response is done is in RESPONSE_DONE (or the connection is closing).
 */
export function checkSource(
  at: string,
  state: ProtocolState,
  hasExchange: boolean,
  responseDone: boolean,
  inBody: boolean,
  clRemaining: number,
  headPending: boolean,
  closing: boolean,
): void {
  if (inBody && clRemaining > 0) throw new InvariantError('source', at, state, 'parsed body (inBody) and counted body (clRemaining) at once');
  if (state >= S.CLOSING) {
    // A closing connection parses nothing more: its body flags may be left from the exchange it dropped.
    return;
  }
  if ((inBody || clRemaining > 0) && !hasExchange) throw new InvariantError('source', at, state, 'a body in progress without an exchange');
  if (headPending && hasExchange) throw new InvariantError('source', at, state, 'a pending head while an exchange is open');
  if (state === S.REQUEST_READY && (hasExchange || inBody || clRemaining > 0)) throw new InvariantError('source', at, state, 'an exchange or body in REQUEST_READY');
  if (closing && state < S.CLOSING) throw new InvariantError('source', at, state, 'closing outside CLOSING/CLOSED');
  if (hasExchange && responseDone && state < S.RESPONSE_DONE) throw new InvariantError('source', at, state, 'a done response before RESPONSE_DONE');
}

/** A target connection (target.ts) reading: a response body is parsed or counted, never both. */
export function checkTarget(at: string, state: ProtocolState, inBody: boolean, clRemaining: number): void {
  if (inBody && clRemaining > 0) throw new InvariantError('target', at, state, 'parsed body (inBody) and counted body (clRemaining) at once');
}

/**
 * A target connection (target.ts) taking an exchange: only an idle connection in REQUEST_READY that
 * neither failed nor was closed by us, with no head held back from an earlier response.
 */
export function checkTargetAttach(state: ProtocolState, hasExchange: boolean, failed: boolean, closedByUs: boolean, headHeld: boolean): void {
  if (state !== S.REQUEST_READY) throw new InvariantError('target', 'attach', state, 'attached outside REQUEST_READY');
  if (hasExchange) throw new InvariantError('target', 'attach', state, 'attached while serving another exchange');
  if (failed || closedByUs) throw new InvariantError('target', 'attach', state, 'attached after it failed or was closed');
  if (headHeld) throw new InvariantError('target', 'attach', state, 'a response head of an earlier exchange is still held');
}
