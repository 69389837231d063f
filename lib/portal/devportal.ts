/**
 * The developer portal at /devportal (docs/portal.md, "Developer portal"): the catalogue of published
 * APIs with search, and for a signed-in user their applications, keys (the secret shown once),
 * subscriptions with a tier of the throttling policies, access tokens and the try-it console. Every
 * change goes through the key manager's Manager (lib/keymanager/manage.ts), so the gateways hear of it
 * by the same events as for the admin API and the CLI.
 */
import { versionedPath } from '../gateway/apis';
import type { ApplicationView } from '../keymanager/manage';
import { OAuthError } from '../keymanager/errors';
import type { KeyType, Subscription } from '../store/types';
import { apiUrls, type CatalogueEntry } from './catalogue';
import { apiDocument, definitionHtml, downloadName, forGateway, sendDefinition } from './definition';
import { GRPC_TRY_REFUSAL, grpcMethodsHtml } from './grpc-page';
import { isConsolesApp } from './signin';
import { type Call, problem, render, takeFlash } from './context';
import { copyButton, csrfField, escapeHtml as h, field, seeOther, select } from './html';
import { apiCommunityHtml, apiCommunityPost, communityPage } from './community';
import { sdkDownload, sdkHtml } from './sdk-page';
import { mayUseApplication, visibleApplications } from './sharing';
import { MAX_REQUEST_BODY, TRY_METHODS, tryCall, type TryResult, tryTarget } from './tryit';
import { appTierOptions, decodedJwt, keyTab, renderAppPage, subscribableTiers, type Tab, tabOf, tabUrl, utc } from './application';
import { operationPath, tryOperations } from './tryit-page';
import { SUPER_TENANT, tenantOfFileId } from '../tenants';

function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

type Listed = CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> };

/**
 * The tenant whose catalogue a page shows (docs/tenants.md, "The developer portal"): `?tenant=<domain>` as
 * the reference writes it, else the signed-in user's tenant, else the super tenant.
 */
export function portalTenant(c: Call): string {
  const asked = c.query.get('tenant');
  if (asked !== null && asked !== '') return asked.slice(0, 300);
  const u = c.session.user;
  return u === undefined || c.parts.tenants === undefined ? SUPER_TENANT : c.parts.tenants.tenantOf(u.username);
}

/**
 * What the catalogue of `tenant` lists ([apim.devportal] display_deprecated_apis, display_multiple_versions);
 * nothing for a tenant not served. A tenant's files are read for the call (forTenant: this node's apis_dir,
 * or one request to a remote control plane).
 */
export async function visibleApisOf(c: Call, tenant: string): Promise<Listed[]> {
  const s = c.parts.settings;
  const shown = (e: CatalogueEntry): e is Listed =>
    e.api !== undefined && (e.state === 'PUBLISHED' || e.state === 'PROTOTYPED' || (e.state === 'DEPRECATED' && s.displayDeprecated));
  let entries: CatalogueEntry[];
  if (tenant === SUPER_TENANT) entries = c.parts.catalogue.list();
  else if (c.parts.tenants?.state(tenant) === 'active') {
    const own = c.parts.catalogue.forTenant(tenant);
    await own?.refresh();
    entries = own?.list() ?? [];
  } else entries = [];
  const all = entries.filter(shown);
  if (s.displayMultipleVersions) return all;
  const newest = new Map<string, Listed>();
  for (const e of all) {
    const before = newest.get(e.api.name);
    if (before === undefined || compareVersions(e.api.version, before.api.version) > 0) newest.set(e.api.name, e);
  }
  return all.filter((e) => newest.get(e.api.name) === e);
}

/** The catalogue of the page's tenant (portalTenant). */
export function visibleApis(c: Call): Promise<Listed[]> {
  return visibleApisOf(c, portalTenant(c));
}

/** An API of the catalogue by id, looked up in the catalogue of its own tenant (the id names it). */
export async function findApi(c: Call, id: string | null | undefined): Promise<Listed | undefined> {
  if (id === null || id === undefined) return undefined;
  return (await visibleApisOf(c, tenantOfFileId(id))).find((x) => x.id === id);
}

function matches(e: CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> }, q: string): boolean {
  const a = e.api;
  const hay = [a.name, a.context, a.version, a.description ?? '', ...a.labels, ...a.resources.map((r) => r.path)].join(' ').toLowerCase();
  return q
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '')
    .every((w) => hay.includes(w));
}

