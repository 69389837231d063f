/**
 * The client side's writes: one per source connection, owning the client socket's writes, direct to its
 * libuv handle where it can (direct-write.ts). The target serving an exchange writes the response through
 * this (Exchange.writer, the ClientWrites of exchange.ts), never through the source connection, and local
 * answers (local.ts) write through it too.
 */
import type { Socket } from 'node:net';
import { handleOf, STREAM_WRITES, writeBuffer, writeHeadAndBody, writeJoined, writeLatin1, type DirectHandle } from './direct-write';
import type { ClientWrites } from './exchange';

export class ClientWriter implements ClientWrites {
  /** The socket's libuv handle once a write has read it (handle()). */
  private directHandle: DirectHandle | null = null;
  private corked = 0;

  constructor(
    readonly socket: Socket,
    /** Direct writes allowed ([throughway] settings, TransportSettings.directWrites). */
    private readonly direct: boolean,
  ) {}

  /** The socket's libuv handle, read once for the writes (direct-write.ts `DirectHandle`); null: socket.write(). */
  private handle(): DirectHandle | null {
    if (!this.direct) return STREAM_WRITES;
    return this.directHandle ?? (this.directHandle = handleOf(this.socket));
  }

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

  writeHead(head: string): void {
    writeLatin1(this.socket, head, this.handle());
  }

  /** The response head with the first body bytes, in one write. Returns false when the client's socket buffer is full. */
  writeHeadAndBody(head: string, body: Buffer): boolean {
    return writeHeadAndBody(this.socket, head, body, this.handle());
  }

  /** The response head with a few body bytes copied after it, in one write (direct-write.ts writeJoined). */
  writeJoined(head: string, body: Uint8Array): boolean {
    return writeJoined(this.socket, head, body, this.handle());
  }

  /** Response body bytes. Returns false when the client's socket buffer is full (pause the target). */
  writeBody(buf: Buffer): boolean {
    return writeBuffer(this.socket, buf, this.handle());
  }

  /** A local answer (local.ts): its head and body in one corked write through the stream. */
  writeLocal(head: string, body: Buffer | undefined): void {
    this.cork();
    this.socket.write(head, 'latin1');
    if (body !== undefined) this.socket.write(body);
    this.uncork();
  }
}
