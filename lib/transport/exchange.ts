/**
 * One request and its response on a source connection. The exchange is what the router sees (it
 * implements SourceRequest) and what links the source connection to the target connection serving it.
 */
import type { BlockList, Socket } from 'node:net';
import { clientAddress } from './trusted';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import type { HttpParser } from './parser';
import type { SourceRequest, ForwardDecision, BodyRead, BufferedResponse } from './types';
import type { TransportFault } from './codes';
import type { ProtocolState } from './states';

/**
 * What the owner of an exchange (its source connection, source.ts) uses of the target connection serving
 * it (target.ts). The owner depends on this, not on the target's class.
 */
export interface ExchangeTarget {
  ex: Exchange | null;
  readonly socket: Socket;
  /** Start serving the exchange: write its head. */
  attach(ex: Exchange): void;
  /** Body bytes toward the backend; false when its socket buffer is full. */
  writeBody(buf: Buffer): boolean;
  /** The client's request is complete. */
  endRequest(): void;
  /** The client drained: read the backend again. */
  resumeReading(): void;
  /** Back to its pool unused (the exchange it was produced for ended meanwhile). */
  release(): void;
  destroy(): void;
}

/**
 * How an exchange has progressed: one value in place of the request's and the response's flags. The
 * request side (READY: a target is attached or a local answer chosen, so body bytes may flow; then
 * complete) and the response side (started, then done) advance independently, because a response may
 * start before the request is complete (an early response or a local answer mid-body; states.ts names
 * the same edge of the protocol states). ABORTED absorbs every other value: nothing more happens to the
 * exchange. The values are bit sets so each question is one AND (requestComplete, responseStarted ...),
 * and the four transitions below are one OR: no other value can be reached.
 */
export const Progress = {
  /** Head read; the route, an in-flight slot or a target connection is awaited. */
  WAITING: 0,
  /** A target is attached or a local answer chosen: body bytes flow. */
  READY: 1,
  /** The request's last byte is in; no response byte yet. */
  REQUESTED: 3,
  /** The response started before the request was complete. */
  EARLY: 5,
  /** The request is complete and the response under way. */
  RESPONDING: 7,
  /** The response is done; the rest of the request is still being read (and dropped). */
  ANSWERED: 13,
  /** Request complete and response done. */
  DONE: 15,
  /** Dropped (the client left, the connection was aborted): no callback acts on it any more. */
  ABORTED: 16,
} as const;

export type Progress = (typeof Progress)[keyof typeof Progress];

const READY_BIT = 1;
const REQUEST_BIT = 2;
const STARTED_BIT = 4;
const DONE_BIT = 8;

export function isReady(p: Progress): boolean {
  return (p & READY_BIT) !== 0;
}
export function requestComplete(p: Progress): boolean {
  return (p & REQUEST_BIT) !== 0;
}
export function responseStarted(p: Progress): boolean {
  return (p & STARTED_BIT) !== 0;
}
export function responseDone(p: Progress): boolean {
  return (p & DONE_BIT) !== 0;
}

/** WAITING -> READY; any later value stays. */
export function markReady(ex: Exchange): void {
  if (ex.progress !== Progress.ABORTED) ex.progress = (ex.progress | READY_BIT) as Progress;
}
/** The request's last byte is in: WAITING/READY -> REQUESTED, EARLY -> RESPONDING, ANSWERED -> DONE. */
export function markRequestComplete(ex: Exchange): void {
  if (ex.progress !== Progress.ABORTED) ex.progress = (ex.progress | READY_BIT | REQUEST_BIT) as Progress;
}
/** The response head goes out: -> EARLY, or RESPONDING when the request is complete. */
export function markResponseStarted(ex: Exchange): void {
  if (ex.progress !== Progress.ABORTED) ex.progress = (ex.progress | READY_BIT | STARTED_BIT) as Progress;
}
/** The response's last byte is out: -> ANSWERED, or DONE when the request is complete. */
export function markResponseDone(ex: Exchange): void {
  if (ex.progress !== Progress.ABORTED) ex.progress = (ex.progress | READY_BIT | STARTED_BIT | DONE_BIT) as Progress;
}

/** An exchange's hold on an in-flight slot (core.ts): none yet, queued for one, or holding one. */
export const SlotHold = { NONE: 0, QUEUED: 1, HELD: 2 } as const;
export type SlotHold = (typeof SlotHold)[keyof typeof SlotHold];

/** A request body being gathered for the router (readBody): views of the reads, and who waits. */
export interface BodyCollector {
  readonly limit: number;
  readonly chunks: Buffer[];
  size: number;
  readonly resolve: (r: BodyRead) => void;
}

