/**
 * The transport's public types: what a router sees of a request and what it answers. The transport knows
 * nothing about APIs or tokens; the gateway (lib/gateway) is one router, an embedder's function is another.
 */
import type { PeerCertificate } from 'node:tls';
import type { TransportFault } from './codes';
import type { Outbound, ProxyRoute, TargetTls } from './outbound';
import { checkServerIdentityFor } from './verify';
import { createSecureContext } from 'node:tls';
import { InternalError } from '../errors';

/** A backend address, parsed once (targetFromUrl) and reused for every request routed to it. */
export interface TargetEndpoint {
  readonly host: string;
  readonly port: number;
  /** The Host field sent to the backend: "host" or "host:port" (RFC 9110 §7.2). */
  readonly hostHeader: string;
  /** The pool key: "host:port". */
  readonly key: string;
  /** The path of the endpoint URL without a trailing slash ('' for none); routers prefix it. */
  readonly basePath: string;
  /** `https://` endpoints: outbound TLS (docs/tls.md). Absent for plain HTTP. */
  readonly tls?: TargetTls;
  /** An outbound proxy between throughway and this backend. Absent when connected directly. */
  readonly proxy?: ProxyRoute;
  /** "http://host:port", the prefix of absolute-form request targets sent to an HTTP proxy. */
  readonly origin?: string;
}

/** What a router sees of the parsed request head. Valid until the router's decision is applied. */
export interface SourceRequest {
  readonly method: string;
  /** The request target exactly as sent (origin-form, e.g. "/pets/1?x=y"). */
  readonly url: string;
  /** Flat [name, value, ...] as received (latin1, original case). */
  readonly headers: readonly string[];
  readonly versionMajor: number;
  readonly versionMinor: number;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly secure: boolean;
  /** Per-transport connection number, and the exchange's number on it (1, 2, ...). */
  readonly connectionId: number;
  readonly requestNumber: number;
  /** Content-Length of the request, -1 when absent; chunked bodies say so. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** The request asks to switch protocols (Upgrade with Connection: upgrade, RFC 9110 §7.8). */
  readonly upgrade?: boolean;
  /**
   * The client's TLS certificate on an HTTPS listener (mutual TLS, SSLVerifyClient = "require"), with
   * its issuer chain; undefined on plain connections or when the client sent none.
   */
  peerCertificate?(): PeerCertificate | undefined;
  /**
   * Gathers the whole request body (de-chunked) before the decision, for routers that must see it
   * (mediation). Nothing is relayed meanwhile; the decision then forwards `ForwardDecision.body` (by
   * default the gathered body) with a Content-Length. Bodies above `limit` bytes resolve as too large
   * (the rest is dropped, the connection closes after the answer). Called at most once per request.
   * Optional: requests built by hand (tests, other transports) may not offer it.
   */
  readBody?(limit: number): Promise<BodyRead>;
  /**
   * The router's own value for this request, carried to the exchange's record (ExchangeRecord.request)
   * untouched: the gateway keeps its call here for the access log, tracing and analytics. The transport's
   * requests start it undefined, and the transport never reads it. A request made by hand may leave it out
   * (the gateway then keeps no call for it: only its own transport's requests come back in records); one
   * that has it must leave it writable.
   */
  call?: unknown;
}

/**
 * A WebSocket handshake to tunnel (ForwardDecision.websocket): once the backend answers 101, bytes flow
 * both ways unchanged; frame headers are read only to count frames (docs/websocket.md).
 */
export interface WebSocketHooks {
  /**
   * Called for each frame the client sends, with the tunnel's counts so far (this frame included).
   * Return false to close the tunnel (close code 1008, policy violation): per-frame throttling.
   */
  onClientFrame?(tunnel: TunnelInfo): boolean;
  /** The tunnel closed; final counts. */
  onClose?(tunnel: TunnelInfo): void;
  /**
   * Reads each data message (text or binary) the client sends before it reaches the backend (GraphQL
   * subscriptions, docs/graphql.md): the client's frames are then held until complete (at most
   * `maxClientMessage` bytes, else close 1009), unmasked and passed as text. Answer undefined to forward
   * the frame, `{ reply }` to drop it and send `reply` to the client as a text message, or `{ close,
   * reason }` to close the tunnel with that close code. Refused unread: a fragmented message (close 1003:
   * a message is judged whole), a payload that is not UTF-8 (1007), an RSV bit or a reserved opcode
   * (1002: the phase keeps extensions such as permessage-deflate from being negotiated). Absent: frames
   * are relayed as they arrive, never unmasked.
   */
  onClientMessage?(text: string): ClientMessageVerdict;
  /** Largest client frame held for onClientMessage, header included (default 65,550 bytes). */
  maxClientMessage?: number;
}

