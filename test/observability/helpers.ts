/**
 * Test helpers for tracing and analytics: a collector / receiver stub on port 0 that keeps every POST
 * (path, fields, parsed JSON body) and answers a chosen status.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { HOST } from '../gateway/helpers';

export interface Post {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: unknown;
}

export interface Collector {
  readonly port: number;
  readonly url: string;
  readonly posts: Post[];
  /** Status answered to the next POSTs (default 202, Zipkin's). */
  status: number;
  close(): Promise<void>;
}

export async function collector(status = 202): Promise<Collector> {
  const posts: Post[] = [];
  const c = { status } as { status: number };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      posts.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(c.status, { 'Content-Length': '0' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return Object.assign(c, {
    port,
    url: `http://${HOST}:${port}`,
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

/** Every element of every POSTed JSON array, in arrival order. */
export function items<T>(c: Collector): T[] {
  return c.posts.flatMap((p) => (Array.isArray(p.body) ? (p.body as T[]) : []));
}

/** The value of a raw field (lower-case name) as the backend received it; all of them. */
export function fieldValues(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === name) out.push(raw[i + 1] as string);
  return out;
}
