/**
 * The source connection: throughway's side of one client socket (the spec's "listener" side), driven by
 * the protocol states of spec 002 part 3.
 *
 * States: REQUEST_READY between requests; REQUEST_HEAD from the first byte of a request; REQUEST_BODY while
 * its body arrives; REQUEST_DONE once the request is complete; RESPONSE_HEAD / RESPONSE_BODY while the
 * response is written; RESPONSE_DONE; back to REQUEST_READY (keep-alive), or CLOSING/CLOSED.
 *
 * Parsing rules that keep the one shared wasm parser safe (the shared wasm instance must never be re-entered, nor its buffer overwritten mid-parse): parser
 * callbacks only record where the parser stopped (it always pauses at the end of a head and at the end of
 * a message); every decision runs in feed() after execute() returns. A pipelined request waits, unparsed,
 * until the response before it is done, so responses go out in order (RFC 9112 §9.3.2).
 *
 * This file is the state machine. Module functions taking the connection do the rest: request checks
 * (request-checks.ts), gathering a body for the router (body.ts), local answers (local.ts), read buffers
 * (read-buffers.ts), the WebSocket hand-over (tunnel.ts). Pools, slots and targets reach the connection
 * only through ExchangeOwner (exchange.ts); the flag invariants are in invariants.ts.
 */
import type { Socket } from 'node:net';
import { HttpParser, ExecStatus, PAUSE, HEAD_CONTINUE, type ParserEvents } from './parser';
import { ProtocolState as S, canTransition, type ProtocolState } from './states';
import { isTrusted } from './trusted';
import { makeFault, type TransportFault, type FaultReason } from './codes';
import { breaksLine, breaksLines, buildRequestHead, sameFraming, withBodyLength, withFramingOf, type RequestTail, type RequestTailHolder } from './headers';
import { Exchange, type ExchangeOwner, type ExchangeTarget } from './exchange';
import { readBody, collectBody, endCollect, finishCollect } from './body';
import type { TransportCore } from './core';
import type { TargetConnection } from './target';
import { switchProtocols } from './tunnel';
import { poolFor } from './pool';
import { refuseRequest, originForm } from './request-checks';
import { answer, answerFault, gatheredResponse, responseFinished } from './local';
import { CHECKS, checkSource } from './invariants';
import { keptBytes, nextSourceBuffer, ownBytes, readView, SHARED_READ_BUFFER, type ReadHolder } from './read-buffers';
import { handleOf, writeBlocked, writeBuffer, writeHeadAndBody, writeJoined, writeLatin1, writesPending, type DirectHandle } from './direct-write';
import type { BodyRead, BufferedResponse, ForwardDecision, LocalResponse, RouteDecision } from './types';

const AT_HEAD = 1;
const AT_COMPLETE = 2;

/**
 * What adopting an accepted socket gave a connection (index.ts adopt): the holder the socket's read
 * callbacks read through, and the client's address and port, read from the socket net accepted.
 */
export interface Adoption {
  readonly holder: ReadHolder;
  readonly address: string;
  readonly port: number;
}

/**
 * A router's replacement fields for a request whose body (or its absence) is relayed as the client framed
 * it: they keep the client's Content-Length and Transfer-Encoding, whatever the router's list says
 * (headers.ts withFramingOf; docs/security.md, "Request smuggling"). The list as given when it already
 * does: one pass, no allocation.
 */
function relayedFraming(headers: readonly string[], ex: Exchange): readonly string[] {
  return headers === ex.headers || sameFraming(headers, ex.headers) ? headers : withFramingOf(headers, ex.headers);
}

