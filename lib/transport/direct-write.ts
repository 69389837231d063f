/**
 * Writes that go straight to a plain TCP socket's libuv handle, skipping node:stream's Writable machinery
 * (write → writeOrBuffer → _write → writeGeneric → afterWrite on the next tick) when nothing is queued in
 * the stream. Measured: docs/performance.md, "Changes that moved the figures".
 *
 * The handle's own write queue keeps every byte in order whichever path a write takes: a direct write
 * that libuv cannot finish at once stays queued in libuv, and a later socket.write() queues behind it.
 * Such a write is counted on the socket (`pendingWrites`); it reports backpressure (false) and emits
 * 'drain' when libuv finishes it, which is what the transport's callers listen for. TLS sockets, sockets
 * still connecting or corked, and streams holding queued bytes always take socket.write().
 *
 * The handle API (WriteWrap, streamBaseState) is Node's internal stream_wrap binding, reached through
 * process.binding (DEP0111, a documentation-only deprecation on Node 20 to 26). Where it is missing or
 * refused (a later Node, the permission model, `--pending-deprecation`), and for a transport whose
 * settings turn them off (TransportSettings.directWrites: the configuration maps THROUGHWAY_DIRECT_WRITES=0
 * onto it; the transport reads no environment), every write takes socket.write(): behaviour is the same,
 * only dearer.
 */
import type { Socket } from 'node:net';
import { getSystemErrorName } from 'node:util';
import { LengthViews } from './read-buffers';
import { InternalError } from '../errors';

interface WriteReq {
  handle: unknown;
  oncomplete: (this: WriteReq, status: number) => void;
  async: boolean;
  bytes: number;
  buffer: unknown;
  socket: DirectSocket | null;
}

interface StreamHandle {
  writeBuffer(req: WriteReq, buf: Uint8Array): number;
  writeLatin1String(req: WriteReq, s: string): number;
  /** [chunk, encoding, chunk, encoding, ...] when allBuffers is false: strings are encoded in C++. */
  writev(req: WriteReq, chunks: unknown[], allBuffers: boolean): number;
}

interface StreamWrapBinding {
  WriteWrap: new () => WriteReq;
  streamBaseState: Int32Array;
  kLastWriteWasAsync: number;
}

const kPending = Symbol('throughway.pendingWrites');

interface DirectSocket extends Socket {
  _handle: StreamHandle | null;
  encrypted?: boolean;
  [kPending]?: number;
}

/**
 * A socket's libuv handle, as a connection reads it once and hands it to every write (the `handle`
 * argument below). Read from the socket at each write (`_handle`, a getter over a symbol-keyed field), it
 * was a megamorphic keyed load in the optimised code, about 190 instructions under callgrind: the writes
 * see client and backend sockets of many maps. Net sets `_handle` to null only while destroying a socket,
 * after `destroyed` is set, and usable() checks `destroyed` first, so a handle read earlier is the socket's
 * own whenever it is used; a socket that had none yet (still connecting) is read again.
 */
export type DirectHandle = StreamHandle;

export function handleOf(socket: Socket): DirectHandle | null {
  return (socket as DirectSocket)._handle ?? null;
}

/** The `handle` of a connection whose transport turned direct writes off: every write takes socket.write(). */
export const STREAM_WRITES: DirectHandle = Object.freeze({}) as DirectHandle;

function loadBinding(): StreamWrapBinding | null {
  // With --pending-deprecation, process.binding prints DEP0111: keep the user's output clean instead.
  if (process.execArgv.includes('--pending-deprecation') || process.execArgv.includes('--pending_deprecation')) return null;
  try {
    const b = (process as unknown as { binding(name: string): Partial<StreamWrapBinding> }).binding('stream_wrap');
    if (typeof b.WriteWrap !== 'function' || !(b.streamBaseState instanceof Int32Array) || typeof b.kLastWriteWasAsync !== 'number')
      return null;
    return b as StreamWrapBinding;
  } catch {
    return null;
  }
}

const binding = loadBinding();

/** Whether writes go to the handle directly in this process (false: socket.write() everywhere). */
export const directWrites = binding !== null;

/** A libuv write status as the error socket.write() would report (code from the system's name: EPIPE, ECONNRESET...). */
function writeError(status: number): NodeJS.ErrnoException {
  const code = getSystemErrorName(status);
  const err = new Error(`write ${code}`) as NodeJS.ErrnoException;
  err.errno = status;
  err.code = code;
  err.syscall = 'write';
  return err;
}

function onComplete(this: WriteReq, status: number): void {
  const s = this.socket;
  this.socket = null;
  this.buffer = null;
  if (s === null) return;
  s[kPending] = (s[kPending] ?? 1) - 1;
  if (s.destroyed) return;
  if (status < 0) {
    s.destroy(writeError(status));
    return;
  }
  if (s[kPending] === 0 && s.writableLength === 0) s.emit('drain');
}

function usable(s: DirectSocket, known: StreamHandle | null | undefined): StreamHandle | null {
  if (known === STREAM_WRITES) return null;
  const h = known ?? s._handle;
  if (
    h === null ||
    h === undefined ||
    s.encrypted === true ||
    s.connecting ||
    s.destroyed ||
    s.writableLength !== 0 ||
    s.writableCorked !== 0 ||
    s.writableEnded
  )
    return null;
  return h;
}

function dispatched(s: DirectSocket, req: WriteReq, err: number, data: unknown): boolean {
  if (err !== 0) {
    s.destroy(writeError(err));
    return false;
  }
  if ((binding as StreamWrapBinding).streamBaseState[(binding as StreamWrapBinding).kLastWriteWasAsync] === 0) {
    spareReq = req;
    return true;
  }
  // libuv keeps the rest queued; hold the bytes alive until it reports completion.
  req.async = true;
  req.buffer = data;
  req.socket = s;
  s[kPending] = (s[kPending] ?? 0) + 1;
  return false;
}

