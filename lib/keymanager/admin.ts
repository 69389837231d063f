/**
 * The JSON admin API on the management port, under /admin/v1, for the super admin (HTTP Basic; any
 * stored user with the admin role). docs/admin-api.md lists every route. Names in paths are
 * URL-encoded; `?owner=` picks among applications of the same name.
 *
 * Every route is a row of ADMIN_ROUTES with its tenancy (docs/tenants.md, "Admins"): `super` routes answer
 * only the super tenant's admins (a tenant admin gets 403); `tenant` routes answer a tenant's admin too,
 * through a manager scoped to that tenant, so another tenant's applications, subscriptions and users are
 * never found. test/tenants/admin-isolation.test.ts calls every row as another tenant's admin.
 */
import type * as http from 'node:http';
import { SUBSCRIPTION_STATES, type KeyType, type SubscriptionState } from '../store/types';
import { AdminKeptError, OAuthError } from './errors';
import { KeyRingError } from './keys';
import { checkNewUser, tenantRefusal, type Manager } from './manage';
import { ACTING_TENANT, PACKAGES, SUPER_TENANT, type Tenant, tenantOfFileId } from '../tenants';
import { MONTH } from '../tenants/packages';
import {
  MAX_PROTO_UPLOAD_BODY,
  readJson,
  sendJson,
  type AdminCaller,
  type ApiFileRefusal,
  type ApiFileService,
  type ApiProtos,
  type RouteContext,
} from './route-context';

export type { AdminCaller };
import { issueRegistrationToken, revokeRegistrationToken } from './registration';
import { isConsoleClient, registerConsoleClients, withoutInternalApps } from './console-clients';
import { WorkflowError, type Workflows } from '../workflows';

/** An http(s) origin (scheme://host[:port]), or undefined when absent; anything else is refused. */
function origin(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  let u: URL | undefined;
  try {
    u = typeof v === 'string' ? new URL(v) : undefined;
  } catch {
    u = undefined;
  }
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== v)
    throw new OAuthError('invalid_request', `${name} must be an origin such as https://portal.example:9443`);
  if ((u.protocol === 'https:') !== (name === 'https')) throw new OAuthError('invalid_request', `${name} must be an ${name}:// origin`);
  return u.origin;
}

