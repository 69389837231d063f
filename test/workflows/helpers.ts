/**
 * A node for the workflow tests: a key manager on 127.0.0.1 port 0 over a fresh SQLite store, its API
 * files served to the admin API (lib/portal/catalogue.ts), and a gateway in the same process hearing its
 * events, in front of an echo backend serving /pizza.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { createKeyManager, type KeyManager } from '../../lib/keymanager';
import { keyManagerLink } from '../../lib/security';
import { ensureSuperAdmin, openDatabase, storeOver } from '../../lib/store/open';
import type { Store } from '../../lib/store/types';
import { Catalogue } from '../../lib/portal/catalogue';
import { gatewaySettingsFrom } from '../../lib/gateway/settings';
import { echoBackend, HOST, memoryLogger, request, type EchoBackend, type Response } from '../gateway/helpers';
import { basic, json, type Reply } from '../keymanager/helpers';

export const ADMIN = { user: 'admin', password: 'admin-pw-1' };
export const adminAuth = (): string => basic(ADMIN.user, ADMIN.password);

export const apiFile = (name: string, context: string, endpoint: string, extra = ''): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\n${extra}[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

export interface WorkflowNode {
  readonly km: KeyManager;
  readonly store: Store;
  readonly url: string;
  readonly dir: string;
  readonly port: number;
  readonly backend: EchoBackend;
  readonly logger: ReturnType<typeof memoryLogger>;
  /** The admin API as the super admin (or `auth`). */
  admin(method: string, route: string, body?: unknown, auth?: string): Promise<Reply>;
  call(p: string, token?: string): Promise<Response>;
  /** A client credentials token, or the error's status. */
  token(consumerKey: string, consumerSecret: string): Promise<{ status: number; token: string }>;
  close(): Promise<void>;
}

export async function startNode(toml = ''): Promise<WorkflowNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-wf-'));
  const backend = await echoBackend();
  fs.mkdirSync(path.join(dir, 'apis'));
  fs.writeFileSync(
    path.join(dir, 'apis', 'pizza.toml'),
    apiFile('Pizza', '/pizza', `http://${HOST}:${backend.port}/pizza`, 'state = "PUBLISHED"\n'),
  );
  fs.writeFileSync(
    path.join(dir, 'policies.toml'),
    '[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[subscription]]\nname = "Gold"\nrequest_count = 5000\n[[subscription]]\nname = "Bronze"\nrequest_count = 1\n[[application]]\nname = "Unlimited"\nunlimited = true\n',
  );
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\n${toml}`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const logger = memoryLogger();
  const store = await storeOver(await openDatabase('apim_db', { type: 'h2', url: `jdbc:h2:${path.join(dir, 'apim_db')}` }, dir));
  await ensureSuperAdmin(store, loaded.config);
  const bus = createEventBus();
  const gw0 = gatewaySettingsFrom(loaded.config, loaded.dir, loaded.ports);
  const km = await createKeyManager({ loaded, store, bus, logger, apiFiles: new Catalogue(gw0.apisDir, gw0.vars) });
  const a = await km.listen(0, HOST);
  const gw = createGateway({ loaded, logger, cwd: dir, keyManager: keyManagerLink(km), events: bus, tenants: km.tenants, watch: true });
  const g = await gw.listen({ port: 0, host: HOST });
  await gw.security.ready;
  const url = `http://${HOST}:${a.port}`;
  return {
    km,
    store,
    url,
    dir,
    port: g.port,
    backend,
    logger,
    admin: (method, route, body, auth) => json(method, `${url}/admin/v1${route}`, body, auth ?? adminAuth()),
    call: (p, token) => request(g.port, p, { headers: token !== undefined ? { Authorization: `Bearer ${token}` } : {} }),
    async token(key, secret) {
      try {
        const r = await km.oauth.token(basic(key, secret), new URLSearchParams({ grant_type: 'client_credentials' }));
        return { status: 200, token: r.access_token };
      } catch (err) {
        return { status: (err as { status?: number }).status ?? 500, token: '' };
      }
    },
    async close() {
      await gw.close();
      await km.close();
      await store.close();
      await backend.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const faultCode = (r: Response): number => (r.json() as { fault: { code: number } }).fault.code;
