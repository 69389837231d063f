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
import { isConsolesApp } from './signin';
import { type Call, problem, render, takeFlash } from './context';
import { buttonForm, csrfField, escapeHtml as h, field, seeOther, select } from './html';
import { apiCommunityHtml, apiCommunityPost, communityPage } from './community';
import { sdkDownload, sdkHtml } from './sdk-page';
import { mayUseApplication, visibleApplications } from './sharing';
import { MAX_REQUEST_BODY, TRY_METHODS, tryCall, type TryResult, tryTarget } from './tryit';

const KEY_TYPES: readonly KeyType[] = ['PRODUCTION', 'SANDBOX'];

function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** What the catalogue lists ([apim.devportal] display_deprecated_apis, display_multiple_versions). */
export function visibleApis(c: Call): (CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> })[] {
  const s = c.parts.settings;
  const shown = (e: CatalogueEntry): e is CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> } =>
    e.api !== undefined && (e.state === 'PUBLISHED' || e.state === 'PROTOTYPED' || (e.state === 'DEPRECATED' && s.displayDeprecated));
  const all = c.parts.catalogue.list().filter(shown);
  if (s.displayMultipleVersions) return all;
  const newest = new Map<string, CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> }>();
  for (const e of all) {
    const before = newest.get(e.api.name);
    if (before === undefined || compareVersions(e.api.version, before.api.version) > 0) newest.set(e.api.name, e);
  }
  return all.filter((e) => newest.get(e.api.name) === e);
}

function matches(e: CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> }, q: string): boolean {
  const a = e.api;
  const hay = [a.name, a.context, a.version, a.description ?? '', ...a.labels, ...a.resources.map((r) => r.path)].join(' ').toLowerCase();
  return q.toLowerCase().split(/\s+/).filter((w) => w !== '').every((w) => hay.includes(w));
}

const state = (s: string): string => `<span class="state">${h(s)}</span>`;

function cataloguePage(c: Call): void {
  const q = (c.query.get('q') ?? '').slice(0, 200);
  const apis = visibleApis(c).filter((e) => q === '' || matches(e, q));
  const rows = apis
    .map((e) => `<tr><td><a href="/devportal/apis/${encodeURIComponent(e.id)}">${h(e.api.name)}</a></td><td>${h(e.api.version)}</td><td><code>${h(e.api.context)}</code></td><td>${state(e.state)}</td><td>${h(e.api.labels.join(', '))}</td><td>${h(e.api.description ?? '')}</td></tr>`)
    .join('\n');
  const signin = c.session.user === undefined ? '<p><a href="/devportal/login">Sign in</a> to create applications, get keys and subscribe.</p>' : '';
  render(c, 'devportal', 'APIs', `${signin}
<form method="get" action="/devportal" role="search">
<label for="q">Search APIs</label>
<input type="search" id="q" name="q" value="${h(q)}" placeholder="name, context, tag or resource">
<button type="submit">Search</button>
</form>
<p>${apis.length} API${apis.length === 1 ? '' : 's'}${q !== '' ? ` matching <strong>${h(q)}</strong>` : ''}.</p>
<div class="table"><table><thead><tr><th scope="col">Name</th><th scope="col">Version</th><th scope="col">Context</th><th scope="col">State</th><th scope="col">Tags</th><th scope="col">Description</th></tr></thead>
<tbody>${rows}</tbody></table></div>`);
}

