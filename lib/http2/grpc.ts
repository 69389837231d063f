/**
 * gRPC calls over HTTP/2 (docs/grpc.md): a client stream whose content-type is application/grpc goes
 * through the gateway's phase chain as a request of its own (lib/gateway/grpc.ts: routing by service,
 * authentication from the `authorization` metadata, subscriptions, throttling), and is then relayed as a
 * stream of its own to the backend over HTTP/2 (lib/grpc/pool.ts), never as HTTP/1.1: gRPC needs trailers.
 *
 * Both directions are piped with backpressure: a message is never gathered, the client's stream is read
 * only as fast as the backend's stream takes it and the other way round, so flow-control windows open at
 * the reader's pace (RFC 9113 §5.2). The backend's response fields and trailers are relayed (hop-by-hop
 * fields dropped, RFC 9113 §8.2.2); the request's metadata goes to the backend as the chain's outgoing
 * fields (the gateway's auth header removed, as on the REST path) with `te: trailers` (gRPC over HTTP/2,
 * grpc/grpc doc/PROTOCOL-HTTP2.md).
 *
 * A refusal of the gateway's own is a gRPC answer: HTTP 200, trailers-only (one HEADERS frame with
 * END_STREAM), grpc-status and grpc-message, and the fault code in `throughway-fault-code`; the status of
 * each code is lib/grpc/status.ts's (docs/faults.md, "gRPC status of each fault"). grpc-timeout (and the
 * endpoint's timeout) is a deadline: past it the backend's stream is cancelled (RST_STREAM CANCEL) and the
 * call ends with DEADLINE_EXCEEDED.
 */
import * as http2 from 'node:http2';
import { fault, faultDef, GatewayOwnCode, gatewayFacts, type FaultFacts } from '../faults';
import { grpcRequest, type GrpcGateway } from '../gateway/grpc';
import {
  connectCause,
  connectReason,
  encodeGrpcMessage,
  GrpcStatus,
  grpcStatusOf,
  parseGrpcTimeout,
  type GrpcSessions,
  type GrpcStatusCode,
} from '../grpc';
import type { Logger } from '../log';
import { makeFault, type TransportFault } from '../transport/codes';
import { ProtocolState } from '../transport/states';
import type { ExchangeRecord, ForwardDecision, LocalResponse, RouteDecision, SourceRequest } from '../transport/types';

/** What the HTTP/2 handover needs to relay gRPC calls. */
export interface GrpcServe {
  readonly gateway: GrpcGateway;
  readonly sessions: GrpcSessions;
  readonly logger: Logger;
}

const {
  NGHTTP2_CANCEL,
  NGHTTP2_FLAG_END_STREAM,
  NGHTTP2_NO_ERROR,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_ENHANCE_YOUR_CALM,
  NGHTTP2_INADEQUATE_SECURITY,
} = http2.constants;

/** gRPC's content types (PROTOCOL-HTTP2.md): application/grpc, +proto, +json, ...; not gRPC-Web. */
export function isGrpcContentType(ct: unknown): boolean {
  if (typeof ct !== 'string' || !ct.startsWith('application/grpc')) return false;
  const c = ct.charCodeAt(16);
  return Number.isNaN(c) || c === 0x2b || c === 0x3b; // end, '+', ';'
}

/**
 * Fields never relayed between the two HTTP/2 streams: connection-specific ones (RFC 9113 §8.2.2), the
 * request's framing (the backend's stream has its own), and `host` (:authority is the backend's).
 */
const NOT_RELAYED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'host',
  'content-length',
  'http2-settings',
]);

/** The status of a stream the backend reset (PROTOCOL-HTTP2.md, "Errors"). */
function statusOfReset(code: number): GrpcStatusCode {
  if (code === NGHTTP2_REFUSED_STREAM) return GrpcStatus.UNAVAILABLE;
  if (code === NGHTTP2_CANCEL) return GrpcStatus.CANCELLED;
  if (code === NGHTTP2_ENHANCE_YOUR_CALM) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (code === NGHTTP2_INADEQUATE_SECURITY) return GrpcStatus.PERMISSION_DENIED;
  return GrpcStatus.INTERNAL;
}