const state = (s: string): string => `<span class="state">${h(s)}</span>`;

async function cataloguePage(c: Call): Promise<void> {
  const q = (c.query.get('q') ?? '').slice(0, 200);
  const tenant = portalTenant(c);
  if (tenant !== SUPER_TENANT && c.parts.tenants?.state(tenant) !== 'active')
    return problem(
      c,
      'devportal',
      404,
      'No such tenant',
      c.parts.tenants?.state(tenant) === 'inactive' ? `Tenant ${tenant} is deactivated.` : `No tenant ${tenant} is served here.`,
    );
  const apis = (await visibleApis(c)).filter((e) => q === '' || matches(e, q));
  const rows = apis
    .map(
      (e) =>
        `<tr><td><a href="/devportal/apis/${encodeURIComponent(e.id)}">${h(e.api.name)}</a></td><td>${h(e.api.version)}</td><td><code>${h(e.api.context)}</code></td><td>${state(e.state)}</td><td>${h(e.api.labels.join(', '))}</td><td>${h(e.api.description ?? '')}</td></tr>`,
    )
    .join('\n');
  const signin =
    c.session.user === undefined ? '<p><a href="/devportal/login">Sign in</a> to create applications, get keys and subscribe.</p>' : '';
  render(
    c,
    'devportal',
    tenant === SUPER_TENANT ? 'APIs' : `APIs of ${tenant}`,
    `${signin}
<form method="get" action="/devportal" role="search">${c.query.get('tenant') !== null ? `<input type="hidden" name="tenant" value="${h(tenant)}">` : ''}
<label for="q">Search APIs</label>
<input type="search" id="q" name="q" value="${h(q)}" placeholder="name, context, tag or resource">
<button type="submit">Search</button>
</form>
<p>${apis.length} API${apis.length === 1 ? '' : 's'}${q !== '' ? ` matching <strong>${h(q)}</strong>` : ''}.</p>
<div class="table"><table><thead><tr><th scope="col">Name</th><th scope="col">Version</th><th scope="col">Context</th><th scope="col">State</th><th scope="col">Tags</th><th scope="col">Description</th></tr></thead>
<tbody>${rows}</tbody></table></div>`,
  );
}

async function apiPage(c: Call, id: string): Promise<void> {
  const e = await findApi(c, id);
  if (e === undefined) return problem(c, 'devportal', 404, 'No such API', 'This API is not in the catalogue.');
  const a = e.api;
  const gatewayUrls = apiUrls(a, c.parts.gateways());
  const urls = gatewayUrls.map((u) => `<li>${h(u.name)}: <code>${h(u.url)}</code></li>`).join('');
  const d = apiDocument(a);
  const definition =
    d === undefined
      ? ''
      : 'error' in d
        ? `<h2>OpenAPI document</h2><p class="error" role="alert">The OpenAPI document cannot be read: ${h(d.error)}</p>`
        : definitionHtml(d.doc, gatewayUrls, `/devportal/apis/${encodeURIComponent(e.id)}/openapi.json`);
  const scopeRoles = new Map(a.scopes.map((s) => [s.name, s.roles]));
  const resources = a.resources
    .map(
      (r) =>
        `<tr><td>${h(r.methods.join(', '))}</td><td><code>${h(r.path)}</code></td><td>${h(r.auth === 'oauth2' ? 'OAuth 2.0 token' : 'none')}</td><td>${h(r.scopes.map((s) => `${s}${(scopeRoles.get(s) ?? []).length > 0 ? ` (roles: ${(scopeRoles.get(s) ?? []).join(', ')})` : ''}`).join('; '))}</td></tr>`,
    )
    .join('\n');
  let subscribe = '';
  if (c.session.user !== undefined && (e.state === 'PUBLISHED' || e.state === 'PROTOTYPED')) {
    const apps = (await visibleApplications(c)).filter((x) => !isConsolesApp(x.name));
    subscribe =
      apps.length === 0
        ? '<p><a href="/devportal/applications">Create an application</a> to subscribe.</p>'
        : `<h2>Subscribe</h2><form method="post" action="/devportal/subscribe">${csrfField(c.session.csrf)}<input type="hidden" name="api" value="${h(e.id)}">
${select({ id: 'application', label: 'Application', options: apps.map((x) => [x.id, x.name]) })}
${select({ id: 'tier', label: 'Tier', options: subscribableTiers(c).map((t) => [t, t]) })}
<button type="submit">Subscribe</button></form>`;
  }
  render(
    c,
    'devportal',
    `${a.name} ${a.version}`,
    `<p>${h(a.description ?? '')}</p>
<dl><dt>Context</dt><dd><code>${h(a.context)}</code></dd><dt>State</dt><dd>${state(e.state)}</dd><dt>Tags</dt><dd>${h(a.labels.join(', '))}</dd><dt>Authentication</dt><dd>${h(a.auth === 'oauth2' ? 'OAuth 2.0 bearer token, application subscribed' : 'none')}</dd></dl>
<h2>Gateway URLs</h2><ul>${urls}</ul>
${
  a.type === 'GRPC'
    ? grpcMethodsHtml(a, gatewayUrls)
    : `<h2>Resources</h2>
<div class="table"><table><thead><tr><th scope="col">Methods</th><th scope="col">Path</th><th scope="col">Authentication</th><th scope="col">Scopes</th></tr></thead><tbody>${resources}</tbody></table></div>`
}
${subscribe}
${a.type === 'GRPC' ? '' : sdkHtml(c, e)}
${definition}
${await apiCommunityHtml(c, e)}`,
    200,
    // A gRPC API's page has copy buttons on its grpcurl and grpc-js lines (grpc-page.ts).
    a.type === 'GRPC',
  );
}

