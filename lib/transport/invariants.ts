/**
 * Invariants of the connection state machines (states.ts, spec 002 part 3) that the types do not already
 * keep. Most of what used to be checked here is now a type: a request body is one BodyMode (exchange.ts),
 * so it cannot be parsed and counted at once, nor be in progress without an exchange; a closing source
 * connection is its protocol state (CLOSING, CLOSED), not a flag beside it; a target's response body is
 * one ResponseBody (target.ts). What is left is a handful of compares at the entry of feed, finish and
 * attach, always on: cheaper than the branch on a setting would be worth (docs/performance.md,
 * "Transport reshaping"). A violated invariant throws an InvariantError (code ERR_TRANSPORT_INVARIANT).
 */
import { ProtocolState as S, stateName, type ProtocolState } from './states';
import { ThroughwayError } from '../errors';

export class InvariantError extends ThroughwayError {
  readonly code = 'ERR_TRANSPORT_INVARIANT';
  constructor(side: 'source' | 'target', at: string, state: ProtocolState, rule: string) {
    super(`${side} connection invariant broken at ${at} in ${stateName(state)}: ${rule}`);
    this.name = 'InvariantError';
  }
}

/** Throws the InvariantError; the call sites test their (one or two) compares inline. */
export function invariantBroken(side: 'source' | 'target', at: string, state: ProtocolState, rule: string): never {
  throw new InvariantError(side, at, state, rule);
}

/*
 * A source connection (source.ts) checks, inline at its call sites: REQUEST_READY is between exchanges
 * (feed); a bodiless head waiting for completion has no exchange yet (complete); an exchange whose
 * response is done is in RESPONSE_DONE or later (finish).
 */

/**
 * A target connection (target.ts) taking an exchange: only an idle connection in REQUEST_READY that is
 * still open, with no head held back from an earlier response.
 */
export function checkTargetAttach(state: ProtocolState, hasExchange: boolean, closed: boolean, headHeld: boolean): void {
  if (state !== S.REQUEST_READY) invariantBroken('target', 'attach', state, 'attached outside REQUEST_READY');
  if (hasExchange) invariantBroken('target', 'attach', state, 'attached while serving another exchange');
  if (closed) invariantBroken('target', 'attach', state, 'attached after it failed or was closed');
  if (headHeld) invariantBroken('target', 'attach', state, 'a response head of an earlier exchange is still held');
}
