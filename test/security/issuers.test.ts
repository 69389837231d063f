/**
 * Tokens of an external issuer ([[apim.jwt.issuer]]) whose JWKS a local server on port 0 serves: valid
 * tokens pass, claim_mapping renames claims, kid rotation refetches (rate-limited), an outage keeps cached
 * keys serving and answers 900900 (500) for a key never fetched, audience, clock skew, and the tokens an
 * attacker forges: alg none, HMAC signed with the public key (algorithm confusion), an unknown issuer,
 * the right kid with the wrong key.
 */
import { createHmac } from 'node:crypto';
import t from 'tap';
import { api, code, jwksServer, jwt, signingKey, startNode, type JwksServer, type Node, type SigningKey } from './helpers';

const ISS = 'https://idp.example.test';
const ISS2 = 'https://idp2.example.test';
let node: Node;
let idp: JwksServer;
let k1: SigningKey;

t.before(async () => {
  k1 = await signingKey('k1');
  idp = await jwksServer([k1.publicJwk]);
  const toml =
    `[oauth]\ntimestamp_skew = 60\n[throughway.security]\njwks_refetch_interval = "10s"\n` +
    `[[apim.jwt.issuer]]\nname = "${ISS}"\naudience = "throughway-gw"\n[apim.jwt.issuer.jwks]\nurl = "${idp.url}"\n` +
    `[[apim.jwt.issuer.claim_mapping]]\nremote_claim = "permissions"\nlocal_claim = "scope"\n` +
    `[[apim.jwt.issuer.claim_mapping]]\nremote_claim = "client"\nlocal_claim = "azp"\n` +
    `[[apim.jwt.issuer]]\nname = "${ISS2}"\nsubscription_validation = true\n[apim.jwt.issuer.jwks]\nurl = "${idp.url}"\n`;
  node = await startNode(
    (port) => [
      api(
        'ext',
        {},
        [
          { path: '/any', methods: ['GET'] },
          { path: '/write', methods: ['GET'], scopes: ['orders:write'] },
        ],
        port,
      ),
    ],
    toml,
  );
});
t.teardown(async () => {
  await node.close();
  await idp.close();
});

const claims = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  iss: ISS,
  aud: 'throughway-gw',
  sub: 'svc-1',
  client: 'ext-client',
  permissions: 'orders:write',
  jti: `j-${Math.random()}`,
  ...extra,
});

t.test('a token of a trusted issuer passes; its claims are mapped (remote -> local names)', async (t) => {
  const token = await jwt(k1, claims());
  const r = await node.call('/ext/1/write', token);
  t.equal(r.status, 200, r.body);
  t.equal(idp.fetches, 1, 'the JWKS was fetched once');
  t.equal(
    (await node.call('/ext/1/write', await jwt(k1, claims({ permissions: 'orders:read' })))).status,
    403,
    'the mapped scope claim decides (900910)',
  );
  t.equal(idp.fetches, 1, 'known kid: no further fetch');
  const h = node.gw.security.health();
  t.match(h.issuers, [{ issuer: ISS, url: idp.url, keys: 1, error: undefined }]);
});

t.test('audience: another aud is 900901', async (t) => {
  const r = await node.call('/ext/1/any', await jwt(k1, claims({ aud: 'someone-else' })));
  t.equal(r.status, 401);
  t.equal(code(r), 900901);
  t.match(JSON.parse(r.body).fault.description, /aud/);
});

t.test('clock skew: [oauth] timestamp_skew tolerates 60 s either way, not more', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  t.equal((await node.call('/ext/1/any', await jwt(k1, claims({ exp: now - 30 })))).status, 200, 'expired 30 s ago: within the skew');
  const late = await node.call('/ext/1/any', await jwt(k1, claims({ exp: now - 120 })));
  t.equal(late.status, 401, 'expired 120 s ago');
  t.match(JSON.parse(late.body).fault.description, /expired/);
  t.equal((await node.call('/ext/1/any', await jwt(k1, claims({ nbf: now + 30 })))).status, 200, 'valid in 30 s: within the skew');
  const early = await node.call('/ext/1/any', await jwt(k1, claims({ nbf: now + 300 })));
  t.equal(early.status, 401, 'valid only in 5 minutes');
  t.match(JSON.parse(early.body).fault.description, /not yet valid/);
  // docs/security.md: iat is checked too (jose checks it only with a maximum age: issuedInFuture).
  t.equal((await node.call('/ext/1/any', await jwt(k1, claims({ iat: now + 30 })))).status, 200, 'issued 30 s ahead: within the skew');
  const future = await node.call('/ext/1/any', await jwt(k1, claims({ iat: now + 300 })));
  t.equal(future.status, 401, 'issued 5 minutes in the future');
  t.equal(code(future), 900901);
  t.match(JSON.parse(future.body).fault.description, /issued in the future \(iat\)/);
});

