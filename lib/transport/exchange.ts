/**
 * One request and its response on a source connection. The exchange is what the router sees (it
 * implements SourceRequest) and what links the source connection to the target connection serving it.
 */
import type { PeerCertificate, TLSSocket } from 'node:tls';
import type { SourceConnection } from './source';
import type { TargetConnection } from './target';
import type { SourceRequest, ForwardDecision, BodyRead } from './types';
import type { TransportFault } from './codes';

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

  // --- progress ---
  readonly source: SourceConnection;
  target: TargetConnection | null = null;
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

  constructor(source: SourceConnection, startedAt: number) {
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
    this.remoteAddress = source.remoteAddress;
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
