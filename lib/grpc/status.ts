/**
 * gRPC status codes (grpc/grpc doc/statuscodes.md) and the mapping of the gateway's fault codes to them
 * (docs/faults.md, "gRPC status of each fault"); the grpc-timeout and grpc-message encodings of gRPC over
 * HTTP/2 (grpc/grpc doc/PROTOCOL-HTTP2.md).
 */
import type { FaultReason } from '../transport/codes';

export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusCode = (typeof GrpcStatus)[keyof typeof GrpcStatus];

/** Fault codes with a status of their own; the others map by their HTTP status (statusOfHttp). */
export const GRPC_STATUS_OF_FAULT: ReadonlyMap<number, GrpcStatusCode> = new Map<number, GrpcStatusCode>([
  // Authentication (spec 002 part 7): no or a bad credential.
  [900900, GrpcStatus.UNAUTHENTICATED],
  [900901, GrpcStatus.UNAUTHENTICATED],
  [900902, GrpcStatus.UNAUTHENTICATED],
  [900904, GrpcStatus.UNAUTHENTICATED],
  [900905, GrpcStatus.UNAUTHENTICATED],
  [900911, GrpcStatus.UNAUTHENTICATED],
  // Authorisation: a credential that may not call this method.
  [900907, GrpcStatus.PERMISSION_DENIED],
  [900908, GrpcStatus.PERMISSION_DENIED],
  [900909, GrpcStatus.PERMISSION_DENIED],
  [900910, GrpcStatus.PERMISSION_DENIED],
  // Throttling.
  [900800, GrpcStatus.RESOURCE_EXHAUSTED],
  [900801, GrpcStatus.RESOURCE_EXHAUSTED],
  [900802, GrpcStatus.RESOURCE_EXHAUSTED],
  [900803, GrpcStatus.RESOURCE_EXHAUSTED],
  [900804, GrpcStatus.RESOURCE_EXHAUSTED],
  [900805, GrpcStatus.RESOURCE_EXHAUSTED],
  [900806, GrpcStatus.RESOURCE_EXHAUSTED],
  [900807, GrpcStatus.RESOURCE_EXHAUSTED],
  [103012, GrpcStatus.RESOURCE_EXHAUSTED], // a tenant's bandwidth
  // Unknown services and methods.
  [900906, GrpcStatus.UNIMPLEMENTED],
  [103005, GrpcStatus.UNIMPLEMENTED],
  [103006, GrpcStatus.UNIMPLEMENTED],
  [103008, GrpcStatus.UNIMPLEMENTED], // a RETIRED API
  [103010, GrpcStatus.UNIMPLEMENTED],
  [103011, GrpcStatus.UNIMPLEMENTED],
  // Not now: the API blocked, the endpoint suspended.
  [700700, GrpcStatus.UNAVAILABLE],
  [103007, GrpcStatus.UNAVAILABLE],
]);

/** Transport faults of the backend side, by what happened: connection failures UNAVAILABLE, timeouts DEADLINE_EXCEEDED. */
export const GRPC_STATUS_OF_REASON: Readonly<Partial<Record<FaultReason, GrpcStatusCode>>> = {
  connect_refused: GrpcStatus.UNAVAILABLE,
  connect_failed: GrpcStatus.UNAVAILABLE,
  connect_timeout: GrpcStatus.DEADLINE_EXCEEDED,
  connect_canceled: GrpcStatus.CANCELLED,
  tls_handshake: GrpcStatus.UNAVAILABLE,
  pool_full: GrpcStatus.UNAVAILABLE,
  socket_timeout: GrpcStatus.DEADLINE_EXCEEDED,
  closed: GrpcStatus.UNAVAILABLE,
  io_send: GrpcStatus.UNAVAILABLE,
  io_receive: GrpcStatus.UNAVAILABLE,
  protocol: GrpcStatus.INTERNAL,
  send_abort: GrpcStatus.UNAVAILABLE,
  processing: GrpcStatus.INTERNAL,
};

/**
 * The status of an HTTP status, as gRPC clients map a response without grpc-status (grpc/grpc
 * doc/http-grpc-status-mapping.md), with 413 and 429 as RESOURCE_EXHAUSTED and 504 as DEADLINE_EXCEEDED.
 */
export function statusOfHttp(status: number): GrpcStatusCode {
  switch (status) {
    case 400:
      return GrpcStatus.INVALID_ARGUMENT;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
    case 405:
      return GrpcStatus.UNIMPLEMENTED;
    case 413:
    case 429:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case 502:
    case 503:
      return GrpcStatus.UNAVAILABLE;
    case 504:
      return GrpcStatus.DEADLINE_EXCEEDED;
    default:
      return GrpcStatus.INTERNAL;
  }
}

/**
 * The gRPC status of a fault: a transport fault's by its reason (its combined code collides with others,
 * docs/faults.md), a gateway fault's by its code, else by its HTTP status.
 */
export function grpcStatusOf(code: number, httpStatus: number, reason?: FaultReason): GrpcStatusCode {
  return (reason !== undefined ? GRPC_STATUS_OF_REASON[reason] : GRPC_STATUS_OF_FAULT.get(code)) ?? statusOfHttp(httpStatus);
}

const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * grpc-timeout (PROTOCOL-HTTP2.md: TimeoutValue of at most 8 digits, then H, M, S, m, u or n) in ms;
 * undefined when absent or malformed (the call then has no deadline of its own).
 */
export function parseGrpcTimeout(value: string | undefined): number | undefined {
  if (value === undefined || value.length < 2 || value.length > 9) return undefined;
  const unit = UNIT_MS[value.charAt(value.length - 1)];
  const digits = value.slice(0, -1);
  if (unit === undefined || !/^\d+$/.test(digits)) return undefined;
  return Number(digits) * unit;
}

/**
 * grpc-message is percent-encoded UTF-8 (PROTOCOL-HTTP2.md): bytes outside 0x20-0x7E, and '%', as %XX.
 */
export function encodeGrpcMessage(text: string): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    if (b >= 0x20 && b <= 0x7e && b !== 0x25) out += String.fromCharCode(b);
    else out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