/**
 * How the current request's body is read and where its bytes go, with the data each way needs. A
 * Content-Length body is counted here (`remaining`), never parsed: execute() would copy every body byte
 * into wasm memory for nothing (measured on a prototype: relaying them directly saved 7 % on 1 MiB
 * uploads). A chunked body is parsed and relayed raw, framing included. Gathered and discarded bodies are
 * framed either way: `remaining` counts a Content-Length one, and is PARSED_BODY (-1) for a chunked one.
 *  - none: no body in progress (bodiless, not started yet, or complete);
 *  - counted: Content-Length bytes relayed to the target;
 *  - parsed: a chunked body relayed to the target;
 *  - gather: the body gathered for the router (SourceRequest.readBody, body.ts);
 *  - discard: read and dropped (a local answer, a router's own body, a gathered body over its limit).
 */
export type BodyMode = NoBody | CountedBody | ParsedBody | GatheredBody | DiscardedBody;
interface NoBody {
  readonly kind: 'none';
  readonly remaining: 0;
}
interface CountedBody {
  readonly kind: 'counted';
  remaining: number;
}
interface ParsedBody {
  readonly kind: 'parsed';
  readonly remaining: typeof PARSED_BODY;
}
interface GatheredBody {
  readonly kind: 'gather';
  readonly collector: BodyCollector;
  remaining: number;
}
interface DiscardedBody {
  readonly kind: 'discard';
  remaining: number;
}
/** The modes whose Content-Length bytes are counted here (`remaining` > 0), not parsed. */
export type CountingBody = CountedBody | GatheredBody | DiscardedBody;

/** BodyMode.remaining of a chunked body: the parser frames it. */
export const PARSED_BODY = -1;
export const NO_BODY: BodyMode = Object.freeze({ kind: 'none', remaining: 0 });
export const PARSED: BodyMode = Object.freeze({ kind: 'parsed', remaining: PARSED_BODY });

/** Bytes of the body are still counted here (Content-Length framing). */
export function counting(b: BodyMode): b is CountingBody {
  return b.remaining > 0;
}

/** A request's body mode as its head says (set with the head, taken up when the exchange is ready). */
export function requestBody(chunked: boolean, contentLength: number): BodyMode {
  return chunked ? PARSED : contentLength > 0 ? { kind: 'counted', remaining: contentLength } : NO_BODY;
}

/** The body's bytes are dropped from here on, framed as they were. */
export function discardBody(ex: Exchange): void {
  const b = ex.body;
  if (b.kind === 'discard' || b.kind === 'none') return;
  ex.body = { kind: 'discard', remaining: b.remaining };
}

/** The body is being gathered for the router from here on, framed as it is. */
export function gatherBody(ex: Exchange, collector: BodyCollector): void {
  ex.body = { kind: 'gather', collector, remaining: ex.body.remaining };
}

/**
 * Port 1, for the in-flight slots (core.ts) and the pools (pool.ts): what they call on an exchange's owner
 * when a slot or a connection frees up or cannot be had.
 */
export interface SlotPort {
  /** The exchange holds an in-flight slot: get it a target connection. */
  startTarget(ex: Exchange): void;
  /** The in-flight queue is full: answer 503 at once. */
  queueFull(ex: Exchange): void;
  /** The pool produced a target for an exchange that was waiting. */
  targetReady(ex: Exchange, t: ExchangeTarget): void;
  /** Waiting for a pooled connection took longer than the connect timeout. */
  poolTimeout(ex: Exchange): void;
}

/**
 * The client side's writes (client-writer.ts ClientWriter): it owns the client socket's writes, direct
 * to its libuv handle where it can (direct-write.ts). The target writes a response through this, never
 * through the source connection.
 */
export interface ClientWrites {
  readonly socket: Socket;
  writeInterim(status: number, text: string, headers: readonly string[]): void;
  writeHead(head: string): void;
  /** The head with the first body bytes in one write; false when the client's socket buffer is full. */
  writeHeadAndBody(head: string, body: Buffer): boolean;
  /** The head with a few body bytes copied after it, in one write (`body` is read before this returns); false as writeHeadAndBody. */
  writeJoined(head: string, body: Uint8Array): boolean;
  /** Response body bytes; false when the client's socket buffer is full. */
  writeBody(buf: Buffer): boolean;
}