async function apiPage(c: Call, id: string): Promise<void> {
  const e = visibleApis(c).find((x) => x.id === id);
  if (e === undefined) return problem(c, 'devportal', 404, 'No such API', 'This API is not in the catalogue.');
  const a = e.api;
  const gatewayUrls = apiUrls(a, c.parts.gateways());
  const urls = gatewayUrls.map((u) => `<li>${h(u.name)}: <code>${h(u.url)}</code></li>`).join('');
  const d = apiDocument(a);
  const definition = d === undefined ? '' : 'error' in d ? `<h2>OpenAPI document</h2><p class="error" role="alert">The OpenAPI document cannot be read: ${h(d.error)}</p>` : definitionHtml(d.doc, gatewayUrls, `/devportal/apis/${encodeURIComponent(e.id)}/openapi.json`);
  const scopeRoles = new Map(a.scopes.map((s) => [s.name, s.roles]));
  const resources = a.resources
    .map((r) => `<tr><td>${h(r.methods.join(', '))}</td><td><code>${h(r.path)}</code></td><td>${h(r.auth === 'oauth2' ? 'OAuth 2.0 token' : 'none')}</td><td>${h(r.scopes.map((s) => `${s}${(scopeRoles.get(s) ?? []).length > 0 ? ` (roles: ${(scopeRoles.get(s) ?? []).join(', ')})` : ''}`).join('; '))}</td></tr>`)
    .join('\n');
  let subscribe = '';
  if (c.session.user !== undefined && (e.state === 'PUBLISHED' || e.state === 'PROTOTYPED')) {
    const apps = (await visibleApplications(c)).filter((x) => !isConsolesApp(x.name));
    subscribe = apps.length === 0
      ? '<p><a href="/devportal/applications">Create an application</a> to subscribe.</p>'
      : `<h2>Subscribe</h2><form method="post" action="/devportal/subscribe">${csrfField(c.session.csrf)}<input type="hidden" name="api" value="${h(e.id)}">
${select({ id: 'application', label: 'Application', options: apps.map((x) => [x.id, x.name]) })}
${select({ id: 'tier', label: 'Tier', options: c.parts.tiers().map((t) => [t, t]) })}
<button type="submit">Subscribe</button></form>`;
  }
  render(c, 'devportal', `${a.name} ${a.version}`, `<p>${h(a.description ?? '')}</p>
<dl><dt>Context</dt><dd><code>${h(a.context)}</code></dd><dt>State</dt><dd>${state(e.state)}</dd><dt>Tags</dt><dd>${h(a.labels.join(', '))}</dd><dt>Authentication</dt><dd>${h(a.auth === 'oauth2' ? 'OAuth 2.0 bearer token, application subscribed' : 'none')}</dd></dl>
<h2>Gateway URLs</h2><ul>${urls}</ul>
<h2>Resources</h2>
<div class="table"><table><thead><tr><th scope="col">Methods</th><th scope="col">Path</th><th scope="col">Authentication</th><th scope="col">Scopes</th></tr></thead><tbody>${resources}</tbody></table></div>
${subscribe}
${sdkHtml(c, e)}
${definition}
${await apiCommunityHtml(c, e)}`);
}

async function ownApp(c: Call, id: string): Promise<ApplicationView | undefined> {
  const user = c.session.user;
  if (user === undefined) return undefined;
  const app = await c.parts.keys.getApplication(id);
  // The consoles' own application (signin.ts) is not the admin's to change here.
  if (app === undefined || app.id !== id || !(await mayUseApplication(c, app)) || isConsolesApp(app.name)) return undefined;
  return app;
}

/** The application tiers of the policies, with the application's own tier when the policies no longer name it. */
function appTierOptions(c: Call, current: string): [string, string][] {
  const tiers = [...c.parts.applicationTiers()];
  if (!tiers.includes(current)) tiers.unshift(current);
  return tiers.map((t) => [t, t]);
}

