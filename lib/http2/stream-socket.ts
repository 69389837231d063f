/**
 * The in-process connection of one HTTP/2 stream (docs/http2.md, "What a stream goes through"): an object
 * with the stream side of a socket that the transport's source connection uses (data/end/close/drain,
 * write, cork, pause, resume, end, destroy, remoteAddress), bound to the HTTP/2 stream directly. The
 * transport reads the stream's request as HTTP/1.1 bytes written here once (the head) and then the
 * stream's DATA frames; what it writes back is read by a small HTTP/1.1 response reader (the transport's
 * own output: one status line, fields, a counted, chunked or close-delimited body) and goes to the stream
 * as a HEADERS frame and DATA frames.
 *
 * It stands where an in-process socket pair and node:http's client stood: one object instead of two
 * Duplex streams, a ClientRequest and an IncomingMessage with its parser per stream. Measured:
 * docs/performance.md, "HTTP/2 and gRPC against nginx".
 *
 * Bytes the transport writes are copied before they go to the stream: the transport reuses a buffer once
 * a socket's write has finished at once (direct-write.ts writeJoined, the read buffers of read-buffers.ts),
 * and an HTTP/2 stream keeps the buffers it was given until its frames are sent.
 */
import { EventEmitter } from 'node:events';
import * as http2 from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { HOP_BY_HOP } from '../embed/handler';

const { NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR } = http2.constants;

/** Where the response reader is (RFC 9112 §6: a message's body length). */
const enum Read {
  HEAD,
  COUNTED,
  CHUNK_SIZE,
  CHUNK_DATA,
  CHUNK_CRLF,
  TRAILERS,
  UNTIL_CLOSE,
  DONE,
}

/** A response head of the transport's is under this many bytes (its own limit for a backend's head is smaller). */
const MAX_HEAD = 256 * 1024;
/** The end of a chunk and the last chunk of a request body the transport reads (RFC 9112 §7.1); only read. */
const CRLF = Buffer.from('\r\n', 'latin1');
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');
/** The end of a response head (RFC 9112 §2.1); only read. */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** A chunk-size line: hex digits, extensions and CRLF. */
const MAX_CHUNK_LINE = 4096;

/** Space, tab, CR, LF and the other characters String.prototype.trim removed around a field value. */
function isWhitespace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0;
}

/** Resets a stream for the gateway (stream.ts reset: the rapid-reset count skips those). */
export type StreamReset = (stream: http2.ServerHttp2Stream, code: number) => void;

/** 'close' of a StreamSocket, a tick after its stream or the transport closed it (as a socket reports it). */
function emitClose(socket: StreamSocket): void {
  socket.emit('close', false);
}

export class StreamSocket extends EventEmitter {
  // --- what the transport reads of a net.Socket ---
  readonly remoteFamily = 'IPv4';
  readonly localAddress = '127.0.0.1';
  readonly localPort = 0;
  readonly connecting = false;
  /** No libuv handle: the transport's writes take write() (direct-write.ts usable()). */
  readonly _handle = null;
  destroyed = false;
  writableEnded = false;
  writableCorked = 0;
  writableNeedDrain = false;

  private paused = false;
  /** Request bytes held while the transport paused reading. */
  private held: Buffer[] = [];
  private inputDone = false;
  private closeQueued = false;

  private read = Read.HEAD;
  private head: Buffer | undefined;
  private remaining = 0;
  private line = '';
  private stall: NodeJS.Timeout | undefined;
  /** The stream's 'drain' listener, added the first time a write found the client's window full. */
  private drainListener: (() => void) | undefined;

