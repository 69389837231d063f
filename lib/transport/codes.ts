/**
 * Transport error codes (spec 002, part 7, "Transport error codes") and the fault value every transport
 * failure becomes.
 *
 * Rule 1 of the spec: for connection-level errors, code = base code + protocol state number. Rule 2: a
 * timeout once the request is completely sent (state 3) has base 101504, so code 101507. Combined numbers
 * collide (101507 is also "Connection canceled"), so faults are keyed by what happened (the reason, which
 * fixes the base) and every fault, log line and metric carries the base and the state as well.
 */
import { ProtocolState, stateName } from './states';

/** The spec's base codes, by name. */
export const TransportBase = {
  /** Receiver (client side) input/output error sending. */
  RECEIVER_IO_ERROR_SENDING: 101000,
  /** Receiver (client side) input/output error receiving. */
  RECEIVER_IO_ERROR_RECEIVING: 101001,
  SENDER_IO_ERROR_SENDING: 101500,
  SENDER_IO_ERROR_RECEIVING: 101501,
  CONNECTION_FAILED: 101503,
  CONNECTION_TIMEOUT: 101504,
  CONNECTION_CLOSED: 101505,
  PROTOCOL_VIOLATION: 101506,
  CONNECT_CANCEL: 101507,
  CONNECT_TIMEOUT: 101508,
  SEND_ABORT: 101509,
  RESPONSE_PROCESSING_FAILURE: 101510,
} as const;

/**
 * throughway's own codes for conditions the spec has no code for (docs/faults.md lists the whole range,
 * 103001 onwards). They do not add the state: they are not connection-level errors.
 */
export const OwnCode = {
  REQUEST_BODY_TOO_LARGE: 103001,
  REQUEST_QUEUE_FULL: 103002,
  NO_ROUTE: 103003,
  SENDER_DISABLED: 103004,
  /** In the mediation block (103060–103079): [mediation] engine.global_timeout_interval passed. */
  GLOBAL_TIMEOUT: 103064,
  /** The TLS, proxies and WebSocket block (103080-103099; docs/tls.md, docs/websocket.md). */
  TLS_HANDSHAKE_FAILED: 103080,
  PROXY_REFUSED: 103081,
  WEBSOCKET_FRAME_REFUSED: 103082,
  /** The transport's block for request framing, deadlines and the interim cap (103160-103179; docs/transport.md). */
  TRANSFER_ENCODING_REFUSED: 103160,
  FRAGMENT_IN_TARGET: 103161,
  BODY_DEADLINE: 103162,
  TOO_MANY_INTERIM: 103163,
} as const;

/** Which connection failed: the client's (source, downstream) or the backend's (target, upstream). */
export type Side = 'source' | 'target';

/** What happened. Each reason fixes the base code, whether the state is added, and the HTTP status. */
export type FaultReason =
  // target (backend) side
  | 'connect_refused'
  | 'connect_failed'
  | 'connect_timeout'
  | 'connect_canceled'
  | 'pool_full'
  | 'socket_timeout'
  | 'closed'
  | 'io_send'
  | 'io_receive'
  | 'protocol'
  | 'send_abort'
  | 'processing'
  // source (client) side
  | 'client_protocol'
  | 'header_too_large'
  | 'version_not_supported'
  | 'connect_method'
  | 'header_timeout'
  | 'client_timeout'
  | 'client_io_send'
  | 'client_io_receive'
  // throughway's own
  | 'body_too_large'
  | 'queue_full'
  | 'no_route'
  | 'sender_disabled'
  | 'tls_handshake'
  | 'proxy_refused'
  | 'ws_frame_refused'
  | 'global_timeout'
  | 'te_refused'
  | 'fragment'
  | 'body_deadline'
  | 'too_many_interim';

export interface FaultKind {
  readonly base: number;
  /** Spec rule 1: connection-level errors add the protocol state to the base. */
  readonly addsState: boolean;
  readonly side: Side;
  /**
   * HTTP status sent to the client. The reference gateway answers every backend failure with 500;
   * throughway answers 502 for connection and protocol failures, 504 for timeouts and 503 when a pool or
   * queue is full (docs/faults.md). A custom fault template may still set any status (spec 002 part 7 rule 4).
   */
  readonly httpStatus: number;
  readonly message: string;
  readonly description: string;
}

