/**
 * The source connection: throughway's side of one client socket (the spec's "listener" side), driven by
 * the protocol states of spec 002 part 3: REQUEST_READY between requests, REQUEST_HEAD from a request's
 * first byte, REQUEST_BODY, REQUEST_DONE, RESPONSE_HEAD, RESPONSE_BODY, RESPONSE_DONE, then REQUEST_READY
 * again (keep-alive) or CLOSING/CLOSED. What the protocol state does not say is one value each: what
 * parsing waits for (Wait), where the parser stopped (Stop), and on the exchange its progress and body
 * mode (exchange.ts); docs/architecture.md, "Connection states and ports (transport)", draws them.
 *
 * The one shared wasm parser must never be re-entered, nor its buffer overwritten mid-parse: parser
 * callbacks only record where it stopped (it pauses at the end of a head and of a message), and every
 * decision runs in feed() after execute() returns. A pipelined request waits, unparsed, until the response
 * before it is done, so responses go out in order (RFC 9112 §9.3.2).
 *
 * This file is the state machine; module functions over the connection do the rest (request-checks.ts,
 * forward.ts, body.ts, local.ts, read-buffers.ts, source-timeouts.ts, source-ending.ts, tunnel.ts), and
 * its ClientWriter writes to the client. Pools, slots, targets and tunnels reach it only through the
 * ports of exchange.ts.
 */
import type { Socket } from 'node:net';
import { HttpParser, ExecStatus, PAUSE, HEAD_CONTINUE, type ParserEvents } from './parser';
import { ProtocolState as S, canTransition, Stop, Wait, type ProtocolState } from './states';
import { isTrusted } from './trusted';
import type { TransportFault } from './codes';
import type { RequestTail, RequestTailHolder } from './headers';
import {
  counting,
  Exchange,
  requestBody,
  markRequestComplete,
  markResponseStarted,
  NO_BODY,
  PARSED_BODY,
  SlotHold,
  type ExchangeOwner,
  type ExchangeTarget,
  type TunnelPort,
} from './exchange';
import { readBody, collectBody, finishCollect } from './body';
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
import {
  keptBytes,
  nextSourceBuffer,
  readView,
  redirectSourceReads,
  SHARED_READ_BUFFER,
  type Adoption,
  type ReadHolder,
} from './read-buffers';
import { writesPending } from './direct-write';
import { ClientWriter } from './client-writer';
import { ListenerSet } from './listeners';
import { checkSourceTimeouts } from './source-timeouts';
import type { BodyRead, BufferedResponse } from './types';

export type { Adoption } from './read-buffers';

export class SourceConnection implements ParserEvents, ExchangeOwner, TunnelPort, RequestTailHolder {
  readonly core: TransportCore;
  readonly parser: HttpParser;
  readonly id: number;
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies (decided once per connection). */
  readonly trustedPeer: boolean;
  readonly remotePort: number;
  readonly writer: ClientWriter;
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
  /** What parsing waits for (Wait above). */
  wait: Wait = Wait.NONE;
  /** Unparsed bytes waiting for the current exchange (pipelined requests, or body awaiting a target). */
  private queue: Buffer[] = [];
  private stop: Stop = Stop.NONE;
  /** feed() is on the stack: bytes that arrive meanwhile (a synchronous callback) queue behind it. */
  private feeding = false;
  private readPaused = false;
  private clientEnded = false;
  /** Connection-owned read buffer (adopted sockets only), and whether a view of it is still held. */
  readBuf: Buffer | null = null;
  retainRead = false;
  lastReadFull = false;
  /** The forwarding lines of this connection's last request head (headers.ts, RequestTail). */
  requestTail: RequestTail | null = null;
  /** An adopted socket's read holder (index.ts adopt), which its onread callback reads through; null otherwise. */
  private readonly readHolder: ReadHolder | null;
  /** The HTTP listeners, removed as one set at the WebSocket hand-over ('error' and 'close' stay). */
  private readonly httpListeners: ListenerSet;

  constructor(
    core: TransportCore,
    readonly socket: Socket,
    readonly secure: boolean,
    /** Set for a socket the listener adopted: its reads come to this connection through the holder. */
    adopted?: Adoption,
  ) {
    this.core = core;
    this.id = core.nextConnectionId++;
    this.remoteAddress = adopted !== undefined ? adopted.address : (socket.remoteAddress ?? '');
    this.trustedPeer = isTrusted(core.trusted, this.remoteAddress);
    this.remotePort = adopted !== undefined ? adopted.port : (socket.remotePort ?? 0);
    this.readHolder = adopted?.holder ?? null;
    if (adopted !== undefined) adopted.holder.conn = this;
    this.lastActive = core.now;
    this.headStart = core.now;
    this.writer = new ClientWriter(socket, core.settings.directWrites);
    this.parser = new HttpParser('request', this, core.settings.maxHeaderSize);
    core.sources.add(this);
    core.stats.sourcesAccepted++;
    this.httpListeners = new ListenerSet(socket).on('data', this.onData).on('end', this.onEnd).on('drain', this.onDrain);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
  }

