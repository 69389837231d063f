/**
 * The key manager (docs/key-manager.md): the OAuth 2.0 authorization server, dynamic client registration and the
 * admin API, served by the management server. It listens in plain HTTP on
 * `[transport.http.properties] port` (9763 + server.offset, the reference's HTTP management port: the
 * spec lists 9443 for both), and the node serves the same handler over TLS on `[transport.https.properties] port`
 * (9443 + offset). docs/key-manager.md describes it.
 *
 * `createKeyManager` opens nothing but the store it is given; `listen()` opens the port, on loopback only
 * while the super admin has the default password, with the limits of listener.ts.
 */
import { heldUsers } from './confirmed';
import * as fs from 'node:fs';
import type * as http from 'node:http';
import type * as https from 'node:https';
import type * as tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { LoadResult } from '../config/load';
import { createEventBus, type EventBus } from '../events/bus';
import { silentLogger, type Logger } from '../log';
import type { Store } from '../store/types';
import { checkUserStore, openUserStore, type UserStore } from '../store/users';
import type { OpsHandler } from '../events/observed';
import type { Deployments } from '../scale/deployments';
import { AuthorizationCodes, type ApiScope } from './codes';
import { CALLBACK_PATH } from './workflow-routes';
import { type ApiFileService, createHandler, oauthCall, type RouteContext, type SiteHandler } from './http';
import type { OAuthAnswer, OAuthCall } from '../gateway/token-route';
import { KeyRingError, KeySealer, openKeyRing, type ExternalKey, type KeyRing } from './keys';
import { LoginGuard, lockoutSettings } from './lockout';
import { verifyPassword } from '../store/passwords';
import { readKeystore } from './keystore';
import { SamlAssertions, samlIdentityProviders } from './saml-bearer';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { Manager } from './manage';
import { createManagementServer, DEFAULT_ADMIN_PASSWORD, LOOPBACK, managementHost, usesDefaultAdminPassword } from './listener';
import { OAuthServer } from './oauth';
import { keyManagerSettings, type KeyManagerSettings } from './settings';
import { signInUsers, Tenants, tenantSettings } from '../tenants';
import { WorkflowError, Workflows, workflowSettings } from '../workflows';

export interface KeyManagerOptions {
  readonly loaded: LoadResult;
  readonly store: Store;
  /** Where users sign in; by default the one `[user_store] type` names (lib/store/users.ts), closed with the key manager. */
  readonly users?: UserStore;
  readonly bus?: EventBus;
  readonly logger?: Logger;
  /** Scopes deployed APIs declare, with the roles allowed to hold them (docs/security.md, "Scopes and roles"). */
  readonly apiScopes?: () => Iterable<ApiScope>;
  /** Overrides the URL this server is reached at (tests listening on port 0). */
  readonly baseUrl?: string;
  /** Health, liveness and metrics routes served on the same port (lib/observability/routes.ts). */
  readonly ops?: OpsHandler;
  /** GET /admin/v1/deployments: the API files and policies served to gateway-workers (lib/scale/deployments.ts). */
  readonly deployments?: (labels?: readonly string[]) => Deployments;
  /** GET|PUT /admin/v1/api-files: the API files console nodes of other processes read and write. */
  readonly apiFiles?: ApiFileService;
}