/** The grpc-message of a rendered fault: its message and description from the JSON body, else the table's message. */
function messageOf(a: LocalResponse): string {
  if (a.body !== undefined) {
    try {
      const f = (JSON.parse(a.body.toString()) as { fault?: { message?: unknown; description?: unknown } }).fault;
      if (f !== undefined && typeof f.message === 'string')
        return typeof f.description === 'string' && f.description !== '' ? `${f.message}: ${f.description}` : f.message;
    } catch {
      // A custom template's body (docs/faults.md): the table's message instead.
    }
  }
  return (a.faultCode !== undefined ? faultDef(a.faultCode)?.message : undefined) ?? `HTTP ${a.status}`;
}

/** The fields of a refusal's answer that keep their meaning in gRPC: when to try again. */
function retryAfterOf(a: LocalResponse): string | undefined {
  const h = a.headers;
  if (h === undefined) return undefined;
  for (let i = 0; i < h.length; i += 2) if ((h[i] as string).toLowerCase() === 'retry-after') return h[i + 1];
  return undefined;
}

let connections = 0;
const connectionIds = new WeakMap<http2.Http2Session, number>();

/** Relays one gRPC call (a stream whose content-type isGrpcContentType). */
export function serveGrpc(
  stream: http2.ServerHttp2Stream,
  raw: readonly string[],
  g: GrpcServe,
  peer: { address: string; port: number; secure: boolean },
): void {
  new GrpcCall(stream, raw, g, peer).start();
}

