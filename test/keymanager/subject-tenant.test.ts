/**
 * Tenants and the grants whose subject a trusted issuer asserts (docs/tenants.md, docs/key-manager.md): a
 * jwt-bearer assertion's or a token exchange subject_token's `sub` of the form `name@<tenant domain>` names
 * a user of that tenant, so it gets a token only at a client of that tenant, as the password grant's user
 * and a SAML assertion's NameID do; a plain name is the super tenant's. Refused with invalid_grant, naming
 * both tenants.
 */
import t from 'tap';
import { assertion, basic, decodePayload, idp, postForm, startKeyManager } from './helpers';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT = 'urn:ietf:params:oauth:token-type:jwt';

t.test("jwt-bearer and token exchange: a trusted issuer's subject of another tenant gets no token", async (t) => {
  const p = await idp(t);
  const h = await startKeyManager(
    `[oauth.grant_type.token_exchange]\nenable = true\n[[apim.jwt.issuer]]\nname = "https://idp.example"\njwks.url = "${p.url}"\n`,
  );
  t.teardown(() => h.close());
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  const acme = h.km.manager.forTenant('acme.test');
  const grantTypes = [JWT_BEARER, EXCHANGE];
  const superApp = await h.km.manager.createApplication({ name: 'SuperApp', owner: 'admin' });
  const superKeys = await h.km.manager.generateKeys(superApp.id, { grantTypes });
  const acmeApp = await acme.createApplication({ name: 'AcmeApp', owner: 'bossy@acme.test' });
  const acmeKeys = await acme.generateKeys(acmeApp.id, { grantTypes });
  const aud = 'https://localhost:9443/oauth2/token';
  const jwt = (sub: string) => assertion(p.key, { iss: 'https://idp.example', aud, sub });
  const call = async (keys: { consumerKey: string; consumerSecret: string }, grant: string, sub: string) =>
    postForm(
      `${h.url}/oauth2/token`,
      grant === JWT_BEARER
        ? { grant_type: JWT_BEARER, assertion: await jwt(sub) }
        : { grant_type: EXCHANGE, subject_token: await jwt(sub), subject_token_type: JWT },
      basic(keys.consumerKey, keys.consumerSecret),
    );

  for (const grant of [JWT_BEARER, EXCHANGE]) {
    const kind = grant === JWT_BEARER ? 'jwt-bearer' : 'token exchange';
    const own = await call(acmeKeys, grant, 'jane@acme.test');
    t.equal(own.status, 200, `${kind}: the tenant's name at its tenant's client: ${own.text}`);
    t.match(decodePayload(String(own.body.access_token)), { sub: 'jane@acme.test', client_id: acmeKeys.consumerKey });
    const plain = await call(superKeys, grant, 'carol');
    t.equal(plain.status, 200, `${kind}: a plain name at the super tenant's client: ${plain.text}`);
    const what = grant === JWT_BEARER ? 'assertion' : 'subject_token';
    for (const [label, keys, sub, why] of [
      [
        "a tenant's name at the super tenant's client",
        superKeys,
        'jane@acme.test',
        /jane@acme\.test is a user name of tenant acme\.test, not of the client's tenant carbon\.super/,
      ],
      [
        "a super tenant name at a tenant's client",
        acmeKeys,
        'carol',
        /carol is a user name of tenant carbon\.super, not of the client's tenant acme\.test/,
      ],
    ] as const) {
      const r = await call(keys, grant, sub);
      t.match(r, { status: 400, body: { error: 'invalid_grant', error_description: why } }, `${kind}: ${label}`);
      t.match(String(r.body.error_description), new RegExp(`^the ${what}'s subject`));
    }
  }
});