  setState(to: ProtocolState): void {
    if (this.state === to) return;
    if (!canTransition(this.state, to)) this.core.illegalTransition('source', this.state, to);
    this.state = to;
  }

  /** Parsing waits: for a route, a slot, the response or a tunnel (a full target socket only pauses reading), or the connection closes. */
  private get blocked(): boolean {
    const w = this.wait;
    return (w !== Wait.NONE && w !== Wait.TARGET) || this.state >= S.CLOSING;
  }

  /** Parsing or reading waits for the gateway's side (source-timeouts.ts). */
  get waiting(): boolean {
    return this.wait !== Wait.NONE;
  }

  /** A request body is in progress (read-buffers.ts nextSourceBuffer: it reads into a large buffer). */
  get bodyInProgress(): boolean {
    const ex = this.ex;
    return ex !== null && ex.body.kind !== 'none';
  }

  // --- reading ---

  private readonly onData = (chunk: Buffer): void => {
    this.lastActive = this.core.now;
    if (this.state >= S.CLOSING) return;
    const blocked = this.blocked;
    if (blocked || this.feeding || this.queue.length > 0) {
      this.queue.push(keptBytes(chunk, 0, chunk.length));
      this.retainRead = true;
      if (blocked) this.pauseReading();
      return;
    }
    this.beginIfReady(chunk.length);
    this.run(chunk);
    if (!this.blocked && this.queue.length > 0) this.pump();
  };

  /** A new request starts with its first byte (REQUEST_READY -> REQUEST_HEAD). */
  private beginIfReady(bytes: number): void {
    if (this.state === S.REQUEST_READY && bytes > 0) {
      this.setState(S.REQUEST_HEAD);
      this.headStart = this.core.now;
    }
  }

  /** One chunk through feed(); a throw is answered as an internal error. */
  private run(chunk: Buffer): void {
    this.feeding = true;
    try {
      this.feed(chunk);
    } catch (err) {
      internalError(this, err);
    } finally {
      this.feeding = false;
    }
  }

  /** Feed queued bytes while parsing may go on. */
  private pump(): void {
    while (!this.blocked && this.queue.length > 0) {
      const chunk = this.queue.shift() as Buffer;
      this.beginIfReady(chunk.length);
      this.run(chunk);
    }
    if (this.wait === Wait.NONE && this.state < S.CLOSING) this.resumeReading();
    if (this.queue.length === 0 && this.clientEnded) inputEnded(this);
  }

  private feed(chunk: Buffer): void {
    // Between requests there is no exchange (invariants.ts).
    if (this.state === S.REQUEST_READY && this.ex !== null) invariantBroken('source', 'feed', this.state, 'an exchange in REQUEST_READY');
    const end = chunk.length;
    let off = 0;
    for (;;) {
      if (this.state >= S.CLOSING) return;
      let ex = this.ex;
      const body = ex === null ? NO_BODY : ex.body;
      if (counting(body)) {
        // A Content-Length body is counted here, not parsed (exchange.ts BodyMode).
        const n = Math.min(body.remaining, end - off);
        if (n > 0) {
          (ex as Exchange).bodyBytes += n;
          this.relay(chunk, off, off + n);
          off += n;
          body.remaining -= n;
        }
        if (body.remaining > 0) return;
        if (!this.messageComplete(false, false)) {
          if (this.state < S.CLOSING) this.stash(chunk, off);
          return;
        }
        this.beginIfReady(end - off);
        continue;
      }
      const parsing = body.remaining === PARSED_BODY;
      const st = this.parser.execute(chunk, off, end);
      if (st === ExecStatus.OK) {
        if (parsing && off < end) {
          this.relay(chunk, off, end);
          bodyTooLarge(this);
        }
        return;
      }
      if (st === ExecStatus.ERROR) {
        parseError(this);
        return;
      }
      const pos = off + this.parser.consumed;
      if (parsing) {
        if (pos > off) this.relay(chunk, off, pos);
        if (bodyTooLarge(this)) return;
      }
      off = pos;
      const stop = this.stop;
      this.stop = Stop.NONE;
      if (stop === Stop.AT_HEAD) {
        this.beginExchange();
        if (this.state >= S.CLOSING) return;
        ex = this.ex as Exchange;
        if (!ex.ready) {
          this.wait = ex.forward === null ? Wait.ROUTE : Wait.SLOT;
          this.stash(chunk, off);
          return;
        }
        this.startBody(ex);
        continue;
      }
      // AT_COMPLETE, or UPGRADE at the end of a request throughway does not upgrade (the Upgrade field
      // is hop-by-hop and was not forwarded, RFC 9110 §7.8): the next bytes are another request.
      if (!this.messageComplete(st === ExecStatus.UPGRADE, (stop & Stop.HEAD_DONE) !== 0)) {
        if (this.state < S.CLOSING) this.stash(chunk, off);
        return;
      }
      this.beginIfReady(end - off);
    }
  }

