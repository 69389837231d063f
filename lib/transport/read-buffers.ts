/**
 * Read buffers of adopted client sockets and of backend sockets (net's onread option): reads go into
 * connection-owned buffers, larger than Node's 64 KiB for bodies, taken from and given back to the
 * transport's spare list (core.ts). A buffer that a queued byte or a pending write still views is never
 * reused. Idle connections (a client between requests, a backend connection in its pool whose last
 * response was small) read into one buffer shared by the whole process, SHARED_READ_BUFFER, so an idle
 * connection holds no buffer of its own. A read into it is parsed where it lies (sharedRead); the bytes
 * that must outlive the read callback (queued, written, gathered) are copied out at that point
 * (keptBytes), so no view of it outlives the callback. Module functions over the connections (a source
 * connection's client-reader.ts, target.ts) and the WebSocket tunnel they are handed to (tunnel.ts).
 *
 * The read callbacks are closures over their connection (sourceReadCallback here, target.ts onSocketRead),
 * never a property set on the socket, and a client's address is read from the socket net accepted (index.ts
 * adopt): client and backend sockets keep the hidden class net gives every new socket. Node's own read
 * callback (`onStreamRead`, lib/internal/stream_base_commons.js) and the timer refresh it calls
 * (`_unrefTimer`) read properties of every socket of the process through one inline cache each; with a
 * class per kind of socket from the transport, a tracing or analytics exporter's HTTP client (two classes
 * in its life) took them past V8's four and every read of every socket paid its megamorphic lookup (0.24 to
 * 0.35 % of the traced gateway's perf samples; docs/performance.md, "Counting instructions").
 * test/transport/socket-shapes.test.ts checks the classes.
 */
import type { TransportCore } from './core';

/** What an adopted socket's onread callback feeds (index.ts): its source connection's reader, or a tunnel. */
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

/**
 * What adopting an accepted socket gave a connection (index.ts adopt): the holder the socket's read
 * callbacks read through, and the client's address and port, read from the socket net accepted.
 */
export interface Adoption {
  readonly holder: ReadHolder;
  readonly address: string;
  readonly port: number;
}

/** Read buffer of an idle connection: a request head or a small response of a few hundred bytes fits. */
export const SMALL_READ_BUFFER = 4096;

/**
 * The read buffer every idle connection of the process shares. Safe because reads are handled one at a
 * time on the one JavaScript thread, and every view of it that is kept past the read callback is a copy
 * (keptBytes): the next read into it, on any socket, finds no view of the last.
 */
export const SHARED_READ_BUFFER: Buffer = Buffer.allocUnsafeSlow(SMALL_READ_BUFFER);

/**
 * Buffers viewing the first n bytes of one buffer, by n, each made the first time n is asked for: at most
 * one per length of the buffer (a few hundred KB at worst, a handful in practice). A view is told by
 * identity (`has`): reading a typed array's `buffer` went through a C++ builtin, some 200 instructions,
 * under callgrind.
 */
export class LengthViews {
  private readonly views: (Buffer | undefined)[];
  /** The lengths with a view, so that another buffer (reset) clears only those. */
  private readonly made: number[] = [];
  constructor(private buffer: Buffer) {
    this.views = new Array<Buffer | undefined>(buffer.length + 1).fill(undefined);
  }

  /** The buffer's first n bytes (n at most its length). */
  of(n: number): Buffer {
    let view = this.views[n];
    if (view === undefined) {
      this.views[n] = view = Buffer.from(this.buffer.buffer, this.buffer.byteOffset, n);
      this.made.push(n);
    }
    return view;
  }

  /** Views of another buffer of the same length from now on (the old views stay valid for their holders). */
  reset(buffer: Buffer): void {
    this.buffer = buffer;
    for (const n of this.made) this.views[n] = undefined;
    this.made.length = 0;
  }

  /** Whether `b` is one of these views. */
  has(b: Buffer): boolean {
    return this.views[b.length] === b;
  }
}

const sharedViews = new LengthViews(SHARED_READ_BUFFER);

/**
 * The `nread` bytes just read into the shared buffer, without a copy: a kept view (nothing allocated).
 * Good until the read callback returns; keptBytes() copies what must last longer. Copying every read out
 * first (a Buffer of its own and a set() per read) cost about 1,200 instructions per read under callgrind
 * (docs/performance.md, "Counting instructions").
 */
export function sharedRead(nread: number): Buffer {
  return sharedViews.of(nread);
}

/**
 * chunk[start, end) as bytes that may outlive the read callback: a copy of their own when `chunk` is a
 * read into the shared buffer (sharedRead), which the next read on any socket refills; else a view of
 * it. `chunk` is the read as it came, with offsets into it, never a subarray of it: it is told by identity
 * (LengthViews.has).
 */
