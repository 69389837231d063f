/**
 * Scale-out test helpers: real `throughway start` processes (dist/lib/cli.js) in temporary directories,
 * their output kept; a private redis-server on a free port (tests that stop Redis never touch the
 * shared one); small HTTP calls to the key manager.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { until } from '../gateway/helpers';
import { saltedOffset } from '../ports';

const root = path.join(__dirname, '..', '..', '..');
export const CLI = path.join(root, 'dist', 'lib', 'cli.js');
export const ADMIN = { user: 'admin', password: 'admin-pw-1' };

/** Offsets below the ephemeral range, clear of listening ports (test/ports.ts says why); five nodes per base. */
export function baseOffset(salt = 0): number {
  return saltedOffset(salt, 5);
}

export interface Proc {
  readonly child: ChildProcess;
  readonly dir: string;
  out: string;
  err: string;
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `files`: other files beside deployment.toml (e.g. policies.toml), by name. */
export function spawnNode(
  toml: string,
  apis: Record<string, string> = {},
  args: readonly string[] = [],
  files: Record<string, string> = {},
): Proc {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-scale-'));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), toml);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  fs.mkdirSync(path.join(dir, 'apis'));
  for (const [name, text] of Object.entries(apis)) {
    // A tenant's file is named t/<domain>/<file> (docs/tenants.md).
    fs.mkdirSync(path.dirname(path.join(dir, 'apis', name)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'apis', name), text);
  }
  return spawnIn(dir, args);
}

/** `throughway start` again in the directory of a node that exited (its store, keys and files kept). */
export function restartNode(p: Proc, args: readonly string[] = []): Proc {
  return spawnIn(p.dir, args);
}

function spawnIn(dir: string, args: readonly string[]): Proc {
  const child = spawn(process.execPath, [CLI, 'start', '--config', 'deployment.toml', ...args], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const p: Proc = {
    child,
    dir,
    out: '',
    err: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const code = await Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
  child.stdout?.on('data', (c: Buffer) => (p.out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (p.err += c.toString()));
  return p;
}

export async function started(p: Proc, marker: RegExp, ms = 20_000): Promise<boolean> {
  return until(() => marker.test(p.out) || p.child.exitCode !== null, ms, 25).then(() => marker.test(p.out));
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface OwnRedis {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export const REDIS_SERVER = '/usr/bin/redis-server';

/** A private redis-server (`--save ''`): stopped and started again by the test. */
export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const pingable = (): Promise<boolean> =>
    new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => s.end('PING\r\n'));
      s.on('data', (d: Buffer) => resolve(d.toString().startsWith('+PONG')));
      s.on('error', () => resolve(false));
      s.setTimeout(500, () => s.destroy());
    });
  const r: OwnRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      const ok = await until(() => pingable(), 5000, 50);
      if (!ok) throw new Error(`redis-server on ${port} did not start`);
    },
    async stop() {
      const c = child;
      if (c === undefined || c.exitCode !== null) return;
      const gone = new Promise<void>((resolve) => c.on('exit', () => resolve()));
      c.kill('SIGKILL');
      await gone;
    },
  };
  await r.start();
  return r;
}

/** A private redis-server (ownRedis, stopped at teardown), or undefined after a skip with the reason printed. */
export async function ownRedisOrSkip(t: {
  skip(msg: string, fn: () => void): unknown;
  teardown(fn: () => unknown): void;
}): Promise<OwnRedis | undefined> {
  if (!fs.existsSync(REDIS_SERVER)) {
    t.skip(`${REDIS_SERVER} not installed: cannot start a private Redis to stop and restart`, () => undefined);
    return undefined;
  }
  const own = await ownRedis();
  t.teardown(() => own.stop());
  return own;
}

export async function redisReachable(url: string | undefined): Promise<boolean> {
  // Unset, empty (`THROUGHWAY_TEST_REDIS_URL= npm test`) or not a URL: unreachable, so the test skips.
  if (url === undefined || !URL.canParse(url)) return false;
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect(Number(u.port || 6379), u.hostname);
    s.on('connect', () => s.end('PING\r\n'));
    s.on('data', (d: Buffer) => resolve(d.toString().startsWith('+PONG') || d.toString().startsWith('-NOAUTH')));
    s.on('error', () => resolve(false));
    s.setTimeout(1000, () => {
      s.destroy();
      resolve(false);
    });
  });
}