  /**
   * `requestMethod`: a HEAD's response has no body (RFC 9110 §9.3.2); `stallTimeout`: stall_timeout, ms a
   * response may wait for the client's window before the stream is reset; `streamClosed`: called from the
   * stream's one 'close' listener, which is this object's (index.ts counts the client's resets there).
   */
  constructor(
    readonly stream: http2.ServerHttp2Stream,
    readonly remoteAddress: string,
    readonly remotePort: number,
    private readonly requestMethod: string,
    private readonly stallTimeout: number,
    private readonly resetStream: StreamReset,
    private readonly streamClosed: (stream: http2.ServerHttp2Stream) => void,
  ) {
    super();
    // The gateway's one 'close' listener on the stream (index.ts counts resets through streamClosed): a
    // stream the client reset or closed first is the transport's client leaving.
    stream.on('close', this.onStreamClose);
  }

  get writableLength(): number {
    return this.stream.destroyed ? 0 : this.stream.writableLength;
  }

  /** The client's certificate, from the TLS connection the stream is on (mutual TLS, docs/tls.md). */
  getPeerCertificate(detailed?: boolean): ReturnType<TLSSocket['getPeerCertificate']> | undefined {
    const s = this.stream.session?.socket as Partial<TLSSocket> | undefined;
    return typeof s?.getPeerCertificate === 'function' ? s.getPeerCertificate(detailed === true) : undefined;
  }

  // --- the request: written by serveStream, read by the transport ---

  /** Request bytes toward the transport (in order; held while it paused reading). */
  feed(buf: Buffer): void {
    if (this.destroyed) return;
    if (this.paused || this.held.length > 0) this.held.push(buf);
    else this.emit('data', buf);
  }

  /** The request's body as it arrives: read only as fast as the transport takes it. */
  pipeBody(chunked: boolean): void {
    const stream = this.stream;
    stream.on('data', (chunk: Buffer) => {
      if (chunked) {
        if (chunk.length === 0) return;
        this.feed(Buffer.from(chunk.length.toString(16) + '\r\n', 'latin1'));
        this.feed(chunk);
        this.feed(CRLF);
      } else this.feed(chunk);
      if (this.paused) stream.pause();
    });
    stream.once('end', () => {
      this.inputDone = true;
      if (chunked) this.feed(LAST_CHUNK);
    });
  }

  pause(): this {
    this.paused = true;
    return this;
  }

  resume(): this {
    if (!this.paused) return this;
    this.paused = false;
    while (this.held.length > 0 && !this.paused && !this.destroyed) this.emit('data', this.held.shift() as Buffer);
    if (!this.paused && !this.inputDone && !this.stream.destroyed && this.stream.isPaused()) this.stream.resume();
    return this;
  }

  // --- the response: written by the transport, read here ---

  cork(): void {
    this.writableCorked++;
  }

  uncork(): void {
    if (this.writableCorked > 0) this.writableCorked--;
  }

  write(data: Buffer | string, encoding?: BufferEncoding | ((err?: Error | null) => void), cb?: (err?: Error | null) => void): boolean {
    const done = typeof encoding === 'function' ? encoding : cb;
    if (this.destroyed || this.writableEnded) {
      if (done !== undefined) process.nextTick(done, new Error('write after the stream closed'));
      return false;
    }
    const buf = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    this.take(buf, 0);
    if (done !== undefined) process.nextTick(done);
    return !this.writableNeedDrain;
  }

  end(data?: Buffer | string): this {
    if (data !== undefined && typeof data !== 'function') this.write(data);
    if (this.writableEnded) return this;
    this.writableEnded = true;
    // The transport closes after the response (the request asked for that): a close-delimited body ends here.
    if (this.read === Read.UNTIL_CLOSE) this.finish();
    else if (this.read !== Read.DONE) this.fail(NGHTTP2_INTERNAL_ERROR);
    this.queueClose();
    return this;
  }

