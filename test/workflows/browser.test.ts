/**
 * Workflows in a real browser (Debian's Chromium under playwright-core, headless, a fresh profile): a
 * subscriber subscribes and sees "pending approval"; the admin approves in /admin; the subscriber's
 * try-it answers 200. A second subscription rejected in /admin shows the approver's comment. The admin adds
 * a header-condition policy in /admin; an API naming it deploys and its calls are counted by it (429,
 * 900800). Skips with its reason without Chromium.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { basic, json } from '../keymanager/helpers';
import { ADMIN, CHROMIUM, openTab, PORTAL_TOML, startPortalNode, tryOperation, until } from '../portal/helpers';

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
const COUNTED = `name = "Counted"\ncontext = "/counted"\nversion = "1.0.0"\npolicy = "GoldHeader"\n[endpoints]\nproduction = "http://127.0.0.1:1/none"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\nauth = "none"\n`;

t.test(
  "pending approval, approved in /admin, try-it 200; a rejection's comment; a header policy from /admin",
  { skip: noBrowser },
  async (t) => {
    const { chromium } = await import('playwright-core');
    const node = await startPortalNode(`${PORTAL_TOML}[apim.throttling]\nenable_header_based_throttling = true\n`);
    t.teardown(() => node.close());
    const admin = basic(ADMIN.username, ADMIN.password);
    t.equal(
      (await json('PUT', `${node.base}/admin/v1/workflow-executors/AM_SUBSCRIPTION_CREATION`, { executor: 'approval' }, admin)).status,
      200,
    );
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-wf-chromium-'));
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

    await page.goto(`${base}/devportal`);
    await page.getByRole('link', { name: 'Sign in' }).first().click();
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(await page.locator('header').innerText(), /Signed in as admin/);

    const subscribe = async (name: string): Promise<string> => {
      await page.goto(`${base}/devportal/applications`);
      await page.getByLabel('Name').fill(name);
      await page.getByRole('button', { name: 'Create' }).click();
      await openTab(page, 'Production keys');
      await page.getByRole('button', { name: 'Generate production keys' }).click();
      await openTab(page, 'Subscriptions');
      await page.locator('#sub-api').selectOption({ label: 'PizzaShackSecured 1.0.0' });
      await page.locator('#tier').selectOption('Gold');
      await page.getByRole('button', { name: 'Subscribe' }).click();
      return page.url();
    };
    const appUrl = await subscribe('PizzaApp');
    t.match(await page.locator('main').innerText(), /pending approval/, 'the subscriber sees "pending approval"');
    await openTab(page, 'Production keys');
    await page.getByRole('button', { name: 'Generate token' }).click();
    const tryIt = (): Promise<string> => tryOperation(page, 'PizzaShackSecured 1.0.0', 'GET /menu');
    t.equal(await tryIt(), '401', 'pending: try-it is refused');
    t.match(await page.locator('main').innerText(), /900909/, "with the spec's code");

    // The admin approves in /admin.
    await page.goto(`${base}/admin`);
    t.match(await page.locator('main').innerText(), /Subscription of PizzaApp/);
    await page.getByLabel('Comment').first().fill('welcome aboard');
    await page.getByRole('button', { name: /^Approve Subscription of PizzaApp/ }).click();
    t.match(await page.locator('main').innerText(), /approved/);
    await page.goto(appUrl);
    t.equal(await tryIt(), '200', 'approved: try-it answers 200');

    // A second subscription rejected with a comment: the subscriber reads it.
    const other = await subscribe('OtherApp');
    await page.goto(`${base}/admin`);
    await page.getByLabel('Comment').first().fill('Use the Gold plan of PizzaApp');
    await page.getByRole('button', { name: /^Reject Subscription of OtherApp/ }).click();
    await page.goto(other);
    t.match(
      await page.locator('main').innerText(),
      /rejected: .?Use the Gold plan of PizzaApp/,
      'the rejected subscription shows the comment',
    );

    // A header-condition policy added in /admin counts the calls of the API that names it.
    await page.goto(`${base}/admin/policies`);
    await page.getByLabel('Kind').selectOption('api');
    await page.getByLabel('Name', { exact: true }).fill('GoldHeader');
    await page.getByLabel('Requests allowed', { exact: true }).fill('1000');
    await page.getByLabel('Condition type').selectOption('header');
    await page.getByLabel('Header, query parameter or claim name').fill('x-plan');
    await page.getByLabel('Value (IP, range, or a regular expression)').fill('gold');
    await page.getByLabel('Requests allowed when the condition holds').fill('2');
    await page.getByRole('button', { name: 'Add policy' }).click();
    t.match(await page.locator('main').innerText(), /Policy GoldHeader added/);
    fs.writeFileSync(path.join(node.dir, 'apis', 'counted.toml'), COUNTED);
    t.ok(
      await until(async () => (await fetch(`${node.gateway}/counted/1.0.0/x`, { headers: { 'x-plan': 'silver' } })).status !== 404),
      'the API naming the policy deploys',
    );
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${node.gateway}/counted/1.0.0/x`, { headers: { 'x-plan': 'gold' } });
      codes.push(r.status === 429 ? ((await r.json()) as { fault: { code: number } }).fault.code : r.status);
    }
    t.equal(codes[2], 900800, `past the limit: 429 with 900800 (${codes.join(', ')})`);
  },
);
