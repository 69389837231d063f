/**
 * Test harness for gateway security: a key manager and a gateway in one process (as `npm start` runs
 * them: the gateway reads the key manager's keys and follows its events), an echo backend, a fake clock
 * for the gateway (tokens are issued on the real one), applications with keys and subscriptions, and a
 * JWKS server on port 0 standing in for an external issuer.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { loadConfig } from '../../lib/config/load';
import { createEventBus, type EventBus } from '../../lib/events/bus';
import { createGateway, type Gateway, type GatewayOptions } from '../../lib/embed';
import { createKeyManager, type KeyManager } from '../../lib/keymanager';
import type { ApiScope } from '../../lib/keymanager/authorize';
import { keyManagerLink } from '../../lib/security';
import { openStore } from '../../lib/store/open';
import type { KeyType, Store } from '../../lib/store/types';
import { echoBackend, HOST, memoryLogger, request, type EchoBackend, type Response } from '../gateway/helpers';

export { request, type Response };

export interface Clock {
  /** Added to the real time the gateway sees (ms). */
  offset: number;
  now(): number;
}

export function fakeClock(): Clock {
  const c: Clock = { offset: 0, now: () => Date.now() + c.offset };
  return c;
}

export interface Node {
  readonly km: KeyManager;
  readonly store: Store;
  readonly bus: EventBus;
  readonly gw: Gateway;
  readonly port: number;
  readonly backend: EchoBackend;
  readonly clock: Clock;
  readonly logger: ReturnType<typeof memoryLogger>;
  /** Creates an application with keys of `keyType`, subscribed to `subscribe` (API contexts, version 1). */
  app(
    name: string,
    o?: { keyType?: KeyType; subscribe?: readonly string[] },
  ): Promise<{ consumerKey: string; consumerSecret: string; id: string }>;
  /** An access token from the key manager's token endpoint (client credentials unless a user is named). */
  token(
    app: { consumerKey: string; consumerSecret: string },
    o?: { scope?: string; user?: { username: string; password: string } },
  ): Promise<string>;
  call(pathAndQuery: string, token?: string, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** An API definition in code: context /<name>, version 1, every path under it. */
export function api(
  name: string,
  extra: Record<string, unknown> = {},
  resources?: readonly Record<string, unknown>[],
  backendPort = 9,
): Record<string, unknown> {
  return {
    name,
    context: `/${name}`,
    version: '1',
    endpoints: { production: `http://${HOST}:${backendPort}/${name}` },
    resources: resources ?? [{ path: '/*', methods: ['GET', 'POST'] }],
    ...extra,
  };
}

export const BASE = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n`;

/**
 * Starts the key manager and a gateway with `apis` (functions of the echo backend's port). `toml` is
 * added to the configuration; `scopes` are the scopes the key manager may grant (names, or bindings with
 * roles as apiScopeBindings makes them from API definitions).
 */
export async function startNode(
  apis: (backendPort: number) => readonly Record<string, unknown>[],
  toml = '',
  o: { scopes?: readonly ApiScope[]; beforeGateway?: (km: KeyManager) => Promise<void>; throttling?: GatewayOptions['throttling'] } = {},
): Promise<Node> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-sec-'));
  const text = `${BASE}[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n${toml}`;
  const loaded = loadConfig({ text, env: {} });
  if (!loaded.ok) throw new Error(`test config invalid: ${JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error'))}`);
  const logger = memoryLogger();
  const store = await openStore(loaded.config, dir);
  const bus = createEventBus();
  const km = await createKeyManager({ loaded, store, bus, logger, apiScopes: () => o.scopes ?? [] });
  if (o.beforeGateway !== undefined) await o.beforeGateway(km);
  const backend = await echoBackend();
  const clock = fakeClock();
  const gw = createGateway({
    config: loaded.config,
    dir,
    apis: apis(backend.port),
    logger,
    keyManager: keyManagerLink(km),
    events: bus,
    now: clock.now,
    watch: false,
    ...(o.throttling !== undefined ? { throttling: o.throttling } : {}),
  });
  const a = await gw.listen({ port: 0, host: HOST });
  await gw.security.ready;
  const node: Node = {
    km,
    store,
    bus,
    gw,
    port: a.port,
    backend,
    clock,
    logger,
    async app(name, opts = {}) {
      const created = await km.manager.createApplication({ name, owner: 'admin' });
      const keys = await km.manager.generateKeys(created.id, { keyType: opts.keyType ?? 'PRODUCTION' });
      for (const c of opts.subscribe ?? [])
        await km.manager.addSubscription({ application: created.id, apiContext: `/${c}`, apiVersion: '1' });
      return { consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret, id: created.id };
    },
    async token(app, opts = {}) {
      const form = new URLSearchParams(
        opts.user !== undefined
          ? { grant_type: 'password', username: opts.user.username, password: opts.user.password }
          : { grant_type: 'client_credentials' },
      );
      if (opts.scope !== undefined) form.set('scope', opts.scope);
      const r = await km.oauth.token(`Basic ${Buffer.from(`${app.consumerKey}:${app.consumerSecret}`).toString('base64')}`, form);
      return r.access_token;
    },
    call(pathAndQuery, token, headers = {}) {
      return request(a.port, pathAndQuery, { headers: token !== undefined ? { Authorization: `Bearer ${token}`, ...headers } : headers });
    },
    async close() {
      await gw.close();
      await km.close();
      await store.close();
      await backend.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return node;
}

/** The fault code of a response body. */
export function code(r: Response): number {
  try {
    return (JSON.parse(r.body) as { fault: { code: number } }).fault.code;
  } catch {
    return -1;
  }
}

/** A field the backend received (first value, case-insensitive name). */
export function received(backend: EchoBackend, name: string): string | undefined {
  const last = backend.seen[backend.seen.length - 1];
  if (last === undefined) return undefined;
  for (let i = 0; i < last.headers.length; i += 2)
    if ((last.headers[i] as string).toLowerCase() === name.toLowerCase()) return last.headers[i + 1];
  return undefined;
}

export interface SigningKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string, alg = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A JWT signed by `key` (exp one hour after `now` seconds unless the claims say otherwise). */
export function jwt(key: SigningKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iat: now, exp: now + 3600, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
    .sign(key.privateKey);
}

/** An external issuer's JWKS endpoint on port 0: its keys can change, it can go down, it counts fetches. */
export interface JwksServer {
  readonly url: string;
  keys: JWK[];
  down: boolean;
  fetches: number;
  close(): Promise<void>;
}

export async function jwksServer(keys: JWK[]): Promise<JwksServer> {
  const s: { keys: JWK[]; down: boolean; fetches: number } = { keys, down: false, fetches: 0 };
  const server = http.createServer((req, res) => {
    s.fetches++;
    if (s.down) {
      res.writeHead(503, { 'Content-Type': 'text/plain' });
      res.end('down');
      return;
    }
    const body = JSON.stringify({ keys: s.keys });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(s, {
    url: `http://${HOST}:${port}/jwks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  }) as JwksServer;
}