/** Port 2, for the target serving the exchange (target.ts): the response's events, answered by the owner. */
export interface ResponsePort {
  /** The current request allows the client connection to stay open. */
  readonly keepAlive: boolean;
  /** Send the same head on a fresh connection. */
  retry(ex: Exchange, why: string): void;
  /** The target failed before or during the response. */
  targetFailed(ex: Exchange, fault: TransportFault): void;
  /** The target's socket drained: read the client again. */
  targetDrained(): void;
  /** The backend accepted a WebSocket handshake (101): hand both sockets to a tunnel (tunnel.ts). */
  targetUpgraded(ex: Exchange, chunk: Buffer, off: number, end: number): void;
  /** The target has a response head for the client. */
  startResponse(ex: Exchange, noBody: boolean): void;
  /** The target finished the response. */
  responseDone(ex: Exchange): void;
  /** A response gathered for ForwardDecision.bufferResponse is complete. */
  gatheredResponse(ex: Exchange, res: BufferedResponse): void;
}

/** Port 3, for a WebSocket tunnel (tunnel.ts): the client connection it takes over. */
export interface TunnelPort {
  readonly id: number;
  readonly writer: ClientWrites;
  /** The client's reads (client-reader.ts), which the tunnel takes over. */
  readonly reader: TunnelReads;
  /** Last activity on the transport clock (the sweep's inactivity checks). */
  lastActive: number;
  /** The target has a response head for the client. */
  startResponse(ex: Exchange, noBody: boolean): void;
  /** Count, report and free what the exchange held. */
  endExchange(ex: Exchange, fault: TransportFault | undefined): void;
  /** After the 101 ended the exchange: stop parsing; returns the client bytes sent after the handshake. */
  leaveForTunnel(): Buffer[];
  close(): void;
}

/** What a tunnel uses of the client's reads (client-reader.ts ClientReader). */
export interface TunnelReads {
  /** Adopted sockets: reads go to the tunnel. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void;
  /** A tunnel write still views the current read buffer. */
  holdReadBuffer(): void;
}

/**
 * Port 4, for the client reader (client-reader.ts): the request's events as the client's bytes are read
 * and parsed, answered by the source connection, which owns the protocol state and the exchange.
 */
export interface RequestPort {
  readonly state: ProtocolState;
  /** The exchange of the request being read, if its head is parsed. */
  readonly ex: Exchange | null;
  /** Last activity on the transport clock (the sweep's inactivity checks). */
  lastActive: number;
  /** A request's first byte is in (REQUEST_READY -> REQUEST_HEAD). */
  beginRequest(): void;
  /** The request head is parsed: the exchange begins and is routed. */
  beginExchange(): void;
  /** The request's last byte is in. */
  requestComplete(ex: Exchange): void;
  /** The parser refused the client's bytes (source-ending.ts). */
  parseError(): void;
  /** A chunked body went past [throughway] max_request_body: true when answered (source-ending.ts). */
  bodyTooLarge(): boolean;
  /** A bug of ours while the bytes were handled (source-ending.ts). */
  internalError(err: unknown): void;
  /** The client ended its side and every byte it sent is parsed (source-ending.ts). */
  inputEnded(): void;
}

/**
 * What an exchange reads of its source connection when it is made (the request head, the peer) and the
 * one call the router makes through it (SourceRequest.readBody). The owner also answers the other ports.
 */
export interface ExchangeOwner extends SlotPort, ResponsePort {
  readonly id: number;
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies. */
  readonly trustedPeer: boolean;
  readonly core: { readonly trusted: BlockList | null };
  readonly remotePort: number;
  readonly secure: boolean;
  /**
   * The version the client spoke when it is not the parsed one: "2.0" for a stream an HTTP/2 session
   * (lib/http2) wrote over an in-process connection; undefined for HTTP/1.x clients.
   */
  readonly clientVersion: string | undefined;
  readonly writer: ClientWrites;
  /** The request parser: an exchange copies its head from it. */
  readonly parser: HttpParser;
  /** Requests started on the connection. */
  requests: number;
  /** SourceRequest.readBody. */
  readBody(ex: Exchange, limit: number): Promise<BodyRead>;
}

const EMPTY: readonly string[] = [];

export class Exchange implements SourceRequest {
  // --- the request head (SourceRequest) ---
  method: string;
  url: string;
  headers: readonly string[];
  versionMajor: number;
  versionMinor: number;
  remoteAddress: string;
  remotePort: number;
  secure: boolean;
  connectionId: number;
  requestNumber: number;
  contentLength: number;
  chunked: boolean;
  upgrade: boolean;
  /** SourceRequest.call: the router's, never read here. */
  call: unknown = undefined;

