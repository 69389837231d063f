/**
 * authorization_code with PKCE (RFC 6749 §4.1, RFC 7636) through the sign-in and consent forms, driven by
 * openid-client 6: it builds the authorization URL (S256 challenge, state, nonce), the test posts the
 * forms as a browser would, openid-client exchanges the code and validates the ID token (signature from
 * the JWKS, iss, aud, nonce, at_hash) and fetches userinfo. Then the refusals: code reuse (which revokes
 * what the code issued), a wrong redirect_uri, a missing or wrong code_verifier, a form without its CSRF
 * token or cookie, plain PKCE, and the grant switched off.
 */
import t from 'tap';
import * as client from 'openid-client';
import { adminAuth, basic, json, postForm, startKeyManager, type Harness } from './helpers';

const CALLBACK = 'http://127.0.0.1:1/cb';

async function setup(h: Harness, name = 'Web'): Promise<{ key: string; secret: string; config: client.Configuration }> {
  const app = await json('POST', `${h.url}/admin/v1/applications`, { name }, adminAuth());
  if (app.status !== 201) throw new Error(`create app: ${app.text}`);
  const keys = await json(
    'POST',
    `${h.url}/admin/v1/applications/${name}/keys`,
    { grantTypes: ['authorization_code', 'refresh_token'], callbackUrl: CALLBACK },
    adminAuth(),
  );
  const key = String(keys.body.consumerKey);
  const secret = String(keys.body.consumerSecret);
  const meta = (await json('GET', `${h.url}/.well-known/openid-configuration`)).body as unknown as client.ServerMetadata;
  const config = new client.Configuration(meta, key, secret);
  client.allowInsecureRequests(config);
  return { key, secret, config };
}

interface Page {
  status: number;
  html: string;
  headers: Headers;
  cookie: string | undefined;
}

async function get(url: string | URL): Promise<Page> {
  const r = await fetch(url, { redirect: 'manual' });
  return { status: r.status, html: await r.text(), headers: r.headers, cookie: r.headers.get('set-cookie')?.split(';')[0] };
}

