/**
 * An application's page in the developer portal (docs/portal.md, "Applications, keys, subscriptions,
 * tokens"), in tabs: overview (edit, delete), production keys, sandbox keys, subscriptions, try-it. The
 * tabs are links (`?tab=`), each drawn by the server, so the page works without script; the one script
 * the page carries (html.ts COPY_SCRIPT, allowed by its hash) only adds the copy buttons.
 */
import type { ApplicationView } from '../keymanager/manage';
import type { KeyType, Subscription } from '../store/types';
import { apiUrls, type CatalogueEntry } from './catalogue';
import { type Call, render, takeFlash } from './context';
import { buttonForm, copyButton, csrfField, escapeHtml as h, field, prettyBody, select } from './html';
import type { HeldKeys } from './session';
import type { TryResult } from './tryit';
import { tryFormsHtml } from './tryit-page';

export const KEY_TYPES: readonly KeyType[] = ['PRODUCTION', 'SANDBOX'];
export const TABS = ['overview', 'production', 'sandbox', 'subscriptions', 'try'] as const;
export type Tab = (typeof TABS)[number];
const TAB_NAMES: Readonly<Record<Tab, string>> = {
  overview: 'Overview',
  production: 'Production keys',
  sandbox: 'Sandbox keys',
  subscriptions: 'Subscriptions',
  try: 'Try it',
};

export const tabOf = (v: string | null | undefined): Tab => ((TABS as readonly string[]).includes(v ?? '') ? (v as Tab) : 'overview');
export const keyTab = (t: KeyType): Tab => (t === 'SANDBOX' ? 'sandbox' : 'production');
/** The address of an application's tab. */
export const tabUrl = (appId: string, tab: Tab): string =>
  `/devportal/applications/${encodeURIComponent(appId)}${tab === 'overview' ? '' : `?tab=${tab}`}`;

type Listed = CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> };

/**
 * The subscription tiers a subscriber may pick: the policies file's subscription tiers without
 * Unauthenticated, which counts calls without a token per client address (docs/throttling.md) and is no
 * tier to subscribe with.
 */
export function subscribableTiers(c: Call): string[] {
  return c.parts.tiers().filter((t) => t !== 'Unauthenticated');
}

/** The application tiers of the policies, with the application's own tier when the policies no longer name it. */
export function appTierOptions(c: Call, current: string): [string, string][] {
  const tiers = [...c.parts.applicationTiers()];
  if (!tiers.includes(current)) tiers.unshift(current);
  return tiers.map((t) => [t, t]);
}

const state = (s: string): string => `<span class="state">${h(s)}</span>`;

/** An instant as people read it: `2026-12-02 05:40:03 UTC`. */
export const utc = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/** A JWT's header and claims (RFC 7519 §3), decoded for reading (not verified: the key manager made it); undefined for an opaque token. */
export function decodedJwt(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const read = (p: string): unknown => JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
    return prettyBody(JSON.stringify({ header: read(parts[0] as string), claims: read(parts[1] as string) }));
  } catch {
    return undefined;
  }
}

/** A held token's scopes and expiry, for the keys tab (the token itself is shown once, when made). */
function heldTokenHtml(k: HeldKeys | undefined, now: number): string {
  if (k?.accessToken === undefined)
    return '<p class="hint">No access token is held for these keys in this session: try-it calls without one.</p>';
  const exp = k.tokenExpires;
  const left = exp === undefined ? '' : exp > now ? ` (in ${Math.round((exp - now) / 1000)} s)` : ' (expired: generate another)';
  return `<dl class="facts" id="held-token"><dt>Token held for try-it</dt><dd>yes</dd><dt>Scopes</dt><dd>${
    (k.tokenScope ?? '')
      .split(' ')
      .filter((s) => s !== '')
      .map((s) => `<code>${h(s)}</code>`)
      .join(' ') || 'none'
  }</dd><dt>Expires</dt><dd>${exp === undefined ? 'unknown' : `${h(utc(exp))}${left}`}</dd></dl>`;
}