export const FAULT_KINDS: { readonly [R in FaultReason]: FaultKind } = {
  connect_refused: {
    base: 101503,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Connection failed',
    description: 'Error connecting to the back end: connection refused',
  },
  connect_failed: {
    base: 101503,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Connection failed',
    description: 'Error connecting to the back end',
  },
  connect_timeout: {
    base: 101508,
    addsState: true,
    side: 'target',
    httpStatus: 504,
    message: 'Request to establish new connection timed out',
    description: 'The back end did not accept the connection in time',
  },
  connect_canceled: {
    base: 101507,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Connection canceled',
    description: 'The connection to the back end was canceled',
  },
  pool_full: {
    base: 101504,
    addsState: true,
    side: 'target',
    httpStatus: 503,
    message: 'Connection timed out',
    description: 'No connection to the back end became free in time (per-route maximum reached)',
  },
  socket_timeout: {
    base: 101504,
    addsState: true,
    side: 'target',
    httpStatus: 504,
    message: 'Connection timed out',
    description: 'No input from the back end over the maximum inactivity period',
  },
  closed: {
    base: 101505,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Connection closed',
    description: 'The back end closed the connection',
  },
  io_send: {
    base: 101500,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Sender input/output error sending',
    description: 'Error sending the request to the back end',
  },
  io_receive: {
    base: 101501,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Sender input/output error receiving',
    description: 'Error receiving the response from the back end',
  },
  protocol: {
    base: 101506,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'NHTTP protocol violation',
    description: 'The back end sent an invalid HTTP message',
  },
  send_abort: {
    base: 101509,
    addsState: true,
    side: 'target',
    httpStatus: 502,
    message: 'Send abort',
    description: 'Sending the request to the back end was aborted',
  },
  processing: {
    base: 101510,
    addsState: true,
    side: 'target',
    httpStatus: 500,
    message: 'Response processing failed',
    description: 'The gateway failed while processing the response',
  },
  client_protocol: {
    base: 101506,
    addsState: true,
    side: 'source',
    httpStatus: 400,
    message: 'Bad Request',
    description: 'The request is not valid HTTP/1.1',
  },
  connect_method: {
    base: 101506,
    addsState: true,
    side: 'source',
    httpStatus: 501,
    message: 'Not Implemented',
    description: 'CONNECT (tunnelling) is not served by the pass-through listener',
  },
  version_not_supported: {
    base: 101506,
    addsState: true,
    side: 'source',
    httpStatus: 505,
    message: 'HTTP Version Not Supported',
    description: 'Only HTTP/1.0 and HTTP/1.1 are served on this listener',
  },
  header_too_large: {
    base: 101506,
    addsState: true,
    side: 'source',
    httpStatus: 431,
    message: 'Request Header Fields Too Large',
    description: 'The request head exceeds maxHttpHeaderSize',
  },
  header_timeout: {
    base: 101504,
    addsState: true,
    side: 'source',
    httpStatus: 408,
    message: 'Request Timeout',
    description: 'The request head was not received in time',
  },
  client_timeout: {
    base: 101504,
    addsState: true,
    side: 'source',
    httpStatus: 408,
    message: 'Request Timeout',
    description: 'No input from the client over the maximum inactivity period',
  },
  client_io_send: {
    base: 101000,
    addsState: true,
    side: 'source',
    httpStatus: 500,
    message: 'Receiver input/output error sending',
    description: 'Error sending the response to the client',
  },
  client_io_receive: {
    base: 101001,
    addsState: true,
    side: 'source',
    httpStatus: 400,
    message: 'Receiver input/output error receiving',
    description: 'Error receiving the request from the client',
  },
  body_too_large: {
    base: OwnCode.REQUEST_BODY_TOO_LARGE,
    addsState: false,
    side: 'source',
    httpStatus: 413,
    message: 'Payload Too Large',
    description: 'The request body exceeds the configured maximum (throughway.max_request_body)',
  },
  queue_full: {
    base: OwnCode.REQUEST_QUEUE_FULL,
    addsState: false,
    side: 'source',
    httpStatus: 503,
    message: 'Service Unavailable',
    description: 'The request queue is full (passthru_http.worker_pool_queue_length)',
  },
  no_route: {
    base: OwnCode.NO_ROUTE,
    addsState: false,
    side: 'source',
    httpStatus: 404,
    message: 'Not Found',
    description: 'No route matches the request',
  },
  tls_handshake: {
    base: OwnCode.TLS_HANDSHAKE_FAILED,
    addsState: false,
    side: 'target',
    httpStatus: 502,
    message: 'Backend TLS handshake failed',
    description:
      'The TLS handshake with the back end failed: certificate not trusted by the sender trust store, host name refused by sender.hostname_verifier, or no common protocol or cipher',
  },
  proxy_refused: {
    base: OwnCode.PROXY_REFUSED,
    addsState: false,
    side: 'target',
    httpStatus: 502,
    message: 'Proxy refused the tunnel',
    description: 'The outbound HTTP proxy did not open a CONNECT tunnel to the back end (non-2xx answer, e.g. 407 for wrong credentials)',
  },
  ws_frame_refused: {
    base: OwnCode.WEBSOCKET_FRAME_REFUSED,
    addsState: false,
    side: 'source',
    httpStatus: 429,
    message: 'WebSocket frame refused',
    description: 'A WebSocket client frame was refused by the per-frame limit; the tunnel was closed with close code 1008',
  },
  global_timeout: {
    base: OwnCode.GLOBAL_TIMEOUT,
    addsState: false,
    side: 'target',
    httpStatus: 504,
    message: 'Gateway Timeout',
    description: 'No backend response within [mediation] engine.global_timeout_interval; a response arriving later is dropped',
  },
  te_refused: {
    base: OwnCode.TRANSFER_ENCODING_REFUSED,
    addsState: false,
    side: 'source',
    httpStatus: 501,
    message: 'Not Implemented',
    description:
      "The request's Transfer-Encoding is not exactly one chunked coding (identity, a list of codings or a repeated field is refused; RFC 9112 §6.1)",
  },
  fragment: {
    base: OwnCode.FRAGMENT_IN_TARGET,
    addsState: false,
    side: 'source',
    httpStatus: 400,
    message: 'Bad Request',
    description: 'The request target carries a #fragment, which a client never sends (RFC 9112 §3.2, RFC 9110 §4.2.5)',
  },
  body_deadline: {
    base: OwnCode.BODY_DEADLINE,
    addsState: false,
    side: 'source',
    httpStatus: 408,
    message: 'Request Timeout',
    description: 'The request body was not received within [throughway] body_timeout',
  },
  too_many_interim: {
    base: OwnCode.TOO_MANY_INTERIM,
    addsState: false,
    side: 'target',
    httpStatus: 502,
    message: 'Too many interim responses',
    description:
      'The back end sent more 1xx interim responses to one request than [throughway] max_interim_responses; its connection was closed',
  },
  sender_disabled: {
    base: OwnCode.SENDER_DISABLED,
    addsState: false,
    side: 'target',
    httpStatus: 503,
    message: 'Service Unavailable',
    description: 'The pass-through sender is disabled (transport.passthru_http.sender.enable = false)',
  },
};

