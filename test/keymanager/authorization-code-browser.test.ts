/**
 * The authorization code flow in Chromium for an application on another origin (docs/key-manager.md,
 * "Authorization code with PKCE"): the application's callback is an HTTP server of this test on its own
 * port, so the redirect after "Allow" crosses origins and is governed by the sign-in page's CSP form-action
 * (CSP3 §6.4.1: the redirects that follow a form submission are checked too). The browser opens the
 * authorize URL, signs in, allows, and lands on the callback with code and state; openid-client exchanges
 * the code and validates the ID token. Then a redirect_uri that is not registered: an error page, no
 * redirect, nothing reaches the callback.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { adminAuth, json, startKeyManager } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

/** The application: answers every request with a page and reports the query of each it got. */
async function callbackServer(t: Test): Promise<{ origin: string; hits: URLSearchParams[]; next: Promise<URLSearchParams> }> {
  const hits: URLSearchParams[] = [];
  let resolve: (q: URLSearchParams) => void = () => undefined;
  const next = new Promise<URLSearchParams>((r) => (resolve = r));
  const server = http.createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    hits.push(q);
    resolve(q);
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><title>Callback</title><p>signed in</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, next };
}

/** Resolves to the first CSP violation Chromium reports on the page (its console says "Refused to ..."). */
function violation(page: Page): Promise<string> {
  return new Promise((resolve) => {
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) resolve(m.text());
    });
  });
}

t.test('Chromium: sign-in, consent, redirect to a callback on another origin, code exchange', { skip: noBrowser }, async (t) => {
  const { chromium } = await import('playwright-core');
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const app = await callbackServer(t);
  const callback = `${app.origin}/cb`;
  t.not(new URL(callback).origin, new URL(h.url).origin, 'the application is on another origin than the key manager');

  t.equal(
    (await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1', roles: ['subscriber'] }, adminAuth()))
      .status,
    201,
  );
  t.equal((await json('POST', `${h.url}/admin/v1/applications`, { name: 'Web' }, adminAuth())).status, 201);
  const keys = await json(
    'POST',
    `${h.url}/admin/v1/applications/Web/keys`,
    { grantTypes: ['authorization_code', 'refresh_token'], callbackUrl: callback },
    adminAuth(),
  );
  t.equal(keys.status, 201, 'keys generated');
  const meta = (await json('GET', `${h.url}/.well-known/openid-configuration`)).body as unknown as client.ServerMetadata;
  const config = new client.Configuration(meta, String(keys.body.consumerKey), String(keys.body.consumerSecret));
  client.allowInsecureRequests(config);

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: callback,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });

  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  } catch (err) {
    t.comment(`skipped: Chromium does not start: ${(err as Error).message.split('\n')[0] ?? ''}`);
    return;
  }
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const refused = violation(page);

  const first = await page.goto(url.href);
  t.equal(first?.status(), 200);
  const csp = (await first?.allHeaders())?.['content-security-policy'] ?? '';
  const formAction = /form-action ([^;]*)/.exec(csp)?.[1];
  t.equal(formAction, `'self' ${app.origin}`, "form-action names 'self' and exactly the registered redirect URI's origin");
  t.notMatch(csp, /\*/, 'no wildcard source');
  t.match(await page.textContent('main'), /Sign in to continue to\s+Web/);

  await page.fill('#username', 'alice');
  await page.fill('#password', 'alice-pw-1');
  await page.click('button[value=login]');
  await page.waitForSelector('button[value=allow]');
  t.match(await page.textContent('h1'), 'Allow access?');
  await page.click('button[value=allow]');

  // Either the callback gets the browser, or Chromium blocks the redirect (then the user sees nothing happen).
  const outcome = await Promise.race([app.next.then((q) => ({ q })), refused.then((message) => ({ message }))]);
  if ('message' in outcome) {
    t.fail(`Chromium refused the redirect to the callback: ${outcome.message}`);
    return;
  }
  await page.waitForURL((u) => u.origin === app.origin);
  t.equal(new URL(page.url()).pathname, '/cb', 'the browser is on the callback');
  t.match(await page.textContent('p'), 'signed in');
  const q = outcome.q;
  t.equal(q.get('state'), state, 'state comes back');
  t.match(q.get('code'), /^.{16,}$/, 'a code');
  t.equal(q.get('iss'), meta.issuer, 'the issuer (RFC 9207)');

  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  t.match(tokens.access_token, /^.{16,}$/, 'an access token');
  t.match(tokens.id_token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'an ID token');
  t.equal(tokens.claims()?.sub !== undefined, true, 'the ID token validated by openid-client names a subject');
  t.equal(tokens.token_type?.toLowerCase(), 'bearer');

  // A redirect_uri that is not registered: the key manager shows an error page and redirects nowhere.
  const before = app.hits.length;
  const evil = client.buildAuthorizationUrl(config, {
    redirect_uri: `${app.origin}/evil`,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const bad = await page.goto(evil.href);
  t.equal(bad?.status(), 400);
  t.equal(new URL(page.url()).origin, new URL(h.url).origin, 'the browser stays on the key manager');
  t.match(await page.textContent('main'), /redirect_uri does not match/);
  t.equal(await page.locator('form').count(), 0, 'no sign-in form for an unregistered redirect_uri');
  t.equal(app.hits.length, before, 'nothing reached the application');
});