class GrpcCall {
  private readonly started = Date.now();
  /** When the call's deadline (grpc-timeout or the endpoint's timeout, the shorter) passes, in Date.now() ms. */
  private deadlineAt: number | undefined;
  private readonly path: string;
  private readonly method: string;
  private readonly req: SourceRequest & { call?: unknown };
  private readonly timeoutMs: number | undefined;
  private upstream: http2.ClientHttp2Stream | undefined;
  private forward: ForwardDecision | undefined;
  private upstreamStarted = -1;
  /** The response's HEADERS frame went to the client. */
  private responded = false;
  /** The call's outcome is decided (answered, or ending with trailers): nothing else is relayed. */
  private done = false;
  private recorded = false;
  private trailers: http2.OutgoingHttpHeaders | undefined;
  /** The grpc-status the client was sent (the gateway's or the backend's); -1 while none was. */
  private grpcStatus = -1;
  private timer: NodeJS.Timeout | undefined;
  private requestBytes = 0;
  private responseBytes = 0;
  private faultCode: number | undefined;
  private transportFault: TransportFault | undefined;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    raw: readonly string[],
    private readonly g: GrpcServe,
    peer: { address: string; port: number; secure: boolean },
  ) {
    let method = 'POST';
    let path = '/';
    let authority: string | undefined;
    let timeout: string | undefined;
    const fields: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const value = raw[i + 1] as string;
      if (name.charCodeAt(0) === 0x3a) {
        if (name === ':method') method = value;
        else if (name === ':path') path = value;
        else if (name === ':authority') authority = value;
        continue;
      }
      if (name === 'grpc-timeout') timeout = value;
      fields.push(name, value);
    }
    if (authority !== undefined) fields.unshift('host', authority);
    this.path = path;
    this.method = method;
    this.timeoutMs = parseGrpcTimeout(timeout);
    const session = stream.session;
    let id = session !== undefined ? connectionIds.get(session) : undefined;
    if (id === undefined) {
      id = ++connections;
      if (session !== undefined) connectionIds.set(session, id);
    }
    const end = path.indexOf('/', 1);
    const prefix = end > 1 ? g.gateway.prefixOf(path.slice(1, end)) : undefined;
    // The chain routes the call at its API's context: /<context>/<version>/package.Service/Method.
    this.req = grpcRequest({
      method,
      url: prefix === undefined ? path : prefix + path,
      headers: fields,
      versionMajor: 2,
      versionMinor: 0,
      remoteAddress: peer.address,
      remotePort: peer.port,
      secure: peer.secure,
      connectionId: id,
      requestNumber: stream.id ?? 0,
      contentLength: -1,
      chunked: false,
      call: undefined,
    });
  }

  start(): void {
    const stream = this.stream;
    stream.on('error', () => undefined);
    // The client cancelled or the connection went: the backend's stream is cancelled too.
    stream.once('close', () => {
      const up = this.upstream;
      if (up !== undefined && !up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
      this.record();
    });
    if (this.timeoutMs !== undefined) {
      this.deadlineAt = this.started + this.timeoutMs;
      this.timer = setTimeout(() => this.deadline(), Math.max(0, this.deadlineAt - Date.now()));
    }
    let d: RouteDecision | Promise<RouteDecision> | undefined;
    try {
      d = this.g.gateway.route(this.req);
    } catch (err) {
      this.g.logger.log('error', 'grpc_chain_failed', { path: this.path, error: String(err) });
      this.refuseFacts(gatewayFacts(fault(GatewayOwnCode.GRPC_BACKEND_RESPONSE, { description: 'the gateway failed to route the call' })));
      return;
    }
    if (d instanceof Promise)
      d.then(
        (x) => this.decided(x),
        (err: unknown) => {
          this.g.logger.log('error', 'grpc_chain_failed', { path: this.path, error: String(err) });
          this.refuseFacts(
            gatewayFacts(fault(GatewayOwnCode.GRPC_BACKEND_RESPONSE, { description: 'the gateway failed to route the call' })),
          );
        },
      );
    else this.decided(d);
  }

  private decided(d: RouteDecision | undefined): void {
    if (this.done || this.stream.destroyed) return;
    if (d === undefined) {
      this.refuseFacts(gatewayFacts(fault(GatewayOwnCode.API_NOT_FOUND)));
      return;
    }
    if (!('target' in d)) {
      this.refuseLocal(d);
      return;
    }
    this.relay(d);
  }

  /** A trailers-only answer, or trailers after a response that has begun. */
  private end(status: GrpcStatusCode, message: string, code: number | undefined, extra: http2.OutgoingHttpHeaders = {}): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.faultCode ??= code;
    this.grpcStatus = status;
    const fields: http2.OutgoingHttpHeaders = {
      'grpc-status': String(status),
      'grpc-message': encodeGrpcMessage(message),
      ...(code !== undefined ? { 'throughway-fault-code': String(code) } : {}),
      ...extra,
    };
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    if (!this.responded) {
      this.responded = true;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...fields }, { endStream: true });
      return;
    }
    // The response has begun: the status goes in its trailers (wantTrailers, relay()).
    this.trailers = fields;
    stream.end();
  }

  private refuseLocal(a: LocalResponse): void {
    const code = a.faultCode;
    const def = code !== undefined ? faultDef(code) : undefined;
    const status = code !== undefined ? grpcStatusOf(code, def?.httpStatus ?? a.status) : grpcStatusOf(0, a.status);
    const retry = retryAfterOf(a);
    this.end(
      a.status < 300 && code === undefined ? GrpcStatus.INTERNAL : status,
      messageOf(a),
      code,
      retry !== undefined ? { 'retry-after': retry } : {},
    );
  }

  private refuseFacts(f: FaultFacts): void {
    this.end(grpcStatusOf(f.code, f.status), f.description !== '' ? `${f.message}: ${f.description}` : f.message, f.code);
  }

  private refuseTransport(t: TransportFault): void {
    this.transportFault = t;
    this.g.gateway.faulted(t, this.req);
    if (this.g.logger.enabled('warn'))
      this.g.logger.log('warn', 'grpc_backend_fault', { path: this.path, code: t.code, base: t.base, state: t.state, cause: t.cause });
    this.end(grpcStatusOf(t.code, t.httpStatus, t.reason), `${t.message}: ${t.description}`, t.code);
  }

  private deadline(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.done) return;
    const up = this.upstream;
    if (up !== undefined && !up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
    this.refuseFacts(gatewayFacts(fault(GatewayOwnCode.GRPC_DEADLINE_EXCEEDED)));
  }

  private relay(d: ForwardDecision): void {
    this.forward = d;
    const target = d.target;
    const out: http2.OutgoingHttpHeaders = {
      ':method': this.method,
      ':scheme': target.tls !== undefined ? 'https' : 'http',
      ':authority': target.hostHeader,
      ':path': d.path ?? this.path,
    };
    const fields = d.headers ?? this.req.headers;
    for (let i = 0; i < fields.length; i += 2) {
      const name = (fields[i] as string).toLowerCase();
      if (NOT_RELAYED.has(name)) continue;
      const value = fields[i + 1] as string;
      const had = out[name];
      if (had === undefined) out[name] = value;
      else out[name] = Array.isArray(had) ? [...had, value] : [String(had), value];
    }
    out.te = 'trailers';
    // The endpoint's timeout bounds the call too; the backend learns the deadline that is left.
    let ms = this.timeoutMs;
    if (d.timeout !== undefined && d.timeout > 0 && (ms === undefined || d.timeout < ms)) {
      ms = d.timeout;
      this.deadlineAt = this.started + ms;
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = setTimeout(() => this.deadline(), Math.max(0, this.deadlineAt - Date.now()));
    }
    if (ms !== undefined) out['grpc-timeout'] = `${Math.max(1, Math.ceil(ms - (Date.now() - this.started)))}m`;
    let up: http2.ClientHttp2Stream;
    try {
      up = this.g.sessions.request(target, out);
    } catch (err) {
      this.refuseTransport(makeFault('connect_failed', ProtocolState.REQUEST_READY, false, connectCause(err) ?? String(err)));
      return;
    }
    this.upstream = up;
    this.upstreamStarted = Date.now();
    const stream = this.stream;
    up.on('error', (err: unknown) => this.upstreamFailed(err));
    up.once('close', () => this.upstreamFailed(undefined));
    // The client's stream stays paused until here (no 'data' listener before): nothing is read before the
    // chain has decided, and every byte read goes to the backend.
    stream.on('data', (c: Buffer) => {
      this.requestBytes += c.length;
    });
    stream.pipe(up);
    up.once('response', (headers: http2.IncomingHttpHeaders, flags: number) => {
      if (this.done || stream.destroyed) return;
      // The backend was told the time left (grpc-timeout, from its own receipt), so its answer to that
      // deadline arrives at or after the gateway's: once the deadline has passed, the call's answer is the
      // gateway's DEADLINE_EXCEEDED (103211) whichever event runs first.
      if (this.deadlineAt !== undefined && Date.now() >= this.deadlineAt) {
        this.deadline();
        return;
      }
      const h: http2.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(headers)) if (!NOT_RELAYED.has(k) && v !== undefined) h[k] = v;
      this.responded = true;
      if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) {
        // Trailers-only (PROTOCOL-HTTP2.md): the backend's status is in these fields.
        this.done = true;
        if (this.timer !== undefined) clearTimeout(this.timer);
        this.grpcStatus = statusField(headers['grpc-status']);
        stream.respond(h, { endStream: true });
        return;
      }
      stream.respond(h, { waitForTrailers: true });
    });
    up.on('data', (c: Buffer) => {
      if (this.done) return;
      this.responseBytes += c.length;
      if (!stream.write(c)) up.pause();
    });
    stream.on('drain', () => up.resume());
    up.once('trailers', (t: http2.IncomingHttpHeaders) => {
      const out2: http2.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(t)) if (!NOT_RELAYED.has(k) && v !== undefined) out2[k] = v;
      this.trailers ??= out2;
    });
    up.once('end', () => {
      if (this.done || !this.responded || stream.destroyed) return;
      this.done = true;
      if (this.timer !== undefined) clearTimeout(this.timer);
      if (this.trailers === undefined) {
        this.faultCode = GatewayOwnCode.GRPC_BACKEND_RESPONSE;
        this.trailers = {
          'grpc-status': String(GrpcStatus.INTERNAL),
          'grpc-message': encodeGrpcMessage('the backend ended the call without a grpc-status'),
          'throughway-fault-code': String(GatewayOwnCode.GRPC_BACKEND_RESPONSE),
        };
      }
      stream.end();
    });
    stream.on('wantTrailers', () => {
      if (stream.destroyed) return;
      try {
        const trailers = this.trailers ?? { 'grpc-status': String(GrpcStatus.INTERNAL) };
        this.grpcStatus = statusField(trailers['grpc-status']);
        stream.sendTrailers(trailers);
      } catch {
        // The client reset the stream meanwhile.
      }
    });
  }

  /** The backend's stream failed or closed: what the client is told, when the call is not decided yet. */
  private upstreamFailed(err: unknown): void {
    if (this.done) return;
    const up = this.upstream as http2.ClientHttp2Stream;
    if (!this.responded) {
      const cause = connectCause(err);
      if (cause !== undefined) {
        this.refuseTransport(makeFault(connectReason(cause), ProtocolState.REQUEST_READY, false, cause));
        return;
      }
      if (err !== undefined || (up.closed && up.rstCode !== NGHTTP2_NO_ERROR)) {
        const rst = up.rstCode ?? 0;
        this.transportFault = makeFault('closed', ProtocolState.REQUEST_BODY, false, `RST_STREAM ${rst}`);
        this.g.gateway.faulted(this.transportFault, this.req);
        this.end(statusOfReset(rst), `the backend reset the call's stream (RST_STREAM ${rst})`, GatewayOwnCode.GRPC_BACKEND_RESPONSE);
        return;
      }
      if (up.closed) this.end(GrpcStatus.INTERNAL, 'the backend closed the call without a response', GatewayOwnCode.GRPC_BACKEND_RESPONSE);
      return;
    }
    if (err !== undefined || (up.closed && up.rstCode !== NGHTTP2_NO_ERROR)) {
      const rst = up.rstCode ?? 0;
      this.end(statusOfReset(rst), `the backend reset the call's stream (RST_STREAM ${rst})`, GatewayOwnCode.GRPC_BACKEND_RESPONSE);
    }
  }

  /** The call's line in the access log, its metrics and analytics event: once, when the client's stream closes. */
  private record(): void {
    if (this.recorded) return;
    this.recorded = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const now = Date.now();
    const r: ExchangeRecord = {
      method: this.method,
      url: this.path,
      httpVersion: '2.0',
      remoteAddress: this.req.remoteAddress,
      connectionId: this.req.connectionId,
      requestNumber: this.req.requestNumber,
      status: this.responded ? 200 : 0,
      requestBytes: this.requestBytes,
      responseBytes: this.responseBytes,
      durationMs: now - this.started,
      upstreamMs: this.upstreamStarted < 0 ? -1 : now - this.upstreamStarted,
      target: this.forward?.target.key,
      fault: this.transportFault,
      faultCode: this.faultCode,
      retries: 0,
      request: this.req,
      grpcStatus: this.grpcStatus,
    };
    this.g.gateway.exchanged(r);
  }
}

/** A grpc-status field's value as a number (0-16 and any other a backend sends); -1 when absent or not a number. */
function statusField(v: unknown): number {
  const n = typeof v === 'string' || typeof v === 'number' ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : -1;
}