/** A consumer key an admin may choose: what generated keys look like, and the reference's (letters, digits, _ . -). */
const CONSUMER_KEY = /^[A-Za-z0-9_.-]{1,128}$/;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function state(v: unknown): SubscriptionState {
  if (typeof v !== 'string' || !(SUBSCRIPTION_STATES as readonly string[]).includes(v)) {
    throw new OAuthError('invalid_request', `state must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
  }
  return v as SubscriptionState;
}

function keyType(v: unknown): KeyType {
  if (v === undefined) return 'PRODUCTION';
  if (v === 'PRODUCTION' || v === 'SANDBOX') return v;
  throw new OAuthError('invalid_request', 'keyType must be PRODUCTION or SANDBOX');
}

function strings(v: unknown, name: string): string[] | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  throw new OAuthError('invalid_request', `${name} must be an array of strings`);
}

function need(v: unknown, name: string): string {
  const s = str(v);
  if (s === undefined) throw new OAuthError('invalid_request', `${name} is required`);
  return s;
}

/** One call of an admin route: the path's `{...}` segments in order, and the manager of the caller's rows. */
interface AdminCall {
  readonly ctx: RouteContext;
  readonly req: http.IncomingMessage;
  readonly res: http.ServerResponse;
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  readonly caller: AdminCaller;
  /** Scoped to the caller's tenant on `tenant` routes; unscoped on `super` routes. */
  readonly m: Manager;
  /** `?owner=`, when given. */
  readonly owner: string | undefined;
}

export interface AdminRoute {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path under /admin/v1; a `{name}` segment binds one URL-decoded segment. */
  readonly path: string;
  /** `super`: the super tenant's admins only; `tenant`: a tenant's admin too, on its own tenant's rows. */
  readonly tenancy: 'super' | 'tenant';
  /** Served only when the node has the part the route needs (a control plane's API files, its deployments). */
  readonly when?: (ctx: RouteContext) => boolean;
  handle(c: AdminCall): Promise<void>;
}

const tenantView = (t: Tenant): Record<string, unknown> => ({
  domain: t.domain,
  admin: t.admin,
  package: t.package,
  active: t.active,
  createdAt: t.createdAt,
});

function tenantsOf(ctx: RouteContext): NonNullable<RouteContext['tenants']> {
  if (ctx.tenants === undefined) throw new OAuthError('not_found', 'this key manager has no tenants');
  return ctx.tenants;
}

async function setTenantActive(c: AdminCall, active: boolean): Promise<void> {
  const t = await tenantsOf(c.ctx)
    .setActive(c.params[0] as string, active)
    .catch(tenantRefusal);
  c.ctx.logger.log('info', active ? 'tenant_activated' : 'tenant_deactivated', { domain: t.domain, by: c.caller.username });
  return sendJson(c.res, 200, tenantView(t));
}

async function changeSubscription(c: AdminCall): Promise<void> {
  const b = await readJson(c.req);
  const id = c.params[0];
  const ref =
    id !== undefined
      ? { id }
      : {
          application: need(b.application, 'application'),
          apiContext: need(b.api, 'api'),
          ...(str(b.version) !== undefined ? { apiVersion: str(b.version) as string } : {}),
          ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}),
        };
  if (c.req.method === 'DELETE') return sendJson(c.res, 200, await c.m.removeSubscription(ref, c.caller.username));
  // A tier change is the subscription update workflow's (docs/workflows.md); a state change is the admin's own.
  if (b.tier !== undefined && b.state === undefined) {
    if (typeof b.tier !== 'string') throw new OAuthError('invalid_request', 'tier must be a string');
    return sendJson(c.res, 200, await c.m.setSubscriptionTier(ref, b.tier, c.caller.username));
  }
  if (b.tier !== undefined) throw new OAuthError('invalid_request', 'change the state or the tier, one at a time');
  return sendJson(c.res, 200, await c.m.setSubscriptionState(ref, state(b.state)));
}

function workflowsOf(ctx: RouteContext): Workflows {
  if (ctx.workflows === undefined) throw new OAuthError('not_found', 'this key manager runs no workflows');
  return ctx.workflows;
}

/**
 * Every admin sees and decides its own tenant's tasks only, the super admin the super tenant's: the
 * reference keeps the authority to approve a tenant's workflows in the tenant's space (docs/workflows.md,
 * "Who decides"). The engine's callback and the CLI on the store are not admin API callers.
 */
const taskTenant = (c: AdminCall): string => c.caller.tenant;

async function decideTask(c: AdminCall, status: 'APPROVED' | 'REJECTED'): Promise<void> {
  const b = await readJson(c.req);
  if (b.comment !== undefined && typeof b.comment !== 'string') throw new OAuthError('invalid_request', 'comment must be a string');
  const task = await workflowsOf(c.ctx).decide(c.params[0] as string, {
    status,
    by: c.caller.username,
    comment: typeof b.comment === 'string' ? b.comment : '',
    tenant: taskTenant(c),
  });
  return sendJson(c.res, 200, task);
}

async function apiFileAnswer(
  c: AdminCall,
  r: { readonly status: number; readonly message: string; readonly fields: Readonly<Record<string, string>> },
): Promise<void> {
  return sendJson(c.res, r.status, {
    error: r.status === 409 ? 'conflict' : r.status === 404 ? 'not_found' : r.status === 403 ? 'access_denied' : 'invalid_request',
    error_description: r.message,
    fields: r.fields,
  });
}

/**
 * Whether the caller may reach `tenant`'s API files (docs/admin-api.md, "API files"): a tenant's admin its
 * own tenant's only, the super tenant's admins any tenant's that exists (the remote consoles read them).
 */
function mayReachFiles(c: AdminCall, tenant: string): boolean {
  if (c.caller.tenant !== SUPER_TENANT && tenant !== c.caller.tenant) return false;
  return tenant === SUPER_TENANT || c.ctx.tenants?.state(tenant) !== undefined;
}

/** The path's API file id when the caller may reach its tenant (mayReachFiles); else 404, as for a file that does not exist. */
function fileId(c: AdminCall): string {
  const id = c.params[0] as string;
  if (!mayReachFiles(c, tenantOfFileId(id))) throw new OAuthError('not_found', `no API file ${id.slice(0, 300)}`);
  return id;
}

/**
 * The manager of the blocking conditions a call names (docs/admin-api.md, "Blocking conditions"): the
 * caller's tenant's; for the super tenant's admins, `?tenant=<domain>` a tenant's and, where `every`,
 * `?tenant=*` every tenant's (what a gateway-worker pulls). A tenant's admin naming another tenant, and a
 * domain that is no tenant, get 404, as for a condition that does not exist.
 */
function blockingManager(c: AdminCall, every = true): Manager {
  const asked = c.query.get('tenant');
  if (asked === null || asked === c.caller.tenant) return c.m;
  if (c.caller.tenant === SUPER_TENANT) {
    if (asked === '*' && every) return c.ctx.manager;
    if (asked !== '*' && c.ctx.tenants?.state(asked) !== undefined) return c.ctx.manager.forTenant(asked);
  }
  throw new OAuthError('not_found', `no blocking conditions of tenant ${asked.slice(0, 253)} for ${c.caller.username}`);
}

/**
 * The tenant whose signing keys a call names (docs/admin-api.md, "Signing keys"): the caller's; for the
 * super tenant's admins `?tenant=<domain>` an existing tenant's. A tenant's admin naming another tenant, and
 * a domain that is no tenant, get 404, as for blocking conditions.
 */
function ringTenant(c: AdminCall): string {
  const asked = c.query.get('tenant');
  if (asked === null || asked === c.caller.tenant) return c.caller.tenant;
  if (c.caller.tenant === SUPER_TENANT && asked !== '*' && c.ctx.tenants?.state(asked) !== undefined) return asked;
  throw new OAuthError('not_found', `no signing keys of tenant ${asked.slice(0, 253)} for ${c.caller.username}`);
}

/** A request's list of .proto files, `[{ "name": "x.proto", "text": "..." }]`; else invalid_request. */
function protoFiles(v: unknown): { name: string; text: string }[] {
  const ok = (f: unknown): f is { name: string; text: string } =>
    typeof f === 'object' &&
    f !== null &&
    typeof (f as Record<string, unknown>).name === 'string' &&
    typeof (f as Record<string, unknown>).text === 'string';
  if (!Array.isArray(v) || !v.every(ok))
    throw new OAuthError('invalid_request', 'a list of { "name": "x.proto", "text": "..." } is required');
  return v.map((f) => ({ name: f.name, text: f.text }));
}

/** The answer of a .proto upload or delete: the refusal, or the API's .proto files and methods, logged as `event`. */
async function protosChanged(c: AdminCall, r: ApiProtos | ApiFileRefusal, event: string, files: readonly string[]): Promise<void> {
  if ('status' in r) return apiFileAnswer(c, r);
  c.ctx.logger.log('info', event, { id: r.id, files, by: c.caller.username });
  return sendJson(c.res, 200, r);
}

/** Every admin route, in matching order (docs/admin-api.md). */
export const ADMIN_ROUTES: readonly AdminRoute[] = Object.freeze([
  // The gateway URLs clients are shown ([[apim.gateway.environment]]; lib/gateway/environments.ts).
  {
    method: 'GET',
    path: '/environments',
    tenancy: 'tenant',
    async handle(c) {
      const envs = c.ctx.oauth.settings.environments;
      return sendJson(c.res, 200, {
        list: envs.map((e) => ({
          name: e.name,
          type: e.type,
          description: e.description,
          httpEndpoint: e.http ?? null,
          httpsEndpoint: e.https ?? null,
          wsEndpoint: e.ws ?? null,
          wssEndpoint: e.wss ?? null,
          tokenEndpoint: e.https !== undefined ? `${e.https}/token` : null,
          showAsTokenEndpointUrl: e.showAsTokenEndpoint,
          configured: e.configured,
        })),
      });
    },
  },
  {
    method: 'GET',
    path: '/applications',
    tenancy: 'tenant',
    handle: async (c) =>
      sendJson(c.res, 200, { list: withoutInternalApps(await c.m.listApplications(c.owner), c.ctx.oauth.settings.adminUser) }),
  },
  {
    method: 'POST',
    path: '/applications',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      const defaultOwner = c.caller.tenant === SUPER_TENANT ? c.ctx.oauth.settings.adminUser : c.caller.username;
      const app = await c.m.createApplication({
        requester: c.caller.username,
        name: need(b.name, 'name'),
        owner: str(b.owner) ?? defaultOwner,
        ...(str(b.tier) !== undefined ? { tier: str(b.tier) as string } : {}),
        ...(str(b.description) !== undefined ? { description: str(b.description) as string } : {}),
      });
      return sendJson(c.res, 201, app);
    },
  },
  {
    method: 'GET',
    path: '/applications/{name}',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, await c.m.getApplication(c.params[0] as string, c.owner)),
  },
  {
    method: 'DELETE',
    path: '/applications/{name}',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, await c.m.deleteApplication(c.params[0] as string, c.owner)),
  },
  {
    method: 'PATCH',
    path: '/applications/{name}',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      if (b.tier !== undefined && typeof b.tier !== 'string') throw new OAuthError('invalid_request', 'tier must be a string');
      if (b.description !== undefined && typeof b.description !== 'string')
        throw new OAuthError('invalid_request', 'description must be a string');
      return sendJson(
        c.res,
        200,
        await c.m.updateApplication(c.params[0] as string, {
          ...(typeof b.tier === 'string' ? { tier: b.tier } : {}),
          ...(typeof b.description === 'string' ? { description: b.description } : {}),
          ...(c.owner !== undefined ? { owner: c.owner } : {}),
        }),
      );
    },
  },
  // The admin console's "change owner": to another user of the application's tenant.
  {
    method: 'POST',
    path: '/applications/{name}/owner',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      return sendJson(c.res, 200, await c.m.changeOwner(c.params[0] as string, need(b.owner, 'owner'), c.owner));
    },
  },
  {
    method: 'POST',
    path: '/applications/{name}/keys',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      const grantTypes = strings(b.grantTypes, 'grantTypes');
      // A given consumer key keeps an application's identity across nodes (the declarative sync, docs/sync.md).
      const consumerKey =
        b.consumerKey === undefined
          ? undefined
          : typeof b.consumerKey === 'string' && CONSUMER_KEY.test(b.consumerKey)
            ? b.consumerKey
            : undefined;
      if (b.consumerKey !== undefined && consumerKey === undefined)
        throw new OAuthError('invalid_request', 'consumerKey must be 1 to 128 letters, digits, _ . -');
      const keys = await c.m.generateKeys(c.params[0] as string, {
        keyType: keyType(b.keyType),
        ...(grantTypes !== undefined ? { grantTypes } : {}),
        ...(str(b.callbackUrl) !== undefined ? { callbackUrl: str(b.callbackUrl) as string } : {}),
        ...(c.owner !== undefined ? { owner: c.owner } : {}),
        ...(consumerKey !== undefined ? { consumerKey } : {}),
      });
      return sendJson(c.res, 201, keys, { 'Cache-Control': 'no-store' });
    },
  },
  {
    method: 'GET',
    path: '/subscriptions',
    tenancy: 'tenant',
    async handle(c) {
      const app = c.query.get('application') ?? undefined;
      const api = c.query.get('api') ?? undefined;
      return sendJson(c.res, 200, {
        list: await c.m.listSubscriptions({
          ...(app !== undefined ? { application: app } : {}),
          ...(c.owner !== undefined ? { owner: c.owner } : {}),
          ...(api !== undefined ? { apiContext: api } : {}),
        }),
      });
    },
  },
  {
    method: 'POST',
    path: '/subscriptions',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      const s = await c.m.addSubscription({
        application: need(b.application, 'application'),
        apiContext: need(b.api, 'api'),
        apiVersion: need(b.version, 'version'),
        ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}),
        ...(str(b.tier) !== undefined ? { tier: str(b.tier) as string } : {}),
        ...(b.state !== undefined ? { state: state(b.state) } : {}),
        requester: c.caller.username,
      });
      return sendJson(c.res, 201, s);
    },
  },
  // By id in the path, or by { application, api, version } in the body.
  { method: 'PATCH', path: '/subscriptions', tenancy: 'tenant', handle: changeSubscription },
  { method: 'DELETE', path: '/subscriptions', tenancy: 'tenant', handle: changeSubscription },
  { method: 'PATCH', path: '/subscriptions/{id}', tenancy: 'tenant', handle: changeSubscription },
  { method: 'DELETE', path: '/subscriptions/{id}', tenancy: 'tenant', handle: changeSubscription },
  { method: 'GET', path: '/users', tenancy: 'tenant', handle: async (c) => sendJson(c.res, 200, { list: await c.m.listUsers() }) },
  {
    method: 'POST',
    path: '/users',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      const roles = strings(b.roles, 'roles');
      const users = c.ctx.oauth.users;
      if (users.kind !== 'database') {
        // A read_write_ldap directory takes new users; other directories are read only (docs/user-stores.md).
        if (users.addUser === undefined)
          throw new OAuthError(
            'conflict',
            `users sign in against ${users.description}: add them in the directory; throughway does not write to it`,
          );
        // Tenants' users live in the key manager's store (docs/tenants.md): a directory holds the super tenant's.
        if (c.caller.tenant !== SUPER_TENANT)
          throw new OAuthError('access_denied', `users sign in against ${users.description}, which holds the super tenant's users only`);
        const input = { username: need(b.username, 'username'), password: need(b.password, 'password'), roles: roles ?? [] };
        checkNewUser(input, c.ctx.userRules);
        const added = await users.addUser(input.username, input.password, input.roles);
        c.ctx.logger.log('info', 'user_added', { username: added.username, store: users.description });
        return sendJson(c.res, 201, added);
      }
      const u = await c.m.addUser(
        { username: need(b.username, 'username'), password: need(b.password, 'password'), ...(roles !== undefined ? { roles } : {}) },
        c.ctx.userRules,
      );
      return sendJson(c.res, 201, u);
    },
  },
  // Roles replaced and users removed: the declarative sync's (docs/sync.md); the store's users only.
  {
    method: 'PUT',
    path: '/users/{name}/roles',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      if (c.ctx.oauth.users.kind !== 'database')
        throw new OAuthError('conflict', `users sign in against ${c.ctx.oauth.users.description}: change their roles in the directory`);
      const name = c.params[0] as string;
      const roles = strings(b.roles, 'roles') ?? [];
      if (!roles.includes('admin')) await keepAdmin(c, name, 'its admin role is kept');
      return sendJson(c.res, 200, await c.m.setUserRoles(name, roles));
    },
  },
  {
    method: 'DELETE',
    path: '/users/{name}',
    tenancy: 'tenant',
    async handle(c) {
      const name = c.params[0] as string;
      await keepAdmin(c, name, 'not removed');
      const u = await c.m.deleteUser(name);
      // A removed user's grants end with it: refresh tokens and the access tokens issued with them.
      const revoked = await c.ctx.oauth.revokeUser(u.username);
      c.ctx.logger.log('info', 'user_removed', { username: u.username, by: c.caller.username, access_tokens_revoked: revoked });
      return sendJson(c.res, 200, u);
    },
  },
  // A gateway-worker's backend JWT user claims ([apim.jwt] enable_user_claims; lib/scale/control-plane.ts).
  {
    method: 'GET',
    path: '/users/{name}/claims',
    tenancy: 'tenant',
    async handle(c) {
      const id = c.params[0] as string;
      const claims =
        c.m.scope === undefined || c.m.scope === SUPER_TENANT || (await c.m.findUser(id)) !== undefined
          ? await c.m.userClaims(id)
          : undefined;
      if (claims === undefined) throw new OAuthError('not_found', `no user ${id}`);
      return sendJson(c.res, 200, { username: id, claims });
    },
  },
  // Each tenant's admin sees and rotates its own tenant's ring only (docs/tenants.md, "Signing keys").
  {
    method: 'GET',
    path: '/signing-keys',
    tenancy: 'tenant',
    async handle(c) {
      const keys = c.ctx.keys;
      if (c.query.get('tenant') === '*' && c.caller.tenant === SUPER_TENANT)
        return sendJson(c.res, 200, { tenant: SUPER_TENANT, keys: keys.publicJwks(), tenants: keys.tenantKeySets() });
      const tenant = ringTenant(c);
      return sendJson(c.res, 200, { tenant, keys: await keys.tenantJwks(tenant) });
    },
  },
  {
    method: 'POST',
    path: '/signing-keys/rotate',
    tenancy: 'tenant',
    async handle(c) {
      const tenant = ringTenant(c);
      const kid = await c.ctx.keys.rotate(tenant).catch((err: unknown) => {
        throw err instanceof KeyRingError ? new OAuthError('conflict', err.message) : err;
      });
      c.ctx.logger.log('info', 'signing_key_rotated', { kid, tenant, by: c.caller.username });
      return sendJson(c.res, 200, { tenant, kid });
    },
  },
  // Each tenant's admin has its own blocking conditions (docs/tenants.md, "Blocking conditions").
  {
    method: 'GET',
    path: '/blocking-conditions',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, { list: await blockingManager(c).listBlockingConditions() }),
  },
  {
    method: 'POST',
    path: '/blocking-conditions',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      if (b.invert !== undefined && typeof b.invert !== 'boolean') throw new OAuthError('invalid_request', 'invert must be true or false');
      const m = blockingManager(c, false);
      return sendJson(
        c.res,
        201,
        await m.addBlockingCondition({ type: need(b.type, 'type'), value: need(b.value, 'value'), invert: b.invert === true }),
      );
    },
  },
  {
    method: 'DELETE',
    path: '/blocking-conditions/{id}',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, await blockingManager(c).removeBlockingCondition(c.params[0] as string)),
  },
  // Initial access tokens for dynamic client registration (RFC 7591 §3, lib/keymanager/registration.ts).
  {
    method: 'POST',
    path: '/registration-tokens',
    tenancy: 'super',
    async handle(c) {
      const b = await readJson(c.req);
      if (b.expiresIn !== undefined && typeof b.expiresIn !== 'number')
        throw new OAuthError('invalid_request', 'expiresIn must be a number of seconds');
      const admin = c.caller.username;
      const t = await issueRegistrationToken(c.ctx.keys, c.ctx.oauth.settings.issuer, {
        issuedBy: admin,
        ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}),
        ...(typeof b.expiresIn === 'number' ? { expiresIn: b.expiresIn } : {}),
      });
      c.ctx.logger.log('info', 'registration_token_issued', { jti: t.jti, owner: t.owner, issued_by: admin, expires_at: t.expiresAt });
      return sendJson(c.res, 201, t, { 'Cache-Control': 'no-store' });
    },
  },
  {
    method: 'DELETE',
    path: '/registration-tokens/{jti}',
    tenancy: 'super',
    async handle(c) {
      const id = c.params[0] as string;
      await revokeRegistrationToken(c.ctx.store, id);
      c.ctx.logger.log('info', 'registration_token_revoked', { jti: id });
      return sendJson(c.res, 200, { jti: id, revoked: true });
    },
  },
  // The consoles of a node pointing at this key manager (console-clients.ts, docs/portal.md "Server roles").
  {
    method: 'POST',
    path: '/console-clients',
    tenancy: 'super',
    async handle(c) {
      const b = await readJson(c.req);
      const origins = { http: origin(b.http, 'http'), https: origin(b.https, 'https') };
      if (origins.http === undefined && origins.https === undefined)
        throw new OAuthError('invalid_request', "http or https (the consoles' origin) is required");
      const clients = await registerConsoleClients(c.m, c.ctx.store, c.ctx.oauth.settings.adminUser, origins);
      for (const x of clients) c.ctx.firstParty.add(x.consumerKey);
      c.ctx.logger.log('info', 'console_clients_registered', { origins: clients.map((x) => x.origin), by: c.caller.username });
      return sendJson(c.res, 201, { clients }, { 'Cache-Control': 'no-store' });
    },
  },
  {
    method: 'POST',
    path: '/console-clients/{consumerKey}',
    tenancy: 'super',
    async handle(c) {
      // A console asks again (before each sign-in): this key manager may have restarted since it registered.
      const id = c.params[0] as string;
      if (!(await isConsoleClient(c.ctx.store, c.ctx.oauth.settings.adminUser, id)))
        throw new OAuthError('not_found', `no console client ${id}`);
      c.ctx.firstParty.add(id);
      return sendJson(c.res, 200, { consumerKey: id, firstParty: true });
    },
  },
  {
    method: 'GET',
    path: '/api-files',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles !== undefined,
    async handle(c) {
      // A tenant's admin: its own tenant's files; the super tenant's: its own, or ?tenant=<domain>'s.
      const asked = c.query.get('tenant');
      const tenant = asked === null || asked === '' ? c.caller.tenant : asked;
      if (!mayReachFiles(c, tenant)) throw new OAuthError('not_found', `no tenant ${tenant.slice(0, 260)}`);
      return sendJson(c.res, 200, { list: c.ctx.apiFiles?.listFiles(tenant) ?? [] });
    },
  },
  {
    method: 'GET',
    path: '/api-files/{id}',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles !== undefined,
    async handle(c) {
      const f = c.ctx.apiFiles?.readFile(fileId(c));
      if (f === undefined) throw new OAuthError('not_found', `no API file ${c.params[0] ?? ''}`);
      return sendJson(c.res, 200, f);
    },
  },
  {
    method: 'PUT',
    path: '/api-files/{id}',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles !== undefined,
    async handle(c) {
      const id = fileId(c);
      const b = await readJson(c.req, MAX_PROTO_UPLOAD_BODY);
      // A gRPC API's .proto files may come with its text (docs/grpc.md): checked and written together.
      const protos = b.protos === undefined ? undefined : protoFiles(b.protos);
      const r = await (c.ctx.apiFiles as ApiFileService).writeFile(id, need(b.text, 'text'), b.create === true, protos);
      if ('status' in r) return apiFileAnswer(c, r);
      c.ctx.logger.log('info', 'api_file_written', { id: r.id, by: c.caller.username });
      return sendJson(c.res, 200, { id: r.id });
    },
  },
  // A gRPC API file's .proto files (docs/grpc.md, "The .proto files in the publisher"): checked with the
  // API file before anything is written, stored beside it, named in its [grpc] proto list.
  {
    method: 'GET',
    path: '/api-files/{id}/protos',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles?.readProtos !== undefined,
    async handle(c) {
      const p = c.ctx.apiFiles?.readProtos?.(fileId(c));
      if (p === undefined) throw new OAuthError('not_found', `no API file ${c.params[0] ?? ''}`);
      return sendJson(c.res, 200, p);
    },
  },
  {
    method: 'PUT',
    path: '/api-files/{id}/protos',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles?.writeProtos !== undefined,
    async handle(c) {
      const id = fileId(c);
      const files = protoFiles((await readJson(c.req, MAX_PROTO_UPLOAD_BODY)).files);
      const names = files.map((f) => f.name);
      return protosChanged(c, await (c.ctx.apiFiles as Required<ApiFileService>).writeProtos(id, files), 'api_protos_written', names);
    },
  },
  {
    method: 'DELETE',
    path: '/api-files/{id}/protos/{name}',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles?.removeProto !== undefined,
    async handle(c) {
      const id = fileId(c);
      const name = c.params[1] as string;
      return protosChanged(c, await (c.ctx.apiFiles as Required<ApiFileService>).removeProto(id, name), 'api_proto_removed', [name]);
    },
  },
  {
    method: 'POST',
    path: '/api-files/{id}/lifecycle',
    tenancy: 'tenant',
    when: (ctx) => ctx.apiFiles !== undefined,
    async handle(c) {
      const id = fileId(c);
      const b = await readJson(c.req);
      const to = need(b.state, 'state');
      // The API state workflow (docs/workflows.md): with an approval or external executor the move waits, 202.
      const w = c.ctx.workflows;
      const file = (c.ctx.apiFiles as ApiFileService).readFile(id);
      if (w !== undefined && file !== undefined) {
        const context = /^\s*context\s*=\s*"([^"]*)"/m.exec(file.text)?.[1] ?? '';
        // The id names the tenant (a tenant's file has its context as written, without /t/<domain>).
        const tenant = tenantOfFileId(file.id);
        const executor = await w.executorOf(tenant, 'AM_API_STATE');
        if (executor !== 'simple') {
          const from =
            /^\s*state\s*=\s*"([^"]*)"/m.exec(file.text)?.[1] ?? (/^(t:[^:]*:)?created:/.test(file.id) ? 'CREATED' : 'PUBLISHED');
          const workflow = await w.start({
            type: 'AM_API_STATE',
            tenant,
            requester: c.caller.username,
            entity: file.id,
            description: `API file ${file.id} (${context}): ${from} → ${to}`,
            attributes: { from, to },
            executor,
          });
          return sendJson(c.res, 202, { id: file.id, from, to, workflow });
        }
      }
      const r = await (c.ctx.apiFiles as ApiFileService).transitionFile(id, to);
      if ('status' in r) return apiFileAnswer(c, r);
      c.ctx.logger.log('info', 'api_file_transition', { id: r.id, from: r.from, to: b.state, by: c.caller.username });
      return sendJson(c.res, 200, { id: r.id, from: r.from, to: b.state });
    },
  },
  { method: 'GET', path: '/snapshot', tenancy: 'super', handle: async (c) => sendJson(c.res, 200, await c.m.snapshot()) },
  // What gateway-workers deploy (docs/scale-out.md): `?labels=A,B` keeps the APIs sharing one of them.
  {
    method: 'GET',
    path: '/deployments',
    tenancy: 'super',
    when: (ctx) => ctx.deployments !== undefined,
    async handle(c) {
      const l = c.query.get('labels');
      const d = (c.ctx.deployments as NonNullable<RouteContext['deployments']>)(
        l === null
          ? undefined
          : l
              .split(',')
              .map((x) => x.trim())
              .filter((x) => x !== ''),
      );
      // The version is the ETag: a gateway-worker checking that it runs the same set gets 304 and no body
      // (RFC 9110 §13.1.2); lib/scale/deployment-check.ts.
      const etag = d.version !== undefined ? `"${d.version}"` : undefined;
      if (etag !== undefined && c.req.headers['if-none-match'] === etag) {
        c.res.writeHead(304, { ETag: etag });
        c.res.end();
        return;
      }
      return sendJson(c.res, 200, d, etag !== undefined ? { ETag: etag } : {});
    },
  },
  {
    method: 'GET',
    path: '/revocations',
    tenancy: 'super',
    handle: async (c) => sendJson(c.res, 200, { list: await c.ctx.store.listRevoked(Date.now()) }),
  },
  // Workflow tasks and executors (docs/workflows.md): the caller's own tenant's, the super admin's the super tenant's.
  {
    method: 'GET',
    path: '/tasks',
    tenancy: 'tenant',
    async handle(c) {
      const tenant = taskTenant(c);
      const type = c.query.get('type') ?? undefined;
      const st = c.query.get('status') ?? undefined;
      if (st !== undefined && st !== 'CREATED' && st !== 'APPROVED' && st !== 'REJECTED')
        throw new OAuthError('invalid_request', 'status must be CREATED, APPROVED or REJECTED');
      const list = await workflowsOf(c.ctx).list({
        tenant,
        ...(type !== undefined ? { type } : {}),
        ...(st !== undefined ? { pending: st === 'CREATED' } : {}),
      });
      return sendJson(c.res, 200, { list: st === undefined || st === 'CREATED' ? list : list.filter((x) => x.status === st) });
    },
  },
  {
    method: 'GET',
    path: '/tasks/{id}',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, await workflowsOf(c.ctx).get(c.params[0] as string, taskTenant(c))),
  },
  { method: 'POST', path: '/tasks/{id}/approve', tenancy: 'tenant', handle: (c) => decideTask(c, 'APPROVED') },
  { method: 'POST', path: '/tasks/{id}/reject', tenancy: 'tenant', handle: (c) => decideTask(c, 'REJECTED') },
  {
    method: 'POST',
    path: '/tasks/{id}/retry',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, await workflowsOf(c.ctx).retry(c.params[0] as string, taskTenant(c))),
  },
  {
    method: 'GET',
    path: '/workflow-executors',
    tenancy: 'tenant',
    handle: async (c) => sendJson(c.res, 200, { tenant: c.caller.tenant, executors: await workflowsOf(c.ctx).executors(c.caller.tenant) }),
  },
  {
    method: 'PUT',
    path: '/workflow-executors/{type}',
    tenancy: 'tenant',
    async handle(c) {
      const b = await readJson(c.req);
      const w = workflowsOf(c.ctx);
      await w.setExecutor(c.caller.tenant, c.params[0], b.executor).catch((err: unknown) => {
        throw err instanceof WorkflowError && err.code === 'WORKFLOW_ENGINE_DISABLED'
          ? new OAuthError('invalid_request', `${err.code}: ${err.message}`)
          : err;
      });
      return sendJson(c.res, 200, { tenant: c.caller.tenant, executors: await w.executors(c.caller.tenant) });
    },
  },
  // Tenants (docs/tenants.md): the super tenant's admins only.
  {
    method: 'GET',
    path: '/tenants',
    tenancy: 'super',
    handle: async (c) => sendJson(c.res, 200, { list: tenantsOf(c.ctx).list().map(tenantView) }),
  },
  {
    method: 'POST',
    path: '/tenants',
    tenancy: 'super',
    async handle(c) {
      const b = await readJson(c.req);
      const input = {
        domain: need(b.domain, 'domain'),
        admin: need(b.admin, 'admin'),
        password: need(b.password, 'password'),
        ...(str(b.package) !== undefined ? { package: str(b.package) as string } : {}),
      };
      if (b.package !== undefined && typeof b.package !== 'string') throw new OAuthError('invalid_request', 'package must be a string');
      checkNewUser({ username: input.admin, password: input.password }, c.ctx.userRules);
      const t = await tenantsOf(c.ctx).add(input).catch(tenantRefusal);
      // Its own signing key at once, as the reference makes a tenant's keystore with it (docs/tenants.md, "Signing keys").
      const keys = await c.ctx.keys.tenantJwks(t.domain);
      c.ctx.logger.log('info', 'tenant_added', {
        domain: t.domain,
        admin: t.admin,
        package: t.package,
        active: t.active,
        kid: keys[0]?.kid,
        by: c.caller.username,
      });
      return sendJson(c.res, 201, tenantView(t));
    },
  },
  {
    method: 'GET',
    path: '/tenants/{domain}',
    tenancy: 'super',
    async handle(c) {
      const t = tenantsOf(c.ctx).get(c.params[0] as string);
      if (t === undefined) throw new OAuthError('not_found', `TENANT_NOT_FOUND: no tenant ${c.params[0] ?? ''}`);
      return sendJson(c.res, 200, tenantView(t));
    },
  },
  { method: 'POST', path: '/tenants/{domain}/activate', tenancy: 'super', handle: (c) => setTenantActive(c, true) },
  { method: 'POST', path: '/tenants/{domain}/deactivate', tenancy: 'super', handle: (c) => setTenantActive(c, false) },
  // Another billing package (docs/tenants.md, "Billing packages"): what it limits acts from the next call.
  {
    method: 'PUT',
    path: '/tenants/{domain}/package',
    tenancy: 'super',
    async handle(c) {
      const b = await readJson(c.req);
      if (b.package !== undefined && typeof b.package !== 'string')
        throw new OAuthError('invalid_request', `package must be a string: ${PACKAGES.join(', ')}`);
      const domain = c.params[0] as string;
      const before = tenantsOf(c.ctx).get(domain)?.package;
      const t = await tenantsOf(c.ctx)
        .setPackage(domain, typeof b.package === 'string' ? b.package : '')
        .catch(tenantRefusal);
      c.ctx.logger.log('info', 'tenant_package_changed', {
        domain: t.domain,
        from: before ?? '',
        package: t.package,
        by: c.caller.username,
      });
      return sendJson(c.res, 200, tenantView(t));
    },
  },
  // A gateway-worker's tenants' bytes, added to the store's counts, and the month's counts of every gateway
  // back (docs/scale-out.md, "Tenants"; lib/scale/remote-tenants.ts sends it every second).
  {
    method: 'POST',
    path: '/tenant-bandwidth',
    tenancy: 'super',
    async handle(c) {
      const b = await readJson(c.req);
      const month = typeof b.month === 'string' && MONTH.test(b.month) ? b.month : undefined;
      if (month === undefined) throw new OAuthError('invalid_request', "month must be a calendar month 'YYYY-MM' (UTC)");
      const raw = b.bytes ?? {};
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
        throw new OAuthError('invalid_request', 'bytes must be an object of tenant domains and byte counts');
      const bytes = new Map<string, number>();
      for (const [d, n] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
          throw new OAuthError('invalid_request', `bytes of ${d.slice(0, 260)} must be a whole number of at least 0`);
        bytes.set(d, n);
      }
      return sendJson(c.res, 200, await tenantsOf(c.ctx).reportBandwidth(month, bytes));
    },
  },
] satisfies readonly AdminRoute[]);

