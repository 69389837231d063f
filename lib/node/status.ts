/**
 * The runtime view on the operations port (docs/operations.md, "Runtime view"): `GET /status`, for the
 * super tenant's admins only, authenticated as the admin API authenticates (HTTP Basic against the key
 * manager's users, its sign-in guard, a tenant admin refused with 403: lib/keymanager/http.ts
 * requireSuperAdmin). A node without a key manager (a gateway-worker, a console node) has no user store:
 * there the credentials are the [super_admin] username and password of its own deployment.toml.
 *
 * The document is built when asked: the listeners with their open connections, the backend pools per
 * endpoint (lib/transport pools()), the effective configuration with each value's source
 * (lib/config/sources.ts, secrets masked), the last faults (lib/observability/fault-ring.ts), the plugins
 * and the tenants. Nothing of it is kept per request.
 */
import * as crypto from 'node:crypto';
import type * as http from 'node:http';
import type * as net from 'node:net';
import { configSources } from '../config/sources';
import { requireSuperAdmin } from '../keymanager/http';
import { parseBasic } from '../keymanager/client-auth';
import { OAuthError } from '../keymanager/errors';
import { SUPER_TENANT } from '../tenants';
import type { Boot } from './boot';

/** The path of the runtime view on the operations port. */
export const STATUS_PATH = '/status';

/** A listener of the node as the view lists it; `connections` is counted when the view is asked for. */
export interface ListenerEntry {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  /** http, https (with h2 when ALPN offers it), ws, wss. */
  readonly protocol: string;
  connections(): number | undefined | Promise<number | undefined>;
}

/** A server's open connections (node:http and node:tls count them), for the runtime view. */
export function serverConnections(srv: net.Server): () => Promise<number | undefined> {
  return () => new Promise((resolve) => srv.getConnections((err, n) => resolve(err !== null && err !== undefined ? undefined : n)));
}

const CHALLENGE = 'Basic realm="throughway management", charset="UTF-8"';

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

const digest = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

/** The caller is the super tenant's admin; otherwise the refusal has been sent and false is returned. */
async function authenticated(b: Boot, req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> {
  const km = b.keyManager;
  const store = b.store;
  if (km !== undefined && store !== undefined) {
    try {
      await requireSuperAdmin({ store, guard: km.guard, tenants: km.tenants }, req);
      return true;
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      sendJson(res, err.status, err.body(), err.headers);
      return false;
    }
  }
  const creds = parseBasic(req.headers.authorization);
  const sa = b.config.super_admin;
  // Compared as digests of equal length, in constant time.
  const ok =
    creds !== undefined &&
    crypto.timingSafeEqual(digest(creds.user), digest(sa.username)) &&
    crypto.timingSafeEqual(digest(creds.password), digest(sa.password));
  if (ok) return true;
  sendJson(
    res,
    401,
    {
      error: 'invalid_client',
      error_description: creds === undefined ? 'super admin credentials required (HTTP Basic)' : 'invalid super admin credentials',
    },
    { 'WWW-Authenticate': CHALLENGE },
  );
  return false;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const pathOf = (url: string): string => {
  // Queries may carry credentials (a WebSocket's access_token): the view shows the path only.
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

/** The runtime view's document (docs/operations.md lists its fields). */
export async function statusDocument(b: Boot): Promise<Record<string, unknown>> {
  const gw = b.gateway;
  const transport = gw?.transport;
  const listeners = await Promise.all(
    b.listeners.map(async (l) => ({
      name: l.name,
      address: l.address,
      port: l.port,
      protocol: l.protocol,
      connections: (await l.connections()) ?? null,
    })),
  );
  const pools = (transport?.pools() ?? []).map((p) => ({
    endpoint: p.key,
    open: p.open,
    idle: p.idle,
    inUse: p.inUse,
    waiting: p.waiting,
    max: p.max,
    failures: p.failures,
    lastError:
      p.lastError === undefined
        ? null
        : {
            code: p.lastError.code,
            base: p.lastError.base,
            state: p.lastError.state,
            reason: p.lastError.reason,
            cause: p.lastError.cause ?? null,
            at: iso(p.lastError.at),
          },
  }));
  const ring = b.faults;
  const recent = ring.entries().map((f) => ({
    code: f.code,
    at: iso(f.at),
    api: gw?.apiOf(f.url) ?? null,
    status: f.status,
    method: f.method,
    path: pathOf(f.url),
  }));
  const byCode: Record<string, number> = {};
  for (const f of recent) byCode[String(f.code)] = (byCode[String(f.code)] ?? 0) + 1;
  const plugins = b.plugins;
  const tenants = b.keyManager?.tenants.list().filter((t) => t.domain !== SUPER_TENANT);
  return {
    node: {
      role: b.config.server.server_role,
      hostname: b.config.server.hostname,
      pid: process.pid,
      startedAt: iso(b.startedAt),
      uptimeSeconds: Math.round((Date.now() - b.startedAt) / 1000),
    },
    listeners,
    pools,
    connections: transport !== undefined ? transport.connections() : null,
    faults: { total: ring.total, capacity: ring.capacity, byCode, recent },
    plugins: { count: plugins?.names.length ?? 0, names: plugins?.names ?? [], attachable: plugins?.attachable ?? [] },
    tenants: { count: tenants?.length ?? null },
    config: { file: b.loaded.file, values: configSources(b.loaded) },
  };
}

/** `GET /status` (HEAD too); other methods on the path get 405. */
export async function serveStatus(b: Boot, req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'invalid_request', error_description: `${STATUS_PATH} takes GET` }, { Allow: 'GET, HEAD' });
    return true;
  }
  if (!(await authenticated(b, req, res))) return true;
  sendJson(res, 200, await statusDocument(b));
  return true;
}