function keysTab(c: Call, app: ApplicationView, t: KeyType, base: string): string {
  const csrf = c.session.csrf;
  const k = app.keys.find((x) => x.keyType === t);
  const held = c.session.keys.get(app.id)?.get(t);
  const id = `key-${t.toLowerCase()}`;
  const keyLine =
    k !== undefined
      ? `<p class="keyline">Consumer key: <code id="${id}">${h(k.consumerKey)}</code> ${copyButton(id, `${t.toLowerCase()} consumer key`)}</p>`
      : `<p>No ${t.toLowerCase()} keys yet.</p>`;
  return `<h2>${t === 'PRODUCTION' ? 'Production' : 'Sandbox'} keys</h2>
<p class="hint">The consumer secret is shown once, when the keys are generated.</p>
${keyLine}
${buttonForm(`${base}/keys`, k !== undefined ? 'Regenerate keys' : 'Generate keys', csrf, { keyType: t }, `${k !== undefined ? 'Regenerate' : 'Generate'} ${t.toLowerCase()} keys`)}
<h2>Access token</h2>
${heldTokenHtml(held, Date.now())}
<form method="post" action="${base}/token">${csrfField(csrf)}<input type="hidden" name="keyType" value="${t}">
${field({ id: 'scope', label: 'Scopes (space-separated, optional)' })}
<button type="submit">Generate token</button>
</form>`;
}

function overviewTab(c: Call, app: ApplicationView, subs: readonly Subscription[], base: string): string {
  const csrf = c.session.csrf;
  const keys = KEY_TYPES.map((t) => `${t.toLowerCase()}: ${app.keys.some((k) => k.keyType === t) ? 'generated' : 'none'}`).join(', ');
  return `<dl class="facts"><dt>Owner</dt><dd>${h(app.owner)}</dd><dt>Tier</dt><dd>${h(app.tier)}</dd><dt>Description</dt><dd>${h(app.description) || '<span class="hint">none</span>'}</dd><dt>Keys</dt><dd>${keys}</dd><dt>Subscriptions</dt><dd>${subs.length}</dd></dl>
<h2>Edit</h2>
<form method="post" action="${base}/edit">${csrfField(csrf)}
${field({ id: 'app-description', label: 'Description', value: app.description }).replace('name="app-description"', 'name="description"')}
${select({ id: 'app-tier', label: 'Application tier', options: appTierOptions(c, app.tier), value: app.tier }).replace('name="app-tier"', 'name="tier"')}
<button type="submit">Save application</button>
</form>
<h2>Delete</h2>
${buttonForm(`${base}/delete`, 'Delete application', csrf, {}, `Delete application ${app.name}`)}`;
}

function subscriptionsTab(
  c: Call,
  app: ApplicationView,
  subs: readonly Subscription[],
  notes: ReadonlyMap<string, string>,
  apis: readonly Listed[],
  base: string,
): string {
  const csrf = c.session.csrf;
  const entries = c.parts.catalogue.list();
  const nameOf = (s: Subscription): string =>
    entries.find((x) => x.api !== undefined && x.api.context === s.apiContext && x.api.version === s.apiVersion)?.api?.name ?? s.apiContext;
  const rows = subs
    .map(
      (s) =>
        `<tr><td>${h(nameOf(s))} ${h(s.apiVersion)}</td><td><code>${h(s.apiContext)}</code></td><td>${h(s.tier)}</td><td>${notes.get(s.id) ?? state(s.state)}</td><td>${buttonForm(`${base}/unsubscribe`, 'Unsubscribe', csrf, { subscription: s.id }, `Unsubscribe from ${nameOf(s)} ${s.apiVersion}`)}</td></tr>`,
    )
    .join('\n');
  return `<h2>Subscriptions</h2>
${subs.length === 0 ? '<p>No subscriptions yet.</p>' : `<div class="table"><table><thead><tr><th scope="col">API</th><th scope="col">Context</th><th scope="col">Tier</th><th scope="col">State</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>${rows}</tbody></table></div>`}
<h2>Subscribe</h2>
<form method="post" action="/devportal/subscribe">${csrfField(csrf)}<input type="hidden" name="application" value="${h(app.id)}">
${select({ id: 'sub-api', label: 'API', options: apis.map((e) => [e.id, `${e.api.name} ${e.api.version}`]) }).replace('name="sub-api"', 'name="api"')}
${select({ id: 'tier', label: 'Tier', options: subscribableTiers(c).map((t) => [t, t]) })}
<button type="submit">Subscribe</button>
</form>`;
}