  /**
   * The request's last byte is in (`withHead`: a bodiless request, whose exchange begins now). Returns true
   * when parsing may go on at once with the next request (the exchange already ended with a local
   * answer), false when it must wait (or the connection closes).
   */
  private messageComplete(upgrade: boolean, withHead: boolean): boolean {
    if (withHead) {
      // A bodiless head waits for completion only while no exchange is open (invariants.ts).
      if (this.ex !== null) invariantBroken('source', 'complete', this.state, 'a pending head while an exchange is open');
      this.beginExchange();
      if (this.state >= S.CLOSING) return false;
    }
    const ex = this.ex as Exchange;
    // An Upgrade request is not upgraded (Upgrade is hop-by-hop and not forwarded, RFC 9110 §7.8): onComplete
    // pauses before llhttp's upgrade step and reset() clears it, so the connection goes on as HTTP/1.1.
    // Should llhttp report UPGRADE anyway it parses nothing further: answer, then close.
    if (upgrade) ex.closeAfter = true;
    this.requestComplete(ex);
    if (this.blocked) return false;
    this.parser.reset();
    return true;
  }

  /** The exchange can take its body: a counted one is relayed from here, a chunked one needs the parser. */
  private startBody(ex: Exchange): void {
    // A counted body leaves the parser paused after the head; reset() starts it over for the next request.
    if (!counting(ex.body)) this.parser.resume();
  }

  private stash(chunk: Buffer, off: number): void {
    if (off < chunk.length) {
      this.queue.unshift(keptBytes(chunk, off, chunk.length));
      this.retainRead = true;
    }
  }

  /**
   * Reads into a connection-owned buffer (sockets adopted by the transport's own listener, see
   * index.ts): fewer, larger reads than Node's 64 KiB. The buffer is reused only when nothing kept a
   * view of it: no queued bytes, no write to the target still holding its bytes.
   */
  onRead(buf: Buffer, nread: number): void {
    this.lastReadFull = nread === buf.length;
    // A read into the shared buffer is parsed where it lies; what is kept of it is copied (keptBytes).
    this.onData(readView(buf, nread));
  }

  /** The buffer for the next read (read-buffers.ts). */
  nextReadBuffer(): Buffer {
    return nextSourceBuffer(this);
  }

  private pauseReading(): void {
    if (!this.readPaused) {
      this.readPaused = true;
      this.socket.pause();
    }
  }

  private resumeReading(): void {
    if (this.readPaused) {
      this.readPaused = false;
      this.socket.resume();
    }
  }

  // --- parser events: record only; feed() acts ---

  onHead(): number {
    const p = this.parser;
    if (p.chunked || p.contentLength > 0) {
      this.stop = Stop.AT_HEAD;
      return PAUSE;
    }
    // No body (RFC 9112 §6.3 rule 7). Pausing here would strand the message: after resume, llhttp
    // needs another input byte before it reports completion. The head is handled at completion instead.
    this.stop = Stop.HEAD_DONE;
    return HEAD_CONTINUE;
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    const ex = this.ex;
    if (ex === null) return;
    ex.bodyBytes += end - start;
    // A chunked body being gathered keeps its payload (the raw framing relay() sees is not the body).
    const b = ex.body;
    if (b.kind === 'gather') collectBody(this, ex, b.collector, chunk, start, end);
  }

  onComplete(): number {
    this.stop = this.stop === Stop.HEAD_DONE ? Stop.BODILESS_COMPLETE : Stop.AT_COMPLETE;
    return PAUSE;
  }

  // --- the exchange ---

