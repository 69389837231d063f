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
 */
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import { HttpParser, ExecStatus, PAUSE, HEAD_CONTINUE, type ParserEvents } from './parser';
import { ProtocolState as S, canTransition, type ProtocolState } from './states';
import { makeFault, type TransportFault, type FaultReason } from './codes';
import { buildRequestHead, buildLocalHead, withBodyLength, expectsContinue } from './headers';
import { Exchange, type BodyCollector } from './exchange';
import type { TransportCore } from './core';
import type { TargetConnection } from './target';
import type { BodyRead, BufferedResponse, ForwardDecision, LocalResponse, ResponseHook, RouteDecision } from './types';

const AT_HEAD = 1;
const AT_COMPLETE = 2;

/** What an adopted socket's onread callback feeds (index.ts): its source connection, or a tunnel. */
export interface SourceReader {
  onRead(buf: Buffer, nread: number): void;
  nextReadBuffer(): Buffer;
}

/** Routes an adopted socket's onread callbacks (set right after the socket is made, index.ts). */
export interface ReadHolder {
  conn: SourceReader | null;
  /** The buffer of the first read, dropped once the connection chooses its own. */
  first: Buffer | null;
}

export const kReadHolder = Symbol('throughway.readHolder');

export class SourceConnection implements ParserEvents {
  readonly core: TransportCore;
  readonly parser: HttpParser;
  readonly id: number;
  readonly remoteAddress: string;
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
  private inBody = false;
  /** A bodiless request's head is parsed; its exchange begins when the parser reports completion. */
  private headPending = false;
  /** Bytes of a Content-Length request body still to relay (counted here, not parsed). */
  private clRemaining = 0;
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
  private readBuf: Buffer | null = null;
  private smallBuf: Buffer | null = null;
  private retainRead = false;
  private lastReadFull = false;

