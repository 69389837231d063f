/**
 * A user's grants end with the user (docs/key-manager.md, "Revocation"), driven by openid-client 6 as an
 * application would: DELETE /admin/v1/users/{name} revokes the user's refresh tokens and the access tokens
 * issued with them; a user removed from the store any other way has its refresh refused (invalid_grant)
 * at the next refresh. Another user's grant keeps working.
 */
import t from 'tap';
import * as client from 'openid-client';
import { adminAuth, appWithKeys, freePort, json, startKeyManager } from './helpers';

/** The OAuth error a refused grant request rejects with (openid-client's ResponseBodyError). */
async function refusal(p: Promise<unknown>): Promise<{ error?: string; error_description?: string }> {
  try {
    await p;
    return {};
  } catch (err) {
    return { error: (err as { error?: string }).error, error_description: (err as { error_description?: string }).error_description };
  }
}

t.test('a deleted user keeps no working refresh token', async (t) => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}/oauth2/token`;
  const h = await startKeyManager(`[oauth.oidc.id_token]\nissuer = "${issuer}"\n`, { port });
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h, 'Shop', { grantTypes: ['password', 'refresh_token'] });
  for (const username of ['dorah', 'erina', 'fredo']) {
    const r = await json('POST', `${h.url}/admin/v1/users`, { username, password: `${username}-pw-1` }, adminAuth());
    t.equal(r.status, 201, r.text);
  }
  const config = await client.discovery(new URL(issuer), key, secret, undefined, { execute: [client.allowInsecureRequests] });
  const signIn = async (username: string): Promise<client.TokenEndpointResponse> =>
    client.genericGrantRequest(config, 'password', { username, password: `${username}-pw-1` });

  // dorah: two grants (one refreshed once), then removed through the admin API.
  const dora1 = await client.refreshTokenGrant(config, String((await signIn('dorah')).refresh_token));
  const dora2 = await signIn('dorah');
  t.match(await client.tokenIntrospection(config, dora1.access_token), { active: true, sub: 'dorah' });
  const fred = await signIn('fredo');
  const removed = await json('DELETE', `${h.url}/admin/v1/users/dorah`, undefined, adminAuth());
  t.equal(removed.status, 200, removed.text);
  for (const [name, grant] of [
    ['the refreshed grant', dora1],
    ['the second grant', dora2],
  ] as const) {
    t.match(
      await refusal(client.refreshTokenGrant(config, String(grant.refresh_token))),
      { error: 'invalid_grant' },
      `${name}: refresh refused`,
    );
    t.match(await client.tokenIntrospection(config, grant.access_token), { active: false }, `${name}: its access token is revoked`);
  }
  t.ok(
    h.events.some((e) => e.name === 'token.revoked'),
    'the revocations are announced',
  );

  // erina: removed from the store without the admin API (as a directory would drop her): the refresh itself refuses.
  const erin = await signIn('erina');
  t.ok(await h.store.deleteUser('erina'));
  t.match(await refusal(client.refreshTokenGrant(config, String(erin.refresh_token))), {
    error: 'invalid_grant',
    error_description: 'the user of this refresh token no longer exists',
  });
  t.match(await client.tokenIntrospection(config, erin.access_token), { active: false }, "erin's grant is revoked with the refusal");

  // fred is untouched: his refresh still works.
  const fred2 = await client.refreshTokenGrant(config, String(fred.refresh_token));
  t.match(await client.tokenIntrospection(config, fred2.access_token), { active: true, sub: 'fredo' });
});