async function ownApp(c: Call, id: string): Promise<ApplicationView | undefined> {
  const user = c.session.user;
  if (user === undefined) return undefined;
  const app = await c.parts.keys.getApplication(id);
  // The consoles' own application (signin.ts) is not the admin's to change here.
  if (app === undefined || app.id !== id || !(await mayUseApplication(c, app)) || isConsolesApp(app.name)) return undefined;
  return app;
}

function applicationsPage(c: Call, all: readonly ApplicationView[], error?: string, name = ''): void {
  const apps = all.filter((a) => !isConsolesApp(a.name));
  const rows = apps
    .map(
      (a) =>
        `<tr><td><a href="/devportal/applications/${encodeURIComponent(a.id)}">${h(a.name)}</a></td><td>${h(a.tier)}</td><td>${a.keys.length}</td><td>${h(a.description)}</td></tr>`,
    )
    .join('\n');
  render(
    c,
    'devportal',
    'Applications',
    `${takeFlash(c)}
<div class="table"><table><thead><tr><th scope="col">Name</th><th scope="col">Tier</th><th scope="col">Keys</th><th scope="col">Description</th></tr></thead><tbody>${rows}</tbody></table></div>
<h2>Create an application</h2>
<form method="post" action="/devportal/applications">${csrfField(c.session.csrf)}
${field({ id: 'name', label: 'Name', value: name, required: true, ...(error !== undefined ? { error } : {}) })}
${field({ id: 'description', label: 'Description' })}
<button type="submit">Create</button>
</form>`,
    error !== undefined ? 400 : 200,
  );
}

async function appPage(
  c: Call,
  app: ApplicationView,
  result?: TryResult | string,
  status = 200,
  tab: Tab = tabOf(c.query.get('tab')),
): Promise<void> {
  const subs = await c.parts.keys.listSubscriptions({ application: app.id });
  const apis = (await visibleApis(c)).filter((e) => e.state !== 'DEPRECATED');
  renderAppPage(c, { app, tab, apis, subs, notes: await subscriptionNotes(c, subs), ...(result !== undefined ? { result } : {}), status });
}

/** A waiting or refused subscription's state as the subscriber reads it (docs/workflows.md): "pending approval", or rejected with the approver's comment. */
async function subscriptionNotes(c: Call, subs: readonly Subscription[]): Promise<Map<string, string>> {
  const notes = new Map<string, string>();
  for (const s of subs) {
    if (s.state === 'ON_HOLD') notes.set(s.id, `${state('ON_HOLD')} pending approval`);
    if (s.state === 'REJECTED') {
      const comment = await c.parts.keys.decisionComment?.(s.id);
      notes.set(
        s.id,
        `${state('REJECTED')} rejected${comment !== undefined && comment !== '' ? `: <q class="comment">${h(comment)}</q>` : ''}`,
      );
    }
  }
  return notes;
}

function oauthMessage(err: unknown): string {
  if (err instanceof OAuthError) return err.message;
  throw err;
}