function applicationsPage(c: Call, all: readonly ApplicationView[], error?: string, name = ''): void {
  const apps = all.filter((a) => !isConsolesApp(a.name));
  const rows = apps.map((a) => `<tr><td><a href="/devportal/applications/${encodeURIComponent(a.id)}">${h(a.name)}</a></td><td>${h(a.tier)}</td><td>${a.keys.length}</td><td>${h(a.description)}</td></tr>`).join('\n');
  render(c, 'devportal', 'Applications', `${takeFlash(c)}
<div class="table"><table><thead><tr><th scope="col">Name</th><th scope="col">Tier</th><th scope="col">Keys</th><th scope="col">Description</th></tr></thead><tbody>${rows}</tbody></table></div>
<h2>Create an application</h2>
<form method="post" action="/devportal/applications">${csrfField(c.session.csrf)}
${field({ id: 'name', label: 'Name', value: name, required: true, ...(error !== undefined ? { error } : {}) })}
${field({ id: 'description', label: 'Description' })}
<button type="submit">Create</button>
</form>`, error !== undefined ? 400 : 200);
}

function tryResultHtml(r: TryResult | string | undefined): string {
  if (r === undefined) return '';
  if (typeof r === 'string') return `<section aria-labelledby="result"><h2 id="result">Response</h2><p class="error" role="alert">${h(r)}</p></section>`;
  const headers = r.headers.map(([k, v]) => `${k}: ${v}`).join('\n');
  const fault = r.fault === undefined ? '' : `<div class="card" id="fault"><p><strong>Fault ${r.fault.code}</strong>${r.fault.def !== undefined ? `: ${h(r.fault.def.message)}. ${h(r.fault.def.description)} (HTTP ${r.fault.def.httpStatus}, raised by the ${h(r.fault.def.phase)} phase)` : ': not in the fault table'}. All codes: docs/faults.md.</p></div>`;
  return `<section aria-labelledby="result"><h2 id="result">Response</h2>
<p><code>${h(r.url)}</code></p>
<p>Status: <strong id="try-status">${r.status}</strong></p>
${fault}
<h3>Headers</h3><pre>${h(headers)}</pre>
<h3>Body${r.truncated ? ' (first 64 KiB)' : ''}</h3><pre id="try-body">${h(r.body)}</pre></section>`;
}

