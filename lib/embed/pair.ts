/**
 * An in-process socket pair: two linked Duplex ends, what one writes the other reads, with backpressure.
 * `inject()` and the `(req, res)` handler hand one end to the transport (handleConnection) and talk HTTP/1.1
 * on the other, so a request runs through the whole chain with no port, no file descriptor and no
 * loopback traffic, and the transport code that serves it is exactly the one real clients get.
 *
 * Why not a loopback connection the gateway owns: it needs a listening port per gateway (a resource the
 * embedder did not ask for, and one that a sandboxed test may not have), costs two kernel sockets per
 * request, and reports 127.0.0.1 as the client. The transport's source connection uses only the stream
 * side of a socket (data/end/close/drain, write, cork, pause, remoteAddress), which a Duplex provides.
 *
 * Semantics follow TCP where the transport can see them: end() is a FIN (the peer reads EOF and may still
 * answer, allowHalfOpen), destroy() is a close (the peer reads EOF and its writes fail with EPIPE).
 */
import { Duplex } from 'node:stream';

export interface PairEndOptions {
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  /** Default true: the end stays writable after it read EOF, as the transport's sockets do. */
  readonly allowHalfOpen?: boolean;
}

function epipe(): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error('write EPIPE: the other end of the in-process connection is closed');
  err.code = 'EPIPE';
  return err;
}

export class PairEnd extends Duplex {
  peer: PairEnd | undefined = undefined;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly remoteFamily = 'IPv4';
  readonly localAddress = '127.0.0.1';
  readonly localPort = 0;
  /** The peer's write waiting for this end to be read again (backpressure). */
  private pendingWrite: ((err?: Error | null) => void) | undefined = undefined;
  private eof = false;
  /** net.Socket's field: a pair is connected from the start. */
  readonly connecting = false;

  constructor(o: PairEndOptions = {}) {
    super({ allowHalfOpen: o.allowHalfOpen ?? true, decodeStrings: true });
    this.remoteAddress = o.remoteAddress ?? '127.0.0.1';
    this.remotePort = o.remotePort ?? 0;
  }

  override _read(): void {
    const cb = this.pendingWrite;
    if (cb !== undefined) {
      this.pendingWrite = undefined;
      cb();
    }
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    const peer = this.peer;
    if (peer === undefined || peer.destroyed || peer.eof) {
      cb(epipe());
      return;
    }
    if (peer.push(chunk)) cb();
    else peer.pendingWrite = cb;
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.peer?.readEof();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = undefined;
    if (peer !== undefined) {
      peer.peer = undefined;
      peer.readEof();
      // The peer's blocked write can never be read now.
      const w = peer.pendingWrite;
      peer.pendingWrite = undefined;
      if (w !== undefined) w(epipe());
    }
    const w = this.pendingWrite;
    this.pendingWrite = undefined;
    if (w !== undefined) w(epipe());
    cb(err);
  }

  private readEof(): void {
    if (this.eof || this.destroyed) return;
    this.eof = true;
    this.push(null);
  }

  // net.Socket methods that callers (the transport, node:http's client) may call: nothing to do in-process.
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  setTimeout(_ms: number, cb?: () => void): this {
    if (cb !== undefined) this.once('timeout', cb);
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
}

/** Two linked ends: [client, server]. `server` carries the remote address the transport reports. */
export function socketPair(server: PairEndOptions = {}): [PairEnd, PairEnd] {
  const a = new PairEnd({ allowHalfOpen: true });
  const b = new PairEnd(server);
  a.peer = b;
  b.peer = a;
  return [a, b];
}
