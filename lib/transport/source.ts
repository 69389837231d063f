/**
 * The source connection: throughway's side of one client socket (the spec's "listener" side), driven by
 * the protocol states of spec 002 part 3: REQUEST_READY between requests, REQUEST_HEAD from a request's
 * first byte, REQUEST_BODY, REQUEST_DONE, RESPONSE_HEAD, RESPONSE_BODY, RESPONSE_DONE, then REQUEST_READY
 * again (keep-alive) or CLOSING/CLOSED. What the protocol state does not say is one value each: on its
 * ClientReader what parsing waits for (Wait), where the parser stopped (Stop) and the socket's reading
 * (Intake), and on the exchange its progress and body mode (exchange.ts); docs/architecture.md,
 * "Connection states and ports (transport)", draws them.
 *
 * This file is the state machine and the exchange's life; its ClientReader (client-reader.ts) reads and
 * parses the client's bytes and reports each head, body and message end through the request port, and its
 * ClientWriter writes to the client. Module functions over the connection do the rest (request-checks.ts,
 * forward.ts, body.ts, local.ts, source-timeouts.ts, source-ending.ts, tunnel.ts). Pools, slots, targets
 * and tunnels reach it only through the ports of exchange.ts.
 */
import type { Socket } from 'node:net';
import type { HttpParser } from './parser';
import { ProtocolState as S, canTransition, Wait, type ProtocolState } from './states';
import { isTrusted } from './trusted';
import type { TransportFault } from './codes';
import type { RequestTail, RequestTailHolder } from './headers';
import {
  Exchange,
  requestBody,
  markRequestComplete,
  markResponseStarted,
  NO_BODY,
  SlotHold,
  type ExchangeOwner,
  type ExchangeTarget,
  type RequestPort,
  type TunnelPort,
} from './exchange';
import { readBody, finishCollect } from './body';
import type { TransportCore } from './core';
import type { TargetConnection } from './target';
import { switchProtocols } from './tunnel';
import { refuseRequest } from './request-checks';
import { resend, retry, route, startTarget, targetReady } from './forward';
import { answerFault, gatheredResponse, responseFinished } from './local';
import { invariantBroken } from './invariants';
import {
  bodyTooLarge,
  clientClosed,
  dropExchange,
  inputEnded,
  internalError,
  parseError,
  poolTimeout,
  queueFull,
  targetFailed,
} from './source-ending';
import type { Adoption } from './read-buffers';
import { ClientReader } from './client-reader';
import { ClientWriter } from './client-writer';
import { ListenerSet } from './listeners';
import { checkSourceTimeouts } from './source-timeouts';
import type { BodyRead, BufferedResponse } from './types';

export type { Adoption } from './read-buffers';

export class SourceConnection implements ExchangeOwner, TunnelPort, RequestPort, RequestTailHolder {
  readonly core: TransportCore;
  /** The request parser, its reader's: an exchange copies its head from it. */
  readonly parser: HttpParser;
  readonly id: number;
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies (decided once per connection). */
  readonly trustedPeer: boolean;
  readonly remotePort: number;
  readonly writer: ClientWriter;
  /** The client's bytes: reads, parsing and what parsing waits for (client-reader.ts). */
  readonly reader: ClientReader;
  state: ProtocolState = S.REQUEST_READY;
  ex: Exchange | null = null;
  /** Requests started on this connection. */
  requests = 0;
  /** ExchangeOwner.clientVersion: set once, right after construction, by handleConnection's caller. */
  clientVersion: string | undefined = undefined;
  /** The current request allows the connection to stay open (llhttp's should_keep_alive). */
  keepAlive = true;
  lastActive: number;
  headStart: number;
  /** The forwarding lines of this connection's last request head (headers.ts, RequestTail). */
  requestTail: RequestTail | null = null;
  /** The HTTP listeners, removed as one set at the WebSocket hand-over ('error' and 'close' stay). */
  private readonly httpListeners: ListenerSet;

  constructor(
    core: TransportCore,
    readonly socket: Socket,
    readonly secure: boolean,
    /** Set for a socket the listener adopted: its reads come to this connection's reader through the holder. */
    adopted?: Adoption,
  ) {
    this.core = core;
    this.id = core.nextConnectionId++;
    this.remoteAddress = adopted !== undefined ? adopted.address : (socket.remoteAddress ?? '');
    this.trustedPeer = isTrusted(core.trusted, this.remoteAddress);
    this.remotePort = adopted !== undefined ? adopted.port : (socket.remotePort ?? 0);
    this.lastActive = core.now;
    this.headStart = core.now;
    this.writer = new ClientWriter(socket, core.settings.directWrites);
    const reader = new ClientReader(core, this, socket, adopted?.holder ?? null);
    this.reader = reader;
    this.parser = reader.parser;
    core.sources.add(this);
    core.stats.sourcesAccepted++;
    this.httpListeners = new ListenerSet(socket).on('data', reader.onData).on('end', reader.onEnd).on('drain', this.onDrain);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
  }