/**
 * The request object of the last write when that write finished at once, for the next write. Node's
 * StreamBase attaches its C++ write request to the object only when libuv keeps bytes queued
 * (src/stream_base.cc, StreamBase::Write: a write that DoTryWrite finishes returns before
 * CreateWriteWrap), so the object of a finished write is as it was made. Making one per write (a construct
 * call into C++ that resets its internal fields) cost about 900 instructions per write under callgrind
 * (docs/performance.md, "Counting instructions"). An object whose write was queued, or failed, is never
 * taken again.
 */
let spareReq: WriteReq | null = null;

function newReq(h: StreamHandle): WriteReq {
  const spare = spareReq;
  if (spare !== null) {
    spareReq = null;
    spare.handle = h;
    return spare;
  }
  const req = new (binding as StreamWrapBinding).WriteWrap();
  req.handle = h;
  req.oncomplete = onComplete;
  req.async = false;
  req.bytes = 0;
  req.buffer = null;
  req.socket = null;
  return req;
}

/** socket.write(buf), straight to the handle when it can. Returns false when bytes are still queued. */
export function writeBuffer(socket: Socket, buf: Buffer, handle?: DirectHandle | null): boolean {
  const s = socket as DirectSocket;
  const h = binding === null ? null : usable(s, handle);
  if (h === null) return socket.write(buf);
  const req = newReq(h);
  return dispatched(s, req, h.writeBuffer(req, buf), buf);
}

/** socket.write(str, 'latin1'), straight to the handle when it can. Returns false when bytes are still queued. */
export function writeLatin1(socket: Socket, str: string, handle?: DirectHandle | null): boolean {
  const s = socket as DirectSocket;
  const h = binding === null ? null : usable(s, handle);
  if (h === null) return socket.write(str, 'latin1');
  const req = newReq(h);
  return dispatched(s, req, h.writeLatin1String(req, str), str);
}

/** A write is waiting for the peer to read (what socket.writableNeedDrain says of stream writes). */
export function writeBlocked(socket: Socket): boolean {
  return socket.writableNeedDrain || ((socket as DirectSocket)[kPending] ?? 0) > 0;
}

/** Reused argument of handle.writev (read synchronously by it): [head, 'latin1', body, 'buffer']. */
const pair: unknown[] = ['', 'latin1', null, 'buffer'];

/**
 * A latin1 head and the first body bytes in one write: one writev on the handle (the head encoded in C++,
 * no Buffer made in JavaScript), else both copied together and written as writeJoined() does.
 */
export function writeHeadAndBody(socket: Socket, head: string, body: Buffer, handle?: DirectHandle | null): boolean {
  const s = socket as DirectSocket;
  const h = binding === null ? null : usable(s, handle);
  if (h === null) return writeJoined(socket, head, body, handle);
  const req = newReq(h);
  pair[0] = head;
  pair[2] = body;
  const err = h.writev(req, pair, false);
  pair[0] = '';
  pair[2] = null;
  return dispatched(s, req, err, [head, body]);
}

/** Buffer's latin1 encoder: present at runtime (Node 20 to 26), missing from @types/node. */
interface Latin1Writable extends Buffer {
  latin1Write(s: string, offset: number, length: number): number;
}
if (typeof (Buffer.prototype as Partial<Latin1Writable>).latin1Write !== 'function')
  throw new InternalError('this Node.js has no Buffer.prototype.latin1Write; throughway needs Node 20 or later');
/**
 * The two methods writeJoined() calls, read once: read from the buffer at each call they compiled to
 * generic property loads (the site sees Buffers of several maps), as in parser.ts's `latin1Slice`.
 */
const latin1Write = (Buffer.prototype as Latin1Writable).latin1Write;
const bytesSet = Uint8Array.prototype.set;

/** A head and body of at most this many bytes are joined in the reused buffer; longer ones in a Buffer of their own. */
export const JOIN_SIZE = 4096;
/** Views of the buffer writeJoined() reuses while every write of it finishes at once. */
const joinViews = new LengthViews(Buffer.allocUnsafeSlow(JOIN_SIZE));

/**
 * A latin1 head and the body bytes after it, copied into one buffer and written at once (one write, the
 * socket's `write()` semantics). Up to JOIN_SIZE bytes the buffer is the process's join buffer, reused
 * for as long as each write of it finishes at once; a write that libuv or the stream keeps queued keeps
 * that buffer, and the next join takes a new one. Longer ones go in a Buffer of their own. A Buffer made
 * per write and Buffer.write()'s argument handling cost about 1,000 instructions per small answer under
 * callgrind (docs/performance.md, "Counting instructions"). `body` is read before this returns.
 */
export function writeJoined(socket: Socket, head: string, body: Uint8Array, handle?: DirectHandle | null): boolean {
  const len = head.length + body.length;
  const reused = len <= JOIN_SIZE;
  const buf = reused ? joinViews.of(len) : Buffer.allocUnsafe(len);
  // latin1: one byte per character, so the head's length is its byte length.
  latin1Write.call(buf, head, 0, head.length);
  bytesSet.call(buf, body, head.length);
  const ok = writeBuffer(socket, buf, handle);
  if (reused && writesPending(socket)) joinViews.reset(Buffer.allocUnsafeSlow(JOIN_SIZE));
  return ok;
}

/** Bytes a write still holds: queued in the stream, or direct writes libuv has not finished. */
export function writesPending(socket: Socket): boolean {
  return socket.writableLength > 0 || ((socket as DirectSocket)[kPending] ?? 0) > 0;
}