export interface KeyManager {
  readonly settings: KeyManagerSettings;
  readonly oauth: OAuthServer;
  readonly manager: Manager;
  readonly keys: KeyRing;
  readonly bus: EventBus;
  /** Where users sign in (password grant, sign-in page): `[user_store] type` (docs/user-stores.md). */
  readonly users: UserStore;
  /** The tenants (docs/tenants.md): what the gateway's route and authentication phases ask. */
  readonly tenants: Tenants;
  /** Approval workflows (docs/workflows.md): tasks, decisions, executors; the consoles register their effects on it. */
  readonly workflows: Workflows;
  /** `[user_store.properties]` UsernameJavaRegEx and PasswordJavaRegEx: what a new user's name and password must match. */
  readonly userRules: { readonly username: RegExp; readonly password: RegExp };
  readonly handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  /** POST /oauth2/token and /oauth2/revoke as a plain call: the gateway's /token and /revoke in process (lib/gateway/token-route.ts). */
  oauthCall(c: OAuthCall): Promise<OAuthAnswer>;
  /** Failed sign-ins slowed and locked (lockout.ts); the sign-in page checks passwords through it. */
  readonly guard: LoginGuard;
  /**
   * True when the super admin has the default password (configured, or still stored): both listeners
   * then bind to loopback only (lib/keymanager/listener.ts).
   */
  readonly loopbackOnly: boolean;
  /**
   * Serves more routes on both management ports (the web consoles, lib/portal), asked after the
   * operations routes; `firstParty` clients skip the consent page.
   */
  mount(site: SiteHandler, firstParty: ReadonlySet<string>): void;
  /** Where the listeners are bound (undefined: not listening). */
  addresses(): { readonly http: AddressInfo | undefined; readonly https: AddressInfo | undefined };
  /** Opens the management HTTP port (default: ports.managementHttp), with the limits of listener.ts. */
  listen(port?: number, host?: string): Promise<AddressInfo>;
  /** Opens the management HTTPS port (default: ports.managementHttps) with the same routes (docs/tls.md). */
  listenHttps(tlsOptions: tls.TlsOptions, port?: number, host?: string): Promise<https.Server>;
  close(): Promise<void>;
}

/** Longest validity of any token a key signed: a retired key stays published this long. */
function keyGrace(s: KeyManagerSettings): number {
  return Math.max(s.appTokenValidity, s.userTokenValidity, s.idTokenValidity) + s.skew;
}

function javaRegex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch {
    return /^[\S]{5,30}$/;
  }
}

/** `[user_store.properties]` UsernameJavaRegEx and PasswordJavaRegEx as every new user and password is checked (manage.ts checkNewUser). */
export function userRules(config: DeploymentConfig): { username: RegExp; password: RegExp } {
  const props = config.user_store.properties;
  return { username: javaRegex(props.UsernameJavaRegEx), password: javaRegex(props.PasswordJavaRegEx) };
}

/** The `[custom_keystore.<name>]` that `[throughway.key_manager] signing_keystore` names, read (PEM or PKCS#12). */
export function signingKeystore(config: DeploymentConfig): ExternalKey | undefined {
  const name = config.throughway.key_manager.signing_keystore;
  if (name === undefined || name === '') return undefined;
  const src = `[custom_keystore.${name}]`;
  const ks = config.custom_keystore[name];
  if (ks === undefined) throw new KeyRingError(`[throughway.key_manager] signing_keystore = "${name}" names no ${src} table`);
  if (ks.file_name === undefined) throw new KeyRingError(`${src} has no file_name`);
  let content: Buffer;
  try {
    content = fs.readFileSync(ks.file_name);
  } catch (err) {
    throw new KeyRingError(`${src} file_name ${ks.file_name}: ${(err as Error).message}`);
  }
  return readKeystore(content, {
    table: src,
    file: ks.file_name,
    type: ks.type,
    password: ks.password,
    keyPassword: ks.key_password,
    alias: ks.alias,
  });
}

/** Cleanup runs at start and then this often when `[oauth.token_cleanup] enable`. */
const CLEANUP_INTERVAL = 60 * 60 * 1000;