/** One transport failure, as logged, counted and (when the client can still be answered) rendered. */
export interface TransportFault {
  readonly code: number;
  readonly base: number;
  readonly state: ProtocolState;
  readonly stateName: string;
  readonly side: Side;
  readonly reason: FaultReason;
  readonly httpStatus: number;
  readonly message: string;
  /** The kind's description plus what identifies this occurrence: base, state, reuse, cause. */
  readonly description: string;
  /** Target side: the failed socket had served an earlier request (taken from the keep-alive pool). */
  readonly reused: boolean;
  /** The system error code behind it (ECONNREFUSED, ECONNRESET, ...) or the parser's error name. */
  readonly cause: string | undefined;
}

export function makeFault(reason: FaultReason, state: ProtocolState, reused = false, cause?: string): TransportFault {
  const kind = FAULT_KINDS[reason];
  const code = kind.addsState ? kind.base + state : kind.base;
  let description = `${kind.description} (base ${kind.base}, ${kind.side} state ${stateName(state)}(${state})`;
  if (kind.side === 'target') description += reused ? ', reused connection' : ', new connection';
  if (cause !== undefined) description += `, ${cause}`;
  description += ')';
  return {
    code,
    base: kind.base,
    state,
    stateName: stateName(state),
    side: kind.side,
    reason,
    httpStatus: kind.httpStatus,
    message: kind.message,
    description,
    reused,
    cause,
  };
}

/** The spec's fault body (spec 002, part 7, "Response shape"). */
export function faultJson(code: number, message: string, description: string): string {
  return JSON.stringify({ fault: { code, type: 'Status report', message, description } });
}

export { ProtocolState };
