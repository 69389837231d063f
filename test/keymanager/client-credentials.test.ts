/**
 * client_credentials (RFC 6749 §4.4): the access token's claims and signature, scopes, no refresh or
 * ID token unless allowed, the grant switch, and the §5.2 errors.
 */
import t from 'tap';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { adminAuth, appWithKeys, basic, decodeHeader, json, postForm, startKeyManager } from './helpers';

t.test('a client_credentials token is a signed JWT with the spec claims', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret, appId } = await appWithKeys(h, 'PizzaApp');
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.equal(r.status, 200, r.text);
  t.equal(r.headers.get('cache-control'), 'no-store');
  t.equal(r.body.token_type, 'Bearer');
  t.equal(r.body.expires_in, 3600, '[oauth.token_validation] app_access_token_validity default');
  t.equal(r.body.scope, 'default');
  t.notOk('refresh_token' in r.body, 'no refresh token for client credentials by default');
  t.notOk('id_token' in r.body);
  const token = String(r.body.access_token);
  const jwks = await json('GET', `${h.url}/oauth2/jwks`);
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks.body as never), {
    issuer: 'https://localhost:9443/oauth2/token',
    audience: key,
  });
  t.equal(protectedHeader.alg, 'RS256');
  t.equal(protectedHeader.typ, 'at+jwt');
  t.match(payload, {
    sub: 'admin',
    aud: key,
    azp: key,
    client_id: key,
    scope: 'default',
    keytype: 'PRODUCTION',
    aut: 'APPLICATION',
    application: { id: appId, name: 'PizzaApp', owner: 'admin', tier: 'Unlimited' },
  });
  t.type(payload.jti, 'string');
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 3600);
  t.equal(decodeHeader(token).kid, (jwks.body.keys as { kid: string }[])[0]?.kid);

  // Client credentials in the body work too (client_secret_post).
  const post = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials', client_id: key, client_secret: secret });
  t.equal(post.status, 200);
});

t.test('scopes: allowed_scopes patterns and API scopes are granted, others dropped', async (t) => {
  const h = await startKeyManager('', { apiScopes: () => ['read:menu'] });
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'client_credentials', scope: 'device_1 openid read:menu write:all device_1' },
    basic(key, secret),
  );
  t.equal(r.status, 200);
  t.equal(r.body.scope, 'device_1 openid read:menu', 'write:all dropped (RFC 6749 §3.3), duplicates merged');
  t.notOk('id_token' in r.body, 'no ID token for client credentials unless allow_id_token');
  const bad = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials', scope: 'a"b' }, basic(key, secret));
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_scope');
});

t.test('allow_refresh_tokens and allow_id_token, and a custom validity', async (t) => {
  const h = await startKeyManager(
    '[oauth.grant_type.client_credentials]\nallow_refresh_tokens = true\nallow_id_token = true\n[oauth.token_validation]\napp_access_token_validity = 120\n',
  );
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials', scope: 'openid' }, basic(key, secret));
  t.equal(r.status, 200);
  t.equal(r.body.expires_in, 120);
  t.type(r.body.refresh_token, 'string');
  t.type(r.body.id_token, 'string');
});

t.test('client authentication failures are invalid_client, 401, with a challenge', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const cases: [string, Record<string, string>, string | undefined][] = [
    ['wrong secret', { grant_type: 'client_credentials' }, basic(key, `${secret}x`)],
    ['unknown client', { grant_type: 'client_credentials' }, basic('nobody', secret)],
    ['no credentials', { grant_type: 'client_credentials' }, undefined],
    ['secret in body wrong', { grant_type: 'client_credentials', client_id: key, client_secret: 'nope' }, undefined],
    ['malformed Basic', { grant_type: 'client_credentials' }, 'Basic !!!'],
  ];
  for (const [name, form, auth] of cases) {
    const r = await postForm(`${h.url}/oauth2/token`, form, auth);
    t.equal(r.status, 401, name);
    t.equal(r.body.error, 'invalid_client', name);
    t.match(r.headers.get('www-authenticate'), /^Basic realm=/, name);
  }
  const both = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'client_credentials', client_id: key, client_secret: secret },
    basic(key, secret),
  );
  t.equal(both.status, 400);
  t.equal(both.body.error, 'invalid_request', 'two authentication methods (RFC 6749 §2.3)');
  // A deleted application's keys stop working.
  await json('DELETE', `${h.url}/admin/v1/applications/App1`, undefined, adminAuth());
  const gone = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.equal(gone.status, 401);
});

t.test('request errors: missing or repeated grant_type, wrong content type, wrong method', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const missing = await postForm(`${h.url}/oauth2/token`, {}, basic(key, secret));
  t.match(missing, { status: 400, body: { error: 'invalid_request', error_description: 'parameter grant_type is required' } });
  const repeated = await fetch(`${h.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basic(key, secret) },
    body: 'grant_type=client_credentials&grant_type=password',
  });
  t.equal(repeated.status, 400);
  t.match(await repeated.json(), { error: 'invalid_request', error_description: 'parameter grant_type is repeated' });
  const jsonBody = await json('POST', `${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.match(jsonBody, { status: 400, body: { error: 'invalid_request' } });
  const get = await fetch(`${h.url}/oauth2/token`);
  t.equal(get.status, 405);
  t.equal(get.headers.get('allow'), 'POST');
});

t.test('grant switches and unsupported grants answer unsupported_grant_type with the reason', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.client_credentials]\nenable = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const off = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.match(off, {
    status: 400,
    body: { error: 'unsupported_grant_type', error_description: /disabled by \[oauth\.grant_type\.client_credentials\] enable = false/ },
  });
  const code = await postForm(`${h.url}/oauth2/token`, { grant_type: 'authorization_code', code: 'x' }, basic(key, secret));
  // authorization_code is implemented (authorization-code.test.ts); keys made without it may not use it.
  t.match(code, { status: 400, body: { error: 'unauthorized_client' } });
  // saml2-bearer is implemented (saml-bearer.test.ts); keys made without it may not use it.
  const saml = await postForm(`${h.url}/oauth2/token`, { grant_type: 'urn:ietf:params:oauth:grant-type:saml2-bearer' }, basic(key, secret));
  t.match(saml, { status: 400, body: { error: 'unauthorized_client' } });
  const ntlm = await postForm(`${h.url}/oauth2/token`, { grant_type: 'iwa:ntlm' }, basic(key, secret));
  t.match(ntlm, { status: 400, body: { error: 'unsupported_grant_type', error_description: /not supported.*Windows domain/ } }, 'iwa:ntlm');
  const kerberos = await postForm(`${h.url}/oauth2/token`, { grant_type: 'kerberos' }, basic(key, secret));
  t.match(kerberos.body, { error: 'unsupported_grant_type', error_description: /disabled/ }, 'kerberos is off by default');
  for (const g of ['magic', 'toString', '__proto__', 'constructor']) {
    const unknown = await postForm(`${h.url}/oauth2/token`, { grant_type: g }, basic(key, secret));
    t.match(
      unknown,
      { status: 400, body: { error: 'unsupported_grant_type', error_description: `grant type ${g} is not known to this server` } },
      g,
    );
  }
});

t.test('a client restricted to some grant types gets unauthorized_client for the others', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h, 'Restricted', { grantTypes: ['password'] });
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.match(r, { status: 400, body: { error: 'unauthorized_client' } });
});