async function appPage(c: Call, app: ApplicationView, result?: TryResult | string, status = 200): Promise<void> {
  const csrf = c.session.csrf;
  const base = `/devportal/applications/${encodeURIComponent(app.id)}`;
  const held = c.session.keys.get(app.id);
  const keys = KEY_TYPES.map((t) => {
    const k = app.keys.find((x) => x.keyType === t);
    const token = held?.get(t)?.accessToken !== undefined ? ' (an access token is held for try-it)' : '';
    return `<tr><th scope="row">${t}</th><td>${k !== undefined ? `<code>${h(k.consumerKey)}</code>${token}` : 'none'}</td><td>${buttonForm(`${base}/keys`, k !== undefined ? 'Regenerate keys' : 'Generate keys', csrf, { keyType: t }, `${k !== undefined ? 'Regenerate' : 'Generate'} ${t.toLowerCase()} keys`)}</td></tr>`;
  }).join('\n');
  const subs = await c.parts.keys.listSubscriptions({ application: app.id });
  const entries = c.parts.catalogue.list();
  const nameOf = (s: Subscription): string => {
    const e = entries.find((x) => x.api !== undefined && x.api.context === s.apiContext && x.api.version === s.apiVersion);
    return e?.api?.name ?? s.apiContext;
  };
  const notes = await subscriptionNotes(c, subs);
  const subRows = subs.map((s) => `<tr><td>${h(nameOf(s))} ${h(s.apiVersion)}</td><td><code>${h(s.apiContext)}</code></td><td>${h(s.tier)}</td><td>${notes.get(s.id) ?? state(s.state)}</td><td>${buttonForm(`${base}/unsubscribe`, 'Unsubscribe', csrf, { subscription: s.id }, `Unsubscribe from ${nameOf(s)} ${s.apiVersion}`)}</td></tr>`).join('\n');
  const apis = visibleApis(c).filter((e) => e.state !== 'DEPRECATED');
  const apiOptions = apis.map((e) => [e.id, `${e.api.name} ${e.api.version}`] as const);
  const chosen = c.form.get('api') ?? apis.find((e) => e.api.auth === 'oauth2')?.id ?? apis[0]?.id ?? '';
  const firstGet = apis.find((e) => e.id === chosen)?.api.resources.find((r) => r.methods.includes('GET') && !r.path.includes('{') && !r.path.includes('*'))?.path ?? '/';
  render(c, 'devportal', app.name, `${takeFlash(c)}
<p>${h(app.description)}</p>
<h2>Keys</h2>
<p class="hint">The consumer secret is shown once, when the keys are generated.</p>
<div class="table"><table><tbody>${keys}</tbody></table></div>
<h2>Access token</h2>
<form method="post" action="${base}/token">${csrfField(csrf)}
${select({ id: 'keyType', label: 'Key type', options: KEY_TYPES.map((t) => [t, t]) })}
${field({ id: 'scope', label: 'Scopes (space-separated, optional)' })}
<button type="submit">Generate token</button>
</form>
<h2>Subscriptions</h2>
<div class="table"><table><thead><tr><th scope="col">API</th><th scope="col">Context</th><th scope="col">Tier</th><th scope="col">State</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>${subRows}</tbody></table></div>
<form method="post" action="/devportal/subscribe">${csrfField(csrf)}<input type="hidden" name="application" value="${h(app.id)}">
${select({ id: 'sub-api', label: 'API', options: apiOptions }).replace('name="sub-api"', 'name="api"')}
${select({ id: 'tier', label: 'Tier', options: c.parts.tiers().map((t) => [t, t]) })}
<button type="submit">Subscribe</button>
</form>
<h2>Try it</h2>
<form method="post" action="${base}/try">${csrfField(csrf)}
${select({ id: 'api', label: 'API', options: apiOptions, value: chosen })}
${select({ id: 'method', label: 'Method', options: TRY_METHODS.map((m) => [m, m]), value: c.form.get('method') ?? 'GET' })}
${field({ id: 'path', label: 'Resource path', value: c.form.get('path') ?? firstGet, hint: 'After the API\'s context and version, e.g. /menu' })}
${select({ id: 'tryKeyType', label: 'Token of', options: KEY_TYPES.map((t) => [t, `${t} keys`]), value: c.form.get('tryKeyType') ?? 'PRODUCTION' })}
${field({ id: 'body', label: 'Request body (JSON, optional)', type: 'textarea', value: c.form.get('body') ?? '' })}
<button type="submit">Send</button>
</form>
${tryResultHtml(result)}
<h2>Edit</h2>
<form method="post" action="${base}/edit">${csrfField(csrf)}
${field({ id: 'app-description', label: 'Description', value: app.description }).replace('name="app-description"', 'name="description"')}
${select({ id: 'app-tier', label: 'Application tier', options: appTierOptions(c, app.tier), value: app.tier }).replace('name="app-tier"', 'name="tier"')}
<button type="submit">Save application</button>
</form>
<h2>Delete</h2>
${buttonForm(`${base}/delete`, 'Delete application', csrf, {}, `Delete application ${app.name}`)}`, status);
}

