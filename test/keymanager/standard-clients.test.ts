/**
 * The key manager driven by real client libraries, unchanged: openid-client 6 (client_secret_post by
 * default) and oauth4webapi 3 (client_secret_basic, RFC 6749 §2.3.1 form-encoding before base64).
 * Discovery with the issuer check both libraries make, client_credentials, password + refresh,
 * introspection and revocation with client ids and secrets holding `+ / = % :`, and RFC 7591
 * registration with an initial access token.
 */
import t from 'tap';
import * as client from 'openid-client';
import * as oauth from 'oauth4webapi';
import { digest } from '../../lib/store/passwords';
import { adminAuth, ADMIN, basic, freePort, json, postForm, startKeyManager, type Harness } from './helpers';

const insecure = { [oauth.allowInsecureRequests]: true } as const;

async function withIssuer(t: { teardown(fn: () => unknown): void }): Promise<{ h: Harness; issuer: URL }> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}/oauth2/token`;
  const h = await startKeyManager(`[oauth.oidc.id_token]\nissuer = "${issuer}"\n`, { port });
  t.teardown(() => h.close());
  return { h, issuer: new URL(issuer) };
}

/** An application whose client id and secret need form-encoding (RFC 6749 §2.3.1). */
async function awkwardClient(h: Harness, name: string, id: string, secret: string): Promise<void> {
  const app = await json('POST', `${h.url}/admin/v1/applications`, { name }, adminAuth());
  await h.store.createClient({
    consumerKey: id,
    secretHash: digest(secret),
    applicationId: String(app.body.id),
    keyType: 'PRODUCTION',
    grantTypes: ['client_credentials', 'password', 'refresh_token'],
    callbackUrl: '',
  });
}

const SECRETS = ['a+b/c=d%e:f', '%%41+:==//', 'x:y:z', 'plain+', '100%=sure'];

t.test('discovery: both documents at the issuer-derived locations, issuer checked by both libraries', async (t) => {
  const { h, issuer } = await withIssuer(t);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  t.equal(as.issuer, issuer.href, 'RFC 8414 at /.well-known/oauth-authorization-server/oauth2/token');
  const oidc = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }));
  t.equal(oidc.issuer, issuer.href, 'OIDC at /oauth2/token/.well-known/openid-configuration');
  t.same(as.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
  t.same(as.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
  t.same(as.revocation_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
  t.notOk((as.response_types_supported ?? []).includes('token'), 'no implicit response type');
  t.ok(as.grant_types_supported?.includes('client_credentials'));
  t.equal(as.token_endpoint, `${h.url}/oauth2/token`, 'endpoints on the listener the client reached');
  // Reached under another name, the endpoints follow the Host asked for, not [server] hostname.
  const other = await fetch(`${h.url.replace('127.0.0.1', 'localhost')}/.well-known/openid-configuration`);
  const doc = (await other.json()) as Record<string, unknown>;
  t.equal(doc.introspection_endpoint, `${h.url.replace('127.0.0.1', 'localhost')}/oauth2/introspect`);
  t.equal(doc.issuer, issuer.href, 'the issuer is fixed');
});

t.test('openid-client 6 (client_secret_post): client_credentials, password, refresh, introspection, revocation', async (t) => {
  const { h, issuer } = await withIssuer(t);
  for (const [i, secret] of SECRETS.entries()) {
    const id = `cl:${i}+id/=%`;
    await awkwardClient(h, `oc${i}`, id, secret);
    const config = await client.discovery(issuer, id, secret, undefined, { execute: [client.allowInsecureRequests] });
    const cc = await client.clientCredentialsGrant(config, { scope: 'default' });
    t.type(cc.access_token, 'string', `client_credentials with secret ${secret}`);
    const pw = await client.genericGrantRequest(config, 'password', { username: ADMIN.user, password: ADMIN.password });
    t.type(pw.refresh_token, 'string');
    const refreshed = await client.refreshTokenGrant(config, String(pw.refresh_token));
    t.not(refreshed.refresh_token, pw.refresh_token, 'refresh rotates');
    const intro = await client.tokenIntrospection(config, refreshed.access_token);
    t.match(intro, { active: true, client_id: id, sub: ADMIN.user });
    await client.tokenRevocation(config, refreshed.access_token);
    t.match(await client.tokenIntrospection(config, refreshed.access_token), { active: false });
  }
});

t.test('oauth4webapi 3 (client_secret_basic, form-encoded): the same on every endpoint', async (t) => {
  const { h, issuer } = await withIssuer(t);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  for (const [i, secret] of SECRETS.entries()) {
    const id = `o4:${i}+id`;
    await awkwardClient(h, `o4${i}`, id, secret);
    const c: oauth.Client = { client_id: id };
    const auth = oauth.ClientSecretBasic(secret);
    const cc = await oauth.processClientCredentialsResponse(
      as,
      c,
      await oauth.clientCredentialsGrantRequest(as, c, auth, new URLSearchParams({ scope: 'default' }), insecure),
    );
    t.type(cc.access_token, 'string', `client_credentials with secret ${secret}`);
    const intro = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth, cc.access_token, insecure));
    t.match(intro, { active: true, client_id: id }, 'introspection takes the same Basic credentials');
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, auth, cc.access_token, insecure));
    const after = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth, cc.access_token, insecure));
    t.equal(after.active, false);
  }
  // The secret sent raw (not form-encoded): `+` decodes to a space, so it does not match.
  const raw = await postForm(`${h.url}/oauth2/introspect`, { token: 'x' }, basic('o4:3+id', SECRETS[3] ?? ''));
  t.match(
    raw,
    { status: 401, body: { error: 'invalid_client', error_description: 'client authentication failed' } },
    'a client failure is not called a super admin failure',
  );
  const post = await postForm(`${h.url}/oauth2/introspect`, { token: 'x', client_id: 'o4:0+id', client_secret: SECRETS[0] ?? '' });
  t.same(post.body, { active: false }, 'client_secret_post on introspection');
  const wrongPost = await postForm(`${h.url}/oauth2/introspect`, { token: 'x', client_id: 'o4:0+id', client_secret: 'nope' });
  t.match(wrongPost, { status: 401, body: { error: 'invalid_client' } });
});

t.test('RFC 7591 registration with an initial access token (openid-client dynamicClientRegistration)', async (t) => {
  const { h, issuer } = await withIssuer(t);
  t.equal((await json('POST', `${h.url}/admin/v1/registration-tokens`, {})).status, 401, 'issuing needs the super admin');
  const iat = await json('POST', `${h.url}/admin/v1/registration-tokens`, { owner: 'team-a', expiresIn: 600 }, adminAuth());
  t.equal(iat.status, 201, iat.text);
  t.match(iat.body, { owner: 'team-a', issuedBy: ADMIN.user });
  const token = String(iat.body.token);
  const config = await client.dynamicClientRegistration(
    issuer,
    { client_name: 'dyn-app', grant_types: ['client_credentials'] },
    undefined,
    { initialAccessToken: token, execute: [client.allowInsecureRequests] },
  );
  const meta = config.clientMetadata();
  t.type(meta.client_id, 'string');
  const cc = await client.clientCredentialsGrant(config);
  t.type(cc.access_token, 'string', 'the registered client gets a token');
  const apps = await json('GET', `${h.url}/admin/v1/applications?owner=team-a`, undefined, adminAuth());
  t.match(apps.body, { list: [{ name: 'dyn-app', owner: 'team-a' }] }, 'registered for the token owner');
  const url = `${h.url}/client-registration/v0.17/register`;
  t.match(
    await json('POST', url, { client_name: 'x', owner: 'someone-else' }, `Bearer ${token}`),
    { status: 400, body: { error: 'invalid_client_metadata' } },
    'the token fixes the owner',
  );
  // An access token is not an initial access token, nor the reverse (typ differs).
  t.match(await json('POST', url, { client_name: 'y' }, `Bearer ${cc.access_token}`), { status: 401, body: { error: 'invalid_token' } });
  const intro = await postForm(`${h.url}/oauth2/introspect`, { token }, adminAuth());
  t.same(intro.body, { active: false }, 'an initial access token is not an access token');
  t.equal((await json('DELETE', `${h.url}/admin/v1/registration-tokens/${String(iat.body.jti)}`, undefined, adminAuth())).status, 200);
  const revoked = await json('POST', url, { client_name: 'z' }, `Bearer ${token}`);
  t.match(revoked, { status: 401, body: { error: 'invalid_token', error_description: /revoked/ } });
  t.match(revoked.headers.get('www-authenticate'), /^Bearer error="invalid_token"/);
});

t.test('the CLI issues and revokes initial access tokens (local mode, over the same store)', async (t) => {
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { main } = await import('../../lib/cli');
  const { h, issuer } = await withIssuer(t);
  // The CLI's configuration names the same store and issuer as the running key manager.
  fs.mkdirSync(path.join(h.dir, 'conf'), { recursive: true });
  fs.writeFileSync(
    path.join(h.dir, 'conf', 'deployment.toml'),
    `[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(h.dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n[oauth.oidc.id_token]\nissuer = "${issuer.href}"\n`,
  );
  let out = '';
  let err = '';
  const io = { out: (s: string) => (out += s), err: (s: string) => (err += s), cwd: h.dir };
  t.equal(await main(['registration', 'token', '--owner', 'cli-team', '--expires-in', '120', '--json'], io), 0, err);
  const issued = JSON.parse(out) as { token: string; jti: string; owner: string };
  t.equal(issued.owner, 'cli-team');
  const url = `${h.url}/client-registration/v0.14/register`;
  const ok = await json('POST', url, { client_name: 'from-cli' }, `Bearer ${issued.token}`);
  t.equal(ok.status, 201, ok.text);
  out = '';
  t.equal(await main(['registration', 'revoke', issued.jti], io), 0, err);
  t.match(out, /revoked/);
  t.match(await json('POST', url, { client_name: 'again' }, `Bearer ${issued.token}`), { status: 401, body: { error: 'invalid_token' } });
  t.equal(await main(['registration', 'token', '--expires-in', 'soon'], io), 2, 'a bad --expires-in is a usage error');
});