  // --- progress ---
  target: ExchangeTarget | null = null;
  forward: ForwardDecision | null = null;
  /** The head written to the backend, kept for the one retry on a fresh connection. */
  requestHead = '';
  hasBody: boolean;
  isHead: boolean;
  /** Request and response progress (Progress above). */
  progress: Progress = Progress.WAITING;
  /** How the request body is read and where it goes (BodyMode above; the source sets it with the head, requestBody()). */
  body: BodyMode = NO_BODY;
  /** Its hold on an in-flight slot (core.ts). */
  slot: SlotHold = SlotHold.NONE;
  /** A decision, not progress: close the client connection once the response is done. */
  closeAfter = false;
  /** The one retry of a stale reused backend connection was taken (target.ts fail). */
  retried = false;
  /** Payload bytes received from the client, and raw body bytes handed to the target. */
  bodyBytes = 0;
  bodySent = 0;
  responseBytes = 0;
  status = 0;
  faultCode: number | undefined = undefined;
  /** The transport fault that ended or answered the exchange. */
  fault: TransportFault | undefined = undefined;
  /** Retries taken under the forward's RetryPolicy. */
  retries = 0;
  /** Clock reading when the request was handed to a backend connection (-1 before). */
  forwardedAt = -1;
  /** Endpoint timeout deadline on the transport clock (0: none). */
  deadline = 0;
  /** Global timeout deadline for the response head on the transport clock (0: none). */
  responseDeadline = 0;
  /** The whole body once gathered for the router (readBody; BodyMode gather while it is gathered). */
  collected: Buffer | null = null;
  /** The body sent to the backend instead of relaying the client's (ForwardDecision.body). */
  outBody: Buffer | null = null;
  /** Clock readings: head complete, and when it started waiting for a pool or slot. */
  startedAt: number;
  waitSince = 0;
  responseHeaders: readonly string[] = EMPTY;
  dropResponseHeaders: readonly string[] | undefined = undefined;

  private readonly owner: ExchangeOwner;

  constructor(source: ExchangeOwner, startedAt: number) {
    this.owner = source;
    const p = source.parser;
    this.method = p.method;
    this.url = p.url;
    this.headers = p.headers;
    this.versionMajor = p.versionMajor;
    this.versionMinor = p.versionMinor;
    this.contentLength = p.contentLength;
    this.chunked = p.chunked;
    this.upgrade = p.upgrade;
    // Behind a trusted proxy the client is the right-most untrusted X-Forwarded-For entry (trusted.ts).
    this.remoteAddress = source.trustedPeer ? clientAddress(source.core.trusted, p.headers, source.remoteAddress) : source.remoteAddress;
    this.remotePort = source.remotePort;
    this.secure = source.secure;
    this.connectionId = source.id;
    this.requestNumber = ++source.requests;
    this.hasBody = p.chunked || p.contentLength > 0;
    this.isHead = p.method === 'HEAD';
    this.startedAt = startedAt;
  }

  // The ports are getters over the one owner, not fields, and the body mode is set by the source: with
  // three more fields and the body mode in it, the constructor was no longer inlined at its call site,
  // about 500 more instructions per request under callgrind (docs/performance.md, "Transport reshaping").
  /** The client's protocol version when the parsed one is not it (ExchangeOwner.clientVersion). */
  get clientVersion(): string | undefined {
    return this.owner.clientVersion;
  }
  /** Who answers the exchange's slot events (core.ts, pool.ts): its source connection. */
  get slots(): SlotPort {
    return this.owner;
  }
  /** Who answers its response events (target.ts): its source connection. */
  get toClient(): ResponsePort {
    return this.owner;
  }
  /** The client socket's writes, for the target's response. */
  get writer(): ClientWrites {
    return this.owner.writer;
  }

  /** A target is attached, or a local answer was chosen: the exchange can take body bytes. */
  get ready(): boolean {
    return isReady(this.progress);
  }
  get requestComplete(): boolean {
    return requestComplete(this.progress);
  }
  get responseStarted(): boolean {
    return responseStarted(this.progress);
  }
  get responseDone(): boolean {
    return responseDone(this.progress);
  }
  get aborted(): boolean {
    return this.progress === Progress.ABORTED;
  }

  /** The client certificate of a TLS connection (mutual TLS), read only when asked. */
  peerCertificate(): PeerCertificate | undefined {
    const socket = this.writer.socket as Partial<TLSSocket>;
    if (!this.secure || typeof socket.getPeerCertificate !== 'function') return undefined;
    const cert = socket.getPeerCertificate(true);
    return cert === null || cert === undefined || Object.keys(cert).length === 0 ? undefined : cert;
  }

  /** The whole request body, gathered before the route decision (SourceRequest.readBody). */
  readBody(limit: number): Promise<BodyRead> {
    return this.owner.readBody(this, limit);
  }
}
