/**
 * No secret is ever logged: after every kind of request, with debug logging, the log holds no client
 * secret, password, refresh token or access token.
 */
import t from 'tap';
import { adminAuth, appWithKeys, basic, json, postForm, startKeyManager } from './helpers';

t.test('the log never holds a secret', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const userPassword = 'frank-pw-secret-9';
  await json('POST', `${h.url}/admin/v1/users`, { username: 'frank', password: userPassword }, adminAuth());
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'frank', password: userPassword },
    basic(key, secret),
  );
  const rt = String(tok.body.refresh_token);
  const at = String(tok.body.access_token);
  const rotated = await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: rt }, basic(key, secret));
  await postForm(`${h.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: rt }, basic(key, secret));
  await postForm(`${h.url}/oauth2/token`, { grant_type: 'password', username: 'frank', password: 'wrong-pw-secret' }, basic(key, secret));
  await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, 'wrong-client-secret'));
  await postForm(`${h.url}/oauth2/introspect`, { token: at }, basic(key, secret));
  await postForm(`${h.url}/oauth2/revoke`, { token: at }, basic(key, secret));
  const dcr = await json('POST', `${h.url}/client-registration/v0.15/register`, { client_name: 'n' }, adminAuth());
  t.ok(h.logLines.length > 3, 'something was logged');
  const log = h.logLines.join('');
  for (const [name, s] of [
    ['client secret', secret],
    ['user password', userPassword],
    ['wrong password', 'wrong-pw-secret'],
    ['wrong client secret', 'wrong-client-secret'],
    ['admin password', 'admin-pw-1'],
    ['refresh token', rt],
    ['rotated refresh token', String(rotated.body.refresh_token)],
    ['access token', at],
    ['registered client secret', String(dcr.body.client_secret)],
  ] as const) {
    t.notOk(log.includes(s), `no ${name} in the log`);
  }
});
