/**
 * Raw backends: `net` servers on 127.0.0.1 that record every byte they receive and answer (or misbehave)
 * exactly as a test says, byte for byte. Plus the two ways to make a connection fail without leaving
 * loopback: a closed port (refused) and a listener whose accept queue is full (connect never completes).
 */
import * as net from 'node:net';
import { Worker } from 'node:worker_threads';
import { MessageReader, type Head, type Message } from './wire';
import { HOST, sleep } from './client';

export class BackendConn {
  readonly chunks: Buffer[] = [];
  receivedBytes = 0;
  /** The proxy sent FIN. */
  ended = false;
  closed = false;
  closedAt = 0;
  /** Requests read on this connection (when the backend parses requests). */
  readonly reader: MessageReader | undefined;
  /** Free for a test's own per-connection bookkeeping. */
  data: Record<string, unknown> = {};

  constructor(
    readonly socket: net.Socket,
    readonly id: number,
    reader: MessageReader | undefined,
  ) {
    this.reader = reader;
  }

  get requests(): Message[] {
    return this.reader?.messages ?? [];
  }

  /** Everything this connection received. */
  get raw(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** Write bytes (strings latin1). */
  write(data: string | Buffer): boolean {
    if (this.socket.destroyed) return false;
    return this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  }

  /** Write with backpressure: resolves when the socket can take more. */
  async writeDrained(data: Buffer): Promise<void> {
    if (this.socket.destroyed) throw new Error('backend socket destroyed');
    if (!this.socket.write(data)) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = (): void => {
          this.socket.off('close', onClose);
          resolve();
        };
        const onClose = (): void => {
          this.socket.off('drain', onDrain);
          reject(new Error('backend socket closed while writing'));
        };
        this.socket.once('drain', onDrain);
        this.socket.once('close', onClose);
      });
    }
  }

  /** A complete response with a Content-Length body. */
  respond(status: number, body: string | Buffer = '', fields = ''): void {
    const b = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
    this.write(
      Buffer.concat([
        Buffer.from(`HTTP/1.1 ${status} ${status === 200 ? 'OK' : 'Status'}\r\n${fields}Content-Length: ${b.length}\r\n\r\n`, 'latin1'),
        b,
      ]),
    );
  }
}

export interface BackendOptions {
  /** Parse requests (Content-Length and chunked) and call onRequest per complete request. */
  readonly onRequest?: (conn: BackendConn, req: Message) => void;
  /** With parsing: each request head as soon as it is complete (before its body). */
  readonly onRequestHead?: (conn: BackendConn, head: Head) => void;
  /** With parsing: each body piece (for streaming checks such as hashing a 100 MiB upload). */
  readonly onRequestBody?: (conn: BackendConn, piece: Buffer) => void;
  /** Every received chunk, raw (called after recording). */
  readonly onData?: (conn: BackendConn, chunk: Buffer) => void;
  readonly onConnection?: (conn: BackendConn) => void;
  /** Do not read at all: the socket is never resumed (a backend that accepts and never reads). */
  readonly neverRead?: boolean;
  /** Keep request bodies in memory (default true). */
  readonly keepBody?: boolean;
  /** Record received bytes (default true). */
  readonly record?: boolean;
}

export interface RawBackend {
  readonly port: number;
  readonly url: string;
  readonly conns: BackendConn[];
  /** Bytes received over all connections. */
  receivedBytes(): number;
  /** Open connections. */
  open(): number;
  close(): Promise<void>;
}

/** A raw backend. Every accepted socket gets an error handler; close() destroys whatever is open. */
export async function rawBackend(options: BackendOptions = {}): Promise<RawBackend> {
  const conns: BackendConn[] = [];
  const record = options.record ?? true;
  const parse = options.onRequest !== undefined || options.onRequestHead !== undefined || options.onRequestBody !== undefined;
  const server = net.createServer({ pauseOnConnect: options.neverRead === true }, (socket) => {
    let conn: BackendConn;
    const reader = parse
      ? new MessageReader('request', {
          keepBody: options.keepBody ?? true,
          onHead: options.onRequestHead === undefined ? undefined : (h) => options.onRequestHead?.(conn, h),
          onBody: options.onRequestBody === undefined ? undefined : (piece) => options.onRequestBody?.(conn, piece),
        })
      : undefined;
    conn = new BackendConn(socket, conns.length + 1, reader);
    conns.push(conn);
    socket.on('error', () => {
      // The proxy may reset: that is what several tests provoke.
    });
    socket.on('end', () => {
      conn.ended = true;
    });
    socket.on('close', () => {
      conn.closed = true;
      conn.closedAt = Date.now();
    });
    if (options.neverRead !== true) {
      let seen = 0;
      socket.on('data', (chunk: Buffer) => {
        conn.receivedBytes += chunk.length;
        if (record) conn.chunks.push(chunk);
        options.onData?.(conn, chunk);
        if (reader !== undefined) {
          reader.push(chunk);
          // (seen++ outside the call: an optional call that is skipped does not evaluate its arguments)
          while (seen < reader.messages.length) {
            const req = reader.messages[seen++] as Message;
            options.onRequest?.(conn, req);
          }
        }
      });
    }
    options.onConnection?.(conn);
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: HOST }, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `http://${HOST}:${port}`,
    conns,
    receivedBytes: () => conns.reduce((n, c) => n + c.receivedBytes, 0),
    open: () => conns.filter((c) => !c.closed).length,
    async close() {
      for (const c of conns) c.socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether nothing listens on this loopback port (a listen that succeeds, closed at once). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: HOST, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * A free loopback port below the ephemeral range (Linux 32768-60999), from which listen(0) never hands
 * one out: for private servers (slapd) and for ports that must stay closed.
 */
export async function freeLowPort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    if (await portFree(port)) return port;
  }
  throw new Error('no free loopback port below 32768');
}

/**
 * A loopback port with nothing listening (connect: ECONNREFUSED): a freeLowPort(). A port from listen(0)
 * was in the ephemeral range, where the next listen(0) could take it again: once the gateway under test
 * did, and its "closed" endpoint answered with the gateway's own 404.
 */
export function closedPort(): Promise<number> {
  return freeLowPort();
}

export interface BlackholeListener {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A loopback listener whose accept queue is full, so a new connect to it never completes (the kernel
 * drops the SYN while the queue is full): a real connect timeout without leaving 127.0.0.0/8.
 *
 * The listening socket lives in a worker thread whose event loop is blocked in Atomics.wait right after
 * listen(), so nothing ever accepts; backlog 1 lets two connections complete, then the queue is full.
 */
export async function blackholeListener(): Promise<BlackholeListener> {
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const net = require('node:net');
     const { parentPort, workerData } = require('node:worker_threads');
     const server = net.createServer(() => {});
     server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
       server.close();
       process.exit(0);
     });`,
    { eval: true, workerData: signal },
  );
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  // Fill the accept queue: connect until one does not complete.
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 64; i++) {
    const s = net.connect({ port, host: HOST });
    s.on('error', () => {});
    fillers.push(s);
    const connected = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 200);
      s.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!connected) break;
    if (i === 63) throw new Error('blackholeListener: the accept queue never filled');
  }
  return {
    port,
    url: `http://${HOST}:${port}`,
    async close() {
      for (const s of fillers) s.destroy();
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
      await new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      await sleep(0);
    },
  };
}