async function post(h: Harness, form: Record<string, string>, cookie: string | undefined): Promise<Page> {
  const r = await fetch(`${h.url}/oauth2/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(cookie !== undefined ? { Cookie: cookie } : {}) },
    body: new URLSearchParams(form).toString(),
  });
  return { status: r.status, html: await r.text(), headers: r.headers, cookie };
}

function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (m === null) throw new Error(`no hidden field ${name} in ${html}`);
  return m[1] as string;
}

/** The browser's part: the sign-in page, the sign-in form, the consent form; resolves to the redirect. */
async function signIn(h: Harness, url: URL, user = 'alice', password = 'alice-pw-1'): Promise<URL> {
  const page = await get(url);
  if (page.status !== 200) throw new Error(`authorize: ${page.status} ${page.html}`);
  const authz = hidden(page.html, 'authz');
  const csrf = hidden(page.html, 'csrf');
  const consent = await post(h, { authz, csrf, action: 'login', username: user, password }, page.cookie);
  if (consent.status !== 200) throw new Error(`sign-in: ${consent.status} ${consent.html}`);
  const done = await post(h, { authz, csrf, action: 'allow' }, page.cookie);
  if (done.status !== 302) throw new Error(`consent: ${done.status} ${done.html}`);
  return new URL(String(done.headers.get('location')));
}

async function authUrl(
  config: client.Configuration,
  extra: Record<string, string> = {},
): Promise<{ url: URL; verifier: string; state: string; nonce: string }> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

t.test('openid-client: sign-in form, consent, code exchange, ID token and userinfo', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  t.equal(
    (await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1', roles: ['subscriber'] }, adminAuth()))
      .status,
    201,
  );
  const { config, key, secret } = await setup(h);
  const meta = config.serverMetadata();
  t.equal(meta.authorization_endpoint, `${h.url}/oauth2/authorize`);
  t.equal(meta.userinfo_endpoint, `${h.url}/oauth2/userinfo`);
  t.same(meta.response_types_supported, ['code']);
  t.ok(meta.grant_types_supported?.includes('authorization_code'));
  t.same(meta.code_challenge_methods_supported, ['S256']);

  const { url, verifier, state, nonce } = await authUrl(config);
  const page = await get(url);
  t.equal(page.status, 200);
  t.match(
    page.headers.get('content-security-policy'),
    /default-src 'none'; style-src 'self'; form-action 'self' http:\/\/127\.0\.0\.1:1; frame-ancestors 'none'/,
  );
  t.notMatch(page.html, /<script/i, 'no script');
  t.notMatch(page.html, /https?:\/\//, 'no third-party asset: every URL is relative');
  t.match(page.html, /<label for="username">[\s\S]*<input type="text" id="username"/, 'labelled fields');
  t.match(page.cookie, /^tw_authz=/);
  t.match(page.headers.get('set-cookie'), /HttpOnly; SameSite=Strict/);
  const style = await fetch(`${h.url}/oauth2/authorize/style.css`);
  t.equal(style.headers.get('content-type'), 'text/css; charset=utf-8');

  const authz = hidden(page.html, 'authz');
  const csrf = hidden(page.html, 'csrf');
  const wrong = await post(h, { authz, csrf, action: 'login', username: 'alice', password: 'nope' }, page.cookie);
  t.equal(wrong.status, 401);
  t.match(wrong.html, /Wrong username or password/);
  const consent = await post(h, { authz, csrf, action: 'login', username: 'alice', password: 'alice-pw-1' }, page.cookie);
  t.equal(consent.status, 200);
  t.match(consent.html, /Allow access\?[\s\S]*<li>openid<\/li>/);
  const done = await post(h, { authz, csrf, action: 'allow' }, page.cookie);
  t.equal(done.status, 302);
  const callback = new URL(String(done.headers.get('location')));
  t.equal(`${callback.origin}${callback.pathname}`, CALLBACK);
  t.equal(callback.searchParams.get('state'), state, 'state returned');

  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  t.match(claims, { sub: 'alice', aud: key, nonce, iss: 'https://localhost:9443/oauth2/token' });
  t.type(claims?.at_hash, 'string');
  t.type(tokens.refresh_token, 'string');
  t.equal(tokens.scope, 'openid');

  const info = await client.fetchUserInfo(config, tokens.access_token, 'alice');
  t.match(info, { sub: 'alice', preferred_username: 'alice', roles: ['subscriber'] });
  const noToken = await fetch(`${h.url}/oauth2/userinfo`);
  t.equal(noToken.status, 401);
  t.match(noToken.headers.get('www-authenticate'), /error="invalid_token"/);

  // The code again: refused, and the tokens it issued are revoked (RFC 6749 §4.1.2).
  const code = String(callback.searchParams.get('code'));
  const again = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
    basic(key, secret),
  );
  t.match(again, { status: 400, body: { error: 'invalid_grant', error_description: /already used/ } });
  const intro = await postForm(`${h.url}/oauth2/introspect`, { token: tokens.access_token }, basic(key, secret));
  t.same(intro.body, { active: false }, 'access token revoked');
  const refreshed = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) },
    basic(key, secret),
  );
  t.match(refreshed, { status: 400, body: { error: 'invalid_grant' } }, 'refresh token revoked');
  const infoAfter = await fetch(`${h.url}/oauth2/userinfo`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
  t.equal(infoAfter.status, 401);
});

t.test('refusals: redirect_uri, code_verifier, CSRF, plain PKCE', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1' }, adminAuth())).status, 201);
  const { config, key, secret } = await setup(h);

  // A redirect_uri other than the registered callback is refused on the page, never redirected to.
  const evil = await authUrl(config, { redirect_uri: 'http://127.0.0.1:1/cb/../evil' });
  const refused = await get(evil.url);
  t.equal(refused.status, 400);
  t.equal(refused.headers.get('location'), null);
  t.match(refused.html, /redirect_uri does not match/);

  // Other errors go back to the client with state.
  const plain = await get(
    new URL(
      `${h.url}/oauth2/authorize?response_type=code&client_id=${key}&code_challenge=${'a'.repeat(43)}&code_challenge_method=plain&state=s1`,
    ),
  );
  t.equal(plain.status, 302);
  const plainBack = new URL(String(plain.headers.get('location')));
  t.equal(plainBack.searchParams.get('error'), 'invalid_request');
  t.equal(plainBack.searchParams.get('state'), 's1');
  const noPkce = await get(new URL(`${h.url}/oauth2/authorize?response_type=code&client_id=${key}&state=s2`));
  t.equal(new URL(String(noPkce.headers.get('location'))).searchParams.get('error'), 'invalid_request');

  // CSRF: the token missing, or the cookie missing.
  const a = await authUrl(config);
  const page = await get(a.url);
  const authz = hidden(page.html, 'authz');
  const noCsrf = await post(h, { authz, action: 'login', username: 'alice', password: 'alice-pw-1' }, page.cookie);
  t.equal(noCsrf.status, 403);
  t.match(noCsrf.html, /CSRF/);
  const noCookie = await post(
    h,
    { authz, csrf: hidden(page.html, 'csrf'), action: 'login', username: 'alice', password: 'alice-pw-1' },
    undefined,
  );
  t.equal(noCookie.status, 403);

  // code_verifier missing, then wrong, then a wrong redirect_uri at the token endpoint; then right.
  const b = await authUrl(config);
  const back = await signIn(h, b.url);
  const code = String(back.searchParams.get('code'));
  const tok = (form: Record<string, string>): ReturnType<typeof postForm> =>
    postForm(`${h.url}/oauth2/token`, { grant_type: 'authorization_code', code, ...form }, basic(key, secret));
  t.match(await tok({ redirect_uri: CALLBACK }), {
    status: 400,
    body: { error: 'invalid_grant', error_description: /code_verifier is required/ },
  });
  t.match(await tok({ redirect_uri: CALLBACK, code_verifier: client.randomPKCECodeVerifier() }), {
    status: 400,
    body: { error: 'invalid_grant', error_description: /does not match/ },
  });
  t.match(await tok({ redirect_uri: `${CALLBACK}x`, code_verifier: b.verifier }), {
    status: 400,
    body: { error: 'invalid_grant', error_description: /redirect_uri/ },
  });
  const ok = await tok({ redirect_uri: CALLBACK, code_verifier: b.verifier });
  t.equal(ok.status, 200, 'the right verifier and redirect_uri redeem the code');
  t.type(ok.body.id_token, 'string', 'openid: an ID token');
});

t.test('[oauth.grant_type.authorization_code] enable = false: the RFC errors', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.authorization_code]\nenable = false\n');
  t.teardown(() => h.close());
  const { config, key, secret } = await setup(h);
  t.notOk(config.serverMetadata().authorization_endpoint, 'not advertised');
  const verifier = client.randomPKCECodeVerifier();
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: key,
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st',
  });
  const r = await get(`${h.url}/oauth2/authorize?${q}`);
  t.equal(r.status, 302);
  const back = new URL(String(r.headers.get('location')));
  t.equal(back.searchParams.get('error'), 'unsupported_response_type');
  t.equal(back.searchParams.get('state'), 'st');
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'authorization_code', code: 'x', code_verifier: verifier },
    basic(key, secret),
  );
  t.match(tok, { status: 400, body: { error: 'unsupported_grant_type' } });
});

t.test('the sign-in and consent pages let their forms redirect to the callback origin, and no other', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1' }, adminAuth())).status, 201);
  const { config } = await setup(h);
  t.not(new URL(h.url).origin, new URL(CALLBACK).origin, 'the client is on another origin than the key manager');
  // CSP3 §6.4.1: form-action is also checked on the 302 that answers the form; exactly the callback origin.
  const csp = "default-src 'none'; style-src 'self'; form-action 'self' http://127.0.0.1:1; frame-ancestors 'none'; base-uri 'none'";
  const a = await authUrl(config);
  const page = await get(a.url);
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-security-policy'), csp, 'sign-in page');
  const authz = hidden(page.html, 'authz');
  const csrf = hidden(page.html, 'csrf');
  const wrong = await post(h, { authz, csrf, action: 'login', username: 'alice', password: 'not-it' }, page.cookie);
  t.equal(wrong.status, 401);
  t.equal(wrong.headers.get('content-security-policy'), csp, 'sign-in page again after a wrong password');
  const consent = await post(h, { authz, csrf, action: 'login', username: 'alice', password: 'alice-pw-1' }, page.cookie);
  t.equal(consent.status, 200);
  t.equal(consent.headers.get('content-security-policy'), csp, 'consent page');
  // Pages without a form to the client keep form-action 'self' alone.
  const unknown = await get(new URL(`${h.url}/oauth2/authorize?response_type=code&client_id=nope`));
  t.equal(unknown.status, 400);
  t.equal(
    unknown.headers.get('content-security-policy'),
    "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
});
