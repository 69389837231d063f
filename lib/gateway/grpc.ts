/**
 * What the gRPC relay (lib/http2/grpc.ts, docs/grpc.md) needs of the gateway: the API of a gRPC service,
 * the phase chain as for every call, and the gateway's handling of the exchanges and faults it makes (the
 * access log, metrics, analytics, endpoint suspension), which the transport gives its own exchanges.
 */
import type { TransportFault } from '../transport/codes';
import type { ExchangeRecord, RouteFn, SourceRequest } from '../transport/types';

export interface GrpcGateway {
  /** The versioned context path of the deployed gRPC API serving `service` ("package.Service"), or undefined. */
  prefixOf(service: string): string | undefined;
  /** The phase chain as a router; give it requests made by grpcRequest(). */
  readonly route: RouteFn;
  /** An exchange the relay finished: what the transport's own exchanges go through. */
  exchanged(r: ExchangeRecord): void;
  /** A backend fault of a relayed call (endpoint suspension counts it, as a transport fault). */
  faulted(f: TransportFault, req: SourceRequest): void;
}

const calls = new WeakSet<SourceRequest>();

/** Marks a request as a gRPC call over HTTP/2 (the send phase forwards only such calls to a gRPC API). */
export function grpcRequest<R extends SourceRequest>(req: R): R {
  calls.add(req);
  return req;
}

export function isGrpcCall(req: SourceRequest): boolean {
  return calls.has(req);
}
