/**
 * A tenant's developer portal in a real browser (Debian's Chromium under playwright-core, headless, a fresh
 * profile; docs/tenants.md, "The developer portal"): `/devportal?tenant=acme.test` lists only acme.test's
 * APIs; its user `janet@acme.test` signs in there, creates an application, subscribes to the tenant's API and
 * calls it through try-it (200, served by the tenant's backend at /t/acme.test/...); the super tenant's
 * catalogue does not list the tenant's API, and an unknown tenant's catalogue is a 404. Skips with its reason
 * without Chromium.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { basic, json } from '../keymanager/helpers';
import { echoBackend } from '../gateway/helpers';
import { ADMIN, CHROMIUM, formRequest, openTab, PORTAL_TOML, startPortalNode, tryOperation } from '../portal/helpers';

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

t.test(
  "a tenant user signs in at /devportal?tenant=, sees only the tenant's APIs, subscribes and calls one",
  { skip: noBrowser },
  async (t) => {
    const { chromium } = await import('playwright-core');
    const backend = await echoBackend();
    t.teardown(() => backend.close());
    const shop = `name = "AcmeShop"\ncontext = "/shop"\nversion = "1.0.0"\ndescription = "acme.test's shop"\n[endpoints]\nproduction = "http://127.0.0.1:${backend.port}/acme"\n[[resources]]\npath = "/items"\nmethods = ["GET"]\n`;
    const node = await startPortalNode(PORTAL_TOML, { 'apis/t/acme.test/shop.toml': shop });
    t.teardown(() => node.close());
    const admin = basic(ADMIN.username, ADMIN.password);
    t.equal(
      (await json('POST', `${node.base}/admin/v1/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, admin)).status,
      201,
    );
    const bossy = basic('bossy@acme.test', 'acme-pw-1');
    const added = await json('POST', `${node.base}/admin/v1/users`, { username: 'janet', password: 'jane-pw-1' }, bossy);
    t.equal(added.status, 201, JSON.stringify(added.body));

    // Without a browser: the page of an unknown tenant.
    const unknown = await formRequest(`${node.base}/devportal?tenant=nope.test`);
    t.equal(unknown.status, 404);
    t.match(unknown.text, /No tenant nope.test/);

    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tenant-chromium-'));
    t.teardown(() => fs.rmSync(profile, { recursive: true, force: true }));
    let context;
    try {
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ARGS,
        viewport: { width: 390, height: 800 },
      });
    } catch (err) {
      t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
      return;
    }
    t.teardown(() => context.close());
    const page = context.pages()[0] ?? (await context.newPage());
    const base = node.base;

    // The tenant's catalogue, before sign-in: its API only.
    await page.goto(`${base}/devportal?tenant=acme.test`);
    const before = await page.locator('main').innerText();
    t.match(before, /AcmeShop/, "the tenant's API is listed");
    t.match(before, /\/t\/acme\.test\/shop/, 'at its tenant URL');
    t.notMatch(before, /PizzaShack/, "the super tenant's APIs are not");

    await page.getByRole('link', { name: 'Sign in' }).first().click();
    await page.getByLabel('Username').fill('janet@acme.test');
    await page.getByLabel('Password').fill('jane-pw-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(await page.locator('header').innerText(), /Signed in as janet@acme\.test/);
    const signedIn = await page.locator('main').innerText();
    t.match(signedIn, /AcmeShop/, "signed in: the user's tenant's catalogue");
    t.notMatch(signedIn, /PizzaShack/);

    await page.goto(`${base}/devportal/applications`);
    await page.getByLabel('Name').fill('JaneApp');
    await page.getByRole('button', { name: 'Create' }).click();
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate production keys' }).click();
    await openTab(page, 'Subscriptions');
    const offered = await page.locator('#sub-api').innerText();
    t.notMatch(offered, /PizzaShack/, "only the tenant's APIs to subscribe to");
    await page.locator('#sub-api').selectOption({ label: 'AcmeShop 1.0.0' });
    await page.locator('#tier').selectOption('Gold');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    t.match(await page.locator('main').innerText(), /Subscribed to AcmeShop 1\.0\.0/);
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate token' }).click();
    t.equal(await tryOperation(page, 'AcmeShop 1.0.0', 'GET /items'), '200', 'try-it answers 200');
    t.same(
      backend.seen.map((r) => r.url),
      ['/acme/items'],
      "the tenant's backend got the call",
    );

    // The super tenant's catalogue does not list the tenant's API.
    await page.goto(`${base}/devportal?tenant=carbon.super`);
    const superList = await page.locator('main').innerText();
    t.match(superList, /PizzaShack/);
    t.notMatch(superList, /AcmeShop/, "the super tenant's catalogue has no tenant API");
    const anonymous = await formRequest(`${base}/devportal`);
    t.notMatch(anonymous.text, /AcmeShop/, "nor the anonymous visitor's default catalogue");
  },
);
