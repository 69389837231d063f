/**
 * The client's bytes on a source connection (source.ts): the socket's reads, the request parser and its
 * callbacks, and the feed loop that hands each head, body and message end to the connection through
 * its port (exchange.ts RequestPort). What parsing waits for (Wait), where the parser stopped (Stop)
 * and the socket's reading (Intake) are one value each (states.ts).
 *
 * The one shared wasm parser must never be re-entered, nor its buffer overwritten mid-parse: parser
 * callbacks only record where it stopped (it pauses at the end of a head and of a message), and every
 * decision runs in feed() after execute() returns. A pipelined request waits, unparsed, until the response
 * before it is done, so responses go out in order (RFC 9112 §9.3.2). A Content-Length body is counted
 * here, never parsed (exchange.ts BodyMode), and relayed as raw byte ranges to the target, gathered for
 * the router (body.ts) or dropped.
 */
import type { Socket } from 'node:net';
import { HttpParser, ExecStatus, PAUSE, HEAD_CONTINUE, type ParserEvents } from './parser';
import { ProtocolState as S, Intake, Stop, Wait } from './states';
import { counting, NO_BODY, PARSED_BODY, type Exchange, type RequestPort, type TunnelReads } from './exchange';
import { collectBody } from './body';
import type { TransportCore } from './core';
import { invariantBroken } from './invariants';
import {
  keptBytes,
  nextSourceBuffer,
  readView,
  redirectSourceReads,
  SHARED_READ_BUFFER,
  type ReadHolder,
  type SourceBuffers,
  type SourceReader,
} from './read-buffers';
import { writesPending } from './direct-write';

export class ClientReader implements ParserEvents, SourceReader, SourceBuffers, TunnelReads {
  readonly core: TransportCore;
  readonly parser: HttpParser;
  /** What parsing waits for (states.ts Wait); the connection sets RESPONSE when a request is complete. */
  wait: Wait = Wait.NONE;
  /** Unparsed bytes waiting for the current exchange (pipelined requests, or body awaiting a target). */
  private queue: Buffer[] = [];
  private stop: Stop = Stop.NONE;
  /**
   * feed() is on the stack: bytes that arrive meanwhile (a synchronous callback) queue behind it, and an
   * exchange that ends or becomes ready meanwhile leaves the loop to go on. Any Intake may hold with it.
   */
  private feeding = false;
  private intake: Intake = Intake.OPEN;
  /** Connection-owned read buffer (adopted sockets only), and whether a view of it is still held. */
  readBuf: Buffer | null = null;
  retainRead = false;
  lastReadFull = false;

  constructor(
    core: TransportCore,
    private readonly conn: RequestPort,
    private readonly socket: Socket,
    /** An adopted socket's read holder (index.ts adopt), which its onread callback reads through; null otherwise. */
    private readonly holder: ReadHolder | null,
  ) {
    this.core = core;
    this.parser = new HttpParser('request', this, core.settings.maxHeaderSize);
    if (holder !== null) holder.conn = this;
  }

  /** Parsing waits: for a route, a slot, the response or a tunnel (a full target socket only pauses reading), or the connection closes. */
  private get blocked(): boolean {
    const w = this.wait;
    return (w !== Wait.NONE && w !== Wait.TARGET) || this.conn.state >= S.CLOSING;
  }

  /** A request body is in progress (read-buffers.ts nextSourceBuffer: it reads into a large buffer). */
  get bodyInProgress(): boolean {
    const ex = this.conn.ex;
    return ex !== null && ex.body.kind !== 'none';
  }

  /** Client bytes wait, unparsed, for the current exchange. */
  get queued(): boolean {
    return this.queue.length > 0;
  }

  readonly onData = (chunk: Buffer): void => {
    const conn = this.conn;
    conn.lastActive = this.core.now;
    if (conn.state >= S.CLOSING) return;
    const blocked = this.blocked;
    if (blocked || this.feeding || this.queue.length > 0) {
      this.queue.push(keptBytes(chunk, 0, chunk.length));
      this.retainRead = true;
      if (blocked) this.pause();
      return;
    }
    this.beginIfReady(chunk.length);
    this.run(chunk);
    if (this.queue.length > 0 && !this.blocked) this.pump();
  };

  readonly onEnd = (): void => {
    this.intake = Intake.ENDED;
    // Bytes still queued are parsed first; pump() reports the end once they are.
    if (this.queue.length === 0) this.conn.inputEnded();
  };

  /** A new request starts with its first byte (REQUEST_READY -> REQUEST_HEAD). */
  private beginIfReady(bytes: number): void {
    if (bytes > 0 && this.conn.state === S.REQUEST_READY) this.conn.beginRequest();
  }

