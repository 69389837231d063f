/**
 * gRPC APIs (docs/grpc.md): the services of their .proto files (proto.ts), the status codes and the
 * mapping of faults to them (status.ts), and the HTTP/2 sessions to their backends (pool.ts). Plain
 * inputs: the gateway's API validator asks for services, lib/http2/grpc.ts relays the calls.
 */
export { loadProtos, MAX_PROTO_BYTES, type CallKind, type GrpcMethod, type GrpcService, type ProtoResult, type ProtoTexts } from './proto';
export {
  GrpcStatus,
  GRPC_STATUS_OF_FAULT,
  GRPC_STATUS_OF_REASON,
  encodeGrpcMessage,
  grpcStatusOf,
  parseGrpcTimeout,
  statusOfHttp,
  type GrpcStatusCode,
} from './status';
export { GrpcSessions, connectCause, connectReason, MAX_SESSIONS, MAX_STREAMS } from './pool';