/** Routes under /devportal once the user is signed in (`segs` after /devportal). */
export async function signedIn(c: Call): Promise<void> {
  const user = c.session.user;
  if (user === undefined) return;
  const m = c.parts.keys;
  const [a, id, action] = c.segs;
  if (a === 'applications' && id === undefined) {
    if (c.method === 'POST') {
      const name = (c.form.get('name') ?? '').trim();
      try {
        const app = await m.createApplication({ name, owner: user.username, description: c.form.get('description') ?? '' });
        c.session.flash = `<p class="notice" role="status">Application ${h(app.name)} created.</p>`;
        return seeOther(c.res, `/devportal/applications/${encodeURIComponent(app.id)}`);
      } catch (err) {
        return applicationsPage(c, await visibleApplications(c), oauthMessage(err), name);
      }
    }
    return applicationsPage(c, await visibleApplications(c));
  }
  if (a === 'applications' && id !== undefined) {
    const app = await ownApp(c, id);
    if (app === undefined) return problem(c, 'devportal', 404, 'No such application', 'You have no application with this id.');
    const back = `/devportal/applications/${encodeURIComponent(app.id)}`;
    if (c.method === 'GET' && action === undefined) return appPage(c, app);
    if (c.method !== 'POST') return problem(c, 'devportal', 405, 'Not allowed', 'This address takes a form.');
    if (action === 'delete') {
      if (app.owner !== user.username)
        return problem(c, 'devportal', 403, 'Not allowed', `Only ${app.owner}, who owns this shared application, deletes it.`);
      await m.deleteApplication(app.id);
      c.session.keys.delete(app.id);
      c.session.flash = `<p class="notice" role="status">Application ${h(app.name)} deleted.</p>`;
      return seeOther(c.res, '/devportal/applications');
    }
    if (action === 'edit') {
      const tier = c.form.get('tier') ?? app.tier;
      const description = c.form.get('description') ?? app.description;
      if (!appTierOptions(c, app.tier).some(([t]) => t === tier))
        return problem(c, 'devportal', 400, 'Cannot save', `Tier ${tier} is not an application tier of the throttling policies.`);
      try {
        await m.updateApplication(app.id, { tier, description });
      } catch (err) {
        return problem(c, 'devportal', 400, 'Cannot save', oauthMessage(err));
      }
      c.session.flash = `<p class="notice" role="status">Application ${h(app.name)} saved (tier ${h(tier)}).</p>`;
      return seeOther(c.res, back);
    }
    if (action === 'keys') {
      const keyType: KeyType = c.form.get('keyType') === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
      let k;
      try {
        k = await m.generateKeys(app.id, keyType);
      } catch (err) {
        c.session.flash = `<p class="error" role="alert">No keys: ${h(oauthMessage(err))}</p>`;
        return seeOther(c.res, tabUrl(app.id, keyTab(keyType)));
      }
      const held = c.session.keys.get(app.id) ?? new Map();
      held.set(keyType, { consumerKey: k.consumerKey, consumerSecret: k.consumerSecret });
      c.session.keys.set(app.id, held);
      c.session.flash = `<div class="secret" role="status" id="new-keys"><p><strong>New ${keyType} keys.</strong> Copy the consumer secret now: it is not shown again.</p><p class="keyline">Consumer key: <code id="new-consumer-key">${h(k.consumerKey)}</code> ${copyButton('new-consumer-key', 'consumer key')}</p><p class="keyline">Consumer secret: <code id="consumer-secret">${h(k.consumerSecret)}</code> ${copyButton('consumer-secret', 'consumer secret')}</p>${k.workflow?.status === 'pending' ? '<p>Pending approval: the keys get tokens once an admin approves them.</p>' : ''}</div>`;
      return seeOther(c.res, tabUrl(app.id, keyTab(keyType)));
    }
    if (action === 'token') {
      const keyType: KeyType = c.form.get('keyType') === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
      const held = c.session.keys.get(app.id)?.get(keyType);
      if (held === undefined) {
        c.session.flash = `<p class="error" role="alert">This session holds no ${keyType} consumer secret: generate the ${keyType} keys again to get a token here.</p>`;
        return seeOther(c.res, tabUrl(app.id, keyTab(keyType)));
      }
      const scope = (c.form.get('scope') ?? '').trim().slice(0, 1024);
      try {
        const t = await m.token(held.consumerKey, held.consumerSecret, scope);
        held.accessToken = t.access_token;
        held.tokenScope = t.scope;
        held.tokenExpires = Date.now() + t.expires_in * 1000;
        c.session.flash = tokenFlash(keyType, t, held.tokenExpires);
      } catch (err) {
        c.session.flash = `<p class="error" role="alert">No token: ${h(oauthMessage(err))}</p>`;
      }
      return seeOther(c.res, tabUrl(app.id, keyTab(keyType)));
    }
    if (action === 'unsubscribe') {
      const subId = c.form.get('subscription') ?? '';
      const sub = (await m.listSubscriptions({ application: app.id })).find((s) => s.id === subId);
      if (sub === undefined || sub.applicationId !== app.id)
        return problem(c, 'devportal', 404, 'No such subscription', 'This application has no such subscription.');
      await m.removeSubscription(sub.id);
      c.session.flash = `<p class="notice" role="status">Unsubscribed from ${h(sub.apiContext)} ${h(sub.apiVersion)}.</p>`;
      return seeOther(c.res, tabUrl(app.id, 'subscriptions'));
    }
    if (action === 'try') return tryIt(c, app);
  }
  if (a === 'subscribe' && c.method === 'POST') {
    const app = await ownApp(c, c.form.get('application') ?? '');
    const e = await findApi(c, c.form.get('api'));
    if (app === undefined || e === undefined)
      return problem(c, 'devportal', 400, 'Cannot subscribe', 'Choose one of your applications and an API of the catalogue.');
    const tier = c.form.get('tier') ?? '';
    if (!subscribableTiers(c).includes(tier))
      return problem(c, 'devportal', 400, 'Cannot subscribe', `Tier ${tier} is not a subscription tier you may choose.`);
    try {
      const sub = await m.addSubscription({ application: app.id, apiContext: e.api.context, apiVersion: e.api.version, tier });
      const waits = sub.workflow?.status === 'pending';
      c.session.flash = `<p class="notice" role="status">${waits ? 'Subscription' : 'Subscribed'} to ${h(e.api.name)} ${h(e.api.version)} with the ${h(tier)} tier${waits ? ': pending approval' : ''}.</p>`;
    } catch (err) {
      c.session.flash = `<p class="error" role="alert">${h(oauthMessage(err))}</p>`;
    }
    return seeOther(c.res, tabUrl(app.id, 'subscriptions'));
  }
  // Comments, ratings, the forum (community.ts, docs/self-service.md).
  const api = a === 'apis' && id !== undefined && action !== undefined && c.segs.length === 3 ? await findApi(c, id) : undefined;
  if (api !== undefined && (await apiCommunityPost(c, api, action as string))) return;
  if (await communityPage(c)) return;
  return problem(c, 'devportal', 404, 'Not found', 'No such page in the developer portal.');
}

