/**
 * The application page in Chromium (docs/portal.md, "Applications, keys, subscriptions, tokens" and
 * "Try it"): its tabs are links that work without script; the page's one inline script is allowed by its
 * hash and nothing else (CSP3 §8.4); the copy buttons put the consumer secret and the access token on the
 * clipboard; the token's scopes and expiry are shown; the tiers offered leave out Unauthenticated (and a
 * forged subscription with it is refused); try-it per operation of the OpenAPI document answers 200 with
 * the JSON indented, a body example comes from the schema; a GraphQL API gets a query box whose answer is
 * the backend's; a WebSocket API a note with its ws:// URL and no request form. At 390 px nothing scrolls
 * sideways. Screenshots go to docs/images with THROUGHWAY_SCREENSHOTS=1 (else a temporary directory).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { graphqlBackend, SDL } from '../graphql/backend';
import { ADMIN, CHROMIUM, openTab, ROOT, startPortalNode, tryOperation } from './helpers';

const IMAGES =
  process.env.THROUGHWAY_SCREENSHOTS === '1'
    ? path.join(ROOT, 'docs', 'images')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'tw-console-shots-'));

async function shot(page: Page, name: string, full = false): Promise<void> {
  fs.mkdirSync(IMAGES, { recursive: true });
  await page.screenshot({ path: path.join(IMAGES, `portal-${name}.png`), fullPage: full });
}

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

const sideways = (page: Page): Promise<number> =>
  page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth') as Promise<number>;

async function signIn(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/devportal/login`);
  await page.getByLabel('Username').fill(ADMIN.username);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

t.test(
  'the application page: tabs, copy buttons, token facts, tiers, try-it per operation, GraphQL and WebSocket',
  { skip: noBrowser },
  async (t) => {
    const { chromium } = await import('playwright-core');
    const gql = await graphqlBackend();
    t.teardown(() => gql.close());
    const node = await startPortalNode(undefined, {
      'apis/orders.graphql': SDL,
      'apis/orders.toml': `name = "Orders"\ncontext = "/orders"\nversion = "1.0.0"\nstate = "PUBLISHED"\ntype = "GRAPHQL"\nauth = "none"\nunauthenticated_policy = "Unlimited"\nlabels = ["Default"]\n[endpoints]\nproduction = "http://127.0.0.1:${gql.port}/graphql"\n[graphql]\nschema = "orders.graphql"\n`,
      'apis/chat.toml': `name = "Chat"\ncontext = "/chat"\nversion = "1.0.0"\nstate = "PUBLISHED"\ntype = "WS"\nauth = "oauth2"\nlabels = ["Default"]\n[endpoints]\nproduction = "ws://127.0.0.1:1/socket"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`,
    });
    t.teardown(() => node.close());
    let browser: Browser;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    } catch (err) {
      t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
      return;
    }
    t.teardown(() => browser.close());
    const base = node.base;
    const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });

    const catalogue = await page.goto(`${base}/devportal`);
    t.notMatch(catalogue?.headers()['content-security-policy'] ?? '', /script-src/, 'a page without the script allows no script');
    await signIn(page, base);
    await page.goto(`${base}/devportal/applications`);
    await page.getByLabel('Name').fill('ConsoleApp');
    await page.getByRole('button', { name: 'Create' }).click();
    const appUrl = page.url().replace(/\?.*$/, '');

    // The CSP of the application page: script only by the hash of the one inline script.
    const answer = await page.goto(appUrl);
    const csp = answer?.headers()['content-security-policy'] ?? '';
    const script = (await page.evaluate("[...document.scripts].map((s) => s.src === '' ? s.textContent : 'src:' + s.src)")) as string[];
    t.equal(script.length, 1, 'one script on the page, inline');
    const hash = `'sha256-${createHash('sha256')
      .update(script[0] ?? '', 'utf8')
      .digest('base64')}'`;
    t.match(csp, /default-src 'none'/);
    t.equal(/script-src ([^;]*)/.exec(csp)?.[1], hash, 'script-src names exactly the hash of that script');
    t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'no unsafe source');

    // Tabs: links, one current at a time, each its own address.
    const tabs = page.locator('nav.tabs a');
    t.same(await tabs.allInnerTexts(), ['Overview', 'Production keys', 'Sandbox keys', 'Subscriptions', 'Try it'], 'five tabs');
    t.equal(await page.locator('nav.tabs a[aria-current="page"]').innerText(), 'Overview', 'the overview first');
    for (const [name, tab] of [
      ['Sandbox keys', 'sandbox'],
      ['Subscriptions', 'subscriptions'],
      ['Try it', 'try'],
      ['Overview', 'overview'],
    ] as const) {
      await openTab(page, name);
      t.equal(await page.locator('nav.tabs a[aria-current="page"]').innerText(), name, `${name}: the current tab`);
      t.equal(await page.locator(`section#tab-${tab}`).count(), 1, `${name}: its panel`);
    }
    await shot(page, 'app-overview');

    // Keys: the secret's copy button puts it on the clipboard.
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate production keys' }).click();
    t.match(page.url(), /\?tab=production$/, 'back on the production keys tab');
    const secret = await page.locator('#consumer-secret').innerText();
    const copySecret = page.getByRole('button', { name: 'Copy consumer secret' });
    t.ok(await copySecret.isVisible(), 'the copy button is shown (the script ran)');
    await copySecret.click();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), secret, 'the clipboard holds the consumer secret');
    t.equal(await copySecret.innerText(), 'Copied');
    await page.getByRole('button', { name: 'Copy consumer key' }).first().click();
    t.equal(
      await page.evaluate('navigator.clipboard.readText()'),
      await page.locator('#key-production').innerText(),
      'and the consumer key',
    );

    // Tiers a subscriber may pick: not Unauthenticated; a forged form naming it is refused.
    await openTab(page, 'Subscriptions');
    const tiers = await page.locator('#tier option').allInnerTexts();
    t.ok(tiers.includes('Gold'), `tiers offered: ${tiers.join(', ')}`);
    t.notOk(tiers.includes('Unauthenticated'), 'Unauthenticated is not offered');
    const csrf = (await page.locator('input[name="csrf"]').first().getAttribute('value')) ?? '';
    const appId = decodeURIComponent(appUrl.slice(appUrl.lastIndexOf('/') + 1));
    const forged = await page.request.post(`${base}/devportal/subscribe`, {
      form: { csrf, application: appId, api: 'pizzashack-secured.toml', tier: 'Unauthenticated' },
      maxRedirects: 0,
    });
    t.equal(forged.status(), 400, 'subscribing with Unauthenticated: 400');
    t.match(await forged.text(), /Tier Unauthenticated is not a subscription tier you may choose/);
    await page.locator('#sub-api').selectOption({ label: 'PizzaShackSecured 1.0.0' });
    await page.locator('#tier').selectOption('Gold');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    t.match(await page.locator('main').innerText(), /Subscribed to PizzaShackSecured 1\.0\.0 with the Gold tier/);

    // The token: copied, its scopes and expiry shown, its claims decoded.
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate token' }).click();
    const token = await page.locator('#access-token').innerText();
    t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT access token is shown');
    await page.getByRole('button', { name: 'Copy access token' }).click();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), token, 'the clipboard holds the token');
    t.match(await page.locator('#token-scopes').innerText(), /\S/, 'its scopes');
    t.match(await page.locator('#token-expiry').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+ s\)$/, 'its expiry');
    const claims = JSON.parse((await page.locator('#token-claims').textContent()) ?? '{}') as { claims?: { exp?: number } };
    t.type(claims.claims?.exp, 'number', 'the decoded claims');
    await shot(page, 'token');
    await page.reload();
    t.equal(await page.locator('#access-token').count(), 0, 'the token is shown once');
    t.match(
      await page.locator('#held-token').innerText(),
      /Expires\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/,
      "the held token's expiry stays on the tab",
    );

    // Try-it per operation: a path parameter as a field, the answer's JSON indented.
    t.equal(await tryOperation(page, 'PizzaShackSecured 1.0.0', 'GET /menu/{id}', { 'p.id': '2' }), '200', 'GET /menu/{id} with id 2: 200');
    const body = await page.locator('#try-body').innerText();
    t.match(body, /^\{\n  "/, 'the JSON answer indented');
    t.match(
      await page.locator('#result').locator('..').locator('code').first().innerText(),
      /\/pizzashack-secured\/1\.0\.0\/menu\/2$/,
      'the URL called',
    );
    await page.locator('#result').scrollIntoViewIfNeeded();
    await shot(page, 'tryit');
    // The demo API names its OpenAPI document: its operations, with the request body's example.
    await page.locator('#api').selectOption({ label: 'PizzaShack 1.0.0' });
    await page.getByRole('button', { name: 'Show operations' }).click();
    t.equal(
      await page.locator('details.operation summary', { hasText: 'Order a pizza' }).count(),
      1,
      "an operation's summary from the document",
    );
    const order = 'details.operation:has(input[name="operation"][value="POST /order"])';
    await page.locator(`${order} > summary`).click();
    t.equal(
      await page.locator(`${order} textarea[name="body"]`).inputValue(),
      '{\n  "pizza": "Margherita"\n}',
      "the body example from the document's schema",
    );
    await page.getByRole('button', { name: 'Send POST /order', exact: true }).click();
    t.match(await page.locator('#try-status').innerText(), /^20[01]$/, 'POST /order with the example body');

    // GraphQL: a query box; the backend's answer.
    await openTab(page, 'Try it');
    await page.locator('#api').selectOption({ label: 'Orders 1.0.0 (GraphQL)' });
    await page.getByRole('button', { name: 'Show operations' }).click();
    t.equal(await page.locator('#gql-query').inputValue(), '{ __typename }', 'a query to start from');
    t.equal(await page.locator('details.operation').count(), 0, 'no REST operation forms');
    await page.getByLabel('Query').fill('query Greet($n: String) { hello(name: $n) }');
    await page.getByLabel('Variables (JSON object, optional)').fill('{"n": "portal"}');
    await page.getByRole('button', { name: 'Run query' }).click();
    t.equal(await page.locator('#try-status').innerText(), '200', 'the GraphQL query: 200');
    t.equal(
      await page.locator('#try-body').innerText(),
      '{\n  "data": {\n    "hello": "hello portal"\n  }\n}',
      "the backend's answer, indented",
    );
    t.same(
      JSON.parse(gql.bodies.at(-1) ?? '{}'),
      { query: 'query Greet($n: String) { hello(name: $n) }', variables: { n: 'portal' } },
      'sent as GraphQL over HTTP',
    );
    await page.locator('#result').scrollIntoViewIfNeeded();
    await shot(page, 'tryit-graphql');

    // WebSocket: the URL to connect to, no request form.
    await page.locator('#api').selectOption({ label: 'Chat 1.0.0 (WebSocket)' });
    await page.getByRole('button', { name: 'Show operations' }).click();
    t.equal(await page.locator('#ws-url').innerText(), `ws://127.0.0.1:${node.gw}/chat/1.0.0`, 'the ws:// URL');
    t.equal(await page.locator('#tab-try form[method="post"]').count(), 0, 'no GET/POST form for a WebSocket API');

    // A phone-sized window: no tab scrolls sideways.
    await page.setViewportSize({ width: 390, height: 800 });
    for (const name of ['Overview', 'Production keys', 'Subscriptions', 'Try it'] as const) {
      await openTab(page, name);
      t.ok((await sideways(page)) <= 0, `${name} at 390 px: no sideways scrolling`);
    }
    await page.locator('#api').selectOption({ label: 'PizzaShackSecured 1.0.0' });
    await page.getByRole('button', { name: 'Show operations' }).click();
    await page.locator('details.operation > summary').first().click();
    t.ok((await sideways(page)) <= 0, 'an open operation at 390 px: no sideways scrolling');
    await shot(page, 'app-phone');
    t.same(errors, [], 'no console error: no CSP violation, no script error');

    // Without JavaScript: the tabs are links, try-it a form; the copy buttons stay hidden.
    const plain = await browser.newContext({ viewport: { width: 1000, height: 760 }, javaScriptEnabled: false });
    t.teardown(() => plain.close());
    const np = await plain.newPage();
    await signIn(np, base);
    await np.goto(appUrl);
    await openTab(np, 'Production keys');
    t.equal(await np.locator('button.copy').first().isVisible(), false, 'no copy button without script');
    t.match(await np.locator('#key-production').innerText(), /\S/, 'the key still shown, selectable');
    await np
      .getByRole('button', { name: 'Generate token' })
      .click()
      .catch(() => undefined);
    t.equal(
      await tryOperation(np, 'PizzaShackSecured 1.0.0', 'GET /menu'),
      '401',
      'try-it works without script (this session holds no token: 401)',
    );
  },
);
