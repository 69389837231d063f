/**
 * Both consoles driven by a real browser: Debian's Chromium under playwright-core, headless (docs/portal.md
 * walks through the screenshots in docs/images/portal-*.png, which this test writes there when
 * THROUGHWAY_SCREENSHOTS=1; otherwise into a temporary directory, so a test run leaves the tree clean).
 *
 * Developer portal: sign in through the key manager's code flow → create an application → generate keys
 * (secret shown once) → subscribe → token → try-it gets 200 from the demo API; an application without
 * the subscription gets fault 900908 shown with its explanation. Publisher: a bad endpoint URL shows the
 * validator's message beside the field; create an API with an endpoint timeout and a resource policy →
 * publish → the gateway serves it and the policy throttles the second call (900802) → deprecate →
 * retire → 404 (103008). A POST without the CSRF token is refused with 403.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, CHROMIUM, openTab, ROOT, startPortalNode, tryOperation } from './helpers';

const IMAGES =
  process.env.THROUGHWAY_SCREENSHOTS === '1'
    ? path.join(ROOT, 'docs', 'images')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'tw-portal-shots-'));

/** Controls of the page a screen reader cannot name: without a <label> (hidden inputs and buttons aside). */
const UNLABELLED =
  "[...document.querySelectorAll('input:not([type=hidden]):not([type=submit]),select,textarea')].filter((e) => e.labels.length === 0).map((e) => e.id || e.name)";

async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(IMAGES, { recursive: true });
  const file = path.join(IMAGES, `portal-${name}.png`);
  await page.screenshot({ path: file });
  // A PNG was written (its signature), whichever directory it went to.
  if (fs.readFileSync(file).subarray(0, 8).toString('hex') !== '89504e470d0a1a0a') throw new Error(`${file} is not a PNG`);
}

