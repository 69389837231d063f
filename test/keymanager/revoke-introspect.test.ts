/**
 * Revocation (RFC 7009) then introspection (RFC 7662): a revoked access token is inactive, its jti is
 * kept until exp and announced as token.revoked; a revoked refresh token revokes its family.
 */
import t from 'tap';
import { adminAuth, appWithKeys, basic, postForm, startKeyManager } from './helpers';

t.test('revoke an access token, then introspect it', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  const at = String(tok.body.access_token);
  const active = await postForm(`${h.url}/oauth2/introspect`, { token: at }, basic(key, secret));
  t.equal(active.status, 200);
  t.match(active.body, {
    active: true,
    token_type: 'Bearer',
    client_id: key,
    sub: 'admin',
    username: 'admin',
    scope: 'default',
    keytype: 'PRODUCTION',
    aut: 'APPLICATION_USER',
    iss: 'https://localhost:9443/oauth2/token',
  });
  const asAdmin = await postForm(`${h.url}/oauth2/introspect`, { token: at }, adminAuth());
  t.equal(asAdmin.body.active, true, 'the super admin may introspect');

  h.events.length = 0;
  const rev = await postForm(`${h.url}/oauth2/revoke`, { token: at, token_type_hint: 'access_token' }, basic(key, secret));
  t.equal(rev.status, 200);
  t.equal(rev.text, '');
  const inactive = await postForm(`${h.url}/oauth2/introspect`, { token: at }, basic(key, secret));
  t.same(inactive.body, { active: false });
  const ev = h.events.find((e) => e.name === 'token.revoked');
  t.ok(ev, 'token.revoked published');
  const claims = JSON.parse(Buffer.from(at.split('.')[1] ?? '', 'base64url').toString()) as { jti: string; exp: number };
  t.match(ev?.payload, { jti: claims.jti, expiresAt: claims.exp * 1000, consumerKey: key });
  t.same(
    (await h.store.listRevoked(Date.now())).map((r) => r.jti),
    [claims.jti],
    'kept in the store until exp (persistent notifier)',
  );

  // Revoking again, or an unknown token: still 200 (RFC 7009 §2.2).
  t.equal((await postForm(`${h.url}/oauth2/revoke`, { token: at }, basic(key, secret))).status, 200);
  t.equal((await postForm(`${h.url}/oauth2/revoke`, { token: 'garbage' }, basic(key, secret))).status, 200);
  const hint = await postForm(`${h.url}/oauth2/revoke`, { token: at, token_type_hint: 'id_token' }, basic(key, secret));
  t.match(hint, { status: 400, body: { error: 'unsupported_token_type' } });
});

t.test('revocation needs the client that owns the token', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const a = await appWithKeys(h, 'A');
  const b = await appWithKeys(h, 'B');
  const tok = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(a.key, a.secret));
  const noAuth = await postForm(`${h.url}/oauth2/revoke`, { token: String(tok.body.access_token) });
  t.match(noAuth, { status: 401, body: { error: 'invalid_client' } });
  const other = await postForm(`${h.url}/oauth2/revoke`, { token: String(tok.body.access_token) }, basic(b.key, b.secret));
  t.match(other, { status: 400, body: { error: 'unauthorized_client' } });
  const still = await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(a.key, a.secret));
  t.equal(still.body.active, true);
  const anon = await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) });
  t.equal(anon.status, 401, 'introspection needs credentials');
});

t.test('revoke a refresh token: it and its family are inactive', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  const rt = String(tok.body.refresh_token);
  const before = await postForm(`${h.url}/oauth2/introspect`, { token: rt, token_type_hint: 'refresh_token' }, basic(key, secret));
  t.match(before.body, { active: true, token_type: 'refresh_token', client_id: key, sub: 'admin' });
  t.equal((await postForm(`${h.url}/oauth2/revoke`, { token: rt }, basic(key, secret))).status, 200);
  t.same((await postForm(`${h.url}/oauth2/introspect`, { token: rt }, basic(key, secret))).body, { active: false });
  const use = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: rt }, basic(key, secret));
  t.match(use, { status: 400, body: { error: 'invalid_grant' } });
  const at = await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(key, secret));
  t.same(at.body, { active: false }, 'the access token of the same grant is revoked too (RFC 7009 §2.1)');
  t.ok(h.events.some((e) => e.name === 'token.revoked'));
});

t.test('an expired access token introspects inactive', async (t) => {
  const h = await startKeyManager('[oauth.token_validation]\napp_access_token_validity = 1\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const tok = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  await new Promise((r) => setTimeout(r, 2100));
  t.same((await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(key, secret))).body, {
    active: false,
  });
});

t.test('enable_realtime_notifier = false: revoked ids are kept, no event', async (t) => {
  const h = await startKeyManager('[apim.token.revocation]\nenable_realtime_notifier = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const tok = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.equal((await postForm(`${h.url}/oauth2/revoke`, { token: String(tok.body.access_token) }, basic(key, secret))).status, 200);
  t.notOk(h.events.some((e) => e.name === 'token.revoked'));
  t.equal((await h.store.listRevoked(Date.now())).length, 1);
  t.same((await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(key, secret))).body, {
    active: false,
  });
});