export function keptBytes(chunk: Buffer, start: number, end: number): Buffer {
  const whole = start === 0 && end === chunk.length;
  if (!sharedViews.has(chunk)) return whole ? chunk : chunk.subarray(start, end);
  const own = Buffer.allocUnsafe(end - start);
  own.set(whole ? chunk : chunk.subarray(start, end), 0);
  return own;
}

const SHARED_BYTES = SHARED_READ_BUFFER.buffer;
const SHARED_AT = SHARED_READ_BUFFER.byteOffset;

/**
 * chunk[start, end) as a plain view, for a copy made before the read callback returns (writeJoined). A
 * read into the shared buffer is known by identity and viewed without reading its `buffer` and
 * `byteOffset`, which in the response relay were generic property loads and a builtin call, about 500
 * instructions per small answer under callgrind (docs/performance.md, "Counting instructions").
 */
export function spanOf(chunk: Buffer, start: number, end: number): Uint8Array {
  if (sharedViews.has(chunk)) return new Uint8Array(SHARED_BYTES, SHARED_AT + start, end - start);
  return new Uint8Array(chunk.buffer, chunk.byteOffset + start, end - start);
}

/** The `nread` bytes of a read as they lie: the shared buffer's kept view (sharedRead), else a view of `buf`. */
export function readView(buf: Buffer, nread: number): Buffer {
  if (buf === SHARED_READ_BUFFER) return sharedRead(nread);
  return nread === buf.length ? buf : buf.subarray(0, nread);
}

/** The `nread` bytes of a read, as bytes that may outlive the read callback (keptBytes of the read). */
export function ownBytes(buf: Buffer, nread: number): Buffer {
  return keptBytes(readView(buf, nread), 0, nread);
}

/** net's onread callback of an adopted socket, reading through its holder (see the module comment). */
export function sourceReadCallback(holder: ReadHolder): (nread: number, buf: Buffer) => boolean {
  return (nread, buf) => {
    const conn = holder.conn;
    if (conn !== null) conn.onRead(buf, nread);
    return true;
  };
}

/** net's onread buffer generator of an adopted socket. */
export function nextBuffer(holder: ReadHolder): Buffer {
  const conn = holder.conn;
  if (conn === null) return holder.first ?? SHARED_READ_BUFFER;
  holder.first = null;
  return conn.nextReadBuffer();
}

/** What the choice of a source connection's next read buffer uses of its reader (client-reader.ts). */
export interface SourceBuffers {
  readonly core: TransportCore;
  /** The current read buffer (SHARED_READ_BUFFER while idle). */
  readBuf: Buffer | null;
  /** A view of the current buffer is still held (queued bytes, a pending target write). */
  retainRead: boolean;
  /** The last read filled its buffer. */
  readonly lastReadFull: boolean;
  /** A request body is in progress (parsed or counted, exchange.ts BodyMode). */
  readonly bodyInProgress: boolean;
}

/**
 * The buffer for the next read (net's onread generator, called after every read). Large
 * (settings.readBufferSize, from the transport's spare list) while a body streams or a read filled its
 * buffer; the shared small one otherwise, so an idle keep-alive client holds no read buffer of its own.
 * A large buffer a queued byte or pending target write still views is never reused or given back
 * (retainRead); what is kept of a shared-buffer read is a copy (keptBytes), which the GC frees.
 */
export function nextSourceBuffer(conn: SourceBuffers): Buffer {
  const cur = conn.readBuf;
  const wantLarge = conn.lastReadFull || conn.bodyInProgress;
  if (cur !== null && !conn.retainRead && (cur !== SHARED_READ_BUFFER) === wantLarge) return cur;
  if (cur !== null && cur !== SHARED_READ_BUFFER && !conn.retainRead) conn.core.giveReadBuffer(cur);
  conn.retainRead = false;
  const next = wantLarge ? conn.core.takeReadBuffer() : SHARED_READ_BUFFER;
  conn.readBuf = next;
  return next;
}

/**
 * An adopted client socket handed to a WebSocket tunnel (tunnel.ts): its reads go to the tunnel, still into
 * the connection's buffers; a read of the shared buffer is copied first (the tunnel may keep it queued).
 */
export function redirectSourceReads(
  conn: SourceBuffers & { lastReadFull: boolean; nextReadBuffer(): Buffer },
  holder: ReadHolder,
  onRead: (buf: Buffer, nread: number) => void,
): void {
  holder.conn = {
    onRead: (buf, nread) => {
      conn.lastReadFull = nread === buf.length;
      if (buf === SHARED_READ_BUFFER) onRead(ownBytes(buf, nread), nread);
      else onRead(buf, nread);
    },
    nextReadBuffer: () => conn.nextReadBuffer(),
  };
}

/** Who reads a target socket's onread buffers: its connection, or the WebSocket tunnel it was handed to. */
export interface TargetReader {
  /** `chunk` may view the shared read buffer: bytes kept past the call are copied (keptBytes). */
  onRead(chunk: Buffer, end: number): void;
}