export class SourceConnection implements ParserEvents, ExchangeOwner, RequestTailHolder {
  readonly core: TransportCore;
  readonly parser: HttpParser;
  readonly id: number;
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies (decided once per connection). */
  readonly trustedPeer: boolean;
  readonly remotePort: number;
  state: ProtocolState = S.REQUEST_READY;
  ex: Exchange | null = null;
  /** Requests started on this connection. */
  requests = 0;
  /** The current request allows the connection to stay open (llhttp's should_keep_alive). */
  keepAlive = true;
  lastActive: number;
  headStart: number;
  /** Unparsed bytes waiting for the current exchange (pipelined requests, or body awaiting a target). */
  private queue: Buffer[] = [];
  /** Parsing waits: for a route, slot or target (AT_HEAD), or for the response (AT_COMPLETE). */
  private blocked = false;
  private pausedAt = 0;
  inBody = false;
  /** A bodiless request's head is parsed; its exchange begins when the parser reports completion. */
  private headPending = false;
  /** Bytes of a Content-Length request body still to relay (counted here, not parsed). */
  clRemaining = 0;
  private feeding = false;
  private readPaused = false;
  /** Paused because the target's socket buffer is full. */
  private waitingForTarget = false;
  private clientEnded = false;
  private closing = false;
  private closed = false;
  private tooLarge = false;
  private corked = 0;
  /** Connection-owned read buffer (adopted sockets only), and whether a view of it is still held. */
  readBuf: Buffer | null = null;
  retainRead = false;
  lastReadFull = false;
  /** The socket's libuv handle once a write has read it (writeHandle). */
  private handle: DirectHandle | null = null;
  /** The forwarding lines of this connection's last request head (headers.ts, RequestTail). */
  requestTail: RequestTail | null = null;
  /** An adopted socket's read holder (index.ts adopt), which its onread callback reads through; null otherwise. */
  private readonly readHolder: ReadHolder | null;

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
    this.parser = new HttpParser('request', this, core.settings.maxHeaderSize);
    core.sources.add(this);
    core.stats.sourcesAccepted++;
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
    socket.on('drain', this.onDrain);
  }

  /** The invariants of invariants.ts; called only when CHECKS is on (test processes). */
  private check(at: string): void {
    const ex = this.ex;
    checkSource(at, this.state, ex !== null, ex !== null && ex.responseDone, this.inBody, this.clRemaining, this.headPending, this.closing);
  }

  setState(to: ProtocolState): void {
    if (this.state === to) return;
    if (!canTransition(this.state, to)) this.core.illegalTransition('source', this.state, to);
    this.state = to;
  }

  // --- reading ---

  private readonly onData = (chunk: Buffer): void => {
    this.lastActive = this.core.now;
    if (this.closing) return;
    if (this.blocked || this.feeding || this.queue.length > 0) {
      this.queue.push(keptBytes(chunk, 0, chunk.length));
      this.retainRead = true;
      if (this.blocked) this.pauseReading();
      return;
    }
    this.beginIfReady(chunk.length);
    this.run(chunk);
  };

  /** A new request starts with its first byte (REQUEST_READY -> REQUEST_HEAD). */
  private beginIfReady(bytes: number): void {
    if (this.state === S.REQUEST_READY && bytes > 0) {
      this.setState(S.REQUEST_HEAD);
      this.headStart = this.core.now;
    }
  }

  private run(chunk: Buffer): void {
    this.feeding = true;
    try {
      this.feed(chunk, 0);
    } catch (err) {
      this.internalError(err);
    } finally {
      this.feeding = false;
    }
    if (!this.blocked && this.queue.length > 0) this.pump();
  }

  /** Feed queued bytes while parsing may go on. */
  private pump(): void {
    while (!this.blocked && !this.closing && this.queue.length > 0) {
      const chunk = this.queue.shift() as Buffer;
      this.beginIfReady(chunk.length);
      this.feeding = true;
      try {
        this.feed(chunk, 0);
      } catch (err) {
        this.internalError(err);
      } finally {
        this.feeding = false;
      }
    }
    if (!this.blocked && !this.waitingForTarget) this.resumeReading();
    if (this.queue.length === 0 && this.clientEnded) this.inputEnded();
  }

  private feed(chunk: Buffer, start: number): void {
    if (CHECKS) this.check('feed');
    const end = chunk.length;
    let off = start;
    for (;;) {
      if (this.closing) return;
      if (this.clRemaining > 0) {
        // A Content-Length body is counted here, not parsed: execute() would copy every body byte into
        // wasm memory for nothing (measured on a prototype: relaying them directly saved 7% on 1 MiB uploads).
        const n = Math.min(this.clRemaining, end - off);
        if (n > 0) {
          (this.ex as Exchange).bodyBytes += n;
          this.relay(chunk, off, off + n);
          off += n;
          this.clRemaining -= n;
        }
        if (this.clRemaining > 0) return;
        if (!this.messageComplete(false)) {
          if (!this.closing) this.stash(chunk, off);
          return;
        }
        this.beginIfReady(end - off);
        continue;
      }
      const wasInBody = this.inBody;
      const st = this.parser.execute(chunk, off, end);
      if (st === ExecStatus.OK) {
        if (wasInBody && off < end) this.relay(chunk, off, end);
        if (this.tooLarge) this.bodyTooLarge();
        return;
      }
      if (st === ExecStatus.ERROR) {
        this.parseError();
        return;
      }
      const pos = off + this.parser.consumed;
      if (wasInBody && pos > off) this.relay(chunk, off, pos);
      if (this.tooLarge) {
        this.bodyTooLarge();
        return;
      }
      off = pos;
      if (this.pausedAt === AT_HEAD) {
        this.pausedAt = 0;
        this.beginExchange();
        if (this.closing) return;
        const ex = this.ex as Exchange;
        if (!ex.ready) {
          this.pausedAt = AT_HEAD;
          this.stash(chunk, off);
          this.blocked = true;
          return;
        }
        this.startBody(ex);
        continue;
      }
      // AT_COMPLETE, or UPGRADE at the end of a request throughway does not upgrade (the Upgrade field
      // is hop-by-hop and was not forwarded, RFC 9110 §7.8): the next bytes are another request.
      this.pausedAt = 0;
      if (!this.messageComplete(st === ExecStatus.UPGRADE)) {
        if (!this.closing) this.stash(chunk, off);
        return;
      }
      this.beginIfReady(end - off);
    }
  }

  /**
   * The request's last byte is in. Returns true when parsing may go on at once with the next request
   * (the exchange already ended with a local answer), false when it must wait (or the connection closes).
   */
  private messageComplete(upgrade: boolean): boolean {
    this.inBody = false;
    if (this.headPending) {
      this.headPending = false;
      this.beginExchange();
      if (this.closing) return false;
    }
    // An Upgrade request is not upgraded (Upgrade is hop-by-hop and not forwarded, RFC 9110 §7.8): onComplete
    // pauses before llhttp's upgrade step and reset() clears it, so the connection goes on as HTTP/1.1.
    // Should llhttp report UPGRADE anyway it parses nothing further: answer, then close.
    if (upgrade) (this.ex as Exchange).closeAfter = true;
    this.requestComplete();
    if (this.closing || this.blocked) return false;
    this.nextMessage();
    return true;
  }

  /** The head is done and the exchange can take its body: count a Content-Length body, parse a chunked one. */
  private startBody(ex: Exchange): void {
    if (!ex.chunked && ex.contentLength > 0) {
      this.clRemaining = ex.contentLength; // the parser stays paused; nextMessage() starts it over
    } else {
      this.parser.resume();
      this.inBody = ex.hasBody;
    }
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

  /**
   * Start the parser over for the next request. reset() is right after a pause at message completion
   * and after a Content-Length body counted here (the parser then still sits paused after the head).
   */
  private nextMessage(): void {
    this.parser.reset();
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
      this.pausedAt = AT_HEAD;
      return PAUSE;
    }
    // No body (RFC 9112 §6.3 rule 7). Pausing here would strand the message: after resume, llhttp
    // needs another input byte before it reports completion. The head is handled at completion instead.
    this.headPending = true;
    return HEAD_CONTINUE;
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    const ex = this.ex;
    if (ex === null) return;
    ex.bodyBytes += end - start;
    // A chunked body being gathered keeps its payload (the raw framing relay() sees is not the body).
    if (ex.collect !== null) collectBody(this, ex, ex.collect, chunk, start, end);
    const max = this.core.settings.maxRequestBody;
    if (max >= 0 && ex.bodyBytes > max) this.tooLarge = true;
  }

  onComplete(): number {
    this.pausedAt = AT_COMPLETE;
    return PAUSE;
  }

  // --- the exchange ---

  private beginExchange(): void {
    const core = this.core;
    const ex = new Exchange(this, core.stamp());
    this.ex = ex;
    this.keepAlive = this.parser.keepAlive && !core.closing;
    core.stats.requests++;
    this.setState(ex.hasBody ? S.REQUEST_BODY : S.REQUEST_HEAD);
    if (refuseRequest(this, ex, core.settings.maxRequestBody)) return;
    let decision: RouteDecision | Promise<RouteDecision> | undefined;
    try {
      decision = core.route(ex);
    } catch (err) {
      this.routeFailed(ex, err);
      return;
    }
    if (decision === undefined) {
      answerFault(this, ex, makeFault('no_route', this.state), false);
    } else if (typeof (decision as Promise<RouteDecision>).then === 'function') {
      (decision as Promise<RouteDecision>).then(
        (d) => this.decided(ex, d),
        (err: unknown) => this.routeFailed(ex, err),
      );
    } else {
      this.apply(ex, decision as RouteDecision);
    }
  }

  /** An asynchronous route decision arrived. */
  private decided(ex: Exchange, d: RouteDecision | undefined): void {
    if (ex.aborted || this.ex !== ex) return;
    if (d === undefined) answerFault(this, ex, makeFault('no_route', this.state), false);
    else this.apply(ex, d);
    this.unblockIfReady(ex);
  }

  private routeFailed(ex: Exchange, err: unknown): void {
    if (ex.aborted || this.ex !== ex) return;
    this.core.log.log('error', 'route_error', { connection: this.id, error: err instanceof Error ? err.message : String(err) });
    answerFault(this, ex, makeFault('processing', this.state, false, 'router threw'), !ex.requestComplete);
    this.unblockIfReady(ex);
  }

  private apply(ex: Exchange, d: RouteDecision): void {
    if ((d as ForwardDecision).target !== undefined) this.forward(ex, d as ForwardDecision);
    else answer(this, ex, d as LocalResponse, false);
  }

  private forward(ex: Exchange, d: ForwardDecision): void {
    const core = this.core;
    if (!core.settings.senderEnabled) {
      answerFault(this, ex, makeFault('sender_disabled', S.REQUEST_READY), false);
      return;
    }
    if ((d.headers !== undefined && breaksLines(d.headers)) || (d.responseHeaders !== undefined && breaksLines(d.responseHeaders)) || (d.path !== undefined && (breaksLine(d.path) || d.path.indexOf(' ') !== -1))) {
      // The client's fields passed the strict parser; a router's (a script's, a rule's) did not: a CR or
      // LF in one would write fields of the router's choosing, Content-Length included, into the head
      // (docs/security.md, "Request smuggling"). Refused before anything is sent.
      answerFault(this, ex, makeFault('processing', this.state, false, 'a field or path of the route decision holds CR, LF or NUL'), !ex.requestComplete);
      return;
    }
    ex.forward = d;
    let headers = d.headers ?? ex.headers;
    const body = d.body ?? ex.collected;
    if (body !== null) {
      // A body of the router's (mediation): sent with its own length; what is left of the client's is dropped.
      ex.outBody = body;
      if (ex.collect !== null) endCollect(ex, { ok: false, reason: 'aborted', size: ex.collect.size });
      if (!ex.requestComplete) ex.discard = true;
      if (body.length > 0 || ex.hasBody) headers = withBodyLength(headers, body.length);
    } else if (d.headers !== undefined) {
      headers = relayedFraming(headers, ex);
    }
    if (d.responseHeaders !== undefined) ex.responseHeaders = d.responseHeaders;
    if (d.dropResponseHeaders !== undefined && d.dropResponseHeaders.length > 0) ex.dropResponseHeaders = d.dropResponseHeaders;
    ex.requestHead = this.requestHead(ex, d, headers);
    // Without a slot the exchange waits (core.releaseSlot calls startTarget) or was answered 503.
    if (core.takeSlot(ex)) this.startTarget(ex);
  }

  /** The head toward the backend for a forward decision and these request fields. */
  private requestHead(ex: Exchange, d: ForwardDecision, headers: readonly string[]): string {
    const core = this.core;
    const target = d.target;
    const path = d.path ?? originForm(ex.url);
    return buildRequestHead(
      {
        method: ex.method,
        // Through an HTTP proxy a plain request names the origin (absolute-form, RFC 9112 §3.2.2).
        path: target.proxy === undefined || target.tls !== undefined ? path : (target.origin as string) + path,
        headers,
        hostHeader: target.hostHeader,
        remoteAddress: this.remoteAddress,
        trustedPeer: this.trustedPeer,
        proto: this.secure ? 'https' : 'http',
        close: core.settings.disableKeepAlive,
        upgrade: d.websocket !== undefined && ex.upgrade ? 'websocket' : undefined,
        extraLines: target.proxy?.authorization !== undefined && target.tls === undefined ? 'Proxy-Authorization: ' + target.proxy.authorization + '\r\n' : undefined,
        tails: this,
      },
      core.settings,
    );
  }

  /**
   * A response hook asked for the request again with new fields (types.ts Resend): the same target, path
   * and held body, on a pooled connection. A body streamed from the client is gone: 101510 instead.
   */
  resend(ex: Exchange, headers: readonly string[]): void {
    const d = ex.forward as ForwardDecision;
    if (ex.hasBody && ex.outBody === null) {
      answerFault(this, ex, makeFault('processing', S.RESPONSE_DONE, false, 'resend asked for a streamed request body'), false);
      return;
    }
    if (breaksLines(headers)) {
      answerFault(this, ex, makeFault('processing', S.RESPONSE_DONE, false, 'a field of the resend holds CR, LF or NUL'), false);
      return;
    }
    const body = ex.outBody;
    ex.requestHead = this.requestHead(ex, d, body === null ? relayedFraming(headers, ex) : body.length > 0 || ex.hasBody ? withBodyLength(headers, body.length) : headers);
    ex.status = 0;
    ex.retries++;
    this.core.log.log('debug', 'resend_request', { connection: this.id, method: ex.method, url: ex.url });
    this.startTarget(ex);
  }

  /** The exchange holds an in-flight slot: get it a target connection. */
  startTarget(ex: Exchange): void {
    if (ex.aborted) return;
    const pool = poolFor(this.core, (ex.forward as ForwardDecision).target);
    const t = pool.acquire(ex, false);
    if (t !== undefined) {
      this.attachTarget(ex, t);
      this.unblockIfReady(ex);
    }
  }

  private attachTarget(ex: Exchange, t: ExchangeTarget): void {
    if (CHECKS) this.check('attach');
    if (ex.forwardedAt < 0) {
      ex.forwardedAt = this.core.stamp();
      const timeout = (ex.forward as ForwardDecision).timeout;
      if (timeout !== undefined && timeout > 0) ex.deadline = this.core.now + timeout;
      const global = this.core.settings.globalTimeout;
      if (global > 0) ex.responseDeadline = this.core.now + global;
    }
    t.attach(ex);
    // A router's body is held until the response, so a retry on a fresh connection resends it.
    if (ex.outBody !== null && ex.outBody.length > 0) t.writeBody(ex.outBody);
    ex.ready = true;
    if (ex.requestComplete) t.endRequest();
  }

  /** The pool (or a freed slot) produced a target for an exchange that was waiting. */
  targetReady(ex: Exchange, t: ExchangeTarget): void {
    if (ex.aborted || this.ex !== ex) {
      t.release();
      return;
    }
    this.attachTarget(ex, t);
    this.unblockIfReady(ex);
  }

  /** Send the same head on a fresh connection (a stale reused socket, or the forward's RetryPolicy). */
  retry(ex: Exchange, why: string): void {
    this.core.log.log('debug', 'retry_request', { connection: this.id, method: ex.method, url: ex.url, why });
    const pool = poolFor(this.core, (ex.forward as ForwardDecision).target);
    const t = pool.acquire(ex, true);
    if (t !== undefined) this.attachTarget(ex, t);
  }

  /** Waiting for a pooled connection took longer than the connect timeout (101504 at state 0). */
  poolTimeout(ex: Exchange): void {
    this.targetFailed(ex, makeFault('pool_full', S.REQUEST_READY, false, `route at its maximum of ${this.core.settings.maxConnectionsPerRoute} connections`));
    this.unblockIfReady(ex);
  }

  /** The in-flight queue is full (passthru_http worker_pool_queue_length): 503 at once. */
  queueFull(ex: Exchange): void {
    answerFault(this, ex, makeFault('queue_full', this.state), false);
  }

  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void {
    if (CHECKS) this.check('unblock');
    if (this.ex !== ex || !ex.ready || !this.blocked || this.pausedAt !== AT_HEAD || this.feeding || this.closing) return;
    this.pausedAt = 0;
    this.blocked = false;
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
    if (ex.discard) return;
    if (ex.collect !== null) {
      // Content-Length bytes are the payload; chunked ones are gathered de-framed in onBody.
      if (!ex.chunked) collectBody(this, ex, ex.collect, chunk, start, end);
      return;
    }
    const t = ex.target;
    if (t === null) return; // the target failed and the fault was answered; the rest is dropped
    ex.bodySent += end - start;
    const ok = t.writeBody(keptBytes(chunk, start, end));
    // A write that did not complete at once still holds a view of this read's bytes.
    if (writesPending(t.socket)) this.retainRead = true;
    if (!ok) {
      this.waitingForTarget = true;
      this.pauseReading();
    }
  }

  /** The target's socket drained: read the client again. */
  targetDrained(): void {
    if (!this.waitingForTarget) return;
    this.waitingForTarget = false;
    if (!this.blocked) this.resumeReading();
  }

  private requestComplete(): void {
    const ex = this.ex as Exchange;
    ex.requestComplete = true;
    if (ex.collect !== null) finishCollect(ex);
    if (this.state < S.REQUEST_DONE) this.setState(S.REQUEST_DONE);
    if (ex.target !== null) ex.target.endRequest();
    if (ex.responseDone) this.finishExchange(ex);
    else this.blocked = true;
  }

  // --- writing ---

  cork(): void {
    if (this.corked++ === 0) this.socket.cork();
  }

  uncork(): void {
    if (--this.corked === 0) this.socket.uncork();
  }

  writeInterim(status: number, text: string, headers: readonly string[]): void {
    let head = 'HTTP/1.1 ' + status + ' ' + text + '\r\n';
    for (let i = 0; i < headers.length; i += 2) head += headers[i] + ': ' + headers[i + 1] + '\r\n';
    this.socket.write(head + '\r\n', 'latin1');
  }

  /** The target has a response head for the client (written by writeHead, or with the first body bytes). */
  startResponse(ex: Exchange, noBody: boolean): void {
    ex.responseStarted = true;
    this.setState(S.RESPONSE_HEAD);
    if (!noBody) this.setState(S.RESPONSE_BODY);
  }

  /** The socket's libuv handle, read once for the writes (direct-write.ts `DirectHandle`). */
  private writeHandle(): DirectHandle | null {
    return this.handle ?? (this.handle = handleOf(this.socket));
  }

  writeHead(head: string): void {
    writeLatin1(this.socket, head, this.writeHandle());
  }

  /** The response head with the first body bytes, in one write. Returns false when the client's socket buffer is full. */
  writeHeadAndBody(head: string, body: Buffer): boolean {
    return writeHeadAndBody(this.socket, head, body, this.writeHandle());
  }

  /** The response head with a few body bytes copied after it, in one write (direct-write.ts writeJoined). */
  writeJoined(head: string, body: Uint8Array): boolean {
    return writeJoined(this.socket, head, body, this.writeHandle());
  }

  /** Response body bytes. Returns false when the client's socket buffer is full (pause the target). */
  writeBody(buf: Buffer): boolean {
    return writeBuffer(this.socket, buf, this.writeHandle());
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

  /** A local answer (local.ts). `mustClose`: the rest of the request will not be read. */
  answer(ex: Exchange, r: LocalResponse, mustClose: boolean): void {
    answer(this, ex, r, mustClose);
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
    if (CHECKS) this.check('finish');
    this.endExchange(ex, undefined);
    if (ex.closeAfter || !this.keepAlive || this.core.closing) {
      this.close();
      return;
    }
    this.setState(S.REQUEST_READY);
    this.ex = null;
    this.blocked = false;
    if (!this.feeding) {
      // Asynchronous completion (the usual case): parse the next queued request, if any.
      this.nextMessage();
      this.pump();
    }
  }

  /** Count, report and free what the exchange held. */
  endExchange(ex: Exchange, fault: TransportFault | undefined): void {
    if (ex.hasSlot) this.core.releaseSlot(ex);
    const onExchange = this.core.events.onExchange;
    if (onExchange !== undefined) {
      const end = this.core.stamp();
      onExchange({
        method: ex.method,
        url: ex.url,
        httpVersion: ex.versionMinor === 0 ? '1.0' : '1.1',
        remoteAddress: ex.remoteAddress,
        connectionId: this.id,
        requestNumber: ex.requestNumber,
        status: ex.status,
        requestBytes: ex.bodyBytes,
        responseBytes: ex.responseBytes,
        durationMs: end - ex.startedAt,
        upstreamMs: ex.forwardedAt < 0 ? -1 : end - ex.forwardedAt,
        target: ex.forward?.target.key,
        fault: fault ?? ex.fault,
        faultCode: ex.faultCode,
        retries: ex.retries + (ex.retried ? 1 : 0),
        request: ex,
      });
    }
  }

  /** The target failed before or during the response. */
  targetFailed(ex: Exchange, fault: TransportFault): void {
    if (this.ex !== ex || ex.aborted) return;
    if (ex.responseStarted) {
      // The status line is already on the wire: the only honest signal left is an aborted connection.
      this.core.reportFault(fault, ex);
      ex.faultCode = fault.code;
      ex.fault = fault;
      this.endExchange(ex, fault);
      this.abort();
      return;
    }
    answerFault(this, ex, fault, !ex.requestComplete);
    this.unblockIfReady(ex);
  }

  private bodyTooLarge(): void {
    this.tooLarge = false;
    const ex = this.ex;
    if (ex === null) return;
    const t = ex.target;
    if (t !== null) {
      ex.target = null;
      t.destroy();
    }
    answerFault(this, ex, makeFault('body_too_large', this.state), true);
  }

  private parseError(): void {
    const name = this.parser.errorName;
    const reason: FaultReason = name === 'HPE_HEADER_OVERFLOW' ? 'header_too_large' : 'client_protocol';
    const state = this.state === S.REQUEST_READY ? S.REQUEST_HEAD : this.state;
    const fault = makeFault(reason, state, false, name);
    let ex = this.ex;
    if (ex !== null && ex.target !== null) {
      // Part of this request already went to the backend: that socket cannot be trusted again.
      const t = ex.target;
      ex.target = null;
      t.destroy();
    }
    if (ex === null || ex.requestComplete) {
      // The error is in a request that has no exchange yet (its head never completed).
      if (ex !== null && !ex.responseDone) {
        this.core.reportFault(fault, ex);
        this.abort();
        return;
      }
      ex = this.newErrorExchange();
    }
    answerFault(this, ex, fault, true);
  }

  /** An exchange to answer a request whose head never parsed. */
  private newErrorExchange(): Exchange {
    const ex = new Exchange(this, this.core.stamp());
    ex.method = ex.method || 'GET';
    this.ex = ex;
    this.keepAlive = false;
    return ex;
  }

  // --- timeouts (from the transport's sweep) ---

  checkTimeouts(now: number): void {
    const settings = this.core.settings;
    switch (this.state) {
      case S.REQUEST_READY:
        // Before its first request a connection waits for a head, not between two: header_timeout bounds
        // that wait (a silent connection is a slowloris that sends nothing), keepalive_timeout the idle
        // time after a response. Closed without an answer either way: there is no request to answer.
        if (!this.blocked && now - this.lastActive > (this.requests === 0 ? Math.min(settings.headerTimeout, settings.keepAliveTimeout) : settings.keepAliveTimeout)) this.close();
        return;
      case S.REQUEST_HEAD:
        if (this.ex !== null) return;
        if (now - this.headStart > settings.headerTimeout) {
          const ex = this.newErrorExchange();
          answerFault(this, ex, makeFault('header_timeout', S.REQUEST_HEAD, false, `head not complete within ${settings.headerTimeout} ms`), true);
        } else if (now - this.lastActive > settings.socketTimeout) {
          // 'http.socket.timeout' is inactivity on both sides (spec 001), a half-sent head included.
          const ex = this.newErrorExchange();
          answerFault(this, ex, makeFault('client_timeout', S.REQUEST_HEAD, false, `no data for ${settings.socketTimeout} ms`), true);
        }
        return;
      case S.REQUEST_BODY: {
        const ex = this.ex;
        if (ex === null || !ex.ready || this.waitingForTarget || this.blocked) return;
        const bodyTimeout = settings.bodyTimeout;
        if (bodyTimeout > 0 && now - ex.startedAt > bodyTimeout) {
          // [throughway] body_timeout: the whole body within a deadline, however slowly it trickles.
          const t = ex.target;
          if (t !== null) {
            ex.target = null;
            t.destroy();
          }
          answerFault(this, ex, makeFault('body_deadline', S.REQUEST_BODY, false, `body not complete within ${bodyTimeout} ms`), true);
          return;
        }
        if (now - this.lastActive > settings.socketTimeout) {
          const t = ex.target;
          if (t !== null) {
            ex.target = null;
            t.destroy();
          }
          answerFault(this, ex, makeFault('client_timeout', S.REQUEST_BODY, false, `no data for ${settings.socketTimeout} ms`), true);
        }
        return;
      }
      case S.RESPONSE_HEAD:
      case S.RESPONSE_BODY:
        if (writeBlocked(this.socket) && now - this.lastActive > settings.socketTimeout) {
          this.core.reportFault(makeFault('client_timeout', this.state, false, 'client stopped reading'), this.ex ?? undefined);
          this.abort();
        }
        return;
      case S.CLOSING:
        if (now - this.lastActive > CLOSE_GRACE_MS) this.socket.destroy();
        return;
      default:
        return;
    }
  }

  // --- ending ---

  private readonly onEnd = (): void => {
    this.clientEnded = true;
    // Bytes still queued are parsed first; pump() calls inputEnded() once they are.
    if (this.queue.length === 0) this.inputEnded();
  };

  /**
   * The client ended its side and every byte it sent has been parsed. allowHalfOpen: a client that
   * half-closes after a complete request still gets its response (RFC 9112 §9.6), and the connection
   * closes once nothing is in flight. A request cut short can never complete (RFC 9112 §8) and nobody is
   * left to answer it: its target is freed now, not at a timeout.
   */
  private inputEnded(): void {
    if (this.closing) return;
    const ex = this.ex;
    if (ex === null) {
      // Between requests, or inside a head that can no longer complete: nothing to answer.
      this.close();
      return;
    }
    if (ex.requestComplete) return;
    if (ex.responseDone) {
      // Answered already (a local answer while the rest of the body was being read and dropped).
      this.endExchange(ex, undefined);
      this.close();
      return;
    }
    if (ex.responseStarted) return; // an early response: when it ends, the connection closes (closeAfter)
    const fault = makeFault('client_io_receive', this.state, false, 'client ended the connection mid-request');
    this.core.reportFault(fault, ex);
    ex.faultCode = fault.code;
    ex.fault = fault;
    this.endExchange(ex, fault);
    this.abort();
  }

  private lastErrorCode: string | undefined;
  private readonly onError = (err: NodeJS.ErrnoException): void => {
    this.lastErrorCode = err.code ?? err.message;
  };

  private readonly onClose = (): void => {
    if (this.closed) return;
    this.closed = true;
    const ex = this.ex;
    if (ex !== null && !ex.responseDone && !ex.aborted) {
      // The client went away mid-exchange: nobody to answer; log and count (spec 002 part 7, 101000/101001).
      const reason: FaultReason = this.state >= S.RESPONSE_HEAD ? 'client_io_send' : 'client_io_receive';
      const fault = makeFault(reason, this.state, false, this.lastErrorCode ?? 'client closed the connection');
      this.core.reportFault(fault, ex);
      ex.faultCode = fault.code;
      this.endExchange(ex, fault);
    }
    if (ex !== null) this.dropExchange(ex);
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

  /** Forget the exchange; a target still serving it cannot be reused (the request or response is cut). */
  private dropExchange(ex: Exchange): void {
    ex.aborted = true;
    if (ex.collect !== null) endCollect(ex, { ok: false, reason: 'aborted', size: ex.collect.size });
    if (ex.hasSlot) this.core.releaseSlot(ex);
    else if (ex.forward !== null) this.core.cancelSlotWait(ex);
    if (ex.forward !== null && ex.target === null) poolFor(this.core, ex.forward.target).cancelWait(ex);
    const t = ex.target;
    if (t !== null) {
      ex.target = null;
      t.ex = null;
      t.destroy();
    }
    this.ex = null;
  }

  /** Graceful close: flush what was written, then FIN. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.blocked = true;
    this.lastActive = this.core.now;
    if (this.state !== S.CLOSED) this.setState(S.CLOSING);
    this.socket.end();
  }

  /** Abrupt close: a response that cannot be completed must not look complete. */
  abort(): void {
    const ex = this.ex;
    if (ex !== null) this.dropExchange(ex);
    this.closing = true;
    this.blocked = true;
    if (this.state !== S.CLOSED) this.setState(S.CLOSING);
    this.socket.destroy();
  }

  private internalError(err: unknown): void {
    this.core.log.log('error', 'internal_error', { connection: this.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    const ex = this.ex;
    if (ex !== null && !ex.responseStarted) answerFault(this, ex, makeFault('processing', this.state, false, 'internal error'), true);
    else this.abort();
  }

  // --- WebSocket tunnel (tunnel.ts) ---

  /**
   * The WebSocket hand-over (tunnel.ts): after the 101 ended the exchange, parsing stops and the bytes the
   * client sent after its handshake go to the tunnel. The socket's 'error' and 'close' listeners stay:
   * onClose still frees what this connection holds.
   */
  leaveForTunnel(): Buffer[] {
    this.ex = null;
    this.blocked = true;
    this.tunnelled = true;
    this.setState(S.RESPONSE_BODY);
    this.lastActive = this.core.now;
    const s = this.socket;
    s.removeListener('data', this.onData);
    s.removeListener('end', this.onEnd);
    s.removeListener('drain', this.onDrain);
    this.readPaused = false;
    s.resume();
    return this.queue.splice(0);
  }

  private tunnelled = false;

  /** The target read a 101 to a WebSocket handshake: tunnel.ts takes both sockets over. */
  targetUpgraded(ex: Exchange, chunk: Buffer, off: number, end: number): void {
    // The one ExchangeTarget there is: target.ts's connection.
    switchProtocols(ex.target as TargetConnection, chunk, off, end);
  }

  /** Adopted sockets (onread): reads go to the tunnel, still into this connection's buffers. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void {
    const holder = this.readHolder;
    if (holder === null) return;
    holder.conn = {
      onRead: (buf, nread) => {
        this.lastReadFull = nread === buf.length;
        if (buf === SHARED_READ_BUFFER) onRead(ownBytes(buf, nread), nread);
        else onRead(buf, nread);
      },
      nextReadBuffer: () => this.nextReadBuffer(),
    };
  }

  /** A tunnel write still views the current read buffer: the next read takes another. */
  holdReadBuffer(): void {
    this.retainRead = true;
  }

  /** Graceful shutdown: idle connections close now, busy ones after their response. */
  shutdown(): void {
    if (this.tunnelled) {
      // A tunnel has no request boundary to wait for: its client gets the end now.
      this.close();
      return;
    }
    if (this.ex === null && this.queue.length === 0) this.close();
    else if (this.ex !== null) this.ex.closeAfter = true;
  }
}

/** How long a closing connection may linger half-open before it is destroyed. */
const CLOSE_GRACE_MS = 5000;