const SEGMENTS = ADMIN_ROUTES.map((r) => r.path.split('/').filter((x) => x !== ''));

/** The route for a method and path's segments, with its bound segments; undefined when none matches. */
export function matchAdminRoute(
  ctx: RouteContext,
  method: string,
  parts: readonly string[],
): { route: AdminRoute; params: string[] } | undefined {
  for (let i = 0; i < ADMIN_ROUTES.length; i++) {
    const r = ADMIN_ROUTES[i] as AdminRoute;
    const segs = SEGMENTS[i] as string[];
    if (r.method !== method || segs.length !== parts.length || (r.when !== undefined && !r.when(ctx))) continue;
    const params: string[] = [];
    let ok = true;
    for (let j = 0; j < segs.length && ok; j++) {
      const s = segs[j] as string;
      if (s.startsWith('{')) params.push(parts[j] as string);
      else ok = s === parts[j];
    }
    if (ok) return { route: r, params };
  }
  return undefined;
}

export async function handleAdmin(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  query: URLSearchParams,
  caller: AdminCaller,
): Promise<void> {
  const method = req.method ?? 'GET';
  const parts = path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
  const found = matchAdminRoute(ctx, method, parts);
  if (found === undefined) throw new OAuthError('not_found', `no admin resource ${method} /admin/v1${path}`);
  const { route, params } = found;
  // A tenant's admin is its tenant's super admin and nothing more (docs/tenants.md, "Admins").
  if (route.tenancy === 'super' && caller.tenant !== SUPER_TENANT)
    throw new OAuthError(
      'access_denied',
      `${method} /admin/v1${route.path} is for the super tenant's admins; ${caller.username} is an admin of tenant ${caller.tenant}`,
    );
  const acting = actingCaller(ctx, route, caller, req.headers[ACTING_TENANT]);
  const scoped = route.tenancy === 'tenant' && ctx.manager.tenants?.any === true;
  const m = scoped ? ctx.manager.forTenant(acting.tenant) : ctx.manager;
  return route.handle({ ctx, req, res, params, query, caller: acting, m, owner: query.get('owner') ?? undefined });
}

