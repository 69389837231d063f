/**
 * A gRPC API's page of the developer portal in a real browser (Debian's Chromium under playwright-core,
 * headless; docs/portal.md, "gRPC APIs"): the services and methods are shown as tables a reader can read,
 * the page fits a narrow window (the long grpcurl line scrolls inside its box, the page does not), every
 * control is named, the page's policy allows the copy script by its hash only and no script error or
 * policy violation is reported, and the copy buttons put the grpcurl command and the grpc-js sketch on the
 * clipboard as the page shows them.
 */
import * as fs from 'node:fs';
import t from 'tap';
import type { Browser } from 'playwright-core';
import { startTestNode } from '../observability/node-helpers';
import { PROTO } from '../grpc/helpers';
import { CHROMIUM, GRPC_PORTAL_API as GRPC_API, PORTAL_TOML } from './helpers';

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

t.test('the gRPC API page in Chromium: tables, a narrow window, named controls, copy buttons', { skip: noBrowser }, async (t) => {
  const { chromium } = await import('playwright-core');
  const node = await startTestNode(PORTAL_TOML, { routeguide: GRPC_API }, { 'apis/route_guide.proto': PROTO });
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;
  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  } catch (err) {
    t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
    return;
  }
  t.teardown(() => browser.close());
  // A phone's width: tables and code must not push the page sideways.
  const context = await browser.newContext({ viewport: { width: 420, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  context.on('response', (r) => {
    if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
  });

  const answer = await page.goto(`${base}/devportal/apis/routeguide.toml`);
  t.equal(answer?.status(), 200);
  const csp = answer?.headers()['content-security-policy'] ?? '';
  t.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'$/, 'the page allows the copy script by its hash only');
  t.notMatch(csp, /unsafe-inline/);

  t.equal(await page.getByRole('heading', { name: 'gRPC services' }).count(), 1);
  const rows = await page
    .locator('table.grpc-methods tbody tr')
    .evaluateAll((trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim()));
  t.ok(
    rows.some((r) => /^GetFeature unary Point Feature OAuth 2\.0 token/.test(r)),
    `a unary method row as a reader sees it: ${JSON.stringify(rows.slice(0, 3))}`,
  );
  t.ok(
    rows.some((r) => /^ListFeatures server streaming Rectangle Feature not served \(UNIMPLEMENTED\)/.test(r)),
    'a method the resources leave out shown as not served',
  );

  // The page does not scroll sideways at 420 px: the long grpcurl line wraps inside its box, whole.
  const widths = (await page.evaluate(
    "({ page: document.documentElement.scrollWidth, view: window.innerWidth, pre: document.getElementById('grpcurl').scrollWidth, box: document.getElementById('grpcurl').clientWidth, lines: Math.round(document.getElementById('grpcurl').clientHeight / parseFloat(getComputedStyle(document.getElementById('grpcurl')).lineHeight || '16')) })",
  )) as { page: number; view: number; pre: number; box: number; lines: number };
  t.ok(widths.page <= widths.view, `the page fits the window (${widths.page} ≤ ${widths.view} px)`);
  t.ok(widths.pre <= widths.box, `the grpcurl line is not cut off (${widths.pre} ≤ ${widths.box} px)`);
  const tables = (await page.evaluate(
    "[...document.querySelectorAll('table.grpc-methods')].map((e) => e.parentElement.scrollWidth > e.parentElement.clientWidth ? getComputedStyle(e.parentElement).overflowX : 'fits')",
  )) as string[];
  t.ok(
    tables.length >= 2 && tables.every((o) => o === 'fits' || o === 'auto' || o === 'scroll'),
    `each methods table fits or scrolls in its own box: ${tables.join(', ')}`,
  );

  // Every control has a name a screen reader reads.
  const unnamed = (await page.evaluate(
    "[...document.querySelectorAll('button,input:not([type=hidden]),select,textarea,a')].filter((e) => !(e.getAttribute('aria-label') || (e.labels && e.labels.length) || e.textContent.trim())).map((e) => e.outerHTML.slice(0, 80))",
  )) as string[];
  t.same(unnamed, [], 'no unnamed control');

  // The copy buttons: shown once the script ran, and each copies its snippet exactly.
  const copyCurl = page.getByRole('button', { name: 'Copy grpcurl command' });
  t.ok(await copyCurl.isVisible(), 'the grpcurl copy button is shown (the script ran under the policy)');
  await copyCurl.click();
  const curl = await page.locator('#grpcurl').innerText();
  t.match(
    curl,
    new RegExp(
      `^grpcurl -plaintext -proto route_guide\\.proto -H 'authorization: Bearer \\$TOKEN' -d '\\{\\}' 127\\.0\\.0\\.1:${node.gw} routeguide\\.RouteGuide/GetFeature$`,
    ),
  );
  t.equal(await page.evaluate('navigator.clipboard.readText()'), curl, 'the clipboard holds the grpcurl command');
  await page.getByRole('button', { name: 'Copy grpc-js sketch' }).click();
  t.equal(await page.evaluate('navigator.clipboard.readText()'), await page.locator('#grpc-js').innerText(), 'and then the grpc-js sketch');
  t.same(errors, [], 'no script error or policy violation');
});
