/**
 * urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693 §2.1; [oauth.grant_type.token_exchange] as
 * the reference's files write it): a JWT of a trusted issuer ([[apim.jwt.issuer]], its JWKS served here)
 * or an access token of this server is exchanged for an access token of this server. The response names
 * the issued token type (§2.2.1); every refusal of docs/key-manager.md, "Token exchange", has a case.
 */
import t from 'tap';
import { appWithKeys, assertion, basic, decodePayload, idp, postForm, startKeyManager } from './helpers';

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT = 'urn:ietf:params:oauth:token-type:jwt';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const GRANTS = ['client_credentials', 'refresh_token', GRANT];

t.test("token exchange: a trusted issuer's JWT and this server's own token, and each refusal", async (t) => {
  const p = await idp(t);
  const h = await startKeyManager(
    `[oauth.grant_type.token_exchange]\nenable = true\nallow_refresh_tokens = true\niat_validity_period = "1h"\n[[apim.jwt.issuer]]\nname = "https://idp.example"\njwks.url = "${p.url}"\n`,
  );
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h, 'Exchanger', { grantTypes: GRANTS });
  const other = await appWithKeys(h, 'Other', { grantTypes: GRANTS });
  const aud = 'https://localhost:9443/oauth2/token';
  const now = Math.floor(Date.now() / 1000);
  const token = (form: Record<string, string>, who = { key, secret }) =>
    postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, ...form }, basic(who.key, who.secret));

  const ok = await token({
    subject_token: await assertion(p.key, { iss: 'https://idp.example', aud, sub: 'carol' }),
    subject_token_type: JWT,
  });
  t.equal(ok.status, 200, ok.text);
  t.equal(ok.body.issued_token_type, ACCESS, 'issued_token_type names an access token (RFC 8693 §2.2.1)');
  t.equal(ok.body.token_type, 'Bearer');
  t.match(decodePayload(String(ok.body.access_token)), { sub: 'carol', aut: 'APPLICATION_USER', client_id: key });
  t.type(ok.body.refresh_token, 'string', 'allow_refresh_tokens = true: a refresh token');
  // A token the identity provider issued for this client (aud = its consumer key) is accepted too.
  const forClient = await token({
    subject_token: await assertion(p.key, { iss: 'https://idp.example', aud: key, sub: 'dave' }),
    subject_token_type: ACCESS,
  });
  t.equal(forClient.status, 200, forClient.text);

  // This server's own access token: an application token stays one, its scopes at most.
  const cc = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
  t.equal(cc.status, 200, cc.text);
  const own = await token({ subject_token: String(cc.body.access_token), subject_token_type: ACCESS, scope: 'default admin:everything' });
  t.equal(own.status, 200, own.text);
  t.match(decodePayload(String(own.body.access_token)), { aut: 'APPLICATION', client_id: key, scope: 'default' });
  const stolen = await token({ subject_token: String(cc.body.access_token), subject_token_type: ACCESS }, other);
  t.match(
    stolen,
    { status: 400, body: { error: 'invalid_grant', error_description: /another client/ } },
    "another client's token is refused",
  );

  const bad: [string, Record<string, string>, string, RegExp][] = [
    [
      'untrusted issuer',
      { subject_token: await assertion(p.key, { iss: 'https://evil.example', aud, sub: 'carol' }), subject_token_type: JWT },
      'invalid_grant',
      /not trusted/,
    ],
    [
      'wrong signature',
      { subject_token: await assertion(p.other, { iss: 'https://idp.example', aud, sub: 'carol' }), subject_token_type: JWT },
      'invalid_grant',
      /not valid/,
    ],
    [
      'another audience',
      {
        subject_token: await assertion(p.key, { iss: 'https://idp.example', aud: 'https://elsewhere', sub: 'carol' }),
        subject_token_type: JWT,
      },
      'invalid_grant',
      /not valid.*aud/,
    ],
    [
      'expired',
      { subject_token: await assertion(p.key, { iss: 'https://idp.example', aud, sub: 'carol', exp: now - 60 }), subject_token_type: JWT },
      'invalid_grant',
      /not valid.*exp/,
    ],
    [
      'issued before iat_validity_period',
      {
        subject_token: await assertion(p.key, { iss: 'https://idp.example', aud, sub: 'carol', iat: now - 7200, exp: now + 300 }),
        subject_token_type: JWT,
      },
      'invalid_grant',
      /iat_validity_period \(3600 s\)/,
    ],
    ['not a JWT', { subject_token: 'abc', subject_token_type: JWT }, 'invalid_grant', /not a JWT/],
    [
      'a SAML subject token type',
      { subject_token: 'abc', subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' },
      'invalid_request',
      /subject_token_type .* not supported/,
    ],
    [
      'a refresh token requested',
      { subject_token: 'abc', subject_token_type: JWT, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'invalid_request',
      /requested_token_type/,
    ],
    [
      'delegation',
      { subject_token: 'abc', subject_token_type: JWT, actor_token: 'x', actor_token_type: JWT },
      'invalid_request',
      /actor_token/,
    ],
    ['no subject_token', { subject_token_type: JWT }, 'invalid_request', /subject_token/],
    ['no subject_token_type', { subject_token: 'abc' }, 'invalid_request', /subject_token_type/],
  ];
  for (const [name, form, error, why] of bad) t.match(await token(form), { status: 400, body: { error, error_description: why } }, name);
});

t.test('token exchange is off unless [oauth.grant_type.token_exchange] enable = true', async (t) => {
  const h = await startKeyManager('');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h, 'Exchanger', { grantTypes: GRANTS });
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, subject_token: 'x', subject_token_type: JWT }, basic(key, secret));
  t.match(r, { status: 400, body: { error: 'unsupported_grant_type', error_description: /token_exchange\] enable = false/ } });
});

t.test('allow_refresh_tokens = false: no refresh token', async (t) => {
  const p = await idp(t);
  const h = await startKeyManager(
    `[oauth.grant_type.token_exchange]\nenable = true\nallow_refresh_tokens = false\n[[apim.jwt.issuer]]\nname = "https://idp.example"\njwks.url = "${p.url}"\n`,
  );
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h, 'Exchanger', { grantTypes: GRANTS });
  const r = await postForm(
    `${h.url}/oauth2/token`,
    {
      grant_type: GRANT,
      subject_token: await assertion(p.key, { iss: 'https://idp.example', aud: 'https://localhost:9443/oauth2/token', sub: 'carol' }),
      subject_token_type: JWT,
    },
    basic(key, secret),
  );
  t.equal(r.status, 200, r.text);
  t.equal(r.body.refresh_token, undefined);
});
