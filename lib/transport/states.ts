/**
 * The pass-through protocol states (spec 002, part 3, "Transport protocol states") and the transitions
 * throughway allows between them. One table drives both sides: the source connection (client side,
 * listener) and the target connection (backend side, sender). docs/transport.md draws its diagram from
 * TRANSITIONS (see scripts/gen-transport-docs.ts), so the document cannot drift from the code.
 */

export const ProtocolState = {
  /** Connection at initial stage, ready to send (target) or receive (source) a request. */
  REQUEST_READY: 0,
  /** Request head in transit: being read from the client, or written to the backend. */
  REQUEST_HEAD: 1,
  /** Request body in transit. The spec lists it; the reference never set it on the sender. We do. */
  REQUEST_BODY: 2,
  /** Request completely read (source) or completely handed to the socket (target). */
  REQUEST_DONE: 3,
  /** Response head in transit. */
  RESPONSE_HEAD: 4,
  /** Response body in transit. */
  RESPONSE_BODY: 5,
  /** Response completed. */
  RESPONSE_DONE: 6,
  /** Connection closing (graceful end sent, or about to be destroyed). */
  CLOSING: 7,
  /** Connection closed. */
  CLOSED: 8,
} as const;

export type ProtocolState = (typeof ProtocolState)[keyof typeof ProtocolState];

export const STATE_NAMES: readonly string[] = [
  'REQUEST_READY',
  'REQUEST_HEAD',
  'REQUEST_BODY',
  'REQUEST_DONE',
  'RESPONSE_HEAD',
  'RESPONSE_BODY',
  'RESPONSE_DONE',
  'CLOSING',
  'CLOSED',
];

export function stateName(state: number): string {
  return STATE_NAMES[state] ?? `UNKNOWN(${state})`;
}

const S = ProtocolState;

/**
 * Allowed transitions, from -> to. Why the less obvious edges exist:
 * - REQUEST_HEAD/REQUEST_BODY -> RESPONSE_HEAD: a response may start before the request is complete
 *   (a backend answering 413 early, or the gateway answering a fault before reading the body).
 * - RESPONSE_HEAD -> RESPONSE_HEAD: interim 1xx responses (100 Continue, 103) precede the final head
 *   (RFC 9110 §15.2).
 * - RESPONSE_HEAD -> RESPONSE_DONE: responses without a body (HEAD, 204, 304, Content-Length: 0).
 * - RESPONSE_DONE -> REQUEST_READY: keep-alive reuse (RFC 9112 §9.3).
 * - every live state -> CLOSING / CLOSED: faults, timeouts and peers closing can happen anywhere.
 */
export const TRANSITIONS: readonly (readonly ProtocolState[])[] = [
  /* REQUEST_READY */ [S.REQUEST_HEAD, S.CLOSING, S.CLOSED],
  /* REQUEST_HEAD  */ [S.REQUEST_BODY, S.REQUEST_DONE, S.RESPONSE_HEAD, S.CLOSING, S.CLOSED],
  /* REQUEST_BODY  */ [S.REQUEST_DONE, S.RESPONSE_HEAD, S.CLOSING, S.CLOSED],
  /* REQUEST_DONE  */ [S.RESPONSE_HEAD, S.CLOSING, S.CLOSED],
  /* RESPONSE_HEAD */ [S.RESPONSE_HEAD, S.RESPONSE_BODY, S.RESPONSE_DONE, S.CLOSING, S.CLOSED],
  /* RESPONSE_BODY */ [S.RESPONSE_DONE, S.CLOSING, S.CLOSED],
  /* RESPONSE_DONE */ [S.REQUEST_READY, S.CLOSING, S.CLOSED],
  /* CLOSING       */ [S.CLOSED],
  /* CLOSED        */ [],
];

/**
 * What a source connection's parsing waits for (client-reader.ts), beside its protocol state. NONE: it goes on. ROUTE, SLOT: a head whose body follows waits, unparsed, for
 * the route decision, then for an in-flight slot or a pooled connection. TARGET: the target's socket
 * buffer is full (reading is paused, parsing is not). RESPONSE: the request is complete, the next one
 * waits for its response. TUNNEL: the socket belongs to a WebSocket tunnel. A closing connection
 * (CLOSING, CLOSED) parses nothing whatever this says.
 */
export const Wait = { NONE: 0, ROUTE: 1, SLOT: 2, TARGET: 3, RESPONSE: 4, TUNNEL: 5 } as const;
export type Wait = (typeof Wait)[keyof typeof Wait];

/**
 * Where a source connection's parser stopped (client-reader.ts), as its callbacks record it for feed(): at a head whose body follows (AT_HEAD),
 * at a head without a body (HEAD_DONE: its exchange begins at completion, RFC 9112 §6.3 rule 7), at the
 * end of a message (AT_COMPLETE, with HEAD_DONE when that message had no body).
 */
export const Stop = { NONE: 0, AT_HEAD: 1, AT_COMPLETE: 2, HEAD_DONE: 4, BODILESS_COMPLETE: 6 } as const;
export type Stop = (typeof Stop)[keyof typeof Stop];

/**
 * A client socket's reading (client-reader.ts): OPEN, it reads; PAUSED, paused because parsing waits or
 * the target's socket is full; ENDED, the client sent its FIN: the bytes still queued are parsed, and
 * nothing is left to pause or resume.
 */
export const Intake = { OPEN: 0, PAUSED: 1, ENDED: 2 } as const;
export type Intake = (typeof Intake)[keyof typeof Intake];

/** Bit masks of TRANSITIONS: one array read and one AND per transition on the hot path. */
const MASKS: readonly number[] = TRANSITIONS.map((tos) => tos.reduce<number>((m, to) => m | (1 << to), 0));

export function canTransition(from: number, to: number): boolean {
  const mask = MASKS[from];
  return mask !== undefined && (mask & (1 << to)) !== 0;
}