  setState(to: ProtocolState): void {
    if (this.state === to) return;
    if (!canTransition(this.state, to)) this.core.illegalTransition('source', this.state, to);
    this.state = to;
  }

  /** Parsing or reading waits for the gateway's side (source-timeouts.ts). */
  get waiting(): boolean {
    return this.reader.wait !== Wait.NONE;
  }

  // --- the exchange ---

  /** A request's first byte is in (client-reader.ts). */
  beginRequest(): void {
    this.setState(S.REQUEST_HEAD);
    this.headStart = this.core.now;
  }

  /** The request head is parsed (client-reader.ts): the exchange begins and is routed. */
  beginExchange(): void {
    const ex = this.openExchange();
    if (!refuseRequest(this, ex, this.core.settings.maxRequestBody)) route(this, ex);
  }

  /**
   * The exchange of the parsed head. Apart from beginExchange so that beginExchange is small enough for V8
   * to optimize early, on its own and with the Exchange constructor inlined, before the reader's feed: a
   * feed compiled first inlined beginExchange and left the constructor out of line (+0.4k to +0.6k
   * instructions per request under callgrind; docs/performance.md, "The client reader").
   */
  private openExchange(): Exchange {
    const core = this.core;
    const ex = new Exchange(this, core.stamp());
    if (ex.hasBody) ex.body = requestBody(ex.chunked, ex.contentLength);
    this.ex = ex;
    this.keepAlive = this.parser.keepAlive && !core.closing;
    core.stats.requests++;
    this.setState(ex.hasBody ? S.REQUEST_BODY : S.REQUEST_HEAD);
    return ex;
  }

  /** A response hook asked for the request again with new fields (forward.ts resend). */
  resend(ex: Exchange, headers: readonly string[]): void {
    resend(this, ex, headers);
  }

  // --- the slot port (core.ts, pool.ts; forward.ts does the work) ---

  startTarget(ex: Exchange): void {
    startTarget(this, ex);
  }

  targetReady(ex: Exchange, t: ExchangeTarget): void {
    targetReady(this, ex, t);
  }

  retry(ex: Exchange, why: string): void {
    retry(this, ex, why);
  }

  poolTimeout(ex: Exchange): void {
    poolTimeout(this, ex);
  }

  queueFull(ex: Exchange): void {
    queueFull(this, ex);
  }

  /** After an asynchronous step made the exchange ready: continue parsing its body (client-reader.ts). */
  unblockIfReady(ex: Exchange): void {
    this.reader.unblockIfReady(ex);
  }

  /** SourceRequest.readBody (body.ts). */
  readBody(ex: Exchange, limit: number): Promise<BodyRead> {
    return readBody(this, ex, limit);
  }

  /** The target's socket drained: read the client again. */
  targetDrained(): void {
    this.reader.targetDrained();
  }

  /** The request's last byte is in (client-reader.ts). */
  requestComplete(ex: Exchange): void {
    const b = ex.body;
    if (b.kind === 'gather') finishCollect(ex, b.collector);
    ex.body = NO_BODY;
    markRequestComplete(ex);
    if (this.state < S.REQUEST_DONE) this.setState(S.REQUEST_DONE);
    if (ex.target !== null) ex.target.endRequest();
    if (ex.responseDone) this.finishExchange(ex);
    else this.reader.wait = Wait.RESPONSE;
  }

  // --- the response ---

  /** The target has a response head for the client (written by the writer, or with the first body bytes). */
  startResponse(ex: Exchange, noBody: boolean): void {
    markResponseStarted(ex);
    this.setState(S.RESPONSE_HEAD);
    if (!noBody) this.setState(S.RESPONSE_BODY);
  }

  private readonly onDrain = (): void => {
    this.lastActive = this.core.now;
    const t = this.ex?.target;
    if (t != null) t.resumeReading();
  };

  /** The target finished the response. */
  responseDone(ex: Exchange): void {
    if (this.ex !== ex) return;
    responseFinished(this, ex);
  }

  answerFault(ex: Exchange, fault: TransportFault, mustClose: boolean): void {
    answerFault(this, ex, fault, mustClose);
  }

