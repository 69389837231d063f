/**
 * Application sharing, comments and ratings in a real browser (Debian's Chromium under playwright-core,
 * headless; the pattern of test/portal/browser.test.ts). Three users sign up (two of the organisation
 * Acme, one of Globex) with `[apim.devportal] enable_application_sharing`: the application one Acme user
 * creates is listed and opened for the other, and not for the Globex user (404). A comment and a rating
 * one user writes appear for another user with the average; a script in a comment is shown as text and
 * never runs; a reply shows under its comment; the forum shows a topic to a user of the same tenant; the
 * super admin (the super tenant's admin) deletes a comment.
 */
import * as fs from 'node:fs';
import t from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ADMIN, CHROMIUM, PORTAL_TOML, startPortalNode } from './helpers';
import { signUp } from './selfservice-helpers';

const PASSWORD = 'Shared-pw-2026';
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

t.test('sharing by organisation, comments and ratings in Chromium', { skip: noBrowser }, async (t) => {
  const { chromium } = await import('playwright-core');
  const node = await startPortalNode(
    `${PORTAL_TOML}[apim.devportal]\nenable_application_sharing = true\napplication_sharing_claim = "http://wso2.org/claims/organization"\n`,
  );
  t.teardown(() => node.close());
  const base = node.base;
  for (const [username, organization] of [
    ['annie', 'Acme'],
    ['bobby', 'Acme'],
    ['evelyn', 'Globex'],
  ] as const) {
    t.equal(
      (await signUp(base, { username, password: PASSWORD, email: `${username}@example.org`, organization })).status,
      200,
      `${username} signed up`,
    );
  }
  let browser: Browser;
  try {
    // playwright-core gives the browser a fresh temporary profile (its user data directory) per launch.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  } catch (err) {
    t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
    return;
  }
  t.teardown(() => browser.close());
  const scripts: string[] = [];
  const as = async (username: string, password = PASSWORD): Promise<{ ctx: BrowserContext; page: Page }> => {
    const ctx = await browser.newContext({ viewport: { width: 400, height: 800 } });
    const page = await ctx.newPage();
    page.on('dialog', (d) => {
      scripts.push(d.message());
      void d.dismiss();
    });
    await page.goto(`${base}/devportal/login`);
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/devportal`);
    return { ctx, page };
  };

  const ann = await as('annie');
  await ann.page.getByRole('link', { name: 'Applications' }).click();
  await ann.page.getByLabel('Name').fill('AcmeShared');
  await ann.page.getByRole('button', { name: 'Create' }).click();
  const appUrl = ann.page.url();
  t.match(appUrl, /\/devportal\/applications\/[^/]+$/);

  const bob = await as('bobby');
  await bob.page.goto(`${base}/devportal/applications`);
  t.equal(await bob.page.getByRole('link', { name: 'AcmeShared' }).count(), 1, 'a colleague of the same organisation sees the application');
  await bob.page.getByRole('link', { name: 'AcmeShared' }).click();
  t.equal(await bob.page.getByRole('heading', { name: 'AcmeShared' }).count(), 1, 'and opens it');
  await bob.page.getByRole('link', { name: 'Production keys', exact: true }).click();
  t.equal(await bob.page.getByRole('button', { name: 'Generate production keys' }).count(), 1, 'and may use it');

  const eve = await as('evelyn');
  await eve.page.goto(`${base}/devportal/applications`);
  t.equal(await eve.page.getByRole('link', { name: 'AcmeShared' }).count(), 0, 'a user of another organisation does not see it');
  const denied = await eve.page.goto(appUrl);
  t.equal(denied?.status(), 404, 'nor open it');

  // A comment with a script and a rating by ann, seen by bob.
  await ann.page.goto(`${base}/devportal/apis/pizzashack-secured.toml`);
  await ann.page.getByLabel('Your comment').fill('Great API <script>alert("xss")</script><img src=x onerror=alert(1)>');
  await ann.page.getByRole('button', { name: 'Comment' }).click();
  await ann.page.getByLabel('Your rating').selectOption('4');
  await ann.page.getByRole('button', { name: 'Rate' }).click();
  await bob.page.goto(`${base}/devportal/apis/pizzashack-secured.toml`);
  const comment = bob.page.locator('li.comment p.post').first();
  t.equal(
    await comment.textContent(),
    'Great API <script>alert("xss")</script><img src=x onerror=alert(1)>',
    'the comment appears for another user, the script as text',
  );
  t.equal(await bob.page.locator('li.comment script, li.comment img').count(), 0, 'no element was made of it');
  t.equal(await bob.page.locator('#rating-average').textContent(), '4.0', 'the rating appears');
  await bob.page.getByLabel('Your rating').selectOption('2');
  await bob.page.getByRole('button', { name: 'Rate' }).click();
  t.equal(await bob.page.locator('#rating-average').textContent(), '3.0', 'the average of both');
  t.equal(await bob.page.locator('#rating-count').textContent(), '2');
  await bob.page.getByLabel('Your rating').selectOption('5');
  await bob.page.getByRole('button', { name: 'Rate' }).click();
  t.equal(await bob.page.locator('#rating-count').textContent(), '2', 'one rating per user: a new one replaces it');
  t.equal(await bob.page.locator('#rating-average').textContent(), '4.5');
  await bob.page.getByText('Reply', { exact: true }).first().click();
  await bob.page.getByLabel('Reply to annie').fill('Agreed');
  await bob.page.getByRole('button', { name: 'Reply', exact: true }).click();
  t.equal(await bob.page.locator('li.comment li.reply p.post').textContent(), 'Agreed', 'a reply under its comment');
  t.equal(await bob.page.getByRole('button', { name: /^Delete the post/ }).count(), 0, 'a user deletes nothing');

  // The forum of the tenant.
  await bob.page.getByRole('link', { name: 'Forum' }).click();
  await bob.page.getByLabel('Title').fill('Rate limits?');
  await bob.page.getByLabel('Message').fill('How many calls per minute?');
  await bob.page.getByRole('button', { name: 'Start topic' }).click();
  await eve.page.goto(`${base}/devportal/forum`);
  await eve.page.getByRole('link', { name: 'Rate limits?' }).click();
  t.equal(await eve.page.locator('.card p.post').textContent(), 'How many calls per minute?', 'a topic for another user of the tenant');

  // The tenant admin deletes the comment with its reply.
  const admin = await as(ADMIN.username, ADMIN.password);
  await admin.page.goto(`${base}/devportal/apis/pizzashack-secured.toml`);
  await admin.page.getByRole('button', { name: 'Delete the post of annie' }).click();
  await admin.page.goto(`${base}/devportal/apis/pizzashack-secured.toml`);
  t.equal(await admin.page.locator('li.comment').count(), 0, 'deleted by the tenant admin, with its reply');
  t.same(scripts, [], 'no script ran');
  for (const p of [ann, bob, eve, admin]) await p.ctx.close();
});
