/**
 * The built-in demo backend ([throughway.demo], `npm start`): a few JSON resources to try the gateway
 * with, on its own port (throughway.demo.port + server.offset, default 9000), bound to 127.0.0.1.
 * conf/apis/demo.toml exposes it as the PizzaShack API. Benchmarks use it too: /small, /64k and
 * POST /upload have fixed, documented sizes.
 *
 * Every resource answers at /<name> and at /v1/<name>: the demo API's endpoint carries the /v1 base path
 * (the backend URL is the endpoint followed by the resource path), while benchmarks call it directly.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InternalError } from '../errors';

const MENU = [
  { id: 1, name: 'Margherita', description: 'Tomato, mozzarella, basil', price: 9.5, icon: '/images/margherita.png' },
  { id: 2, name: 'Marinara', description: 'Tomato, garlic, oregano', price: 7.5, icon: '/images/marinara.png' },
  { id: 3, name: 'Quattro Formaggi', description: 'Four cheeses', price: 12.0, icon: '/images/formaggi.png' },
  { id: 4, name: 'Diavola', description: 'Tomato, mozzarella, spicy salami', price: 11.0, icon: '/images/diavola.png' },
];

/** Exactly 96 bytes of JSON (benchmarks' small response). */
export const SMALL_BODY = Buffer.from(JSON.stringify({ ok: true, service: 'throughway-demo', size: 'small', pad: 'x'.repeat(33) }));
/** Exactly 65536 bytes of JSON. */
export const LARGE_BODY = (() => {
  const head = '{"size":"64k","data":"';
  const tail = '"}';
  return Buffer.from(head + 'x'.repeat(65536 - head.length - tail.length) + tail);
})();

if (SMALL_BODY.length !== 96 || LARGE_BODY.length !== 65536) throw new InternalError('demo bodies have the wrong size');

const JSON_TYPE = 'application/json';

function send(res: http.ServerResponse, status: number, body: Buffer | string | object): void {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': buf.length });
  res.end(buf);
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    req.on('end', () => resolve(size <= limit ? Buffer.concat(chunks) : undefined));
    req.on('error', reject);
  });
}

let nextOrder = 1;

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  if (path === '/v1' || path.startsWith('/v1/')) path = path.slice(3) || '/';
  const method = req.method ?? 'GET';

  if (path === '/upload' && method === 'POST') {
    // Counts the body without keeping it: benchmarks upload megabytes.
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => send(res, 200, { bytes }));
    return;
  }
  if (path.startsWith('/echo')) {
    const body = await readBody(req, 1 << 20);
    send(res, 200, { method, url, headers: req.rawHeaders, body: body?.toString('utf8') ?? null });
    return;
  }
  if (method !== 'GET' && method !== 'HEAD' && method !== 'POST') {
    send(res, 405, { error: 'method not allowed' });
    return;
  }
  if (path === '/small') return send(res, 200, SMALL_BODY);
  if (path === '/64k') return send(res, 200, LARGE_BODY);
  if (path === '/health') return send(res, 200, { status: 'ok' });
  if (path === '/menu') return send(res, 200, MENU);
  const item = /^\/menu\/(\d+)$/.exec(path);
  if (item !== null) {
    const found = MENU.find((m) => m.id === Number(item[1]));
    return found !== undefined ? send(res, 200, found) : send(res, 404, { error: `no pizza ${item[1]}` });
  }
  if (path === '/order' && method === 'POST') {
    const body = await readBody(req, 64 * 1024);
    if (body === undefined) return send(res, 413, { error: 'order too large' });
    let order: unknown;
    try {
      order = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
    } catch {
      return send(res, 400, { error: 'the order is not JSON' });
    }
    return send(res, 201, { orderId: nextOrder++, status: 'received', order });
  }
  const order = /^\/order\/([^/]+)$/.exec(path);
  if (order !== null) return send(res, 200, { orderId: decodeURIComponent(order[1] as string), status: 'baking' });
  const status = /^\/status\/(\d{3})$/.exec(path);
  if (status !== null) return send(res, Number(status[1]), { status: Number(status[1]) });
  send(res, 404, { error: `no resource ${path}` });
}

export interface DemoBackend {
  readonly server: http.Server;
  listen(): Promise<AddressInfo>;
  close(): Promise<void>;
}

export function createDemoBackend(options: { readonly port: number; readonly host?: string }): DemoBackend {
  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: 'demo backend failed' });
      else res.destroy();
    });
  });
  // Longer than the gateway's pool idle timeout, so pooled keep-alive sockets are not closed under it.
  server.keepAliveTimeout = 65_000;
  return {
    server,
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.host ?? '127.0.0.1', () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