  /** A response gathered for ForwardDecision.bufferResponse is complete (local.ts). */
  gatheredResponse(ex: Exchange, res: BufferedResponse): void {
    gatheredResponse(this, ex, res);
  }

  /** Request complete and response done: the connection goes on or closes. */
  finishExchange(ex: Exchange): void {
    // A done response is in RESPONSE_DONE (invariants.ts).
    if (this.state < S.RESPONSE_DONE) invariantBroken('source', 'finish', this.state, 'a done response before RESPONSE_DONE');
    this.endExchange(ex, undefined);
    if (ex.closeAfter || !this.keepAlive || this.core.closing) {
      this.close();
      return;
    }
    this.setState(S.REQUEST_READY);
    this.ex = null;
    this.reader.nextRequest();
  }

  /** Count, report and free what the exchange held. */
  endExchange(ex: Exchange, fault: TransportFault | undefined): void {
    if (ex.slot === SlotHold.HELD) this.core.releaseSlot(ex);
    this.core.reportExchange(ex, fault);
  }

  /** The target failed before or during the response (source-ending.ts). */
  targetFailed(ex: Exchange, fault: TransportFault): void {
    targetFailed(this, ex, fault);
  }

  /** An exchange to answer a request whose head never parsed. */
  newErrorExchange(): Exchange {
    const ex = new Exchange(this, this.core.stamp());
    ex.method = ex.method || 'GET';
    this.ex = ex;
    this.keepAlive = false;
    return ex;
  }

  /** The sweep's timeouts (source-timeouts.ts). */
  checkTimeouts(now: number): void {
    checkSourceTimeouts(this, now);
  }

  // --- ending ---

  /** The parser refused the client's bytes (client-reader.ts). */
  parseError(): void {
    parseError(this);
  }

  /** A chunked body past max_request_body is answered 413 (client-reader.ts). */
  bodyTooLarge(): boolean {
    return bodyTooLarge(this);
  }

  /** A throw while the client's bytes were handled (client-reader.ts). */
  internalError(err: unknown): void {
    internalError(this, err);
  }

  /** The client ended its side and every byte it sent is parsed (client-reader.ts). */
  inputEnded(): void {
    inputEnded(this);
  }

  private lastErrorCode: string | undefined;
  private readonly onError = (err: NodeJS.ErrnoException): void => {
    this.lastErrorCode = err.code ?? err.message;
  };

  private readonly onClose = (): void => {
    if (this.state === S.CLOSED) return;
    clientClosed(this, this.lastErrorCode);
    if (this.state !== S.CLOSING) this.setState(S.CLOSING);
    this.setState(S.CLOSED);
    this.reader.closed();
    this.core.sources.delete(this);
    this.core.sourceClosed();
  };

  /** Graceful close: flush what was written, then FIN. */
  close(): void {
    if (this.state >= S.CLOSING) return;
    this.lastActive = this.core.now;
    this.setState(S.CLOSING);
    this.socket.end();
  }

  /** Abrupt close: a response that cannot be completed must not look complete. */
  abort(): void {
    const ex = this.ex;
    if (ex !== null) dropExchange(this, ex);
    if (this.state !== S.CLOSED) this.setState(S.CLOSING);
    this.socket.destroy();
  }

  // --- WebSocket tunnel (tunnel.ts, through TunnelPort) ---

  /**
   * The WebSocket hand-over (tunnel.ts): after the 101 ended the exchange, parsing stops and the bytes the
   * client sent after its handshake go to the tunnel. The socket's 'error' and 'close' listeners stay:
   * onClose still frees what this connection holds.
   */
  leaveForTunnel(): Buffer[] {
    this.ex = null;
    this.setState(S.RESPONSE_BODY);
    this.lastActive = this.core.now;
    this.httpListeners.removeAll();
    return this.reader.stopForTunnel();
  }

  /** The target read a 101 to a WebSocket handshake: tunnel.ts takes both sockets over (its target is target.ts's). */
  targetUpgraded(ex: Exchange, chunk: Buffer, off: number, end: number): void {
    switchProtocols(this, ex.target as TargetConnection, chunk, off, end);
  }

  /** Graceful shutdown: idle connections close now, busy ones after their response. */
  shutdown(): void {
    // A tunnel has no request boundary to wait for: its client gets the end now.
    if (this.reader.wait === Wait.TUNNEL || (this.ex === null && !this.reader.queued)) this.close();
    else if (this.ex !== null) this.ex.closeAfter = true;
  }
}
