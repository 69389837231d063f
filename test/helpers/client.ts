/**
 * Raw clients: a plain TCP socket that writes exact bytes and reads the raw response, so tests see what
 * is really on the wire (status line, field names and values byte for byte, framing, whether and when
 * the connection closes).
 */
import * as net from 'node:net';
import { MessageReader, type Message, type ReaderOptions } from './wire';

export const HOST = '127.0.0.1';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects after `ms` with a message naming what was awaited (a hung test fails instead of timing out tap). */
export function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `cond` every 5 ms until it is true or `ms` pass; returns its last value. */
export async function until(cond: () => boolean, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return cond();
    await sleep(5);
  }
  return true;
}

export interface ClientOptions extends ReaderOptions {
  /** Record every received byte (default true; the 100 MiB tests turn it off). */
  readonly record?: boolean;
}

export class RawClient {
  readonly reader: MessageReader;
  readonly chunks: Buffer[] = [];
  /** Bytes received in all. */
  receivedBytes = 0;
  /** The peer sent FIN. */
  ended = false;
  /** The socket is closed (either way). */
  closed = false;
  /** The socket closed with an error (ECONNRESET: the peer aborted). */
  error: NodeJS.ErrnoException | undefined;
  closedAt = 0;
  private closeWaiters: (() => void)[] = [];
  private readonly record: boolean;

  constructor(
    readonly socket: net.Socket,
    options: ClientOptions = {},
  ) {
    this.record = options.record ?? true;
    this.reader = new MessageReader('response', options);
    socket.on('data', (chunk: Buffer) => {
      this.receivedBytes += chunk.length;
      if (this.record) this.chunks.push(chunk);
      this.reader.push(chunk);
    });
    socket.on('end', () => {
      this.ended = true;
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.error = err;
    });
    socket.on('close', () => {
      this.closed = true;
      this.closedAt = Date.now();
      this.reader.end();
      this.reader.wake();
      const w = this.closeWaiters;
      this.closeWaiters = [];
      for (const f of w) f();
    });
  }

  static connect(port: number, options: ClientOptions = {}): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host: HOST });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawClient(socket, options));
      });
    });
  }

  /** Everything received so far, as one Buffer. */
  get raw(): Buffer {
    return Buffer.concat(this.chunks);
  }

  get responses(): Message[] {
    return this.reader.messages;
  }

  /** Write bytes (strings are latin1: one char, one byte). Resolves when handed to the kernel. */
  write(data: string | Buffer): Promise<void> {
    const buf = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    return new Promise((resolve, reject) => {
      this.socket.write(buf, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** The next request written is a HEAD: its response has no body. */
  expectHeadResponse(): void {
    this.reader.headRequests.push(true);
  }

  /** Resolves with the `n`th message (1-based, interim responses counted), or rejects on close/timeout. */
  async message(n: number, ms = 5000): Promise<Message> {
    await within(ms, `response #${n}`, this.waitMessages(n));
    return this.reader.messages[n - 1] as Message;
  }

  /** Resolves with the first final (non-1xx) response after `after` messages. */
  async finalResponse(ms = 5000, after = 0): Promise<Message> {
    const deadline = Date.now() + ms;
    for (let n = after + 1; ; n++) {
      const m = await this.message(n, Math.max(1, deadline - Date.now()));
      if (!m.interim) return m;
    }
  }

  private async waitMessages(n: number): Promise<void> {
    while (this.reader.messages.length < n) {
      if (this.closed)
        throw new Error(
          `connection closed after ${this.reader.messages.length} complete response(s); received ${this.receivedBytes} bytes: ${JSON.stringify(this.raw.toString('latin1').slice(0, 400))}`,
        );
      await new Promise<void>((resolve) => {
        this.reader.waitFor(this.reader.messages.length + 1).then(resolve, resolve);
        this.closeWaiters.push(resolve);
      });
    }
  }

  /** Resolves true once the socket is closed, false if it is still open after `ms`. */
  waitClose(ms = 3000): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.closed), ms);
      this.closeWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

export interface RawResult {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly text: string;
  readonly response: Message;
  /** Every response received (1xx included), in order. */
  readonly responses: readonly Message[];
  /** Every byte received. */
  readonly raw: Buffer;
  /** The connection was closed by the proxy (waited for when the response says Connection: close). */
  readonly closed: boolean;
}

export interface RawRequestOptions {
  /** How long to wait for the response (default 5000 ms). */
  readonly timeout?: number;
  /** The request is a HEAD. */
  readonly head?: boolean;
  /** After the response: wait this long to see whether the connection stays open (default 0). */
  readonly settle?: number;
  /** Wait for the close even when the response does not announce it. */
  readonly waitClose?: boolean;
}

/** A RawResult from a client and one of its responses. */
export function toResult(c: RawClient, response: Message): RawResult {
  return {
    status: response.status,
    headers: response.headers,
    body: response.body,
    text: response.body.toString('latin1'),
    response,
    responses: c.responses.slice(),
    raw: c.raw,
    closed: c.closed,
  };
}

/**
 * Connect, write `bytes`, read one final response. When the response says `Connection: close` (or
 * `waitClose` is set) it also waits up to 2 s for the connection to close and reports whether it did.
 */
export async function rawRequest(port: number, bytes: string | Buffer, options: RawRequestOptions = {}): Promise<RawResult> {
  const c = await RawClient.connect(port);
  try {
    if (options.head === true) c.expectHeadResponse();
    await c.write(bytes);
    const response = await c.finalResponse(options.timeout ?? 5000);
    const announcesClose = /(^|,)\s*close\s*(,|$)/i.test(response.headers['connection'] ?? '');
    if (announcesClose || options.waitClose === true) await c.waitClose(2000);
    else if (options.settle !== undefined) await sleep(options.settle);
    return toResult(c, response);
  } finally {
    c.destroy();
  }
}

/** A GET with the usual fields. */
export function get(path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: client.test\r\n${extra}\r\n`;
}
