/**
 * What the consoles need from the key manager (docs/portal.md, "Server roles"): the signed-in user's
 * roles, applications, keys, subscriptions, tokens and the consoles' own OAuth clients. Two kinds:
 *
 *   local   the key manager of this process: its Manager (lib/keymanager/manage.ts), store and OAuth
 *           server, by function call (a `default` node, or a console node over the shared database)
 *   remote  the key manager of another node ([apim.key_manager] service_url written in deployment.toml
 *           on an api-devportal or api-publisher node), over its admin API and OAuth endpoints with the
 *           super admin credentials of [apim.key_manager] username and password, through the HTTP
 *           client a gateway-worker reaches its control plane with (lib/scale/control-plane.ts)
 *
 * Both throw OAuthError for what the key manager refuses (the pages show its message), and the remote
 * one PortalRemoteError when the key manager does not answer (PORTAL_REMOTE_UNREACHABLE) or refuses the
 * super admin credentials (PORTAL_REMOTE_REFUSED).
 */
import type { KeyManager } from '../keymanager';
import { ACTING_TENANT } from '../tenants';
import { type ConsoleClient, type ConsoleOrigins, registerConsoleClients } from '../keymanager/console-clients';
import { OAuthError, type OAuthErrorCode } from '../keymanager/errors';
import type { ApplicationView, SubscriptionView } from '../keymanager/manage';
import type { ControlPlane } from '../scale/control-plane';
import { ControlPlaneError } from '../scale/control-plane';
import type { KeyType, Store, SubscriptionState } from '../store/types';
import type { WorkflowStart } from '../workflows';
import { ThroughwayError } from '../errors';
import { InternalError } from '../errors';

/** A remote key manager or control plane that does not answer, or refuses this node's credentials. */
export class PortalRemoteError extends ThroughwayError {
  readonly code: 'PORTAL_REMOTE_UNREACHABLE' | 'PORTAL_REMOTE_REFUSED';
  constructor(code: PortalRemoteError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

export interface TokenAnswer {
  readonly access_token: string;
  readonly expires_in: number;
  readonly scope: string;
}

export interface PortalKeyManager {
  /** `local` or `remote <origin>`, for the start-up lines. */
  readonly description: string;
  /** Registers the consoles' first-party OAuth clients for these origins (new keys). */
  registerConsoles(origins: ConsoleOrigins): Promise<ConsoleClient[]>;
  /** Before a sign-in: the client is still first-party (a remote key manager may have restarted). */
  confirmConsoleClient(client: ConsoleClient): Promise<void>;
  /** Where the browser signs in: `/oauth2/authorize` on this origin, or the remote key manager's. */
  authorizeUrl(): string;
  /** Redeems an authorization code at the token endpoint and returns who signed in. */
  exchangeCode(client: ConsoleClient, code: string, verifier: string): Promise<string>;
  /** The user's roles (the claims route's `role`, or the store's). */
  roles(username: string): Promise<string[]>;
  listApplications(owner: string): Promise<ApplicationView[]>;
  /** An application by id, undefined when there is none. */
  getApplication(id: string): Promise<ApplicationView | undefined>;
  createApplication(input: { name: string; owner: string; description: string }): Promise<ApplicationView>;
  updateApplication(id: string, change: { tier: string; description: string }): Promise<ApplicationView>;
  deleteApplication(id: string): Promise<void>;
  generateKeys(id: string, keyType: KeyType): Promise<{ consumerKey: string; consumerSecret: string; workflow?: WorkflowStart }>;
  listSubscriptions(filter: { application?: string; apiContext?: string }): Promise<SubscriptionView[]>;
  addSubscription(input: { application: string; apiContext: string; apiVersion: string; tier: string }): Promise<SubscriptionView>;
  removeSubscription(id: string): Promise<void>;
  setSubscriptionState(id: string, state: SubscriptionState): Promise<void>;
  /** The approver's comment of the newest decided workflow task of an entity (a rejected subscription's), when there is one. */
  decisionComment?(entity: string): Promise<string | undefined>;
  /** The client credentials grant for an application's key (try-it). */
  token(consumerKey: string, consumerSecret: string, scope: string): Promise<TokenAnswer>;
  /**
   * The same key manager acting within a tenant, for that tenant's signed-in user (a remote one: its
   * applications and subscriptions calls name the tenant; docs/tenants.md, "Console nodes"). Absent: the
   * calls already reach each row in its own tenant (the local key manager, unscoped).
   */
  forTenant?(tenant: string): PortalKeyManager;
}

const basic = (user: string, secret: string): string => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;

/** The key manager of this process. */
export function localKeyManager(km: KeyManager, store: Store): PortalKeyManager {
  const m = km.manager;
  return {
    description: 'in this process',
    registerConsoles: (origins) => registerConsoleClients(m, store, km.settings.adminUser, origins),
    confirmConsoleClient: async () => undefined,
    authorizeUrl: () => '/oauth2/authorize',
    async exchangeCode(client, code, verifier) {
      const form = new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirectUri,
        code_verifier: verifier,
      });
      const tokens = await km.oauth.token(basic(client.consumerKey, client.consumerSecret), form);
      const claims = await km.oauth.verifyAccessToken(tokens.access_token);
      if (claims === undefined || typeof claims.sub !== 'string')
        throw new InternalError('the key manager issued a token it does not verify');
      return claims.sub;
    },
    roles: async (username) => [...((await store.getUser(username))?.roles ?? [])],
    listApplications: (owner) => m.listApplications(owner),
    async getApplication(id) {
      const app = await store.getApplication(id);
      return app === undefined ? undefined : m.getApplication(app.id);
    },
    createApplication: (input) => m.createApplication(input),
    updateApplication: (id, change) => m.updateApplication(id, change),
    deleteApplication: async (id) => void (await m.deleteApplication(id)),
    generateKeys: (id, keyType) => m.generateKeys(id, { keyType }),
    listSubscriptions: (filter) => m.listSubscriptions(filter),
    addSubscription: (input) => m.addSubscription(input),
    removeSubscription: async (id) => void (await m.removeSubscription({ id })),
    setSubscriptionState: async (id, state) => void (await m.setSubscriptionState({ id }, state)),
    decisionComment: async (entity) => (await km.workflows.list({ entity, pending: false }))[0]?.decision?.comment,
    token: (key, secret, scope) =>
      km.oauth.token(basic(key, secret), new URLSearchParams({ grant_type: 'client_credentials', ...(scope !== '' ? { scope } : {}) })),
  };
}