  /** One chunk through feed(); a throw is answered as an internal error. */
  private run(chunk: Buffer): void {
    this.feeding = true;
    try {
      this.feed(chunk);
    } catch (err) {
      this.conn.internalError(err);
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
    if (this.wait === Wait.NONE && this.conn.state < S.CLOSING) this.resume();
    if (this.queue.length === 0 && this.intake === Intake.ENDED) this.conn.inputEnded();
  }

  private feed(chunk: Buffer): void {
    const conn = this.conn;
    // Between requests there is no exchange (invariants.ts).
    if (conn.state === S.REQUEST_READY && conn.ex !== null) invariantBroken('source', 'feed', conn.state, 'an exchange in REQUEST_READY');
    const end = chunk.length;
    let off = 0;
    for (;;) {
      if (conn.state >= S.CLOSING) return;
      let ex = conn.ex;
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
          if (conn.state < S.CLOSING) this.stash(chunk, off);
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
          conn.bodyTooLarge();
        }
        return;
      }
      if (st === ExecStatus.ERROR) {
        conn.parseError();
        return;
      }
      const pos = off + this.parser.consumed;
      if (parsing) {
        if (pos > off) this.relay(chunk, off, pos);
        if (conn.bodyTooLarge()) return;
      }
      off = pos;
      const stop = this.stop;
      this.stop = Stop.NONE;
      if (stop === Stop.AT_HEAD) {
        conn.beginExchange();
        if (conn.state >= S.CLOSING) return;
        ex = conn.ex as Exchange;
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
        if (conn.state < S.CLOSING) this.stash(chunk, off);
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
    const conn = this.conn;
    if (withHead) {
      // A bodiless head waits for completion only while no exchange is open (invariants.ts).
      if (conn.ex !== null) invariantBroken('source', 'complete', conn.state, 'a pending head while an exchange is open');
      conn.beginExchange();
      if (conn.state >= S.CLOSING) return false;
    }
    const ex = conn.ex as Exchange;
    // An Upgrade request is not upgraded (Upgrade is hop-by-hop and not forwarded, RFC 9110 §7.8): onComplete
    // pauses before llhttp's upgrade step and reset() clears it, so the connection goes on as HTTP/1.1.
    // Should llhttp report UPGRADE anyway it parses nothing further: answer, then close.
    if (upgrade) ex.closeAfter = true;
    conn.requestComplete(ex);
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

  /** Body bytes (raw, framing included: chunked bodies are relayed verbatim) toward the target. */
  private relay(chunk: Buffer, start: number, end: number): void {
    const ex = this.conn.ex as Exchange;
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
      this.pause();
    }
  }

  private pause(): void {
    if (this.intake === Intake.OPEN) {
      this.intake = Intake.PAUSED;
      this.socket.pause();
    }
  }

  private resume(): void {
    if (this.intake === Intake.PAUSED) {
      this.intake = Intake.OPEN;
      this.socket.resume();
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
    const ex = this.conn.ex;
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

  // --- what the connection tells the reader ---

  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void {
    const w = this.wait;
    if (this.conn.ex !== ex || (w !== Wait.ROUTE && w !== Wait.SLOT) || this.feeding || this.conn.state >= S.CLOSING) return;
    if (!ex.ready) {
      if (ex.forward !== null) this.wait = Wait.SLOT;
      return;
    }
    this.wait = Wait.NONE;
    this.startBody(ex);
    this.pump();
  }

  /** The target's socket drained: read the client again. */
  targetDrained(): void {
    if (this.wait !== Wait.TARGET) return;
    this.wait = Wait.NONE;
    this.resume();
  }

  /** The exchange ended and the connection stays open: the next request may be parsed. */
  nextRequest(): void {
    this.wait = Wait.NONE;
    if (!this.feeding) {
      // Asynchronous completion (the usual case): parse the next queued request, if any.
      this.parser.reset();
      this.pump();
    }
  }

  /** The WebSocket hand-over (source.ts leaveForTunnel): parsing stops; returns the bytes the client sent after its handshake. */
  stopForTunnel(): Buffer[] {
    this.wait = Wait.TUNNEL;
    if (this.intake === Intake.PAUSED) this.intake = Intake.OPEN;
    this.socket.resume();
    return this.queue.splice(0);
  }

  /** Adopted sockets (onread): reads go to the tunnel, still into this connection's buffers. */
  redirectReads(onRead: (buf: Buffer, nread: number) => void): void {
    if (this.holder !== null) redirectSourceReads(this, this.holder, onRead);
  }

  /** A tunnel write still views the current read buffer: the next read takes another. */
  holdReadBuffer(): void {
    this.retainRead = true;
  }

  /** The socket closed: nothing more is parsed, and a large read buffer nobody views goes back to the spare list. */
  closed(): void {
    this.parser.destroy();
    this.queue.length = 0;
    // A closed handle reads no more.
    const buf = this.readBuf;
    if (buf !== null && buf !== SHARED_READ_BUFFER && !this.retainRead) this.core.giveReadBuffer(buf);
    this.readBuf = null;
  }
}
