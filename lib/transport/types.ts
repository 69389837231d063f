/**
 * The transport's public types: what a router sees of a request and what it answers. The transport knows
 * nothing about APIs or tokens; the gateway (lib/gateway) is one router, an embedder's function is another.
 */
import type { TransportFault } from './codes';

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
  /**
   * Gathers the whole request body (de-chunked) before the decision, for routers that must see it
   * (mediation). Nothing is relayed meanwhile; the decision then forwards `ForwardDecision.body` (by
   * default the gathered body) with a Content-Length. Bodies above `limit` bytes resolve as too large
   * (the rest is dropped, the connection closes after the answer). Called at most once per request.
   * Optional: requests built by hand (tests, other transports) may not offer it.
   */
  readBody?(limit: number): Promise<BodyRead>;
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
  /** What the client gets; framing (Content-Length, Connection) is the transport's. */
  handle(res: BufferedResponse): LocalResponse | Promise<LocalResponse>;
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
}

export interface TransportEvents {
  /** Every transport fault, once, with its code, base and state (logged by the transport as well). */
  onFault?(fault: TransportFault, req: SourceRequest | undefined): void;
  /** Every completed or aborted exchange. */
  onExchange?(record: ExchangeRecord): void;
}

export function targetFromUrl(url: string): TargetEndpoint {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new Error(`unsupported endpoint scheme ${u.protocol} in ${url} (https:// endpoints arrive with outbound TLS)`);
  const port = u.port === '' ? 80 : Number(u.port);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const basePath = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  return Object.freeze({ host, port, hostHeader: u.port === '' ? u.hostname : `${u.hostname}:${port}`, key: `${host}:${port}`, basePath });
}
