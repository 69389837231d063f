/**
 * Helpers of the console tests: a whole node (key manager, gateway, consoles) with the demo backend on a
 * free port and the two demo API files pointing at it, and the path of Debian's Chromium.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDemoBackend, type DemoBackend } from '../../lib/demo/backend';
import { startTestNode, type TestNode } from '../observability/node-helpers';

export const ROOT = path.join(__dirname, '..', '..', '..');
export const CHROMIUM = '/usr/bin/chromium';
export const ADMIN = { username: 'admin', password: 'admin-pw-1' };

export const PORTAL_TOML = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n`;

/** The shipped demo API files with the demo backend's URL written in. */
export function demoApis(port: number): Record<string, string> {
  const read = (f: string): string => fs.readFileSync(path.join(ROOT, 'conf', 'apis', f), 'utf8').replace(/\$\{demo_port\}/g, String(port));
  return { demo: read('demo.toml'), 'pizzashack-secured': read('pizzashack-secured.toml') };
}

/** The files the demo API files name beside them: the PizzaShack OpenAPI document. */
export function demoExtra(): Record<string, string> {
  return { 'apis/pizzashack.openapi.json': fs.readFileSync(path.join(ROOT, 'conf', 'apis', 'pizzashack.openapi.json'), 'utf8') };
}

export interface PortalNode extends TestNode {
  readonly demo: DemoBackend;
  /** http://127.0.0.1:<management HTTP port> */
  readonly base: string;
  readonly gateway: string;
}

export async function startPortalNode(toml = PORTAL_TOML, extra: Record<string, string> = {}): Promise<PortalNode> {
  const demo = createDemoBackend({ port: 0 });
  const a = await demo.listen();
  const n = await startTestNode(toml, demoApis(a.port), { ...demoExtra(), ...extra });
  return {
    ...n,
    demo,
    base: `http://127.0.0.1:${n.mgmt}`,
    gateway: `http://127.0.0.1:${n.gw}`,
    async close() {
      await n.close();
      await demo.close();
    },
  };
}

/** An answer of the consoles, without following redirects. */
export interface Answer {
  status: number;
  location: string;
  cookies: string[];
  text: string;
}

/** A GET, or a POST of a form, without following redirects. */
export async function formRequest(url: string, cookie = '', form?: Record<string, string>): Promise<Answer> {
  const r = await fetch(url, {
    method: form !== undefined ? 'POST' : 'GET',
    redirect: 'manual',
    headers: {
      ...(cookie !== '' ? { Cookie: cookie } : {}),
      ...(form !== undefined ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(form !== undefined ? { body: new URLSearchParams(form).toString() } : {}),
  });
  return { status: r.status, location: r.headers.get('location') ?? '', cookies: r.headers.getSetCookie(), text: await r.text() };
}

/** The `name=value` of one Set-Cookie of an answer ('' when it sets none). */
export const cookieOf = (a: Answer, name: string): string =>
  a.cookies.map((c) => c.split(';')[0] as string).find((c) => c.startsWith(`${name}=`)) ?? '';
/** The value of a hidden form field of a page. */
export const hiddenField = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/** True once `f` is, checked every 100 ms for at most `ms` (what a file watcher deploys is seen later). */
export async function until(f: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** The publisher's form saving an API with one `GET /menu` resource on `production`; `over` replaces fields. */
export function publisherForm(csrf: string, production: string, over: Record<string, string> = {}): Record<string, string> {
  return {
    csrf,
    action: 'save',
    name: 'Stock',
    context: '/stock',
    version: '1',
    description: '',
    production,
    sandbox: '',
    auth: 'none',
    resources: 'GET /menu',
    scopes: '',
    labels: 'Default',
    policy: '',
    ...over,
  };
}

/** The same request helper under the name the publisher tests use. */
export const req = formRequest;
/** The same hidden-field reader under the name the publisher tests use. */
export const hidden = hiddenField;

/** Signs the super admin in through the key manager's page; the portal session cookie. */
export function signIn(base: string): Promise<string> {
  return signInAs(base, ADMIN.username, ADMIN.password);
}

/** Signs a user in through the key manager's page of the node at `base`; the portal session cookie. */
export async function signInAs(base: string, username: string, password: string, back = '/publisher'): Promise<string> {
  const login = await req(`${base}/devportal/login?back=${encodeURIComponent(back)}`);
  const page = await req(`${base}${login.location}`);
  const posted = await req(`${base}/oauth2/authorize`, cookieOf(page, 'tw_authz'), {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username,
    password,
    action: 'login',
  });
  return cookieOf(await req(posted.location, cookieOf(login, 'tw_signin')), 'tw_portal');
}

/** A page of a browser test (playwright-core's Page: only what the helpers below use). */
interface BrowserPage {
  getByRole(role: 'link' | 'button', o: { name: string; exact?: boolean }): { click(): Promise<void> };
  locator(selector: string): {
    selectOption(o: { label: string }): Promise<unknown>;
    click(): Promise<void>;
    fill(v: string): Promise<void>;
    innerText(): Promise<string>;
  };
}

/** Opens a tab of the application's page (the tabs are links: docs/portal.md). */
export async function openTab(
  page: BrowserPage,
  name: 'Overview' | 'Production keys' | 'Sandbox keys' | 'Subscriptions' | 'Try it',
): Promise<void> {
  await page.getByRole('link', { name, exact: true }).click();
}

/**
 * On the try-it tab: picks the API, opens the operation `key` (`GET /menu/{id}`), fills its fields (by
 * their form names, `p.id`, `q.limit`, `body`) and sends it; the status shown.
 */
export async function tryOperation(page: BrowserPage, api: string, key: string, fields: Record<string, string> = {}): Promise<string> {
  await openTab(page, 'Try it');
  await page.locator('#api').selectOption({ label: api });
  await page.getByRole('button', { name: 'Show operations' }).click();
  const op = `details.operation:has(input[name="operation"][value="${key}"])`;
  await page.locator(`${op} > summary`).click();
  for (const [name, value] of Object.entries(fields)) await page.locator(`${op} [name="${name}"]`).fill(value);
  await page.getByRole('button', { name: `Send ${key}`, exact: true }).click();
  return page.locator('#try-status').innerText();
}

/** A gRPC API of the route_guide proto (test/grpc/helpers.ts PROTO) for the portal's gRPC pages: an OAuth method, one with a scope and a policy, an open one. */
export const GRPC_PORTAL_API = `name = "RouteGuide"
context = "/routeguide"
version = "1.0.0"
state = "PUBLISHED"
type = "GRPC"
auth = "oauth2"
labels = ["Default"]
[grpc]
proto = ["route_guide.proto"]
[endpoints]
production = "http://127.0.0.1:9"
[[scopes]]
name = "route:write"
roles = ["admin"]
[[resources]]
path = "/routeguide.RouteGuide/GetFeature"
[[resources]]
path = "/routeguide.RouteGuide/RecordRoute"
scopes = ["route:write"]
policy = "10PerMin"
[[resources]]
path = "/routeguide.RouteGuide/RouteChat"
auth = "none"
`;

/**
 * Debian's Chromium, headless, closed at the test's end; undefined (with the reason as a comment) when it
 * does not start, so the test ends there as skipped.
 */
export async function launchChromium(t: {
  comment(m: string): void;
  teardown(f: () => unknown): void;
}): Promise<import('playwright-core').Browser | undefined> {
  const { chromium } = await import('playwright-core');
  try {
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    t.teardown(() => browser.close());
    return browser;
  } catch (err) {
    t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
    return undefined;
  }
}