export async function http(
  url: string,
  o: { method?: string; json?: unknown; form?: Record<string, string>; auth?: { user: string; password: string }; bearer?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (o.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(o.json);
  } else if (o.form !== undefined) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(o.form).toString();
  }
  if (o.auth !== undefined) headers.Authorization = `Basic ${Buffer.from(`${o.auth.user}:${o.auth.password}`).toString('base64')}`;
  if (o.bearer !== undefined) headers.Authorization = `Bearer ${o.bearer}`;
  const res = await fetch(url, {
    method: o.method ?? (body !== undefined ? 'POST' : 'GET'),
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = {};
  }
  return { status: res.status, body: parsed, text };
}

export function securedApi(endpoint: string, context = '/shop'): string {
  return `name = "Shop"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "oauth2"\n[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

/** deployment.toml of one node. */
export function nodeToml(o: {
  offset: number;
  role: string;
  redis?: string;
  channel: string;
  km?: number;
  labels?: readonly string[];
  extra?: string;
}): string {
  let t = `[server]\nhostname = "localhost"\noffset = ${o.offset}\nserver_role = "${o.role}"\n[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n[server_health_check]\nenable = true\n`;
  if (o.km !== undefined)
    t += `[apim.key_manager]\nservice_url = "http://127.0.0.1:${o.km}/services/"\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n`;
  t += `[apim.sync_runtime_artifacts.gateway]\ndeployment_retry_duration = 100\nmax_retry_count = 20\nretry_progression_factor = 1.5\n`;
  if (o.labels !== undefined) t += `gateway_labels = ${JSON.stringify(o.labels)}\n`;
  if (o.redis !== undefined) t += `[apim.event_hub]\nevent_listening_endpoints = ["${o.redis}"]\n`;
  t += `[throughway.scale]\nchannel = "${o.channel}"\nreconnect_min = 50\nreconnect_max = 500\n`;
  t += o.extra ?? '';
  return t;
}

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  /** Closes the listener and every connection through it: to its clients, the target is gone. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * A TCP relay to 127.0.0.1:`target` on a port of its own: one process's way to the target can be cut and
 * restored while other processes keep theirs (a network partition of that one process).
 */
export async function tcpProxy(target: number): Promise<TcpProxy> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const p: TcpProxy = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      const s = net.createServer((client) => {
        const upstream = net.connect(target, '127.0.0.1');
        for (const x of [client, upstream]) {
          sockets.add(x);
          x.on('close', () => sockets.delete(x));
          x.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server = s;
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => resolve());
      });
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const x of sockets) x.destroy();
      if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
  await p.start();
  return p;
}

/**
 * Spawns a node at offset baseOffset(salt) + index and waits for `marker`; when a fixed port was taken
 * (EADDRINUSE: another test's node may have taken it since baseOffset looked), again at the same index of
 * two other bases. The node, the
 * offset it runs at, and whether the marker was seen (false: the caller's assertion prints the output).
 */
export async function spawnStarted(o: {
  salt: number;
  index?: number;
  toml: (offset: number) => string;
  apis?: Record<string, string>;
  marker: RegExp;
  ms?: number;
}): Promise<{ node: Proc; offset: number; ok: boolean }> {
  for (let attempt = 0; ; attempt++) {
    const offset = baseOffset(o.salt + attempt * 100) + (o.index ?? 0);
    const node = spawnNode(o.toml(offset), o.apis ?? {});
    const ok = await started(node, o.marker, o.ms);
    if (ok || attempt === 2 || !/EADDRINUSE/.test(node.out + node.err)) return { node, offset, ok };
    await node.stop('SIGKILL');
  }
}

/** A GraphQL API file without authentication, its schema named `schema` beside it (docs/graphql.md). */
export function graphqlApi(port: number, schema = 'orders.graphql'): string {
  return `name = "Orders"\ncontext = "/orders"\nversion = "1.0.0"\ntype = "GRAPHQL"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://127.0.0.1:${port}/graphql"\n[graphql]\nschema = "${schema}"\n`;
}