/** What the try-it form asks to send: method, resource path and body; or why nothing is sent. */
function tryRequest(
  c: Call,
  api: NonNullable<CatalogueEntry['api']>,
): { method: string; rest: string; body: string; contentType: string } | string {
  if (api.type === 'GRPC') return GRPC_TRY_REFUSAL;
  if (api.type === 'WS')
    return 'A WebSocket API is not called from this page: connect with a WebSocket client to the URL shown (docs/websocket.md).';
  if (c.form.get('graphql') === '1') {
    if (api.type !== 'GRAPHQL') return 'This API is not a GraphQL API.';
    const query = c.form.get('query') ?? '';
    if (query.trim() === '') return 'Write a query.';
    const text = (c.form.get('variables') ?? '').trim();
    let variables: unknown;
    if (text !== '') {
      try {
        variables = JSON.parse(text);
      } catch (err) {
        return `The variables are not JSON: ${(err as Error).message}`;
      }
      if (variables === null || typeof variables !== 'object' || Array.isArray(variables)) return 'The variables are not a JSON object.';
    }
    const operationName = (c.form.get('operationName') ?? '').trim();
    // GraphQL over HTTP: a POST of {"query", "variables", "operationName"} to the API's URL (docs/graphql.md).
    return {
      method: 'POST',
      rest: '/',
      body: JSON.stringify({
        query,
        ...(variables !== undefined ? { variables } : {}),
        ...(operationName !== '' ? { operationName } : {}),
      }),
      contentType: 'application/json',
    };
  }
  const key = c.form.get('operation');
  if (key !== null) {
    const op = tryOperations(api).find((o) => o.key === key);
    if (op === undefined) return 'This API has no such operation.';
    const p = operationPath(op, c.form);
    if ('error' in p) return p.error;
    return { method: op.method, rest: p.path, body: c.form.get('body') ?? '', contentType: 'application/json' };
  }
  const method = c.form.get('method') ?? 'GET';
  if (!(TRY_METHODS as readonly string[]).includes(method) || !api.resources.some((r) => r.methods.includes(method)))
    return `Method ${method} is not a method of this API's resources.`;
  return { method, rest: c.form.get('path') ?? '/', body: c.form.get('body') ?? '', contentType: 'application/json' };
}