/** A waiting or refused subscription's state as the subscriber reads it (docs/workflows.md): "pending approval", or rejected with the approver's comment. */
async function subscriptionNotes(c: Call, subs: readonly Subscription[]): Promise<Map<string, string>> {
  const notes = new Map<string, string>();
  for (const s of subs) {
    if (s.state === 'ON_HOLD') notes.set(s.id, `${state('ON_HOLD')} pending approval`);
    if (s.state === 'REJECTED') {
      const comment = await c.parts.keys.decisionComment?.(s.id);
      notes.set(s.id, `${state('REJECTED')} rejected${comment !== undefined && comment !== '' ? `: <q class="comment">${h(comment)}</q>` : ''}`);
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
      if (app.owner !== user.username) return problem(c, 'devportal', 403, 'Not allowed', `Only ${app.owner}, who owns this shared application, deletes it.`);
      await m.deleteApplication(app.id);
      c.session.keys.delete(app.id);
      c.session.flash = `<p class="notice" role="status">Application ${h(app.name)} deleted.</p>`;
      return seeOther(c.res, '/devportal/applications');
    }
    if (action === 'edit') {
      const tier = c.form.get('tier') ?? app.tier;
      const description = c.form.get('description') ?? app.description;
      if (!appTierOptions(c, app.tier).some(([t]) => t === tier)) return problem(c, 'devportal', 400, 'Cannot save', `Tier ${tier} is not an application tier of the throttling policies.`);
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
        return seeOther(c.res, back);
      }
      const held = c.session.keys.get(app.id) ?? new Map();
      held.set(keyType, { consumerKey: k.consumerKey, consumerSecret: k.consumerSecret });
      c.session.keys.set(app.id, held);
      c.session.flash = `<div class="secret" role="status" id="new-keys"><p><strong>New ${keyType} keys.</strong> Copy the consumer secret now: it is not shown again.</p><p>Consumer key: <code>${h(k.consumerKey)}</code></p><p>Consumer secret: <code id="consumer-secret">${h(k.consumerSecret)}</code></p>${k.workflow?.status === 'pending' ? '<p>Pending approval: the keys get tokens once an admin approves them.</p>' : ''}</div>`;
      return seeOther(c.res, back);
    }
    if (action === 'token') {
      const keyType: KeyType = c.form.get('keyType') === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
      const held = c.session.keys.get(app.id)?.get(keyType);
      if (held === undefined) {
        c.session.flash = `<p class="error" role="alert">This session holds no ${keyType} consumer secret: generate the ${keyType} keys again to get a token here.</p>`;
        return seeOther(c.res, back);
      }
      const scope = (c.form.get('scope') ?? '').trim().slice(0, 1024);
      try {
        const t = await m.token(held.consumerKey, held.consumerSecret, scope);
        held.accessToken = t.access_token;
        c.session.flash = `<div class="secret" role="status" id="new-token"><p><strong>Access token</strong> (${keyType}, expires in ${t.expires_in} s, scope <code>${h(t.scope)}</code>); try-it uses it.</p><p><code>${h(t.access_token)}</code></p></div>`;
      } catch (err) {
        c.session.flash = `<p class="error" role="alert">No token: ${h(oauthMessage(err))}</p>`;
      }
      return seeOther(c.res, back);
    }
    if (action === 'unsubscribe') {
      const subId = c.form.get('subscription') ?? '';
      const sub = (await m.listSubscriptions({ application: app.id })).find((s) => s.id === subId);
      if (sub === undefined || sub.applicationId !== app.id) return problem(c, 'devportal', 404, 'No such subscription', 'This application has no such subscription.');
      await m.removeSubscription(sub.id);
      c.session.flash = `<p class="notice" role="status">Unsubscribed from ${h(sub.apiContext)} ${h(sub.apiVersion)}.</p>`;
      return seeOther(c.res, back);
    }
    if (action === 'try') return tryIt(c, app);
  }
  if (a === 'subscribe' && c.method === 'POST') {
    const app = await ownApp(c, c.form.get('application') ?? '');
    const e = visibleApis(c).find((x) => x.id === c.form.get('api'));
    if (app === undefined || e === undefined) return problem(c, 'devportal', 400, 'Cannot subscribe', 'Choose one of your applications and an API of the catalogue.');
    const tier = c.form.get('tier') ?? '';
    if (!c.parts.tiers().includes(tier)) return problem(c, 'devportal', 400, 'Cannot subscribe', `Tier ${tier} is not a subscription tier of the throttling policies.`);
    try {
      const sub = await m.addSubscription({ application: app.id, apiContext: e.api.context, apiVersion: e.api.version, tier });
      const waits = sub.workflow?.status === 'pending';
      c.session.flash = `<p class="notice" role="status">${waits ? 'Subscription' : 'Subscribed'} to ${h(e.api.name)} ${h(e.api.version)} with the ${h(tier)} tier${waits ? ': pending approval' : ''}.</p>`;
    } catch (err) {
      c.session.flash = `<p class="error" role="alert">${h(oauthMessage(err))}</p>`;
    }
    return seeOther(c.res, `/devportal/applications/${encodeURIComponent(app.id)}`);
  }
  // Comments, ratings, the forum (community.ts, docs/self-service.md).
  const api = a === 'apis' && id !== undefined && action !== undefined && c.segs.length === 3 ? visibleApis(c).find((x) => x.id === id) : undefined;
  if (api !== undefined && (await apiCommunityPost(c, api, action as string))) return;
  if (await communityPage(c)) return;
  return problem(c, 'devportal', 404, 'Not found', 'No such page in the developer portal.');
}

