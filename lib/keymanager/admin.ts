/**
 * The JSON admin API on the management port, under /admin/v1, for the super admin (HTTP Basic; any
 * stored user with the admin role). docs/admin-api.md lists every route. Names in paths are
 * URL-encoded; `?owner=` picks among applications of the same name.
 */
import type * as http from 'node:http';
import { SUBSCRIPTION_STATES, type KeyType, type SubscriptionState } from '../store/types';
import { OAuthError } from './errors';
import { KeyRingError } from './keys';
import { checkNewUser } from './manage';
import { readJson, sendJson, type RouteContext } from './http';
import { issueRegistrationToken, revokeRegistrationToken } from './registration';
import { isConsoleClient, registerConsoleClients } from './console-clients';

/** An http(s) origin (scheme://host[:port]), or undefined when absent; anything else is refused. */
function origin(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  let u: URL | undefined;
  try {
    u = typeof v === 'string' ? new URL(v) : undefined;
  } catch {
    u = undefined;
  }
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== v) throw new OAuthError('invalid_request', `${name} must be an origin such as https://portal.example:9443`);
  if ((u.protocol === 'https:') !== (name === 'https')) throw new OAuthError('invalid_request', `${name} must be an ${name}:// origin`);
  return u.origin;
}

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

export async function handleAdmin(ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse, path: string, query: URLSearchParams, admin: string): Promise<void> {
  const method = req.method ?? 'GET';
  const parts = path.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
  const owner = query.get('owner') ?? undefined;
  const m = ctx.manager;
  const [collection, id, sub] = parts;

  // The gateway URLs clients are shown ([[apim.gateway.environment]]; lib/gateway/environments.ts).
  if (collection === 'environments' && id === undefined && method === 'GET') {
    const envs = ctx.oauth.settings.environments;
    return sendJson(res, 200, { list: envs.map((e) => ({ name: e.name, type: e.type, description: e.description, httpEndpoint: e.http ?? null, httpsEndpoint: e.https ?? null, wsEndpoint: e.ws ?? null, wssEndpoint: e.wss ?? null, tokenEndpoint: e.https !== undefined ? `${e.https}/token` : null, showAsTokenEndpointUrl: e.showAsTokenEndpoint, configured: e.configured })) });
  }
  if (collection === 'applications') {
    if (id === undefined && method === 'GET') return sendJson(res, 200, { list: await m.listApplications(owner) });
    if (id === undefined && method === 'POST') {
      const b = await readJson(req);
      const app = await m.createApplication({ name: need(b.name, 'name'), owner: str(b.owner) ?? ctx.oauth.settings.adminUser, ...(str(b.tier) !== undefined ? { tier: str(b.tier) as string } : {}), ...(str(b.description) !== undefined ? { description: str(b.description) as string } : {}) });
      return sendJson(res, 201, app);
    }
    if (id !== undefined && sub === undefined && method === 'GET') return sendJson(res, 200, await m.getApplication(id, owner));
    if (id !== undefined && sub === undefined && method === 'DELETE') return sendJson(res, 200, await m.deleteApplication(id, owner));
    if (id !== undefined && sub === undefined && method === 'PATCH') {
      const b = await readJson(req);
      if (b.tier !== undefined && typeof b.tier !== 'string') throw new OAuthError('invalid_request', 'tier must be a string');
      if (b.description !== undefined && typeof b.description !== 'string') throw new OAuthError('invalid_request', 'description must be a string');
      return sendJson(res, 200, await m.updateApplication(id, { ...(typeof b.tier === 'string' ? { tier: b.tier } : {}), ...(typeof b.description === 'string' ? { description: b.description } : {}), ...(owner !== undefined ? { owner } : {}) }));
    }
    if (id !== undefined && sub === 'keys' && method === 'POST' && parts.length === 3) {
      const b = await readJson(req);
      const grantTypes = strings(b.grantTypes, 'grantTypes');
      const keys = await m.generateKeys(id, { keyType: keyType(b.keyType), ...(grantTypes !== undefined ? { grantTypes } : {}), ...(str(b.callbackUrl) !== undefined ? { callbackUrl: str(b.callbackUrl) as string } : {}), ...(owner !== undefined ? { owner } : {}) });
      return sendJson(res, 201, keys, { 'Cache-Control': 'no-store' });
    }
  }
  if (collection === 'subscriptions' && sub === undefined) {
    if (id === undefined && method === 'GET') {
      const app = query.get('application') ?? undefined;
      const api = query.get('api') ?? undefined;
      return sendJson(res, 200, { list: await m.listSubscriptions({ ...(app !== undefined ? { application: app } : {}), ...(owner !== undefined ? { owner } : {}), ...(api !== undefined ? { apiContext: api } : {}) }) });
    }
    if (id === undefined && method === 'POST') {
      const b = await readJson(req);
      const s = await m.addSubscription({
        application: need(b.application, 'application'),
        apiContext: need(b.api, 'api'),
        apiVersion: need(b.version, 'version'),
        ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}),
        ...(str(b.tier) !== undefined ? { tier: str(b.tier) as string } : {}),
        ...(b.state !== undefined ? { state: state(b.state) } : {}),
      });
      return sendJson(res, 201, s);
    }
    // By id in the path, or by { application, api, version } in the body.
    if (method === 'PATCH' || method === 'DELETE') {
      const b = await readJson(req);
      const ref = id !== undefined
        ? { id }
        : { application: need(b.application, 'application'), apiContext: need(b.api, 'api'), ...(str(b.version) !== undefined ? { apiVersion: str(b.version) as string } : {}), ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}) };
      if (method === 'DELETE') return sendJson(res, 200, await m.removeSubscription(ref));
      return sendJson(res, 200, await m.setSubscriptionState(ref, state(b.state)));
    }
  }
  if (collection === 'users' && id === undefined) {
    if (method === 'GET') return sendJson(res, 200, { list: await m.listUsers() });
    if (method === 'POST') {
      const b = await readJson(req);
      const roles = strings(b.roles, 'roles');
      const users = ctx.oauth.users;
      if (users.kind !== 'database') {
        // A read_write_ldap directory takes new users; other directories are read only (docs/user-stores.md).
        if (users.addUser === undefined) throw new OAuthError('conflict', `users sign in against ${users.description}: add them in the directory; throughway does not write to it`);
        const input = { username: need(b.username, 'username'), password: need(b.password, 'password'), roles: roles ?? [] };
        checkNewUser(input, ctx.userRules);
        const added = await users.addUser(input.username, input.password, input.roles);
        ctx.logger.log('info', 'user_added', { username: added.username, store: users.description });
        return sendJson(res, 201, added);
      }
      const u = await m.addUser({ username: need(b.username, 'username'), password: need(b.password, 'password'), ...(roles !== undefined ? { roles } : {}) }, ctx.userRules);
      return sendJson(res, 201, u);
    }
  }
  // A gateway-worker's backend JWT user claims ([apim.jwt] enable_user_claims; lib/scale/control-plane.ts).
  if (collection === 'users' && id !== undefined && sub === 'claims' && method === 'GET' && parts.length === 3) {
    const claims = await m.userClaims(id);
    if (claims === undefined) throw new OAuthError('not_found', `no user ${id}`);
    return sendJson(res, 200, { username: id, claims });
  }
  if (collection === 'signing-keys' && id === undefined && method === 'GET') return sendJson(res, 200, { keys: ctx.keys.publicJwks() });
  if (collection === 'signing-keys' && id === 'rotate' && method === 'POST') {
    const kid = await ctx.keys.rotate().catch((err: unknown) => {
      throw err instanceof KeyRingError ? new OAuthError('conflict', err.message) : err;
    });
    ctx.logger.log('info', 'signing_key_rotated', { kid });
    return sendJson(res, 200, { kid });
  }
  if (collection === 'blocking-conditions' && sub === undefined) {
    if (id === undefined && method === 'GET') return sendJson(res, 200, { list: await m.listBlockingConditions() });
    if (id === undefined && method === 'POST') {
      const b = await readJson(req);
      if (b.invert !== undefined && typeof b.invert !== 'boolean') throw new OAuthError('invalid_request', 'invert must be true or false');
      return sendJson(res, 201, await m.addBlockingCondition({ type: need(b.type, 'type'), value: need(b.value, 'value'), invert: b.invert === true }));
    }
    if (id !== undefined && method === 'DELETE') return sendJson(res, 200, await m.removeBlockingCondition(id));
  }
  // Initial access tokens for dynamic client registration (RFC 7591 §3, lib/keymanager/registration.ts).
  if (collection === 'registration-tokens' && sub === undefined) {
    if (id === undefined && method === 'POST') {
      const b = await readJson(req);
      if (b.expiresIn !== undefined && typeof b.expiresIn !== 'number') throw new OAuthError('invalid_request', 'expiresIn must be a number of seconds');
      const t = await issueRegistrationToken(ctx.keys, ctx.oauth.settings.issuer, { issuedBy: admin, ...(str(b.owner) !== undefined ? { owner: str(b.owner) as string } : {}), ...(typeof b.expiresIn === 'number' ? { expiresIn: b.expiresIn } : {}) });
      ctx.logger.log('info', 'registration_token_issued', { jti: t.jti, owner: t.owner, issued_by: admin, expires_at: t.expiresAt });
      return sendJson(res, 201, t, { 'Cache-Control': 'no-store' });
    }
    if (id !== undefined && method === 'DELETE') {
      await revokeRegistrationToken(ctx.store, id);
      ctx.logger.log('info', 'registration_token_revoked', { jti: id });
      return sendJson(res, 200, { jti: id, revoked: true });
    }
  }
  // The consoles of a node pointing at this key manager (console-clients.ts, docs/portal.md "Server roles").
  if (collection === 'console-clients' && sub === undefined && method === 'POST') {
    const adminUser = ctx.oauth.settings.adminUser;
    if (id === undefined) {
      const b = await readJson(req);
      const origins = { http: origin(b.http, 'http'), https: origin(b.https, 'https') };
      if (origins.http === undefined && origins.https === undefined) throw new OAuthError('invalid_request', 'http or https (the consoles\' origin) is required');
      const clients = await registerConsoleClients(m, ctx.store, adminUser, origins);
      for (const c of clients) ctx.firstParty.add(c.consumerKey);
      ctx.logger.log('info', 'console_clients_registered', { origins: clients.map((c) => c.origin), by: admin });
      return sendJson(res, 201, { clients }, { 'Cache-Control': 'no-store' });
    }
    // A console asks again (before each sign-in): this key manager may have restarted since it registered.
    if (!(await isConsoleClient(ctx.store, adminUser, id))) throw new OAuthError('not_found', `no console client ${id}`);
    ctx.firstParty.add(id);
    return sendJson(res, 200, { consumerKey: id, firstParty: true });
  }
  if (collection === 'api-files' && ctx.apiFiles !== undefined) {
    const files = ctx.apiFiles;
    if (id === undefined && method === 'GET') return sendJson(res, 200, { list: files.listFiles() });
    if (id !== undefined && sub === undefined && method === 'GET') {
      const f = files.readFile(id);
      if (f === undefined) throw new OAuthError('not_found', `no API file ${id}`);
      return sendJson(res, 200, f);
    }
    if (id !== undefined && sub === undefined && method === 'PUT') {
      const b = await readJson(req);
      const r = await files.writeFile(id, need(b.text, 'text'), b.create === true);
      if ('status' in r) return sendJson(res, r.status, { error: r.status === 409 ? 'conflict' : 'invalid_request', error_description: r.message, fields: r.fields });
      ctx.logger.log('info', 'api_file_written', { id: r.id, by: admin });
      return sendJson(res, 200, { id: r.id });
    }
    if (id !== undefined && sub === 'lifecycle' && method === 'POST') {
      const b = await readJson(req);
      const r = await files.transitionFile(id, need(b.state, 'state'));
      if ('status' in r) return sendJson(res, r.status, { error: r.status === 409 ? 'conflict' : r.status === 404 ? 'not_found' : 'invalid_request', error_description: r.message, fields: r.fields });
      ctx.logger.log('info', 'api_file_transition', { id: r.id, from: r.from, to: b.state, by: admin });
      return sendJson(res, 200, { id: r.id, from: r.from, to: b.state });
    }
  }
  if (collection === 'snapshot' && id === undefined && method === 'GET') return sendJson(res, 200, await m.snapshot());
  // What gateway-workers deploy (docs/scale-out.md): `?labels=A,B` keeps the APIs sharing one of them.
  if (collection === 'deployments' && id === undefined && method === 'GET' && ctx.deployments !== undefined) {
    const l = query.get('labels');
    const d = ctx.deployments(l === null ? undefined : l.split(',').map((x) => x.trim()).filter((x) => x !== ''));
    // The version is the ETag: a gateway-worker checking that it runs the same set gets 304 and no body
    // (RFC 9110 §13.1.2); lib/scale/deployment-check.ts.
    const etag = d.version !== undefined ? `"${d.version}"` : undefined;
    if (etag !== undefined && req.headers['if-none-match'] === etag) {
      res.writeHead(304, { ETag: etag });
      res.end();
      return;
    }
    return sendJson(res, 200, d, etag !== undefined ? { ETag: etag } : {});
  }
  if (collection === 'revocations' && id === undefined && method === 'GET') return sendJson(res, 200, { list: await ctx.store.listRevoked(Date.now()) });
  throw new OAuthError('not_found', `no admin resource ${method} /admin/v1${path}`);
}