async function tryIt(c: Call, app: ApplicationView): Promise<void> {
  const e = await findApi(c, c.form.get('api'));
  const gw = c.parts.gateways()[0];
  if (e === undefined) return appPage(c, app, 'Choose an API of the catalogue.', 400, 'try');
  const r = tryRequest(c, e.api);
  if (typeof r === 'string') return appPage(c, app, r, 400, 'try');
  if (Buffer.byteLength(r.body) > MAX_REQUEST_BODY)
    return appPage(c, app, `The request body is larger than ${MAX_REQUEST_BODY} bytes.`, 400, 'try');
  if (gw === undefined)
    return appPage(c, app, 'No gateway URL is known: configure [[apim.gateway.environment]] http_endpoint.', 400, 'try');
  // The path stays inside the API's context and version, or nothing is sent (tryit.ts tryTarget).
  const target = tryTarget(gw.url, versionedPath(e.api), r.rest);
  if ('code' in target) {
    c.parts.logger.log('warn', 'portal_try_refused', { code: target.code, api: e.id, path: r.rest.slice(0, 200) });
    return appPage(c, app, `${target.code}: ${target.message}`, 400, 'try');
  }
  const keyType = c.form.get('tryKeyType') === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
  const token = c.session.keys.get(app.id)?.get(keyType)?.accessToken;
  try {
    const answer = await tryCall({
      url: target.url,
      method: r.method,
      token,
      body: r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body,
      contentType: r.contentType,
    });
    return appPage(c, app, answer, 200, 'try');
  } catch (err) {
    return appPage(c, app, `The gateway did not answer: ${(err as Error).message}`, 502, 'try');
  }
}

/** The one-time notice of a new access token: the token with its copy button, its scopes, expiry and decoded claims. */
function tokenFlash(
  keyType: KeyType,
  t: { readonly access_token: string; readonly expires_in: number; readonly scope: string },
  expires: number,
): string {
  const scopes =
    t.scope
      .split(' ')
      .filter((x) => x !== '')
      .map((x) => `<code>${h(x)}</code>`)
      .join(' ') || 'none';
  const claims = decodedJwt(t.access_token);
  return `<div class="secret" role="status" id="new-token"><p><strong>Access token</strong> (${keyType}): copy it now, it is not shown again; try-it uses it.</p>
<p class="keyline"><code id="access-token">${h(t.access_token)}</code> ${copyButton('access-token', 'access token')}</p>
<dl class="facts"><dt>Scopes</dt><dd id="token-scopes">${scopes}</dd><dt>Expires</dt><dd id="token-expiry">${h(utc(expires))} (in ${t.expires_in} s)</dd></dl>
${claims !== undefined ? `<details><summary>Decoded token (header and claims)</summary><pre class="json" id="token-claims">${h(claims)}</pre></details>` : ''}</div>`;
}

/** The API's OpenAPI document with the gateway URLs as servers, for an API the visitor may see. */
async function download(c: Call, id: string): Promise<void> {
  const e = await findApi(c, id);
  const d = e === undefined ? undefined : apiDocument(e.api);
  if (e === undefined) return problem(c, 'devportal', 404, 'No such API', 'This API is not in the catalogue.');
  if (d === undefined || 'error' in d)
    return problem(
      c,
      'devportal',
      404,
      'No OpenAPI document',
      d === undefined ? 'This API names no OpenAPI document.' : `The OpenAPI document cannot be read: ${d.error}`,
    );
  sendDefinition(c.res, forGateway(d.doc, apiUrls(e.api, c.parts.gateways())), downloadName(e.api));
}

/** GET routes anyone may see (`segs` after /devportal). */
export async function publicPage(c: Call): Promise<boolean> {
  const [a, id] = c.segs;
  if (c.method !== 'GET') return false;
  if (a === undefined) {
    await cataloguePage(c);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 2) {
    await apiPage(c, id);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 3 && c.segs[2] === 'openapi.json') {
    await download(c, id);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 4 && c.segs[2] === 'sdk') {
    sdkDownload(c, await findApi(c, id), c.segs[3] as string);
    return true;
  }
  return false;
}