export async function createKeyManager(o: KeyManagerOptions): Promise<KeyManager> {
  const config = o.loaded.config;
  const logger = o.logger ?? silentLogger;
  const bus =
    o.bus ??
    createEventBus((err, event) => logger.log('error', 'event_subscriber_failed', { event: event.name, message: (err as Error).message }));
  // A user store that cannot work stops the start before anything is opened (USER_STORE_CONFIG).
  const userStoreError = o.users === undefined ? checkUserStore(config)[0] : undefined;
  if (userStoreError !== undefined) throw userStoreError;
  let settings = keyManagerSettings(config, o.loaded.ports, o.baseUrl);
  const secret = config.throughway.management.signing_key_secret;
  const sealer = secret === undefined ? undefined : new KeySealer(secret);
  if (sealer === undefined && signingKeystore(config) === undefined)
    logger.log('warn', 'signing_key_unencrypted', {
      message:
        'the token-signing private key is stored unencrypted: set [throughway.management] signing_key_secret = "$env{NAME}" to encrypt it (docs/security.md)',
    });
  const keys = await openKeyRing(o.store, keyGrace(settings), signingKeystore(config), sealer);
  const guard = new LoginGuard(lockoutSettings(config.throughway.management), logger);
  // An LDAP directory is bound to here: a wrong URL or connection password stops the start (USER_STORE_CONNECT).
  const opened = o.users ?? (await openUserStore(config, o.store));
  const tenants = await Tenants.open(o.store, tenantSettings(config), 500, { logger });
  // A deactivated tenant's users cannot sign in (docs/tenants.md).
  const tenantUsers = signInUsers(opened, tenants);
  // Users who signed up sign in once their sign-up is approved and their address confirmed (docs/self-service.md).
  const users = heldUsers(tenantUsers, o.store, logger, {
    emailValidation: config.multi_tenancy.platform.email_validation_mandatory_for_login,
  });
  // The default super admin password, configured or still stored: listeners on loopback only (listener.ts).
  const storedAdmin = await o.store.getUser(config.super_admin.username);
  const loopbackOnly =
    usesDefaultAdminPassword(config) ||
    (storedAdmin !== undefined && storedAdmin.roles.includes('admin') && (await verifyPassword(DEFAULT_ADMIN_PASSWORD, storedAdmin)));
  // The callback URL the external engine is told: [apim.workflow] callback_endpoint, else this port's (docs/workflows.md).
  const workflows = new Workflows(
    o.store,
    logger,
    workflowSettings(config),
    () => config.apim.workflow.callback_endpoint ?? `${settings.baseUrl}${CALLBACK_PATH}`,
  );
  const manager = new Manager(o.store, bus, users, tenants, undefined, workflows);
  manager.registerWorkflowEffects(workflows);
  // An approved API state change is the lifecycle move the publisher asked for; a rejected one leaves the API as it is.
  const apiFiles = o.apiFiles;
  if (apiFiles !== undefined) {
    workflows.register('AM_API_STATE', {
      async approved(t) {
        const r = await apiFiles.transitionFile(t.entity, t.attributes.to ?? '');
        if ('status' in r) throw new WorkflowError('WORKFLOW_INPUT', `${t.entity} → ${t.attributes.to ?? ''}: ${r.message}`);
      },
      rejected: async () => undefined,
    });
  }
  await workflows.resume();
  // One set of pending authorizations and codes, kept when the OAuth server is rebuilt for port 0.
  const codes = new AuthorizationCodes();
  // The SAML identity providers' certificates are read at start: a bad file stops it (SAML_IDP_CONFIG).
  const saml = { providers: samlIdentityProviders(config), assertions: new SamlAssertions() };
  let oauth = new OAuthServer({
    store: o.store,
    users,
    keys,
    bus,
    logger,
    settings,
    codes,
    tenants,
    saml,
    ...(o.apiScopes !== undefined ? { apiScopes: o.apiScopes } : {}),
  });
  const rules = userRules(config);
  const ctx: { -readonly [K in keyof RouteContext]: RouteContext[K] } = {
    oauth,
    manager,
    store: o.store,
    keys,
    logger,
    userRules: rules,
    guard,
    tenants,
    workflows,
    firstParty: new Set<string>(),
    ...(o.apiFiles !== undefined ? { apiFiles: o.apiFiles } : {}),
    ...(o.ops !== undefined ? { ops: o.ops } : {}),
    ...(o.deployments !== undefined ? { deployments: o.deployments } : {}),
  };
  const handler = createHandler(ctx);
  let server: http.Server | undefined;
  let secureServer: https.Server | undefined;
  let timer: NodeJS.Timeout | undefined;

  const cleanup = async (): Promise<void> => {
    const now = Date.now();
    const r = await o.store.cleanup(now, now - keyGrace(settings));
    if (r.refreshTokens + r.revoked + r.keys > 0) logger.log('info', 'token_cleanup', r);
    if (r.keys > 0) await keys.reload();
  };
  if (settings.tokenCleanup) {
    await cleanup().catch((err: unknown) => logger.log('warn', 'token_cleanup_failed', { message: (err as Error).message }));
    timer = setInterval(
      () => void cleanup().catch((err: unknown) => logger.log('warn', 'token_cleanup_failed', { message: (err as Error).message })),
      CLEANUP_INTERVAL,
    );
    timer.unref();
  }

  return {
    get settings() {
      return settings;
    },
    get oauth() {
      return oauth;
    },
    manager,
    keys,
    bus,
    users,
    tenants,
    workflows,
    userRules: rules,
    handler,
    oauthCall: (c) => oauthCall(ctx, c),
    guard,
    get loopbackOnly() {
      return loopbackOnly;
    },
    mount(site, firstParty) {
      ctx.site = site;
      for (const k of firstParty) ctx.firstParty.add(k);
    },
    addresses() {
      return { http: server?.address() as AddressInfo | undefined, https: secureServer?.address() as AddressInfo | undefined };
    },
    listen(port = o.loaded.ports.managementHttp, asked?: string) {
      const host = loopbackOnly ? (managementHost(config, asked) ?? LOOPBACK) : asked;
      return new Promise((resolve, reject) => {
        const { server: s, limits } = createManagementServer(config, handler, logger);
        s.once('error', reject);
        s.listen(port, host, limits.backlog, () => {
          s.removeListener('error', reject);
          server = s;
          const a = s.address() as AddressInfo;
          // Port 0 (tests): the URLs the server announces follow the port it got.
          if (o.baseUrl === undefined && port === 0) {
            settings = keyManagerSettings(config, o.loaded.ports, `http://${host ?? '127.0.0.1'}:${a.port}`);
            oauth = new OAuthServer({
              store: o.store,
              users,
              keys,
              bus,
              logger,
              settings,
              codes,
              tenants,
              saml,
              ...(o.apiScopes !== undefined ? { apiScopes: o.apiScopes } : {}),
            });
            ctx.oauth = oauth;
          }
          resolve(a);
        });
      });
    },
    listenHttps(tlsOptions, port = o.loaded.ports.managementHttps, asked?: string) {
      const host = loopbackOnly ? (managementHost(config, asked) ?? LOOPBACK) : asked;
      return new Promise((resolve, reject) => {
        const made = createManagementServer(config, handler, logger, tlsOptions);
        const s = made.server as https.Server;
        s.once('error', reject);
        s.listen(port, host, made.limits.backlog, () => {
          s.removeListener('error', reject);
          secureServer = s;
          resolve(s);
        });
      });
    },
    async close() {
      if (timer !== undefined) clearInterval(timer);
      await tenants.close();
      workflows.close();
      if (o.users === undefined) await users.close();
      const hs = secureServer;
      secureServer = undefined;
      if (hs !== undefined) {
        await new Promise<void>((resolve) => {
          hs.close(() => resolve());
          hs.closeIdleConnections();
        });
      }
      const s = server;
      server = undefined;
      if (s !== undefined) {
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeIdleConnections();
        });
      }
    },
  };
}

export { createEventBus } from '../events/bus';
export type { SiteHandler } from './http';
export { openStore } from '../store/open';
