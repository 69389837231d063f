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
 * The callbacks an exchange's owner answers: the pool, the in-flight slots (core.ts), the target serving
 * the exchange (target.ts) and a WebSocket tunnel (tunnel.ts) call these, never the source connection's
 * class. Implemented by SourceConnection (source.ts).
 */
export interface ExchangeOwner {
  readonly id: number;
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies. */
  readonly trustedPeer: boolean;
  readonly core: { readonly trusted: BlockList | null };
  readonly remotePort: number;
  readonly secure: boolean;
  readonly socket: Socket;
  /** The request parser: an exchange copies its head from it. */
  readonly parser: HttpParser;
  /** Requests started on the connection. */
  requests: number;
  /** The current request allows the connection to stay open. */
  readonly keepAlive: boolean;
  /** Last activity on the transport clock (the sweep's inactivity checks). */
  lastActive: number;

  // --- in-flight slots (core.ts) and pools (pool.ts) ---
  /** The exchange holds an in-flight slot: get it a target connection. */
  startTarget(ex: Exchange): void;
  /** The in-flight queue is full: answer 503 at once. */
  queueFull(ex: Exchange): void;
  /** The pool produced a target for an exchange that was waiting. */
  targetReady(ex: Exchange, t: ExchangeTarget): void;
  /** Waiting for a pooled connection took longer than the connect timeout. */
  poolTimeout(ex: Exchange): void;

  // --- the target serving the exchange (target.ts) ---
  /** Send the same head on a fresh connection. */
  retry(ex: Exchange, why: string): void;
  /** The target failed before or during the response. */
  targetFailed(ex: Exchange, fault: TransportFault): void;
  /** The target's socket drained: read the client again. */
  targetDrained(): void;
  /** The backend accepted a WebSocket handshake (101): hand both sockets to a tunnel (tunnel.ts). */
  targetUpgraded(ex: Exchange, chunk: Buffer, off: number, end: number): void;
  writeInterim(status: number, text: string, headers: readonly string[]): void;
  /** The target has a response head for the client. */
  startResponse(ex: Exchange, noBody: boolean): void;
  writeHead(head: string): void;
  /** The head with the first body bytes in one write; false when the client's socket buffer is full. */
  writeHeadAndBody(head: string, body: Buffer): boolean;
  /** The head with a few body bytes copied after it, in one write (`body` is read before this returns); false as writeHeadAndBody. */
  writeJoined(head: string, body: Uint8Array): boolean;
  /** Response body bytes; false when the client's socket buffer is full. */
  writeBody(buf: Buffer): boolean;
  /** The target finished the response. */
  responseDone(ex: Exchange): void;
  /** A response gathered for ForwardDecision.bufferResponse is complete. */
  gatheredResponse(ex: Exchange, res: BufferedResponse): void;

  // --- a WebSocket tunnel (tunnel.ts) ---
  /** Count, report and free what the exchange held. */
  endExchange(ex: Exchange, fault: TransportFault | undefined): void;
  /** After the 101 ended the exchange: stop parsing; returns the client bytes sent after the handshake. */
  leaveForTunnel(): Buffer[];
  /** Adopted sockets: reads go to the tunnel. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void;
  /** A tunnel write still views the current read buffer. */
  holdReadBuffer(): void;
  close(): void;

  /** SourceRequest.readBody. */
  readBody(ex: Exchange, limit: number): Promise<BodyRead>;
}

const EMPTY: readonly string[] = [];

/** A request body being gathered for the router (readBody): views of the reads, and who waits. */
export interface BodyCollector {
  readonly limit: number;
  readonly chunks: Buffer[];
  size: number;
  readonly resolve: (r: BodyRead) => void;
}

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
  readonly source: ExchangeOwner;
  target: ExchangeTarget | null = null;
  forward: ForwardDecision | null = null;
  /** The head written to the backend, kept for the one retry on a fresh connection. */
  requestHead = '';
  hasBody: boolean;
  isHead: boolean;
  /** The exchange can take body bytes: a target is attached, or a local answer was chosen. */
  ready = false;
  /** Body bytes are read and dropped (a local answer was given while the request still had a body). */
  discard = false;
  requestComplete = false;
  responseStarted = false;
  responseDone = false;
  /** Close the client connection once the response is done. */
  closeAfter = false;
  aborted = false;
  retried = false;
  hasSlot = false;
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
  /** The body being gathered for the router (readBody), and the whole body once gathered. */
  collect: BodyCollector | null = null;
  collected: Buffer | null = null;
  /** The body sent to the backend instead of relaying the client's (ForwardDecision.body). */
  outBody: Buffer | null = null;
  /** Clock readings: head complete, and when it started waiting for a pool or slot. */
  startedAt: number;
  waitSince = 0;
  responseHeaders: readonly string[] = EMPTY;
  dropResponseHeaders: readonly string[] | undefined = undefined;

  constructor(source: ExchangeOwner, startedAt: number) {
    this.source = source;
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

  /** The client certificate of a TLS connection (mutual TLS), read only when asked. */
  peerCertificate(): PeerCertificate | undefined {
    const socket = this.source.socket as Partial<TLSSocket>;
    if (!this.secure || typeof socket.getPeerCertificate !== 'function') return undefined;
    const cert = socket.getPeerCertificate(true);
    return cert === null || cert === undefined || Object.keys(cert).length === 0 ? undefined : cert;
  }

  /** The whole request body, gathered before the route decision (SourceRequest.readBody). */
  readBody(limit: number): Promise<BodyRead> {
    return this.source.readBody(this, limit);
  }
}