async function tryIt(c: Call, app: ApplicationView): Promise<void> {
  const e = visibleApis(c).find((x) => x.id === c.form.get('api'));
  const method = c.form.get('method') ?? 'GET';
  const rest = c.form.get('path') ?? '/';
  const gw = c.parts.gateways()[0];
  if (e === undefined) return appPage(c, app, 'Choose an API of the catalogue.', 400);
  if (!(TRY_METHODS as readonly string[]).includes(method)) return appPage(c, app, `Method ${method} is not offered.`, 400);
  const body = c.form.get('body') ?? '';
  if (Buffer.byteLength(body) > MAX_REQUEST_BODY) return appPage(c, app, `The request body is larger than ${MAX_REQUEST_BODY} bytes.`, 400);
  if (gw === undefined) return appPage(c, app, 'No gateway URL is known: configure [[apim.gateway.environment]] http_endpoint.', 400);
  // The path stays inside the API's context and version, or nothing is sent (tryit.ts tryTarget).
  const target = tryTarget(gw.url, versionedPath(e.api), rest);
  if ('code' in target) {
    c.parts.logger.log('warn', 'portal_try_refused', { code: target.code, api: e.id, path: rest.slice(0, 200) });
    return appPage(c, app, `${target.code}: ${target.message}`, 400);
  }
  const keyType = c.form.get('tryKeyType') === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION';
  const token = c.session.keys.get(app.id)?.get(keyType)?.accessToken;
  try {
    const r = await tryCall({ url: target.url, method, token, body: method === 'GET' || method === 'HEAD' ? undefined : body, contentType: 'application/json' });
    return appPage(c, app, r);
  } catch (err) {
    return appPage(c, app, `The gateway did not answer: ${(err as Error).message}`, 502);
  }
}

/** The API's OpenAPI document with the gateway URLs as servers, for an API the visitor may see. */
function download(c: Call, id: string): void {
  const e = visibleApis(c).find((x) => x.id === id);
  const d = e === undefined ? undefined : apiDocument(e.api);
  if (e === undefined) return problem(c, 'devportal', 404, 'No such API', 'This API is not in the catalogue.');
  if (d === undefined || 'error' in d) return problem(c, 'devportal', 404, 'No OpenAPI document', d === undefined ? 'This API names no OpenAPI document.' : `The OpenAPI document cannot be read: ${d.error}`);
  sendDefinition(c.res, forGateway(d.doc, apiUrls(e.api, c.parts.gateways())), downloadName(e.api));
}

/** GET routes anyone may see (`segs` after /devportal). */
export async function publicPage(c: Call): Promise<boolean> {
  const [a, id] = c.segs;
  if (c.method !== 'GET') return false;
  if (a === undefined) {
    cataloguePage(c);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 2) {
    await apiPage(c, id);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 3 && c.segs[2] === 'openapi.json') {
    download(c, id);
    return true;
  }
  if (a === 'apis' && id !== undefined && c.segs.length === 4 && c.segs[2] === 'sdk') {
    sdkDownload(c, visibleApis(c).find((x) => x.id === id), c.segs[3] as string);
    return true;
  }
  return false;
}