  private beginExchange(): void {
    const core = this.core;
    const ex = new Exchange(this, core.stamp());
    if (ex.hasBody) ex.body = requestBody(ex.chunked, ex.contentLength);
    this.ex = ex;
    this.keepAlive = this.parser.keepAlive && !core.closing;
    core.stats.requests++;
    this.setState(ex.hasBody ? S.REQUEST_BODY : S.REQUEST_HEAD);
    if (!refuseRequest(this, ex, core.settings.maxRequestBody)) route(this, ex);
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

  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void {
    const w = this.wait;
    if (this.ex !== ex || (w !== Wait.ROUTE && w !== Wait.SLOT) || this.feeding || this.state >= S.CLOSING) return;
    if (!ex.ready) {
      if (ex.forward !== null) this.wait = Wait.SLOT;
      return;
    }
    this.wait = Wait.NONE;
    this.startBody(ex);
    this.pump();
  }

  /** SourceRequest.readBody (body.ts). */
  readBody(ex: Exchange, limit: number): Promise<BodyRead> {
    return readBody(this, ex, limit);
  }

  /** Body bytes (raw, framing included: chunked bodies are relayed verbatim) toward the target. */
  private relay(chunk: Buffer, start: number, end: number): void {
    const ex = this.ex as Exchange;
    const b = ex.body;
    if (b.kind === 'discard') return;
    if (b.kind === 'gather') {
      // Content-Length bytes are the payload; chunked ones are gathered de-framed in onBody.
      if (!ex.chunked) collectBody(this, ex, b.collector, chunk, start, end);
      return;
    }
    const t = ex.target;
    if (t === null) return; // the target failed and the fault was answered; the rest is dropped
    ex.bodySent += end - start;
    const ok = t.writeBody(keptBytes(chunk, start, end));
    // A write that did not complete at once still holds a view of this read's bytes.
    if (writesPending(t.socket)) this.retainRead = true;
    if (!ok) {
      this.wait = Wait.TARGET;
      this.pauseReading();
    }
  }

  /** The target's socket drained: read the client again. */
  targetDrained(): void {
    if (this.wait !== Wait.TARGET) return;
    this.wait = Wait.NONE;
    this.resumeReading();
  }

  private requestComplete(ex: Exchange): void {
    const b = ex.body;
    if (b.kind === 'gather') finishCollect(ex, b.collector);
    ex.body = NO_BODY;
    markRequestComplete(ex);
    if (this.state < S.REQUEST_DONE) this.setState(S.REQUEST_DONE);
    if (ex.target !== null) ex.target.endRequest();
    if (ex.responseDone) this.finishExchange(ex);
    else this.wait = Wait.RESPONSE;
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
    this.wait = Wait.NONE;
    if (!this.feeding) {
      // Asynchronous completion (the usual case): parse the next queued request, if any.
      this.parser.reset();
      this.pump();
    }
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

  private readonly onEnd = (): void => {
    this.clientEnded = true;
    // Bytes still queued are parsed first; pump() calls inputEnded() once they are.
    if (this.queue.length === 0) inputEnded(this);
  };

  private lastErrorCode: string | undefined;
  private readonly onError = (err: NodeJS.ErrnoException): void => {
    this.lastErrorCode = err.code ?? err.message;
  };

  private readonly onClose = (): void => {
    if (this.state === S.CLOSED) return;
    clientClosed(this, this.lastErrorCode);
    if (this.state !== S.CLOSING) this.setState(S.CLOSING);
    this.setState(S.CLOSED);
    this.parser.destroy();
    this.queue.length = 0;
    // A closed handle reads no more: a large read buffer nobody views goes back to the spare list.
    const buf = this.readBuf;
    if (buf !== null && buf !== SHARED_READ_BUFFER && !this.retainRead) this.core.giveReadBuffer(buf);
    this.readBuf = null;
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
    this.wait = Wait.TUNNEL;
    this.setState(S.RESPONSE_BODY);
    this.lastActive = this.core.now;
    this.httpListeners.removeAll();
    this.readPaused = false;
    this.socket.resume();
    return this.queue.splice(0);
  }

  /** The target read a 101 to a WebSocket handshake: tunnel.ts takes both sockets over (its target is target.ts's). */
  targetUpgraded(ex: Exchange, chunk: Buffer, off: number, end: number): void {
    switchProtocols(this, ex.target as TargetConnection, chunk, off, end);
  }

  /** Adopted sockets (onread): reads go to the tunnel, still into this connection's buffers. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void {
    if (this.readHolder !== null) redirectSourceReads(this, this.readHolder, onRead);
  }

  /** A tunnel write still views the current read buffer: the next read takes another. */
  holdReadBuffer(): void {
    this.retainRead = true;
  }

  /** Graceful shutdown: idle connections close now, busy ones after their response. */
  shutdown(): void {
    // A tunnel has no request boundary to wait for: its client gets the end now.
    if (this.wait === Wait.TUNNEL || (this.ex === null && this.queue.length === 0)) this.close();
    else if (this.ex !== null) this.ex.closeAfter = true;
  }
}
