/**
 * gateway.inject(): one request through the whole chain (transport parser, phases, backend, response
 * rules) without a client socket, for users' own tests. The request travels over an in-process socket
 * pair (pair.ts) into the transport's handleConnection; node:http's client writes it and parses the
 * answer on the other end, so what is tested is the gateway's real byte-level behaviour. The backend is
 * real: forwarding opens a connection to it as usual.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { socketPair } from './pair';

export interface InjectOptions {
  /** Default GET. */
  readonly method?: string;
  /** The request target, e.g. "/pets/v1/pets/7?x=1". */
  readonly url: string;
  /** Fields as an object or flat [name, value, ...] pairs. Host defaults to "localhost". */
  readonly headers?: Readonly<Record<string, string | readonly string[]>> | readonly string[];
  /** A string or Buffer is sent as is; any other value as JSON (with Content-Type: application/json). */
  readonly body?: string | Buffer | Uint8Array | object;
  /** The client address the gateway sees (default 127.0.0.1). */
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  /** As if over TLS: the request's `secure` flag, X-Forwarded-Proto: https. */
  readonly secure?: boolean;
}

export interface InjectResponse {
  readonly status: number;
  readonly statusMessage: string;
  /** Lower-case names (node:http's IncomingMessage.headers). */
  readonly headers: http.IncomingHttpHeaders;
  /** As sent: flat [name, value, ...] in original case and order. */
  readonly rawHeaders: readonly string[];
  /** The body as UTF-8 text. */
  readonly body: string;
  readonly rawBody: Buffer;
  /** The body parsed as JSON (throws when it is not). */
  json<T = unknown>(): T;
}

/** What inject() needs of a gateway: a way to serve a socket. */
export type ConnectionHandler = (socket: Socket, secure: boolean) => void;

function hasField(headers: InjectOptions['headers'], lower: string): boolean {
  if (headers === undefined) return false;
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if ((headers[i] as string).toLowerCase() === lower) return true;
    return false;
  }
  return Object.keys(headers).some((k) => k.toLowerCase() === lower);
}

function payload(o: InjectOptions): { bytes: Buffer | undefined; json: boolean } {
  const b = o.body;
  if (b === undefined) return { bytes: undefined, json: false };
  if (typeof b === 'string') return { bytes: Buffer.from(b), json: false };
  if (Buffer.isBuffer(b)) return { bytes: b, json: false };
  if (b instanceof Uint8Array) return { bytes: Buffer.from(b.buffer, b.byteOffset, b.byteLength), json: false };
  return { bytes: Buffer.from(JSON.stringify(b)), json: true };
}

/** Runs one request through `serve` and resolves with the complete response. */
export function inject(serve: ConnectionHandler, o: InjectOptions): Promise<InjectResponse> {
  return new Promise((resolve, reject) => {
    const [client, server] = socketPair({ remoteAddress: o.remoteAddress ?? '127.0.0.1', remotePort: o.remotePort ?? 0 });
    const { bytes, json } = payload(o);
    let headers: Record<string, string | readonly string[]> | string[];
    if (Array.isArray(o.headers)) {
      headers = [...(o.headers as readonly string[])];
      if (!hasField(o.headers, 'host')) headers.push('Host', 'localhost');
      if (bytes !== undefined && !hasField(o.headers, 'content-length') && !hasField(o.headers, 'transfer-encoding'))
        headers.push('Content-Length', String(bytes.length));
      if (json && !hasField(o.headers, 'content-type')) headers.push('Content-Type', 'application/json');
    } else {
      headers = { ...(o.headers as Record<string, string | readonly string[]> | undefined) };
      if (!hasField(o.headers, 'host')) headers.Host = 'localhost';
      if (bytes !== undefined && !hasField(o.headers, 'content-length') && !hasField(o.headers, 'transfer-encoding'))
        headers['Content-Length'] = String(bytes.length);
      if (json && !hasField(o.headers, 'content-type')) headers['Content-Type'] = 'application/json';
    }
    const req = http.request({
      method: o.method ?? 'GET',
      path: o.url,
      headers: headers as http.OutgoingHttpHeaders,
      setHost: false,
      createConnection: () => client as unknown as Socket,
    });
    req.once('error', (err) => {
      server.destroy();
      reject(err);
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('error', reject);
      res.once('end', () => {
        const rawBody = Buffer.concat(chunks);
        const body = rawBody.toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          statusMessage: res.statusMessage ?? '',
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body,
          rawBody,
          json: <T>() => JSON.parse(body) as T,
        });
        client.destroy();
      });
    });
    serve(server as unknown as Socket, o.secure === true);
    req.end(bytes);
  });
}