/** What onClientMessage decides for one message. */
export type ClientMessageVerdict = undefined | { readonly reply: string } | { readonly close: number; readonly reason: string };

/** What a tunnel exposes: frames and bytes each way, and its state (docs/websocket.md). */
export interface TunnelInfo {
  readonly connectionId: number;
  readonly clientFrames: number;
  readonly backendFrames: number;
  readonly clientBytes: number;
  readonly backendBytes: number;
  /** 'open' while bytes flow, then 'closing' (one side ended), 'closed'. */
  readonly state: 'open' | 'closing' | 'closed';
  /** The transport fault that ended it, if one did. */
  readonly fault: TransportFault | undefined;
}

/** What readBody() gives: the body, or why there is none. */
export type BodyRead =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly reason: 'too_large' | 'aborted' | 'already_read'; readonly size: number };

/** Send the request to a backend. */
export interface ForwardDecision {
  readonly target: TargetEndpoint;
  /** Request target for the backend; default: the client's. */
  readonly path?: string;
  /** Complete replacement of the request fields (a new array; the router never edits req.headers). */
  readonly headers?: readonly string[];
  /** Fields added to the response head (CORS and the like), flat pairs. */
  readonly responseHeaders?: readonly string[];
  /** Lower-case names removed from the response head (spec 001, [apim.transport_headers]). */
  readonly dropResponseHeaders?: readonly string[];
  /**
   * Endpoint timeout (spec 002 part 7 rule 3, endpoint advanced configuration): ms from the moment the
   * request is handed to a backend connection until its response is complete. Exceeded before the
   * response head: fault 101504 + state (504); after it: the client connection is aborted.
   */
  readonly timeout?: number;
  /** Retry on a fresh connection after these faults, when resending is safe (no body byte sent yet). */
  readonly retry?: RetryPolicy;
  /**
   * Forward an Upgrade: websocket handshake with its Upgrade and Connection fields and, when the backend
   * answers 101, tunnel the connection (docs/websocket.md). Absent: Upgrade is dropped (hop-by-hop).
   */
  readonly websocket?: WebSocketHooks;
  /**
   * Send this body instead of relaying the client's: Content-Length is set to its length, the client's
   * Content-Length, Transfer-Encoding and Expect are dropped, and whatever of the client's body is still
   * unread is read and dropped. A body gathered by readBody() is forwarded when this is absent. Kept
   * until the response, so a retry resends it.
   */
  readonly body?: Buffer;
  /**
   * Gather the backend's response (de-chunked, at most `limit` bytes: 101510 + state above) and answer the
   * client with what `handle` makes of it, instead of streaming it through. HEAD requests are streamed.
   */
  readonly bufferResponse?: ResponseHook;
}

/** A whole backend response, for ForwardDecision.bufferResponse. */
export interface BufferedResponse {
  readonly status: number;
  /** Flat [name, value, ...] as received. */
  readonly headers: readonly string[];
  readonly body: Buffer;
}

export interface ResponseHook {
  readonly limit: number;
  /** Gather only responses with one of these statuses; any other streams through as usual. Absent: every one. */
  readonly statuses?: readonly number[];
  /**
   * What the client gets; framing (Content-Length, Connection) is the transport's. Or a Resend: the same
   * request sent again (same target, path and body) with new fields, and this hook called again.
   */
  handle(res: BufferedResponse): LocalResponse | Resend | Promise<LocalResponse | Resend>;
}

/**
 * A response hook's answer "send the request again with these fields" (a backend's authentication
 * challenge answered, docs/apis.md "Backend security"). Only a request whose body can be sent again may be
 * resent: one without a body, or one whose body the router holds (ForwardDecision.body or readBody());
 * a resend of a streamed body is answered 101000-family fault `processing`.
 */
export interface Resend {
  readonly resend: readonly string[];
}

export interface RetryPolicy {
  /** Combined codes (101503) or base codes (matching every state) that allow a retry. */
  readonly codes: readonly number[];
  /** Retries at most (not counting the first attempt). */
  readonly count: number;
}

/** Answer without a backend: faults, CORS preflight, health. */
export interface LocalResponse {
  readonly status: number;
  readonly headers?: readonly string[];
  readonly body?: string | Buffer;
  /** The fault behind it, for logs and metrics: code, and base/state where they apply. */
  readonly faultCode?: number;
}

