/**
 * Read buffers of adopted client sockets and of backend sockets (net's onread option): reads go into
 * connection-owned buffers, larger than Node's 64 KiB for bodies and small for idle connections, taken
 * from and given back to the transport's spare list (core.ts). A buffer that a queued byte or a pending
 * write still views is never reused. Module functions over the connections (source.ts, target.ts) and
 * the WebSocket tunnel they are handed to (tunnel.ts).
 */
import type { Socket } from 'node:net';
import type { TransportCore } from './core';

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

type HeldSocket = Socket & { [kReadHolder]?: ReadHolder };

/** The read holder of an adopted socket, or undefined (a socket that reads into Node's own buffers). */
export function readHolderOf(socket: Socket): ReadHolder | undefined {
  return (socket as HeldSocket)[kReadHolder];
}

/** net's onread callback of an adopted socket; `this` is the socket. */
export function onSourceRead(this: HeldSocket, nread: number, buf: Buffer): boolean {
  const conn = this[kReadHolder]?.conn;
  if (conn != null) conn.onRead(buf, nread);
  return true;
}

/** net's onread buffer generator of an adopted socket. */
export function nextBuffer(holder: ReadHolder): Buffer {
  const conn = holder.conn;
  if (conn === null) return holder.first ?? Buffer.allocUnsafeSlow(4096);
  holder.first = null;
  return conn.nextReadBuffer();
}

/** What the choice of a source connection's next read buffer uses of it (source.ts). */
export interface SourceBuffers {
  readonly core: TransportCore;
  /** The current read buffer, and the connection's own small one. */
  readBuf: Buffer | null;
  smallBuf: Buffer | null;
  /** A view of the current buffer is still held (queued bytes, a pending target write). */
  retainRead: boolean;
  /** The last read filled its buffer. */
  readonly lastReadFull: boolean;
  /** A request body is being parsed or counted. */
  readonly inBody: boolean;
  readonly clRemaining: number;
}

/** Read buffer of an idle client connection: a request head of a few hundred bytes fits. */
const SMALL_READ_BUFFER = 4096;

/**
 * The buffer for the next read (net's onread generator, called after every read). Large
 * (settings.readBufferSize, from the transport's spare list) while a body streams or a read filled its
 * buffer; a small one of the connection's own otherwise, so an idle keep-alive client holds 4 KiB, not
 * 128 KiB. A buffer a queued byte or pending target write still views is never reused or given back.
 */
export function nextSourceBuffer(conn: SourceBuffers): Buffer {
  const cur = conn.readBuf;
  const wantLarge = conn.lastReadFull || conn.inBody || conn.clRemaining > 0;
  if (cur !== null && !conn.retainRead && (cur !== conn.smallBuf) === wantLarge) return cur;
  if (cur !== null && cur !== conn.smallBuf && !conn.retainRead) conn.core.giveReadBuffer(cur);
  if (cur === conn.smallBuf && conn.retainRead) conn.smallBuf = null; // still viewed: never reuse it
  conn.retainRead = false;
  let next: Buffer;
  if (wantLarge) {
    next = conn.core.takeReadBuffer();
  } else {
    next = conn.smallBuf ??= Buffer.allocUnsafeSlow(SMALL_READ_BUFFER);
  }
  conn.readBuf = next;
  return next;
}

const kTarget = Symbol('throughway.target');
/** Who reads a target socket's onread buffers: its connection, or the WebSocket tunnel it was handed to. */
export interface TargetReader {
  onRead(chunk: Buffer, end: number): void;
}
interface TargetSocket extends Socket {
  [kTarget]?: TargetReader;
}

/** Who gets a target socket's reads: its connection (target.ts), then a tunnel it is handed to (tunnel.ts). */
export function setTargetReader(socket: Socket, reader: TargetReader): void {
  (socket as TargetSocket)[kTarget] = reader;
}

/** net's onread callback; `this` is the socket. Returning true keeps reading (pauses are explicit). */
export function onTargetRead(this: TargetSocket, nread: number, buf: Buffer): boolean {
  const t = this[kTarget];
  if (t !== undefined) t.onRead(buf, nread);
  return true;
}