t.test('forgeries: alg none, HMAC with the public key, unknown issuer, right kid with a wrong key, missing exp', async (t) => {
  const enc = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = enc({ ...claims(), exp: Math.floor(Date.now() / 1000) + 600 });
  const none = await node.call('/ext/1/any', `${enc({ alg: 'none', kid: 'k1' })}.${body}.`);
  t.equal(code(none), 900901, 'alg none');
  t.match(JSON.parse(none.body).fault.description, /algorithm "none" is not accepted/);
  // Algorithm confusion (RFC 8725 §2.1): HS256 with the issuer's public key as the shared secret.
  const input = `${enc({ alg: 'HS256', kid: 'k1' })}.${body}`;
  const secret = JSON.stringify(k1.publicJwk);
  const hs = await node.call('/ext/1/any', `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`);
  t.equal(code(hs), 900901, 'HS256 signed with the public key');
  t.match(JSON.parse(hs.body).fault.description, /algorithm "HS256" is not accepted/);
  const unknownIss = await node.call('/ext/1/any', await jwt(k1, claims({ iss: 'https://evil.example.test' })));
  t.equal(code(unknownIss), 900901, 'an issuer not configured');
  t.match(JSON.parse(unknownIss.body).fault.description, /issuer is not trusted/);
  const impostor = await signingKey('k1');
  const wrongKey = await node.call('/ext/1/any', await jwt(impostor, claims()));
  t.equal(code(wrongKey), 900901, 'kid k1, signed by another key');
  t.match(JSON.parse(wrongKey.body).fault.description, /signature/);
  const es = await signingKey('k1', 'ES256');
  const mismatch = await node.call('/ext/1/any', await jwt(es, claims()));
  t.equal(code(mismatch), 900901, 'ES256 header, RSA key');
  const noExp = await node.call('/ext/1/any', `${enc({ alg: 'RS256', kid: 'k1' })}.${enc({ iss: ISS })}.x`);
  t.equal(code(noExp), 900901, 'no exp, bad signature');
});

t.test('kid rotation: an unknown kid refetches the JWKS, at most once per jwks_refetch_interval', async (t) => {
  const k2 = await signingKey('k2', 'ES256');
  idp.keys = [k1.publicJwk, k2.publicJwk];
  node.clock.offset += 11_000; // the issuer rotates long after the gateway's last fetch
  const before = idp.fetches;
  const r = await node.call('/ext/1/any', await jwt(k2, claims()));
  t.equal(r.status, 200, 'the new key is fetched and used');
  t.equal(idp.fetches, before + 1);
  const k9 = await signingKey('k9');
  for (let i = 0; i < 5; i++)
    t.equal(code(await node.call('/ext/1/any', await jwt(k9, claims()))), 900901, 'a kid the fresh set lacks: invalid');
  t.equal(idp.fetches, before + 1, 'five tokens with an unknown kid within the interval: no fetch');
  node.clock.offset += 11_000;
  t.equal(code(await node.call('/ext/1/any', await jwt(k9, claims({ exp: Math.floor(Date.now() / 1000) + 3600 })))), 900901);
  t.equal(idp.fetches, before + 2, 'after the interval, one more fetch');
});

t.test('outage: cached keys keep serving; a key never fetched is 900900 (500), never a false 401; recovery', async (t) => {
  idp.down = true;
  node.clock.offset += 20_000;
  t.equal((await node.call('/ext/1/any', await jwt(k1, claims()))).status, 200, 'kid k1 is cached');
  const k3 = await signingKey('k3');
  const r = await node.call('/ext/1/any', await jwt(k3, claims()));
  t.equal(r.status, 500);
  t.equal(code(r), 900900);
  t.equal(r.headers['www-authenticate'], 'Bearer realm="throughway"');
  t.match(JSON.parse(r.body).fault.description, /JWKS of issuer .* cannot be read: HTTP 503/);
  t.match(node.gw.security.health().issuers[0], { error: 'HTTP 503', keys: 2 }, 'health shows the outage');
  t.ok(
    node.logger.lines.some((l) => l.event === 'jwks_unreachable'),
    'and the log',
  );
  idp.down = false;
  idp.keys = [k1.publicJwk, k3.publicJwk];
  node.clock.offset += 20_000;
  t.equal((await node.call('/ext/1/any', await jwt(k3, claims()))).status, 200, 'back up: k3 fetched');
  t.equal(node.gw.security.health().issuers[0]?.error, undefined);
  t.ok(node.logger.lines.some((l) => l.event === 'jwks_recovered'));
});

t.test("the built-in key manager's key rotation is seen at once (its keys are read in process)", async (t) => {
  const app = await node.app('Rot', { subscribe: ['ext'] });
  const before = await node.token(app);
  await node.km.keys.rotate();
  const after = await node.token(app);
  t.not(
    JSON.parse(Buffer.from(before.split('.')[0] ?? '', 'base64url').toString()).kid,
    JSON.parse(Buffer.from(after.split('.')[0] ?? '', 'base64url').toString()).kid,
    'a new kid',
  );
  t.equal((await node.call('/ext/1/any', after)).status, 200, 'a token of the new key');
  t.equal((await node.call('/ext/1/any', before)).status, 200, 'a token of the retired key, still published');
});

t.test("subscription_validation = true: the token's client must be a known application, subscribed", async (t) => {
  const token = await jwt(k1, { iss: ISS2, sub: 'svc-2', azp: 'ext-client-2', jti: 'j-sv' });
  const unknown = await node.call('/ext/1/any', token);
  t.equal(code(unknown), 900901, 'a client id that is no application');
  t.match(JSON.parse(unknown.body).fault.description, /no known application/);
  node.bus.publish('application.added', {
    application: {
      id: 'ext-app',
      name: 'External',
      owner: 'ops',
      tier: 'Gold',
      keys: [{ consumerKey: 'ext-client-2', keyType: 'PRODUCTION' }],
    },
  });
  t.equal(code(await node.call('/ext/1/any', token)), 900908, 'known, not subscribed');
  node.bus.publish('subscription.added', {
    subscription: { id: 'ext-sub', applicationId: 'ext-app', apiContext: '/ext', apiVersion: '1', tier: 'Gold', state: 'UNBLOCKED' },
  });
  t.equal((await node.call('/ext/1/any', token)).status, 200, 'subscribed');
  t.equal(
    (await node.call('/ext/1/any', await jwt(k1, { iss: ISS, aud: 'throughway-gw', sub: 'x', client: 'anyone' }))).status,
    200,
    'the other issuer (subscription_validation off) needs no subscription',
  );
});