/** Polls the gateway until `path` answers `status` (hot deploy is debounced). */
async function gatewayAnswers(url: string, status: number, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  const until = Date.now() + timeoutMs;
  let last = { status: 0, body: '' };
  while (Date.now() < until) {
    try {
      const r = await fetch(url);
      last = { status: r.status, body: await r.text() };
      if (r.status === status) return last;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

{
  t.test('both consoles in Chromium', { skip: noBrowser }, async (t) => {
    const { chromium } = await import('playwright-core');
    // The shipped policies and one resource tier small enough to be exceeded by a second call.
    const policies = `${fs.readFileSync(path.join(ROOT, 'conf', 'policies.toml'), 'utf8')}\n[[api]]\nname = "OnePerDay"\nrequest_count = 1\nunit_time = 1\ntime_unit = "day"\n`;
    const node = await startPortalNode(undefined, { 'policies.toml': policies });
    t.teardown(() => node.close());
    t.match(
      node.out.join('\n'),
      /developer portal\s+http:\/\/127\.0\.0\.1:\d+\/devportal|developer portal\s+https:\/\/127\.0\.0\.1:\d+\/devportal/,
      'the start-up lines name the portal',
    );
    t.match(node.out.join('\n'), /publisher\s+https?:\/\/127\.0\.0\.1:\d+\/publisher/, 'and the publisher');
    let browser: Browser;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    } catch (err) {
      t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
      return;
    }
    t.teardown(() => browser.close());
    const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
    const page = await context.newPage();
    const errors: string[] = [];
    // Pages answered 4xx on purpose (a form with errors is 400) log "Failed to load resource": not counted.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    const base = node.base;

    // The catalogue, anonymous.
    const first = await page.goto(`${base}/devportal`);
    t.equal(first?.status(), 200);
    const csp = first?.headers()['content-security-policy'] ?? '';
    t.match(csp, /default-src 'none'/, 'CSP: nothing by default');
    t.notMatch(csp, /script-src|unsafe-inline/, 'CSP: no script source at all');
    t.match(await page.locator('main').innerText(), /PizzaShackSecured/);
    t.same(await page.evaluate(UNLABELLED), [], 'every control of the catalogue has a label');
    await page.getByLabel('Search APIs').fill('secured');
    await page.getByRole('button', { name: 'Search' }).click();
    t.match(await page.locator('main').innerText(), /1 API matching secured/, 'search narrows the catalogue');
    await page.getByRole('link', { name: 'PizzaShackSecured' }).click();
    const detail = await page.locator('main').innerText();
    t.match(detail, /Gateway URLs/);
    t.match(detail, new RegExp(`http://127\\.0\\.0\\.1:${node.gw}/pizzashack-secured/1\\.0\\.0`), 'gateway URL of the API');
    t.match(detail, /\/order\/\{orderId\}/, 'resources listed');
    await shot(page, 'catalogue');

    // The demo API's OpenAPI document, rendered on its page; the download link answers with the document.
    await page.goto(`${base}/devportal/apis/demo.toml`);
    const openapi = page.locator('section[aria-labelledby="openapi"]');
    t.match(await openapi.locator('h3', { hasText: 'GET /menu/{id}' }).innerText(), /GET \/menu\/\{id\}/, 'an operation of the document');
    t.equal(await openapi.locator('.operation').count(), 7, 'every operation rendered');
    t.match(await openapi.innerText(), /One pizza[\s\S]*No pizza with this number/, 'summary and a response given by $ref');
    const href = (await page.getByRole('link', { name: 'Download the OpenAPI document' }).getAttribute('href')) ?? '';
    t.equal(href, '/devportal/apis/demo.toml/openapi.json');
    const download = await page.request.get(`${base}${href}`);
    t.equal(download.status(), 200, 'the download link answers');
    t.match(download.headers()['content-disposition'] ?? '', /^attachment; filename="PizzaShack-1\.0\.0\.openapi\.json"$/);
    t.same(
      ((await download.json()) as { servers: { url: string }[] }).servers.map((s) => s.url),
      [`http://127.0.0.1:${node.gw}/pizzashack/1.0.0`],
      'the gateway URL as server',
    );

    // Sign in through the key manager's authorization code flow (no consent for the first-party console).
    await page.getByRole('link', { name: 'Sign in' }).first().click();
    t.match(page.url(), /\/oauth2\/authorize/, 'the key manager signs the user in');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await shot(page, 'signin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(await page.locator('header').innerText(), /Signed in as admin/);
    const cookie = (await context.cookies()).find((c) => c.name === 'tw_portal');
    t.ok(cookie, 'session cookie set');
    t.equal(cookie?.httpOnly, true, 'HttpOnly');
    t.equal(cookie?.sameSite, 'Lax', 'SameSite=Lax');

    // Application, keys, subscription, token, try-it.
    await page.getByRole('link', { name: 'Applications' }).click();
    await page.getByLabel('Name').fill('PizzaApp');
    await page.getByLabel('Description').fill('Orders pizza');
    await page.getByRole('button', { name: 'Create' }).click();
    t.match(await page.locator('h1').innerText(), 'PizzaApp');
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate production keys' }).click();
    const secret = await page.locator('#consumer-secret').innerText();
    t.match(secret, /^[A-Za-z0-9_-]{40,}$/, 'the consumer secret is shown');
    await shot(page, 'keys');
    t.same(await page.evaluate(UNLABELLED), [], "every control of the application's page has a label");
    await page.reload();
    t.equal(await page.locator('#consumer-secret').count(), 0, 'and shown once only');
    t.notMatch(await page.content(), secret, 'the secret is not on the page again');
    await openTab(page, 'Subscriptions');
    await page.locator('#sub-api').selectOption({ label: 'PizzaShackSecured 1.0.0' });
    await page.locator('#tier').selectOption('Gold');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    t.match(await page.locator('main').innerText(), /Subscribed to PizzaShackSecured 1\.0\.0 with the Gold tier/);
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate token' }).click();
    t.match(await page.locator('#new-token').innerText(), /Access token/);
    t.equal(await tryOperation(page, 'PizzaShackSecured 1.0.0', 'GET /menu'), '200', 'try-it: 200 from the demo API');
    t.match(await page.locator('#try-body').innerText(), /Margherita|pizza/i, 'the demo menu');
    t.match(await page.locator('#try-body').innerText(), /^\[\n  \{\n    "/, 'pretty-printed: JSON indented by two spaces');
    await page.locator('#result').scrollIntoViewIfNeeded();

    // An application without the subscription: the fault, explained from the fault table.
    await page.getByRole('link', { name: 'Applications' }).click();
    await page.getByLabel('Name').fill('NoSubscriptionApp');
    await page.getByRole('button', { name: 'Create' }).click();
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate production keys' }).click();
    await page.getByRole('button', { name: 'Generate token' }).click();
    t.equal(await tryOperation(page, 'PizzaShackSecured 1.0.0', 'GET /menu'), '403');
    t.match(
      await page.locator('#fault').innerText(),
      /Fault 900908: Resource forbidden\. The application is not subscribed to the API/,
      'fault explained',
    );
    await page.locator('#result').scrollIntoViewIfNeeded();
    await shot(page, 'fault');

    // A POST without the CSRF token (same browser, same cookies) is refused.
    const forged = await page.request.post(`${base}/devportal/applications`, { form: { name: 'Forged' }, maxRedirects: 0 });
    t.equal(forged.status(), 403, 'no CSRF token: 403');
    const wrong = await page.request.post(`${base}/devportal/applications`, {
      form: { name: 'Forged', csrf: 'x'.repeat(43) },
      maxRedirects: 0,
    });
    t.equal(wrong.status(), 403, 'a wrong CSRF token: 403');
    await page.goto(`${base}/devportal/applications`);
    t.notMatch(await page.locator('main').innerText(), /Forged/, 'nothing was created');

    // Publisher: the validator's message beside the field.
    await page.goto(`${base}/publisher/new`);
    t.same(await page.evaluate(UNLABELLED), [], "every control of the publisher's form has a label");
    await page.getByLabel('Name', { exact: true }).fill('Weather');
    await page.getByLabel('Context').fill('/weather');
    await page.getByLabel('Production endpoint URL').fill('htp:/nowhere here');
    await page.getByLabel('Authentication').selectOption('none');
    await page.getByLabel('Resources').fill('GET /menu');
    await page.getByRole('button', { name: 'Save' }).click();
    const fieldError = page.locator('#production-error');
    t.match(await fieldError.innerText(), /is not a usable endpoint URL/, "the validator's message beside the endpoint");
    t.equal(
      await page.getByLabel('Production endpoint URL').getAttribute('aria-describedby'),
      'production-error production-hint',
      'tied to the field for screen readers',
    );
    await shot(page, 'publisher-error');

    // OpenAPI import fills the resources; nothing is written until Save.
    await page.getByLabel('OpenAPI 3 document (JSON or YAML, optional)').fill(
      JSON.stringify({
        openapi: '3.0.3',
        info: { title: 'Weather', version: '1.0.0' },
        paths: { '/menu': { get: {} }, '/order': { post: {} } },
      }),
    );
    await page.getByRole('button', { name: 'Import resources' }).click();
    t.match(await page.locator('main').innerText(), /Imported 2 resource lines from the OpenAPI document/);
    t.equal(await page.getByLabel('Resources').inputValue(), 'GET /menu\nPOST /order', 'resources from the document');
    t.notOk(fs.existsSync(path.join(node.dir, 'apis', 'created', 'weather-1.0.0.toml')), 'nothing written by an import');

    // Create, publish: the gateway serves it; deprecate; retire: 404.
    const demoUrl = `http://127.0.0.1:${(node.demo as unknown as { address?: () => { port: number } }).address?.()?.port ?? 0}/v1`;
    const secured = fs.readFileSync(path.join(node.dir, 'apis', 'pizzashack-secured.toml'), 'utf8');
    const backend = /production = "([^"]+)"/.exec(secured)?.[1] ?? demoUrl;
    await page.getByLabel('Production endpoint URL').fill(backend);
    // Endpoint advanced configuration (a closed <details> until opened) and a per-resource policy.
    await page.getByText('Production endpoint: advanced configuration').click();
    await page.getByLabel('Production response timeout').fill('5s');
    await page.evaluate("document.querySelector('details').scrollIntoView()");
    await shot(page, 'publisher-endpoint');
    await page.getByLabel('Resources').fill('GET /menu\nPOST /order policy=OnePerDay');
    await page.getByRole('button', { name: 'Save' }).click();
    t.match(await page.locator('main').innerText(), /Saved weather-1\.0\.0\.toml \(CREATED\)/);
    t.ok(fs.existsSync(path.join(node.dir, 'apis', 'created', 'weather-1.0.0.toml')), 'a draft, outside the deployed directory');
    t.equal((await gatewayAnswers(`${node.gateway}/weather/1.0.0/menu`, 200, 500)).status, 404, 'CREATED: not deployed');
    await page.getByRole('button', { name: 'Publish' }).click();
    t.match(await page.locator('main').innerText(), /CREATED → PUBLISHED/);
    t.equal((await gatewayAnswers(`${node.gateway}/weather/1.0.0/menu`, 200)).status, 200, 'PUBLISHED: the gateway serves it');
    t.match(
      fs.readFileSync(path.join(node.dir, 'apis', 'weather-1.0.0.toml'), 'utf8'),
      /\[endpoints\.production\]\nurl = "[^"]+"\ntimeout = "5s"\n/,
      "the endpoint's timeout in the file the gateway serves",
    );
    const order = async (): Promise<{ status: number; body: string }> => {
      const r = await fetch(`${node.gateway}/weather/1.0.0/order`, {
        method: 'POST',
        body: '{}',
        headers: { 'Content-Type': 'application/json' },
      });
      return { status: r.status, body: await r.text() };
    };
    t.not((await order()).status, 429, 'the first call within the resource policy');
    const throttled = await order();
    t.equal(throttled.status, 429, "the second: the resource's policy throttles");
    t.match(throttled.body, /900802/, 'fault 900802 (resource level)');
    await shot(page, 'publisher');
    await page.getByRole('button', { name: 'Deprecate' }).click();
    t.match(await page.locator('main').innerText(), /PUBLISHED → DEPRECATED/);
    t.equal((await gatewayAnswers(`${node.gateway}/weather/1.0.0/menu`, 200)).status, 200, 'DEPRECATED: still served');
    await page.getByRole('button', { name: 'Retire' }).click();
    t.match(await page.locator('main').innerText(), /DEPRECATED → RETIRED/);
    const retired = await gatewayAnswers(`${node.gateway}/weather/1.0.0/menu`, 404);
    t.equal(retired.status, 404, 'RETIRED: 404');
    t.match(retired.body, /103008/, 'fault 103008');
    t.match(await page.locator('main').innerText(), /No transition: RETIRED is final/);

    // The publisher's subscriptions of the secured API: block, then unblock.
    await page.goto(`${base}/publisher/apis/pizzashack-secured.toml`);
    await page.getByRole('button', { name: 'Block PizzaApp' }).click();
    t.match(await page.locator('main').innerText(), /UNBLOCKED → BLOCKED/);
    await page.getByRole('button', { name: 'Unblock PizzaApp' }).click();
    t.match(await page.locator('main').innerText(), /BLOCKED → UNBLOCKED/);

    // A phone-sized window: the page fits its width.
    await page.setViewportSize({ width: 390, height: 700 });
    await page.goto(`${base}/devportal`);
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    t.ok(Number(overflow) <= 0, `no sideways scrolling on a phone (${String(overflow)} px)`);
    await shot(page, 'phone');
    t.same(errors, [], 'no console error: no CSP violation, no script error');

    // The same sign-in on the management HTTPS port (the sample key pair): its own client, a Secure cookie.
    const httpsPort = node.node.keyManager?.addresses().https?.port;
    const secure = await browser.newContext({ viewport: { width: 1000, height: 700 }, ignoreHTTPSErrors: true });
    const sp = await secure.newPage();
    await sp.goto(`https://127.0.0.1:${httpsPort ?? 0}/devportal/login?back=%2Fpublisher`);
    await sp.getByLabel('Username').fill(ADMIN.username);
    await sp.getByLabel('Password').fill(ADMIN.password);
    await sp.getByRole('button', { name: 'Sign in' }).click();
    t.equal(new URL(sp.url()).protocol, 'https:', 'stays on HTTPS');
    t.equal(new URL(sp.url()).pathname, '/publisher', 'back to the publisher');
    t.match(await sp.locator('header').innerText(), /Signed in as admin/);
    t.equal((await secure.cookies()).find((c) => c.name === 'tw_portal')?.secure, true, 'Secure cookie on HTTPS');
    await secure.close();
  });
}