function tryTab(
  c: Call,
  app: ApplicationView,
  subs: readonly Subscription[],
  apis: readonly Listed[],
  base: string,
  result: TryResult | string | undefined,
): string {
  // The API of the form sent, else the one asked for, else the first the application is subscribed to.
  const subscribed = apis.find((e) => subs.some((s) => s.apiContext === e.api.context && s.apiVersion === e.api.version));
  const asked = c.form.get('api') ?? c.query.get('api');
  const chosen = apis.find((e) => e.id === asked) ?? subscribed ?? apis.find((e) => e.api.auth === 'oauth2') ?? apis[0];
  const chooser = `<form method="get" action="/devportal/applications/${encodeURIComponent(app.id)}"><input type="hidden" name="tab" value="try">
${select({ id: 'api', label: 'API', options: apis.map((e) => [e.id, `${e.api.name} ${e.api.version}${e.api.type !== 'HTTP' ? ` (${e.api.type === 'WS' ? 'WebSocket' : e.api.type === 'GRPC' ? 'gRPC' : 'GraphQL'})` : ''}`]), value: chosen?.id ?? '' })}
<button type="submit">Show operations</button></form>`;
  if (chosen === undefined) return `<h2>Try it</h2><p>The catalogue lists no API to try.</p>`;
  const gw = apiUrls(chosen.api, c.parts.gateways())[0];
  const forms = tryFormsHtml({
    api: chosen.api,
    apiId: chosen.id,
    action: `${base}/try`,
    csrf: c.session.csrf,
    url: gw?.url,
    form: c.form,
    result,
  });
  return `<h2>Try it</h2>
${chooser}
<h3>${h(chosen.api.name)} ${h(chosen.api.version)}</h3>
${forms}`;
}

export interface AppPage {
  readonly app: ApplicationView;
  readonly tab: Tab;
  /** The catalogue's APIs one may subscribe to and try. */
  readonly apis: readonly Listed[];
  readonly subs: readonly Subscription[];
  /** Subscription states in words (pending approval, rejected with the comment). */
  readonly notes: ReadonlyMap<string, string>;
  readonly result?: TryResult | string;
  readonly status?: number;
}

/** Renders the page of one application with its tabs. */
export function renderAppPage(c: Call, p: AppPage): void {
  const base = `/devportal/applications/${encodeURIComponent(p.app.id)}`;
  const tabs = TABS.map((t) => `<a href="${h(tabUrl(p.app.id, t))}"${t === p.tab ? ' aria-current="page"' : ''}>${TAB_NAMES[t]}</a>`).join(
    '\n',
  );
  const panel =
    p.tab === 'production' || p.tab === 'sandbox'
      ? keysTab(c, p.app, p.tab === 'sandbox' ? 'SANDBOX' : 'PRODUCTION', base)
      : p.tab === 'subscriptions'
        ? subscriptionsTab(c, p.app, p.subs, p.notes, p.apis, base)
        : p.tab === 'try'
          ? tryTab(c, p.app, p.subs, p.apis, base, p.result)
          : overviewTab(c, p.app, p.subs, base);
  render(
    c,
    'devportal',
    p.app.name,
    `<nav class="tabs" aria-label="Application">${tabs}</nav>
${takeFlash(c)}
<section id="tab-${p.tab}" aria-label="${TAB_NAMES[p.tab]}">
${panel}
</section>`,
    p.status ?? 200,
    true,
  );
}
