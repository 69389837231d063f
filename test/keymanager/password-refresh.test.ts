/**
 * password (RFC 6749 §4.3) and refresh_token (§6): user tokens, ID tokens for openid, rotation of
 * refresh tokens, reuse detection revoking the family, binding to the client, scope narrowing.
 */
import t from 'tap';
import { adminAuth, appWithKeys, basic, decodePayload, json, postForm, startKeyManager } from './helpers';

t.test('password grant: success and failures', async (t) => {
  const h = await startKeyManager('[oauth.token_validation]\nuser_access_token_validity = 600\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1' }, adminAuth())).status, 201);
  const ok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'alice', password: 'alice-pw-1', scope: 'openid' },
    basic(key, secret),
  );
  t.equal(ok.status, 200, ok.text);
  t.equal(ok.body.expires_in, 600, 'user_access_token_validity');
  t.type(ok.body.refresh_token, 'string');
  t.type(ok.body.id_token, 'string', 'openid scope gives an ID token');
  t.match(decodePayload(String(ok.body.access_token)), { sub: 'alice', aut: 'APPLICATION_USER', scope: 'openid', client_id: key });
  t.match(decodePayload(String(ok.body.id_token)), { sub: 'alice', aud: key, azp: key, iss: 'https://localhost:9443/oauth2/token' });

  const wrong = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'alice', password: 'nope' },
    basic(key, secret),
  );
  t.match(wrong, { status: 400, body: { error: 'invalid_grant', error_description: 'invalid resource owner credentials' } });
  const nobody = await postForm(`${h.url}/oauth2/token`, { grant_type: 'password', username: 'bob', password: 'x' }, basic(key, secret));
  t.match(nobody, { status: 400, body: { error: 'invalid_grant' } });
  const missing = await postForm(`${h.url}/oauth2/token`, { grant_type: 'password', username: 'alice' }, basic(key, secret));
  t.match(missing, { status: 400, body: { error: 'invalid_request', error_description: 'parameter password is required' } });
  // The super admin from [super_admin] is a user too.
  const admin = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  t.equal(admin.status, 200);
});

t.test('password grant disabled', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.password]\nenable = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  t.match(r, { status: 400, body: { error: 'unsupported_grant_type' } });
});

t.test('refresh tokens rotate; a reused one revokes the whole family', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const first = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1', scope: 'openid device_a' },
    basic(key, secret),
  );
  const r1 = String(first.body.refresh_token);
  const second = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: r1 }, basic(key, secret));
  t.equal(second.status, 200, second.text);
  const r2 = String(second.body.refresh_token);
  t.not(r2, r1, 'a new refresh token each time');
  t.equal(second.body.scope, 'openid device_a', 'same scope');
  t.match(decodePayload(String(second.body.access_token)), { sub: 'admin', aut: 'APPLICATION_USER' });

  // Narrower scope is fine, wider is not (RFC 6749 §6).
  const narrow = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'refresh_token', refresh_token: r2, scope: 'device_a' },
    basic(key, secret),
  );
  t.equal(narrow.body.scope, 'device_a');
  const r3 = String(narrow.body.refresh_token);
  const wider = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'refresh_token', refresh_token: r3, scope: 'device_a device_b' },
    basic(key, secret),
  );
  t.match(wider, { status: 400, body: { error: 'invalid_scope' } });

  // r1 again: replay. Its family (r2, r3 and any later) is revoked.
  const replay = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: r1 }, basic(key, secret));
  t.match(replay, { status: 400, body: { error: 'invalid_grant', error_description: /already used/ } });
  const after = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: r3 }, basic(key, secret));
  t.match(after, { status: 400, body: { error: 'invalid_grant' } }, 'the latest token of the family is revoked too');
  // The access tokens issued with the family are revoked and announced (RFC 7009 §2.1).
  for (const [name, r] of [
    ['first', first],
    ['second', second],
    ['narrowed', narrow],
  ] as const) {
    const i = await postForm(`${h.url}/oauth2/introspect`, { token: String(r.body.access_token) }, basic(key, secret));
    t.same(i.body, { active: false }, `${name} access token revoked`);
  }
  t.equal(h.events.filter((e) => e.name === 'token.revoked').length, 3);
  t.ok(
    h.logLines.some((l) => l.includes('"refresh_token_reuse"')),
    'reuse is logged',
  );
});

t.test('refresh token failures: unknown, other client, expired, grant disabled', async (t) => {
  const h = await startKeyManager('[oauth.token_validation]\nrefresh_token_validity = 1\n');
  t.teardown(() => h.close());
  const a = await appWithKeys(h, 'A');
  const b = await appWithKeys(h, 'B');
  const unknown = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: 'nope' }, basic(a.key, a.secret));
  t.match(unknown, { status: 400, body: { error: 'invalid_grant', error_description: 'unknown refresh token' } });
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(a.key, a.secret),
  );
  const rt = String(tok.body.refresh_token);
  const other = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: rt }, basic(b.key, b.secret));
  t.match(other, { status: 400, body: { error: 'invalid_grant', error_description: /not issued to this client/ } });
  await new Promise((r) => setTimeout(r, 1100));
  const expired = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: rt }, basic(a.key, a.secret));
  t.match(expired, { status: 400, body: { error: 'invalid_grant', error_description: /expired/ } });
  const missing = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token' }, basic(a.key, a.secret));
  t.match(missing, { status: 400, body: { error: 'invalid_request' } });
});

t.test('no refresh token when the refresh_token grant is disabled', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.refresh_token]\nenable = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  t.equal(r.status, 200);
  t.notOk('refresh_token' in r.body);
});

t.test('a colliding refresh token is drawn again (retry_count_on_persistence_failures)', async (t) => {
  const h = await startKeyManager('[oauth.token_generation]\nretry_count_on_persistence_failures = 2\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const { StoreError } = await import('../../lib/store/types');
  const original = h.store.saveRefreshToken.bind(h.store);
  let failures = 2;
  const seen: string[] = [];
  h.store.saveRefreshToken = async (rec) => {
    seen.push(rec.tokenHash);
    if (failures-- > 0) throw new StoreError('STORE_CONFLICT', 'duplicate');
    return original(rec);
  };
  const ok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  t.equal(ok.status, 200);
  t.equal(new Set(seen).size, 3, 'a new value each attempt');
  failures = 3;
  const fail = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(key, secret),
  );
  t.match(fail, { status: 500, body: { error: 'server_error' } }, 'past the retries: a server error');
});