  destroy(): this {
    if (this.destroyed) return this;
    // A response that cannot be completed must not look complete (the transport's abort()).
    if (this.read !== Read.DONE) this.fail(NGHTTP2_INTERNAL_ERROR);
    this.queueClose();
    return this;
  }

  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  setTimeout(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  address(): { address: string; family: string; port: number } {
    return { address: this.localAddress, family: 'IPv4', port: this.localPort };
  }

  /** Reads the transport's bytes from `off` on: the head once, then the body by its framing. */
  private take(buf: Buffer, off: number): void {
    while (off < buf.length) {
      switch (this.read) {
        case Read.HEAD:
          off = this.takeHead(buf, off);
          break;
        case Read.COUNTED:
        case Read.CHUNK_DATA: {
          const n = Math.min(this.remaining, buf.length - off);
          this.body(buf, off, off + n);
          off += n;
          this.remaining -= n;
          if (this.remaining > 0) break;
          if (this.read === Read.COUNTED) this.finish();
          else {
            this.read = Read.CHUNK_CRLF;
            this.remaining = 2;
          }
          break;
        }
        case Read.CHUNK_SIZE:
        case Read.TRAILERS: {
          const lf = buf.indexOf(0x0a, off);
          const end = lf === -1 ? buf.length : lf + 1;
          this.line += buf.toString('latin1', off, end);
          off = end;
          if (lf === -1) {
            if (this.line.length > MAX_CHUNK_LINE) this.fail(NGHTTP2_INTERNAL_ERROR);
            break;
          }
          const line = this.line.trimEnd();
          this.line = '';
          if (this.read === Read.TRAILERS) {
            // Trailer fields of a chunked response are not relayed (as node:http's client did not).
            if (line === '') this.finish();
            break;
          }
          const size = parseInt(line, 16);
          if (!(size >= 0)) {
            this.fail(NGHTTP2_INTERNAL_ERROR);
            break;
          }
          if (size === 0) this.read = Read.TRAILERS;
          else {
            this.remaining = size;
            this.read = Read.CHUNK_DATA;
          }
          break;
        }
        case Read.CHUNK_CRLF: {
          const n = Math.min(this.remaining, buf.length - off);
          off += n;
          this.remaining -= n;
          if (this.remaining === 0) this.read = Read.CHUNK_SIZE;
          break;
        }
        case Read.UNTIL_CLOSE:
          this.body(buf, off, buf.length);
          off = buf.length;
          break;
        case Read.DONE:
          // Nothing follows a complete response on a connection the request asked to close.
          return;
      }
    }
  }

  private takeHead(buf: Buffer, off: number): number {
    const held = this.head;
    const all = held === undefined ? (off === 0 ? buf : buf.subarray(off)) : Buffer.concat([held, buf.subarray(off)]);
    const end = all.indexOf(HEAD_END, held === undefined ? 0 : Math.max(0, held.length - 3));
    if (end === -1) {
      if (all.length > MAX_HEAD) this.fail(NGHTTP2_INTERNAL_ERROR);
      // Kept across writes: a copy, the transport reuses its buffers (a concatenation is one already).
      else this.head = held === undefined ? Buffer.from(all) : all;
      return buf.length;
    }
    const consumed = end + 4 - (all.length - (buf.length - off));
    this.head = undefined;
    // One pass over the head: names lower-cased once (RFC 9113 §8.2.2), hop-by-hop fields and those the
    // Connection field names left out (RFC 9110 §7.6.1), repeated fields joined but set-cookie's.
    const text = all.toString('latin1', 0, end);
    const status = parseInt(text.slice(9, 12), 10);
    const fields: Record<string, string | string[] | number> = { ':status': status };
    let named: string | undefined;
    let length = -1;
    let chunked = false;
    let pos = text.indexOf('\r\n') + 2;
    while (pos > 1 && pos < text.length) {
      let eol = text.indexOf('\r\n', pos);
      if (eol === -1) eol = text.length;
      const colon = text.indexOf(':', pos);
      if (colon > pos && colon < eol) {
        const name = text.slice(pos, colon).toLowerCase();
        // The value without the whitespace around it (RFC 9112 §5.1), cut once instead of sliced and trimmed.
        let from = colon + 1;
        let to = eol;
        while (from < to && isWhitespace(text.charCodeAt(from))) from++;
        while (to > from && isWhitespace(text.charCodeAt(to - 1))) to--;
        const value = text.slice(from, to);
        if (name === 'content-length') length = parseInt(value, 10);
        if (HOP_BY_HOP.has(name)) {
          if (name === 'transfer-encoding') chunked = value.toLowerCase().endsWith('chunked');
          else if (name === 'connection') named = named === undefined ? value : named + ',' + value;
        } else {
          const had = fields[name];
          if (had === undefined) fields[name] = name === 'set-cookie' ? [value] : value;
          else if (Array.isArray(had)) had.push(value);
          else fields[name] = `${had as string}, ${value}`;
        }
      }
      pos = eol + 2;
    }
    if (named !== undefined)
      for (const n of named.split(',')) {
        const name = n.trim().toLowerCase();
        if (name.charCodeAt(0) !== 0x3a) delete fields[name];
      }
    const at = off + consumed;
    // Interim responses (100 Continue, 103 Early Hints) are not relayed; the final one follows.
    if (status >= 100 && status < 200) return at;
    const noBody = this.requestMethod === 'HEAD' || status === 204 || status === 304;
    if (noBody) this.read = Read.DONE;
    else if (chunked) this.read = Read.CHUNK_SIZE;
    else if (length >= 0) {
      this.read = length === 0 ? Read.DONE : Read.COUNTED;
      this.remaining = length;
    } else this.read = Read.UNTIL_CLOSE;
    if (this.stream.destroyed || this.stream.closed) return buf.length;
    try {
      this.stream.respond(fields, { endStream: this.read === Read.DONE });
    } catch {
      this.fail(NGHTTP2_INTERNAL_ERROR);
      return buf.length;
    }
    return at;
  }

  private body(buf: Buffer, from: number, to: number): void {
    if (to <= from || this.stream.destroyed) return;
    // The copy made in one step (Buffer.from of a subarray made a view first).
    const copy = Buffer.allocUnsafe(to - from);
    buf.copy(copy, 0, from, to);
    if (this.stream.write(copy)) return;
    // The client's window is full: the transport pauses its backend until 'drain', or the stream is reset
    // when it stays shut for stall_timeout (a zero-window stall holds the backend connection otherwise).
    this.writableNeedDrain = true;
    if (this.drainListener === undefined) {
      this.drainListener = () => this.onDrain();
      this.stream.on('drain', this.drainListener);
    }
    this.stall ??= setTimeout(() => {
      this.stall = undefined;
      this.fail(NGHTTP2_CANCEL);
      this.queueClose();
    }, this.stallTimeout);
  }

  private onDrain(): void {
    if (this.stall !== undefined) clearTimeout(this.stall);
    this.stall = undefined;
    if (!this.writableNeedDrain) return;
    this.writableNeedDrain = false;
    this.emit('drain');
  }

  /** The response is complete: the stream ends (a response of no body ended with its HEADERS frame). */
  private finish(): void {
    this.read = Read.DONE;
    // A stream closed before the head could go out has nothing to end.
    if (!this.stream.destroyed && this.stream.headersSent) this.stream.end();
  }

  private fail(code: number): void {
    this.read = Read.DONE;
    const stream = this.stream;
    if (!stream.destroyed && !stream.closed) this.resetStream(stream, code);
  }

  private readonly onStreamClose = (): void => {
    this.read = Read.DONE;
    this.queueClose();
    this.streamClosed(this.stream);
  };

  /** 'close' once, after the current call returns, as a socket reports it (the transport frees the connection then). */
  private queueClose(): void {
    this.destroyed = true;
    if (this.stall !== undefined) clearTimeout(this.stall);
    this.stall = undefined;
    this.held.length = 0;
    if (this.closeQueued) return;
    this.closeQueued = true;
    if (this.drainListener !== undefined) this.stream.removeListener('drain', this.drainListener);
    process.nextTick(emitClose, this);
  }
}