/**
 * The caller a route acts for: a super tenant admin naming an existing tenant in ACTING_TENANT acts within
 * it (404 for a name that is no tenant); a tenant's admin naming another tenant is refused (404), as for
 * any of that tenant's rows; the header on another route is refused (400); otherwise the caller itself.
 */
function actingCaller(ctx: RouteContext, route: AdminRoute, caller: AdminCaller, header: string | string[] | undefined): AdminCaller {
  if (header === undefined) return caller;
  if (!/^\/(applications|subscriptions)(\/|$)/.test(route.path))
    throw new OAuthError('invalid_request', `the ${ACTING_TENANT} header is read on the applications and subscriptions routes only`);
  const asked = Array.isArray(header) ? (header[0] ?? '') : header;
  if (asked === caller.tenant) return caller;
  if (caller.tenant !== SUPER_TENANT || ctx.manager.tenants?.state(asked) === undefined)
    throw new OAuthError('not_found', `no tenant ${asked.slice(0, 260)}`);
  return { username: caller.username, tenant: asked };
}

/**
 * Refuses (409 with AdminKeptError's code, lib/keymanager/http.ts) a change that would leave the node
 * without an admin it relies on: the caller's own account, the super admin, a tenant's admin
 * (docs/admin-api.md, users). A user the caller cannot see is left to the route's own 404.
 */
async function keepAdmin(c: AdminCall, name: string, what: string): Promise<void> {
  if ((await c.m.findUser(name)) === undefined) return;
  if (name === c.caller.username) throw new AdminKeptError('USER_IS_CALLER', `${name} is the caller: ${what}`);
  if (name === c.ctx.oauth.settings.adminUser) throw new AdminKeptError('USER_IS_SUPER_ADMIN', `${name} is the super admin: ${what}`);
  const tenant = c.ctx.tenants?.list().find((x) => x.admin === name);
  if (tenant !== undefined) throw new AdminKeptError('USER_IS_TENANT_ADMIN', `${name} is the admin of tenant ${tenant.domain}: ${what}`);
}
