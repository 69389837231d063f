/**
 * Signing keys: generated on first start and kept (a restart signs with the same key), published at
 * /oauth2/jwks and /jwks/<version>; after rotation the old key stays published, so tokens it signed still
 * verify until they expire, and new tokens carry the new kid. Discovery points at all of it.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { adminAuth, appWithKeys, basic, decodeHeader, json, postForm, startKeyManager } from './helpers';

t.test('rotation keeps the old key until its tokens expire', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const before = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  const oldToken = String(before.body.access_token);
  const oldKid = decodeHeader(oldToken).kid;

  const rot = await json('POST', `${h.url}/admin/v1/signing-keys/rotate`, undefined, adminAuth());
  t.equal(rot.status, 200);
  t.not(rot.body.kid, oldKid);
  const after = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  const newToken = String(after.body.access_token);
  t.equal(decodeHeader(newToken).kid, rot.body.kid, 'new tokens use the new key');

  const jwks = await json('GET', `${h.url}/oauth2/jwks`);
  t.same((jwks.body.keys as { kid: string }[]).map((k) => k.kid).sort(), [oldKid, rot.body.kid].sort(), 'both keys published');
  t.same((await json('GET', `${h.url}/jwks/v1`)).body, jwks.body, '/jwks/<version> serves the same set');
  for (const k of jwks.body.keys as Record<string, unknown>[]) {
    t.notOk('d' in k || 'p' in k || 'q' in k, 'no private parts published');
    t.match(k, { kty: 'RSA', alg: 'RS256', use: 'sig' });
  }
  const set = createLocalJWKSet(jwks.body as never);
  await t.resolves(jwtVerify(oldToken, set), 'a token of the retired key still verifies');
  await t.resolves(jwtVerify(newToken, set));
  t.equal((await postForm(`${h.url}/oauth2/introspect`, { token: oldToken }, basic(key, secret))).body.active, true);

  // Past the grace period (the longest token validity) cleanup drops the retired key.
  const keys = await h.store.listSigningKeys();
  const retired = keys.find((k) => k.retiredAt !== null);
  t.ok(retired);
  await h.store.cleanup(Date.now(), Date.now() + 1);
  await h.km.keys.reload();
  t.same(
    h.km.keys.publicJwks().map((k) => k.kid),
    [rot.body.kid],
  );
  t.equal((await postForm(`${h.url}/oauth2/introspect`, { token: oldToken }, basic(key, secret))).body.active, false);
});

t.test('the key is generated once and kept across restarts', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-km-keep-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const a = await startKeyManager('', { dir });
  const kidA = a.km.keys.current().kid;
  const app = await appWithKeys(a);
  const tok = String(
    (await postForm(`${a.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token,
  );
  await a.close();
  const b = await startKeyManager('', { dir });
  t.teardown(() => b.close());
  t.equal(b.km.keys.current().kid, kidA);
  t.equal(
    (await postForm(`${b.url}/oauth2/introspect`, { token: tok }, basic(app.key, app.secret))).body.active,
    true,
    'tokens survive a restart',
  );
});

t.test('discovery', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.password]\nenable = false\n');
  t.teardown(() => h.close());
  const d = await json('GET', `${h.url}/.well-known/openid-configuration`);
  t.match(d.body, {
    issuer: 'https://localhost:9443/oauth2/token',
    token_endpoint: `${h.url}/oauth2/token`,
    revocation_endpoint: `${h.url}/oauth2/revoke`,
    introspection_endpoint: `${h.url}/oauth2/introspect`,
    jwks_uri: `${h.url}/oauth2/jwks`,
    registration_endpoint: `${h.url}/client-registration/v0.14/register`,
    grant_types_supported: ['authorization_code', 'client_credentials', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
  });
  t.same((await json('GET', `${h.url}/oauth2/token/.well-known/openid-configuration`)).body, d.body);
  t.equal((await json('GET', `${h.url}/nowhere`)).status, 404);
  t.same((await json('GET', `${h.url}/health`)).body, { status: 'UP' });
});

t.test('[oauth.oidc.id_token] issuer sets iss', async (t) => {
  const h = await startKeyManager('[oauth.oidc.id_token]\nissuer = "https://id.example/oauth2/token"\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const tok = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  const set = createLocalJWKSet((await json('GET', `${h.url}/oauth2/jwks`)).body as never);
  await t.resolves(jwtVerify(String(tok.body.access_token), set, { issuer: 'https://id.example/oauth2/token' }));
});