const KNOWN: ReadonlySet<string> = new Set<OAuthErrorCode>([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_client_metadata',
  'access_denied',
  'not_found',
  'conflict',
]);

/**
 * A remote answer as the local Manager would have thrown it: the key manager's refusal (4xx with an
 * OAuth error code) as OAuthError, no answer or a 5xx as PortalRemoteError.
 */
export function remoteFailure(err: unknown, origin: string): never {
  if (!(err instanceof ControlPlaneError)) throw err;
  const code = err.body?.error;
  const description = err.body?.error_description;
  if (err.status !== undefined && err.status < 500 && typeof code === 'string' && KNOWN.has(code)) {
    throw new OAuthError(code as OAuthErrorCode, typeof description === 'string' ? description : code, { status: err.status });
  }
  throw new PortalRemoteError('PORTAL_REMOTE_UNREACHABLE', `the key manager or control plane ${origin} did not answer: ${err.message}`);
}

/**
 * The key manager of another node, over HTTP(S) with the super admin credentials; with `tenant`, its
 * applications and subscriptions calls act within that tenant (the admin API's ACTING_TENANT header).
 */
export function remoteKeyManager(cp: ControlPlane, origin: string, tenant?: string): PortalKeyManager {
  const acting: Record<string, string> = tenant === undefined ? {} : { [ACTING_TENANT]: tenant };
  const call = async (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body?: string | Readonly<Record<string, unknown>>,
    withAuth = true,
  ): Promise<Record<string, unknown>> => {
    try {
      return await cp.request(
        method,
        path,
        body,
        withAuth,
        undefined,
        /^\/admin\/v1\/(applications|subscriptions)(\/|\?|$)/.test(path) ? acting : {},
      );
    } catch (err) {
      // The admin API refusing the super admin credentials is this node's configuration, not the user's doing.
      if (withAuth && err instanceof ControlPlaneError && err.status === 401)
        throw new PortalRemoteError(
          'PORTAL_REMOTE_REFUSED',
          `the key manager ${origin} refused the super admin credentials [apim.key_manager] username and password (HTTP 401)`,
        );
      return remoteFailure(err, origin);
    }
  };
  const app = (id: string): string => `/admin/v1/applications/${encodeURIComponent(id)}`;
  const sub = (id: string): string => `/admin/v1/subscriptions/${encodeURIComponent(id)}`;
  return {
    description: origin,
    async registerConsoles(origins) {
      const r = await call('POST', '/admin/v1/console-clients', {
        ...(origins.http !== undefined ? { http: origins.http } : {}),
        ...(origins.https !== undefined ? { https: origins.https } : {}),
      });
      return r.clients as ConsoleClient[];
    },
    async confirmConsoleClient(client) {
      await call('POST', `/admin/v1/console-clients/${encodeURIComponent(client.consumerKey)}`, {});
    },
    authorizeUrl: () => `${origin}/oauth2/authorize`,
    async exchangeCode(client, code, verifier) {
      const form = new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirectUri,
        code_verifier: verifier,
        client_id: client.consumerKey,
        client_secret: client.consumerSecret,
      });
      const tokens = await call('POST', '/oauth2/token', form.toString(), false);
      if (typeof tokens.access_token !== 'string')
        throw new OAuthError('invalid_grant', 'the key manager answered without an access token');
      // RFC 7662: the key manager says whose token it is (super admin credentials).
      const info = await call('POST', '/oauth2/introspect', new URLSearchParams({ token: tokens.access_token }).toString());
      if (info.active !== true || typeof info.sub !== 'string')
        throw new OAuthError('invalid_grant', 'the key manager does not hold the token it issued as active');
      return info.sub;
    },
    async roles(username) {
      try {
        const r = (await cp.request('GET', `/admin/v1/users/${encodeURIComponent(username)}/claims`)).claims as
          Record<string, string> | undefined;
        return (r?.role ?? '').split(',').filter((x) => x !== '');
      } catch (err) {
        if (err instanceof ControlPlaneError && err.status === 404) return [];
        return remoteFailure(err, origin);
      }
    },
    listApplications: async (owner) =>
      (await call('GET', `/admin/v1/applications?owner=${encodeURIComponent(owner)}`)).list as ApplicationView[],
    async getApplication(id) {
      try {
        return (await cp.request('GET', app(id), undefined, true, undefined, acting)) as unknown as ApplicationView;
      } catch (err) {
        if (err instanceof ControlPlaneError && err.status === 404) return undefined;
        return remoteFailure(err, origin);
      }
    },
    createApplication: async (input) => (await call('POST', '/admin/v1/applications', input)) as unknown as ApplicationView,
    updateApplication: async (id, change) => (await call('PATCH', app(id), change)) as unknown as ApplicationView,
    deleteApplication: async (id) => void (await call('DELETE', app(id))),
    async generateKeys(id, keyType) {
      const k = await call('POST', `${app(id)}/keys`, { keyType });
      return { consumerKey: String(k.consumerKey), consumerSecret: String(k.consumerSecret) };
    },
    async listSubscriptions(filter) {
      const q = new URLSearchParams({
        ...(filter.application !== undefined ? { application: filter.application } : {}),
        ...(filter.apiContext !== undefined ? { api: filter.apiContext } : {}),
      });
      return (await call('GET', `/admin/v1/subscriptions?${q.toString()}`)).list as SubscriptionView[];
    },
    addSubscription: async (input) =>
      (await call('POST', '/admin/v1/subscriptions', {
        application: input.application,
        api: input.apiContext,
        version: input.apiVersion,
        tier: input.tier,
      })) as unknown as SubscriptionView,
    removeSubscription: async (id) => void (await call('DELETE', sub(id), {})),
    setSubscriptionState: async (id, state) => void (await call('PATCH', sub(id), { state })),
    async token(key, secret, scope) {
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: key,
        client_secret: secret,
        ...(scope !== '' ? { scope } : {}),
      });
      const t = await call('POST', '/oauth2/token', form.toString(), false);
      return { access_token: String(t.access_token), expires_in: Number(t.expires_in), scope: String(t.scope ?? '') };
    },
    forTenant: (domain) => remoteKeyManager(cp, origin, domain),
  };
}
