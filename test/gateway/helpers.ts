/**
 * Test helpers for the gateway: a temporary configuration directory (deployment.toml, apis/, fault
 * templates), a gateway on a free port, real HTTP backends that echo what they receive, and a client on
 * raw sockets that reports status, fields and body exactly as sent.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { createGateway, type Gateway, type GatewayOptions } from '../../lib/embed';
import { createLogger, type Logger } from '../../lib/log';

export const HOST = '127.0.0.1';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Waits for the next minute when fewer than `ms` remain in this one: throttle windows are epoch-aligned
 * minutes, and a test that reads a window's counter (in Redis it expires at the window's end) must not
 * straddle two of them.
 */
export async function roomInWindow(ms: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await sleep(left + 50);
}

export async function until(cond: () => boolean | Promise<boolean>, ms = 3000, step = 10): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await sleep(step);
  }
  return cond();
}

/** A directory with deployment.toml, apis/<name>.toml and optional extra files; removed by cleanup(). */
export function confDir(toml: string, apis: Record<string, string> = {}, extra: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-gw-'));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), toml);
  fs.mkdirSync(path.join(dir, 'apis'));
  for (const [name, text] of Object.entries(apis)) fs.writeFileSync(path.join(dir, 'apis', `${name}.toml`), text);
  for (const [name, text] of Object.entries(extra)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

export const BASE_TOML = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n`;

/** A logger that keeps its lines (JSON objects) for assertions. */
export function memoryLogger(level: 'debug' | 'info' | 'warn' = 'debug'): Logger & { readonly lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(level, { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  return Object.assign(logger, { lines });
}

export interface TestGateway {
  readonly gw: Gateway;
  readonly port: number;
  readonly dir: string;
  readonly logger: ReturnType<typeof memoryLogger>;
  close(): Promise<void>;
}

/** Loads `toml` (plus apis) from a temporary directory and starts a gateway on a free port. */
export async function startGateway(
  toml: string,
  apis: Record<string, string> = {},
  extra: Record<string, string> = {},
  options: Partial<GatewayOptions> = {},
): Promise<TestGateway> {
  const dir = confDir(toml, apis, extra);
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(`test configuration invalid: ${JSON.stringify(loaded.diagnostics)}`);
  const logger = memoryLogger();
  const gw = createGateway({ loaded, logger, cwd: dir, ...options });
  const a = await gw.listen({ port: 0, host: HOST });
  return {
    gw,
    port: a.port,
    dir,
    logger,
    async close() {
      await gw.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Seen {
  readonly method: string;
  readonly url: string;
  /** Raw field pairs as the backend received them. */
  readonly headers: readonly string[];
  readonly body: string;
}

export interface EchoBackend {
  readonly port: number;
  readonly seen: Seen[];
  readonly server: http.Server;
  close(): Promise<void>;
}

/**
 * A real HTTP backend answering every request with 200 and a JSON echo of method, url and fields.
 * `/status/NNN` answers status NNN; `handler` may answer instead (return true when it did).
 */
export async function echoBackend(
  handler?: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => boolean,
): Promise<EchoBackend> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.rawHeaders, body };
      seen.push(s);
      if (handler !== undefined && handler(req, res, body)) return;
      const m = /^\/(?:.*\/)?status\/(\d{3})$/.exec((req.url ?? '').split('?')[0] ?? '');
      const out = JSON.stringify(s);
      res.writeHead(m !== null ? Number(m[1]) : 200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(out) });
      res.end(out);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    server,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A port with nothing listening (connections are refused). */
export { closedPort } from '../helpers/backend';

export interface Response {
  readonly status: number;
  /** Raw field pairs, in order. */
  readonly raw: readonly string[];
  /** Lower-case name → value (the last one when repeated). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  json(): any;
  /** All values of a field (lower-case name). */
  all(name: string): string[];
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>> | readonly string[];
  readonly body?: string;
  readonly agent?: http.Agent | false;
}

/** One request with node:http (keep-alive through `agent` when given); fields kept raw. */
export function request(port: number, pathAndQuery: string, options: RequestOptions = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers = options.headers === undefined ? {} : Array.isArray(options.headers) ? (options.headers as string[]) : options.headers;
    const req = http.request(
      {
        host: HOST,
        port,
        path: pathAndQuery,
        method: options.method ?? 'GET',
        headers: headers as http.OutgoingHttpHeaders,
        agent: options.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(toResponse(res.statusCode ?? 0, res.rawHeaders, Buffer.concat(chunks).toString('utf8'))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

function toResponse(status: number, raw: readonly string[], body: string): Response {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[(raw[i] as string).toLowerCase()] = raw[i + 1] as string;
  return {
    status,
    raw,
    headers,
    body,
    json: () => JSON.parse(body) as unknown,
    all: (name) => {
      const out: string[] = [];
      for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === name) out.push(raw[i + 1] as string);
      return out;
    },
  };
}

/** Sends raw bytes on a new connection and returns the first response (Content-Length framed). */
export function rawRequest(port: number, bytes: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, HOST);
    let buf = Buffer.alloc(0);
    const done = (): boolean => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return false;
      const head = buf.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number((head[0] ?? '').split(' ')[1]);
      const raw: string[] = [];
      for (const line of head.slice(1)) {
        const c = line.indexOf(':');
        raw.push(line.slice(0, c), line.slice(c + 1).trim());
      }
      const r = toResponse(status, raw, '');
      const len = Number(r.headers['content-length'] ?? '0');
      if (buf.length < end + 4 + len) return false;
      sock.destroy();
      resolve(toResponse(status, raw, buf.subarray(end + 4, end + 4 + len).toString('utf8')));
      return true;
    };
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      done();
    });
    sock.on('error', reject);
    sock.on('close', () => {
      if (!done()) reject(new Error(`connection closed before a complete response: ${JSON.stringify(buf.toString('latin1'))}`));
    });
    sock.write(bytes, 'latin1');
  });
}

/** The API definition file text of a small API (fields given replace the defaults). */
export function apiToml(fields: {
  name?: string;
  context?: string;
  version?: string;
  defaultVersion?: boolean;
  state?: string;
  endpoint: string;
  resources: readonly (readonly [string, readonly string[]])[];
  extra?: string;
  /**
   * `unauthenticated_policy` (docs/throttling.md). Default "Unlimited": these fixtures call APIs without authentication
   * far more than the Unauthenticated tier's 500 per minute (hot deploy under load); throttling tests
   * pass null to get the tier, or name another.
   */
  unauthenticatedPolicy?: string | null;
}): string {
  let t = `name = "${fields.name ?? 'Test'}"\ncontext = "${fields.context ?? '/test'}"\nversion = "${fields.version ?? '1.0.0'}"\nauth = "none"\n`;
  if (fields.unauthenticatedPolicy !== null) t += `unauthenticated_policy = "${fields.unauthenticatedPolicy ?? 'Unlimited'}"\n`;
  if (fields.defaultVersion === true) t += 'default_version = true\n';
  if (fields.state !== undefined) t += `state = "${fields.state}"\n`;
  if (fields.extra !== undefined) t += fields.extra + '\n';
  t += `[endpoints]\nproduction = "${fields.endpoint}"\n`;
  for (const [p, methods] of fields.resources) t += `[[resources]]\npath = "${p}"\nmethods = ${JSON.stringify(methods)}\n`;
  return t;
}
