/**
 * A key manager on 127.0.0.1 port 0 over a fresh embedded store, with a log captured in memory (tests
 * grep it for secrets), and small fetch helpers for form and JSON requests.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { createKeyManager, type KeyManager, type KeyManagerOptions } from '../../lib/keymanager';
import { createEventBus, type AnyEvent, type EventBus } from '../../lib/events/bus';
import { createLogger } from '../../lib/log';
import { openStore } from '../../lib/store/open';
import type { Store } from '../../lib/store/types';

export interface Harness {
  readonly km: KeyManager;
  readonly store: Store;
  readonly url: string;
  readonly events: AnyEvent[];
  /** The key manager's bus (a gateway in the same process subscribes to it). */
  readonly bus: EventBus;
  readonly logLines: string[];
  readonly dir: string;
  close(): Promise<void>;
}

export const ADMIN = { user: 'admin', password: 'admin-pw-1' };

export async function startKeyManager(
  toml = '',
  options: {
    apiScopes?: KeyManagerOptions['apiScopes'];
    dir?: string;
    database?: string;
    deployments?: KeyManagerOptions['deployments'];
    apiFiles?: KeyManagerOptions['apiFiles'];
    port?: number;
  } = {},
): Promise<Harness> {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tw-km-'));
  const database =
    options.database ?? `[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n`;
  const text = `[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n${database}${toml}`;
  const loaded = loadConfig({ text, env: {} });
  if (!loaded.ok) throw new Error(`test config invalid: ${JSON.stringify(loaded.diagnostics)}`);
  const logLines: string[] = [];
  const logger = createLogger('debug', { write: (l: string) => logLines.push(l) });
  const store = await openStore(loaded.config, dir);
  const bus = createEventBus();
  const events: AnyEvent[] = [];
  bus.subscribe((e) => events.push(e));
  let km: KeyManager;
  try {
    km = await createKeyManager({
      loaded,
      store,
      bus,
      logger,
      ...(options.apiScopes !== undefined ? { apiScopes: options.apiScopes } : {}),
      ...(options.deployments !== undefined ? { deployments: options.deployments } : {}),
      ...(options.apiFiles !== undefined ? { apiFiles: options.apiFiles } : {}),
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const a = await km.listen(options.port ?? 0, '127.0.0.1');
  return {
    km,
    store,
    url: `http://127.0.0.1:${a.port}`,
    events,
    bus,
    logLines,
    dir,
    async close() {
      await km.close();
      await store.close();
      if (options.dir === undefined) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A free loopback port (listen on 0, close), for a key manager whose issuer must name its port. */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
  readonly text: string;
}

export async function reply(r: Response): Promise<Reply> {
  const text = await r.text();
  let body: Record<string, unknown> = {};
  try {
    body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    body = {};
  }
  return { status: r.status, headers: r.headers, body, text };
}

export async function postForm(url: string, form: Record<string, string>, auth?: string): Promise<Reply> {
  return reply(
    await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(auth !== undefined ? { Authorization: auth } : {}) },
      body: new URLSearchParams(form).toString(),
    }),
  );
}

export async function json(method: string, url: string, body?: unknown, auth?: string): Promise<Reply> {
  return reply(
    await fetch(url, {
      method,
      headers: {
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(auth !== undefined ? { Authorization: auth } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
  );
}

export const adminAuth = (): string => basic(ADMIN.user, ADMIN.password);

/** An application with production keys, through the admin API. */
export async function appWithKeys(
  h: Harness,
  name = 'App1',
  keyBody: Record<string, unknown> = {},
): Promise<{ key: string; secret: string; appId: string }> {
  const app = await json('POST', `${h.url}/admin/v1/applications`, { name }, adminAuth());
  if (app.status !== 201) throw new Error(`create app: ${app.text}`);
  const keys = await json('POST', `${h.url}/admin/v1/applications/${encodeURIComponent(name)}/keys`, keyBody, adminAuth());
  if (keys.status !== 201) throw new Error(`keys: ${keys.text}`);
  return { key: String(keys.body.consumerKey), secret: String(keys.body.consumerSecret), appId: String(app.body.id) };
}

export function decodePayload(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}
export function decodeHeader(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** An identity provider for assertion grants: a JWKS server on a free port with one RS256 key (kid idp-1), and a second key it does not publish. */
export async function idp(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; key: CryptoKey; other: CryptoKey }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const other = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'RS256' };
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, key: privateKey, other: other.privateKey };
}

/** A JWT signed by `key` (kid idp-1) with the claims given, iat now, exp in 5 minutes unless given. */
export function assertion(
  key: CryptoKey,
  claims: { iss?: string; aud?: string; sub?: string; exp?: number; iat?: number },
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const j = new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'idp-1' }).setIssuedAt(claims.iat ?? now);
  if (claims.iss !== undefined) j.setIssuer(claims.iss);
  if (claims.aud !== undefined) j.setAudience(claims.aud);
  if (claims.sub !== undefined) j.setSubject(claims.sub);
  j.setExpirationTime(claims.exp ?? now + 300);
  return j.sign(key);
}