export type RouteDecision = ForwardDecision | LocalResponse;

/**
 * The router. Return a decision, a promise of one (the request body waits, with backpressure), or
 * undefined for "no route" (fault 103003, 404).
 */
export type RouteFn = (req: SourceRequest) => RouteDecision | Promise<RouteDecision> | undefined;

/** How a transport fault is rendered to the client; the default is the spec's JSON fault body. */
export type FaultRenderer = (fault: TransportFault, req: SourceRequest | undefined) => LocalResponse;

/** One finished exchange, for access logs and metrics (only built when someone listens). */
export interface ExchangeRecord {
  readonly method: string;
  readonly url: string;
  /** "1.1" or "1.0". */
  readonly httpVersion: string;
  readonly remoteAddress: string;
  readonly connectionId: number;
  readonly requestNumber: number;
  /** 0 when the client went away before any status was chosen. */
  readonly status: number;
  readonly requestBytes: number;
  readonly responseBytes: number;
  /** ms from the request head received to the response done (or the exchange aborted). */
  readonly durationMs: number;
  /** ms from the request handed to a backend connection to its response done; -1 when not forwarded. */
  readonly upstreamMs: number;
  readonly target: string | undefined;
  /** The transport fault behind the exchange's end, when there was one (code, base, state, reason). */
  readonly fault: TransportFault | undefined;
  /** The code rendered to the client (a transport fault's, or a router's LocalResponse.faultCode). */
  readonly faultCode: number | undefined;
  /** Attempts beyond the first (stale-connection retry and RetryPolicy). */
  readonly retries: number;
  /** The request as the router saw it (the same object): links the record to what the router knew. */
  readonly request?: SourceRequest;
  /** A gRPC call's grpc-status as the client was sent it (lib/http2/grpc.ts), -1 for none; absent on every other exchange. */
  readonly grpcStatus?: number;
}

export interface TransportEvents {
  /** Every transport fault, once, with its code, base and state (logged by the transport as well). */
  onFault?(fault: TransportFault, req: SourceRequest | undefined): void;
  /** Every completed or aborted exchange. */
  onExchange?(record: ExchangeRecord): void;
}

let defaultTls: { context: ReturnType<typeof createSecureContext> } | undefined;

/**
 * Parses an endpoint URL once. `https://` endpoints get outbound TLS from `outbound.tls` (default: Node's
 * CA list and the DefaultAndLocalhost verifier); `outbound.proxyFor` may put a proxy in between.
 */
export function targetFromUrl(url: string, outbound?: Outbound): TargetEndpoint {
  const u = new URL(url);
  // ws:// and wss:// (RFC 6455 §3) name the same connections as http:// and https://.
  const secure = u.protocol === 'https:' || u.protocol === 'wss:';
  if (!secure && u.protocol !== 'http:' && u.protocol !== 'ws:')
    throw new InternalError(`unsupported endpoint scheme ${u.protocol} in ${url} (http://, https://, ws:// and wss:// are)`);
  const port = u.port === '' ? (secure ? 443 : 80) : Number(u.port);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const basePath = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  const hostHeader = u.port === '' ? u.hostname : `${u.hostname}:${port}`;
  const t: { -readonly [K in keyof TargetEndpoint]: TargetEndpoint[K] } = {
    host,
    port,
    hostHeader,
    key: secure ? `https://${host}:${port}` : `${host}:${port}`,
    basePath,
  };
  if (secure) {
    const o = (u.protocol === 'wss:' ? outbound?.wssTls : undefined) ?? outbound?.tls;
    const context = o?.context ?? (defaultTls ??= { context: createSecureContext({}) }).context;
    // RFC 6066 §3: literal IPv4 and IPv6 addresses are not permitted in SNI.
    const servername = /^[\d.]+$/.test(host) || host.includes(':') ? undefined : host;
    t.tls = Object.freeze({
      context,
      servername,
      checkServerIdentity: o?.checkServerIdentity ?? checkServerIdentityFor('DefaultAndLocalhost'),
    });
  }
  const proxy = outbound?.proxyFor?.(host, secure);
  if (proxy !== undefined) {
    t.proxy = proxy;
    t.origin = `http://${hostHeader}`;
    // Connections through different proxies never share a pool.
    t.key = `${t.key}@${proxy.host}:${proxy.port}`;
  }
  return Object.freeze(t);
}