  constructor(
    core: TransportCore,
    readonly socket: Socket,
    readonly secure: boolean,
  ) {
    this.core = core;
    this.id = core.nextConnectionId++;
    this.remoteAddress = socket.remoteAddress ?? '';
    this.remotePort = socket.remotePort ?? 0;
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

  private setState(to: ProtocolState): void {
    if (this.state === to) return;
    if (!canTransition(this.state, to)) this.core.illegalTransition('source', this.state, to);
    this.state = to;
  }

  // --- reading ---

  private readonly onData = (chunk: Buffer): void => {
    this.lastActive = this.core.now;
    if (this.closing) return;
    if (this.blocked || this.feeding || this.queue.length > 0) {
      this.queue.push(chunk);
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
      this.queue.unshift(off === 0 ? chunk : chunk.subarray(off));
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
    this.onData(buf.subarray(0, nread));
  }

  /**
   * The buffer for the next read (net's onread generator, called after every read). Large
   * (settings.readBufferSize, from the transport's spare list) while a body streams or a read filled its
   * buffer; a small one of the connection's own otherwise, so an idle keep-alive client holds 4 KiB, not
   * 128 KiB. A buffer a queued byte or pending target write still views is never reused or given back.
   */
  nextReadBuffer(): Buffer {
    const cur = this.readBuf;
    const wantLarge = this.lastReadFull || this.inBody || this.clRemaining > 0;
    if (cur !== null && !this.retainRead && (cur !== this.smallBuf) === wantLarge) return cur;
    if (cur !== null && cur !== this.smallBuf && !this.retainRead) this.core.giveReadBuffer(cur);
    if (cur === this.smallBuf && this.retainRead) this.smallBuf = null; // still viewed: never reuse it
    this.retainRead = false;
    let next: Buffer;
    if (wantLarge) {
      next = this.core.takeReadBuffer();
    } else {
      next = this.smallBuf ??= Buffer.allocUnsafeSlow(SMALL_READ_BUFFER);
    }
    this.readBuf = next;
    return next;
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
    if (ex.collect !== null) this.collectBody(ex, ex.collect, chunk, start, end);
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
    // What strict llhttp still lets through (RFC 9112 §3.2, §2.3): a 1.1 request needs exactly one Host
    // (two could route differently at the gateway and at the backend), and only 1.x is spoken here.
    if (ex.versionMajor !== 1) {
      this.answerFault(ex, makeFault('version_not_supported', this.state, false, `HTTP/${ex.versionMajor}.${ex.versionMinor}`), true);
      return;
    }
    if (ex.method === 'CONNECT') {
      // RFC 9110 §9.3.6: CONNECT asks for a tunnel. The pass-through listener relays HTTP exchanges; a
      // CONNECT forwarded as one would hand the backend a request it was never routed for.
      this.answerFault(ex, makeFault('connect_method', this.state, false, ex.url), true);
      return;
    }
    const hosts = countHost(ex.headers);
    if (hosts > 1 || (hosts === 0 && ex.versionMinor === 1)) {
      this.answerFault(ex, makeFault('client_protocol', this.state, false, hosts > 1 ? 'more than one Host field' : 'no Host field'), true);
      return;
    }
    const max = core.settings.maxRequestBody;
    if (max >= 0 && ex.contentLength > max) {
      this.answerFault(ex, makeFault('body_too_large', this.state), true);
      return;
    }
    let decision: RouteDecision | Promise<RouteDecision> | undefined;
    try {
      decision = core.route(ex);
    } catch (err) {
      this.routeFailed(ex, err);
      return;
    }
    if (decision === undefined) {
      this.answerFault(ex, makeFault('no_route', this.state), false);
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
    if (d === undefined) this.answerFault(ex, makeFault('no_route', this.state), false);
    else this.apply(ex, d);
    this.unblockIfReady(ex);
  }

  private routeFailed(ex: Exchange, err: unknown): void {
    if (ex.aborted || this.ex !== ex) return;
    this.core.log.log('error', 'route_error', { connection: this.id, error: err instanceof Error ? err.message : String(err) });
    this.answerFault(ex, makeFault('processing', this.state, false, 'router threw'), !ex.requestComplete);
    this.unblockIfReady(ex);
  }

  private apply(ex: Exchange, d: RouteDecision): void {
    if ((d as ForwardDecision).target !== undefined) this.forward(ex, d as ForwardDecision);
    else this.answer(ex, d as LocalResponse, false);
  }

  private forward(ex: Exchange, d: ForwardDecision): void {
    const core = this.core;
    if (!core.settings.senderEnabled) {
      this.answerFault(ex, makeFault('sender_disabled', S.REQUEST_READY), false);
      return;
    }
    ex.forward = d;
    let headers = d.headers ?? ex.headers;
    const body = d.body ?? ex.collected;
    if (body !== null) {
      // A body of the router's (mediation): sent with its own length; what is left of the client's is dropped.
      ex.outBody = body;
      if (ex.collect !== null) this.endCollect(ex, { ok: false, reason: 'aborted', size: ex.collect.size });
      if (!ex.requestComplete) ex.discard = true;
      if (body.length > 0 || ex.hasBody) headers = withBodyLength(headers, body.length);
    }
    if (d.responseHeaders !== undefined) ex.responseHeaders = d.responseHeaders;
    if (d.dropResponseHeaders !== undefined && d.dropResponseHeaders.length > 0) ex.dropResponseHeaders = d.dropResponseHeaders;
    const target = d.target;
    const path = d.path ?? originForm(ex.url);
    ex.requestHead = buildRequestHead(
      {
        method: ex.method,
        // Through an HTTP proxy a plain request names the origin (absolute-form, RFC 9112 §3.2.2).
        path: target.proxy === undefined || target.tls !== undefined ? path : (target.origin as string) + path,
        headers,
        hostHeader: target.hostHeader,
        remoteAddress: this.remoteAddress,
        proto: this.secure ? 'https' : 'http',
        close: core.settings.disableKeepAlive,
        upgrade: d.websocket !== undefined && ex.upgrade ? 'websocket' : undefined,
        extraLines: target.proxy?.authorization !== undefined && target.tls === undefined ? 'Proxy-Authorization: ' + target.proxy.authorization + '\r\n' : undefined,
      },
      core.settings,
    );
    // Without a slot the exchange waits (core.releaseSlot calls startTarget) or was answered 503.
    if (core.takeSlot(ex)) this.startTarget(ex);
  }

  /** The exchange holds an in-flight slot: get it a target connection. */
  startTarget(ex: Exchange): void {
    if (ex.aborted) return;
    const pool = this.core.poolFor((ex.forward as ForwardDecision).target);
    const t = pool.acquire(ex, false);
    if (t !== undefined) {
      this.attachTarget(ex, t);
      this.unblockIfReady(ex);
    }
  }

  private attachTarget(ex: Exchange, t: TargetConnection): void {
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
  targetReady(ex: Exchange, t: TargetConnection): void {
    if (ex.aborted || this.ex !== ex) {
      t.pool.release(t);
      return;
    }
    this.attachTarget(ex, t);
    this.unblockIfReady(ex);
  }

  /** Send the same head on a fresh connection (a stale reused socket, or the forward's RetryPolicy). */
  retry(ex: Exchange, why: string): void {
    this.core.log.log('debug', 'retry_request', { connection: this.id, method: ex.method, url: ex.url, why });
    const pool = this.core.poolFor((ex.forward as ForwardDecision).target);
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
    this.answerFault(ex, makeFault('queue_full', this.state), false);
  }

  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  private unblockIfReady(ex: Exchange): void {
    if (this.ex !== ex || !ex.ready || !this.blocked || this.pausedAt !== AT_HEAD || this.feeding || this.closing) return;
    this.pausedAt = 0;
    this.blocked = false;
    this.startBody(ex);
    this.pump();
  }

  /**
   * readBody(): gather the body instead of relaying it. Parsing goes on as if a target took the bytes;
   * a body above `limit` resolves as too large at once (a Content-Length says so before any byte).
   */
  readBody(ex: Exchange, limit: number): Promise<BodyRead> {
    if (ex.collect !== null || ex.collected !== null || ex.ready || ex.aborted || this.ex !== ex) return Promise.resolve({ ok: false, reason: 'already_read', size: 0 });
    if (!ex.hasBody) {
      ex.collected = EMPTY_BODY;
      return Promise.resolve({ ok: true, body: EMPTY_BODY });
    }
    if (!ex.chunked && ex.contentLength > limit) {
      // Never read: the answer closes the connection (RFC 9110 §15.5.14 allows closing on 413).
      ex.closeAfter = true;
      return Promise.resolve({ ok: false, reason: 'too_large', size: ex.contentLength });
    }
    return new Promise<BodyRead>((resolve) => {
      ex.collect = { limit, chunks: [], size: 0, resolve };
      // The client may wait for 100 Continue before sending the body (RFC 9110 §10.1.1); no backend
      // will send it now, so the gateway does.
      if (ex.versionMinor >= 1 && expectsContinue(ex.headers)) this.writeInterim(100, 'Continue', NO_FIELDS);
      ex.ready = true;
      this.unblockIfReady(ex);
    });
  }

  private collectBody(ex: Exchange, c: BodyCollector, chunk: Buffer, start: number, end: number): void {
    c.size += end - start;
    if (c.size > c.limit) {
      ex.discard = true;
      ex.closeAfter = true;
      this.endCollect(ex, { ok: false, reason: 'too_large', size: c.size });
      return;
    }
    c.chunks.push(chunk.subarray(start, end));
    this.retainRead = true; // the views keep this read's buffer from being reused
  }

  private endCollect(ex: Exchange, r: BodyRead): void {
    const c = ex.collect as BodyCollector;
    ex.collect = null;
    c.chunks.length = 0;
    c.resolve(r);
  }

  /** The gathered body in one buffer of its own (byteOffset 0): it may be transferred to a worker thread. */
  private finishCollect(ex: Exchange): void {
    const c = ex.collect as BodyCollector;
    const body = Buffer.allocUnsafeSlow(c.size);
    let off = 0;
    for (const piece of c.chunks) off += piece.copy(body, off);
    ex.collected = body;
    ex.collect = null;
    c.chunks.length = 0;
    c.resolve({ ok: true, body });
  }

  /** Body bytes (raw, framing included: chunked bodies are relayed verbatim) toward the target. */
  private relay(chunk: Buffer, start: number, end: number): void {
    const ex = this.ex as Exchange;
    if (ex.discard) return;
    if (ex.collect !== null) {
      // Content-Length bytes are the payload; chunked ones are gathered de-framed in onBody.
      if (!ex.chunked) this.collectBody(ex, ex.collect, chunk, start, end);
      return;
    }
    const t = ex.target;
    if (t === null) return; // the target failed and the fault was answered; the rest is dropped
    ex.bodySent += end - start;
    const ok = t.writeBody(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
    // A write that did not complete at once still holds a view of this read's bytes.
    if (t.socket.writableLength > 0) this.retainRead = true;
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
    if (ex.collect !== null) this.finishCollect(ex);
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

  writeHead(head: string): void {
    this.socket.write(head, 'latin1');
  }

  /** Response body bytes. Returns false when the client's socket buffer is full (pause the target). */
  writeBody(buf: Buffer): boolean {
    return this.socket.write(buf);
  }

  private readonly onDrain = (): void => {
    this.lastActive = this.core.now;
    const t = this.ex?.target;
    if (t != null) t.resumeReading();
  };

  /** The target finished the response. */
  responseDone(ex: Exchange): void {
    if (this.ex !== ex) return;
    ex.responseDone = true;
    this.setState(S.RESPONSE_DONE);
    if (ex.closeAfter) {
      this.endExchange(ex, undefined);
      this.close();
    } else if (ex.requestComplete) {
      this.finishExchange(ex);
    }
  }

  /**
   * A response gathered for ForwardDecision.bufferResponse is complete (its target is already released):
   * the router's hook decides what the client gets, answered like a local response.
   */
  gatheredResponse(ex: Exchange, res: BufferedResponse): void {
    const hook = (ex.forward as ForwardDecision).bufferResponse as ResponseHook;
    let r: LocalResponse | Promise<LocalResponse>;
    try {
      r = hook.handle(res);
    } catch (err) {
      this.responseHookFailed(ex, err);
      return;
    }
    if (typeof (r as Promise<LocalResponse>).then === 'function') {
      (r as Promise<LocalResponse>).then(
        (d) => this.responseHookDone(ex, d),
        (err: unknown) => this.responseHookFailed(ex, err),
      );
    } else this.responseHookDone(ex, r as LocalResponse);
  }

  private responseHookDone(ex: Exchange, r: LocalResponse): void {
    if (ex.aborted || this.ex !== ex) return;
    const drop = ex.dropResponseHeaders;
    let headers = r.headers ?? NO_FIELDS;
    if (drop !== undefined) headers = headers.filter((_, i, a) => (i % 2 === 0 ? !drop.includes((a[i] as string).toLowerCase()) : !drop.includes((a[i - 1] as string).toLowerCase())));
    // A fault the router rendered carries its own (CORS) fields already.
    if (ex.responseHeaders.length > 0 && r.faultCode === undefined) headers = [...headers, ...ex.responseHeaders];
    this.answer(ex, { ...r, headers }, false);
  }

  private responseHookFailed(ex: Exchange, err: unknown): void {
    if (ex.aborted || this.ex !== ex) return;
    this.core.log.log('error', 'response_hook_error', { connection: this.id, error: err instanceof Error ? err.message : String(err) });
    this.answerFault(ex, makeFault('processing', S.RESPONSE_DONE, false, 'response hook threw'), false);
  }

  /** Request complete and response done: the connection goes on or closes. */
  private finishExchange(ex: Exchange): void {
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
  private endExchange(ex: Exchange, fault: TransportFault | undefined): void {
    if (ex.hasSlot) this.core.releaseSlot(ex);
    const onExchange = this.core.events.onExchange;
    if (onExchange !== undefined) {
      const end = this.core.stamp();
      onExchange({
        method: ex.method,
        url: ex.url,
        httpVersion: ex.versionMinor === 0 ? '1.0' : '1.1',
        remoteAddress: this.remoteAddress,
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

  /** A local answer (fault, preflight, ...). `mustClose`: the rest of the request will not be read. */
  answer(ex: Exchange, r: LocalResponse, mustClose: boolean): void {
    if (ex.responseStarted) {
      this.abort();
      return;
    }
    ex.ready = true;
    ex.faultCode = r.faultCode;
    const body = r.body === undefined ? EMPTY_BODY : typeof r.body === 'string' ? Buffer.from(r.body) : r.body;
    if (!ex.requestComplete) {
      if (mustClose) ex.closeAfter = true;
      else ex.discard = true; // read and drop the rest of the body, keep the connection
    }
    if (!this.keepAlive || this.core.closing) ex.closeAfter = true;
    ex.status = r.status;
    ex.responseStarted = true;
    ex.responseBytes = body.length;
    const head = buildLocalHead(r.status, STATUS_CODES[r.status] ?? 'Unknown', r.headers ?? NO_FIELDS, body.length, ex.closeAfter);
    this.setState(S.RESPONSE_HEAD);
    this.cork();
    this.socket.write(head, 'latin1');
    if (body.length > 0 && !ex.isHead) this.socket.write(body);
    this.uncork();
    ex.responseDone = true;
    this.setState(S.RESPONSE_DONE);
    if (ex.closeAfter) {
      this.endExchange(ex, undefined);
      this.close();
    } else if (ex.requestComplete) {
      this.finishExchange(ex);
    }
  }

  private answerFault(ex: Exchange, fault: TransportFault, mustClose: boolean): void {
    ex.fault = fault;
    this.core.reportFault(fault, ex);
    const r = this.core.renderFault(fault, ex);
    this.answer(ex, r.faultCode === undefined ? { ...r, faultCode: fault.code } : r, mustClose);
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
    this.answerFault(ex, fault, !ex.requestComplete);
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
    this.answerFault(ex, makeFault('body_too_large', this.state), true);
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
    this.answerFault(ex, fault, true);
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
        if (!this.blocked && now - this.lastActive > settings.keepAliveTimeout) this.close();
        return;
      case S.REQUEST_HEAD:
        if (this.ex === null && now - this.headStart > settings.headerTimeout) {
          const ex = this.newErrorExchange();
          this.answerFault(ex, makeFault('header_timeout', S.REQUEST_HEAD, false, `head not complete within ${settings.headerTimeout} ms`), true);
        }
        return;
      case S.REQUEST_BODY: {
        const ex = this.ex;
        if (ex === null || !ex.ready || this.waitingForTarget || this.blocked) return;
        if (now - this.lastActive > settings.socketTimeout) {
          const t = ex.target;
          if (t !== null) {
            ex.target = null;
            t.destroy();
          }
          this.answerFault(ex, makeFault('client_timeout', S.REQUEST_BODY, false, `no data for ${settings.socketTimeout} ms`), true);
        }
        return;
      }
      case S.RESPONSE_HEAD:
      case S.RESPONSE_BODY:
        if (this.socket.writableNeedDrain && now - this.lastActive > settings.socketTimeout) {
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
    if (buf !== null && buf !== this.smallBuf && !this.retainRead) this.core.giveReadBuffer(buf);
    this.readBuf = null;
    this.core.sources.delete(this);
    this.core.sourceClosed();
  };

  /** Forget the exchange; a target still serving it cannot be reused (the request or response is cut). */
  private dropExchange(ex: Exchange): void {
    ex.aborted = true;
    if (ex.collect !== null) this.endCollect(ex, { ok: false, reason: 'aborted', size: ex.collect.size });
    if (ex.hasSlot) this.core.releaseSlot(ex);
    else if (ex.forward !== null) this.core.cancelSlotWait(ex);
    if (ex.forward !== null && ex.target === null) this.core.poolFor(ex.forward.target).cancelWait(ex);
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
    if (ex !== null && !ex.responseStarted) this.answerFault(ex, makeFault('processing', this.state, false, 'internal error'), true);
    else this.abort();
  }

  // --- WebSocket tunnel (tunnel.ts) ---

  /**
   * The backend switched protocols: write its 101 head, end the exchange (status 101), stop parsing,
   * and hand over the bytes the client sent after its handshake. The socket's 'error' and 'close'
   * listeners stay: onClose still frees what this connection holds.
   */
  enterTunnel(ex: Exchange, head: string): Buffer[] {
    ex.responseStarted = true;
    ex.responseDone = true;
    ex.status = 101;
    this.setState(S.RESPONSE_HEAD);
    this.socket.write(head, 'latin1');
    this.endExchange(ex, undefined);
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

  /** Adopted sockets (onread): reads go to the tunnel, still into this connection's buffers. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void {
    const holder = (this.socket as Socket & { [kReadHolder]?: ReadHolder })[kReadHolder];
    if (holder === undefined) return;
    holder.conn = {
      onRead: (buf, nread) => {
        this.lastReadFull = nread === buf.length;
        onRead(buf, nread);
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

function countHost(headers: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}

/**
 * The request target for the backend in origin-form: a client talking to an origin server sends only the
 * path and query (RFC 9112 §3.2.1). A client may send absolute-form, which a server must accept
 * (§3.2.2); forwarded as is, the backend would take the URI's authority over the Host the proxy sets.
 */
function originForm(url: string): string {
  if (url.charCodeAt(0) === 0x2f /* '/' */) return url;
  const authority = ABSOLUTE_FORM.exec(url);
  if (authority === null) return url; // asterisk-form, authority-form
  const rest = url.slice(authority[0].length);
  return rest === '' || rest.charCodeAt(0) !== 0x2f ? '/' + rest : rest;
}
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

const EMPTY_BODY = Buffer.alloc(0);
/** Read buffer of an idle client connection: a request head of a few hundred bytes fits. */
const SMALL_READ_BUFFER = 4096;
const NO_FIELDS: readonly string[] = [];
/** How long a closing connection may linger half-open before it is destroyed. */
const CLOSE_GRACE_MS = 5000;
