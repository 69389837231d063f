/**
 * urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7523 §2.1): an assertion signed by a configured
 * issuer ([[apim.jwt.issuer]] name + jwks.url, served here by a small JWKS server) is exchanged for an
 * access token; wrong issuer, signature, audience, expiry and the grant switch are refused.
 */
import t from 'tap';
import { appWithKeys, assertion, basic, decodePayload, idp, postForm, startKeyManager } from './helpers';

const GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

t.test('an assertion from a trusted issuer gets a user token', async (t) => {
  const p = await idp(t);
  const h = await startKeyManager(`[[apim.jwt.issuer]]\nname = "https://idp.example"\njwks.url = "${p.url}"\n`);
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const aud = 'https://localhost:9443/oauth2/token';
  const ok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: GRANT, assertion: await assertion(p.key, { iss: 'https://idp.example', aud, sub: 'carol' }), scope: 'openid' },
    basic(key, secret),
  );
  t.equal(ok.status, 200, ok.text);
  t.match(decodePayload(String(ok.body.access_token)), { sub: 'carol', aut: 'APPLICATION_USER', client_id: key });
  t.type(ok.body.refresh_token, 'string');
  // The token endpoint URL this server answers on is an accepted audience too.
  const local = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: GRANT, assertion: await assertion(p.key, { iss: 'https://idp.example', aud: `${h.url}/oauth2/token`, sub: 'carol' }) },
    basic(key, secret),
  );
  t.equal(local.status, 200, local.text);

  const bad: [string, Promise<string> | string, RegExp][] = [
    ['untrusted issuer', assertion(p.key, { iss: 'https://evil.example', aud, sub: 'carol' }), /not trusted/],
    ['wrong signature', assertion(p.other, { iss: 'https://idp.example', aud, sub: 'carol' }), /not valid/],
    ['wrong audience', assertion(p.key, { iss: 'https://idp.example', aud: 'https://elsewhere', sub: 'carol' }), /not valid.*aud/],
    [
      'expired',
      assertion(p.key, { iss: 'https://idp.example', aud, sub: 'carol', exp: Math.floor(Date.now() / 1000) - 60 }),
      /not valid.*exp/,
    ],
    ['no subject', assertion(p.key, { iss: 'https://idp.example', aud }), /not valid.*sub/],
    ['not a JWT', 'abc', /not a JWT/],
  ];
  for (const [name, a, why] of bad) {
    const r = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, assertion: await a }, basic(key, secret));
    t.match(r, { status: 400, body: { error: 'invalid_grant', error_description: why } }, name);
  }
  const none = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT }, basic(key, secret));
  t.match(none, { status: 400, body: { error: 'invalid_request' } });
});

t.test('jwt-bearer disabled', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.jwt_bearer]\nenable = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, assertion: 'x' }, basic(key, secret));
  t.match(r, { status: 400, body: { error: 'unsupported_grant_type', error_description: /jwt_bearer\] enable = false/ } });
});
