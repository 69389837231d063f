/**
 * The backend JWT ([apim.jwt]): the header it travels in, its claims (the gateway's under claim_dialect,
 * the token's own except restricted and excluded ones), its RS256 signature checked against the key
 * manager's published keys, both encodings, NONE, use_kid_property, and one signature per token and API.
 */
import { createPublicKey, verify } from 'node:crypto';
import t from 'tap';
import { api, received, startNode } from './helpers';

function parts(
  jwt: string,
  encoding: 'base64' | 'base64url',
): { header: Record<string, unknown>; claims: Record<string, unknown>; input: string; signature: Buffer } {
  const [h, c, s] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(h ?? '', encoding).toString('utf8')) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(c ?? '', encoding).toString('utf8')) as Record<string, unknown>,
    input: `${h}.${c}`,
    signature: Buffer.from(s ?? '', encoding),
  };
}

t.test('signed RS256, base64url, a custom header, claims under the dialect, excluded claims left out, cached per token', async (t) => {
  const node = await startNode(
    (port) => [api('bj', {}, undefined, port)],
    `[apim.jwt]\nenable = true\nheader = "X-Backend-JWT"\nencoding = "base64url"\nclaim_dialect = "http://example.test/claims"\n[apim.jwt.gateway_generator]\nexcluded_claims = ["keytype", "http://example.test/claims/applicationtier"]\n`,
  );
  t.teardown(() => node.close());
  const app = await node.app('BJ', { subscribe: ['bj'] });
  const token = await node.token(app);
  t.equal((await node.call('/bj/1/x', token)).status, 200);
  const value = received(node.backend, 'X-Backend-JWT');
  t.ok(value, 'the backend got the JWT in the configured header');
  t.equal(received(node.backend, 'X-JWT-Assertion'), undefined, 'not in the default one');
  const p = parts(value ?? '', 'base64url');
  const kmKey = node.km.keys.current();
  t.same(p.header, { typ: 'JWT', alg: 'RS256', kid: kmKey.kid }, "RS256 with the kid of the key manager's key");
  const jwk = node.km.keys.publicJwks().find((k) => k.kid === p.header.kid);
  t.ok(jwk, "the key is in the key manager's JWKS: backends verify with it");
  t.ok(
    verify('sha256', Buffer.from(p.input), createPublicKey({ key: jwk as never, format: 'jwk' }), p.signature),
    'the signature verifies',
  );
  const d = 'http://example.test/claims';
  t.match(p.claims, {
    [`${d}/subscriber`]: 'admin',
    [`${d}/applicationid`]: app.id,
    [`${d}/applicationname`]: 'BJ',
    [`${d}/apiname`]: 'bj',
    [`${d}/apicontext`]: '/bj',
    [`${d}/version`]: '1',
    [`${d}/tier`]: 'Unlimited',
    [`${d}/keytype`]: 'PRODUCTION',
    [`${d}/usertype`]: 'APPLICATION',
    [`${d}/enduser`]: 'admin',
    client_id: app.consumerKey,
    aut: 'APPLICATION',
  });
  t.equal(p.claims[`${d}/applicationtier`], undefined, 'an excluded gateway claim');
  t.equal(p.claims.keytype, undefined, 'an excluded token claim');
  const tokenClaims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
  t.not(p.claims.jti, tokenClaims.jti, "registered claims are the backend JWT's own, not copied from the token");
  t.equal(p.claims.exp, tokenClaims.exp, 'it expires with the token');

  t.equal((await node.call('/bj/1/y', token)).status, 200);
  t.equal(received(node.backend, 'X-Backend-JWT'), value, 'the same token and API: the cached JWT, not a new signature');
  const other = await node.token(app);
  t.equal((await node.call('/bj/1/x', other)).status, 200);
  t.not(received(node.backend, 'X-Backend-JWT'), value, 'another token: another JWT');
});

t.test("base64 (the reference's default encoding), use_kid_property = false", async (t) => {
  const node = await startNode((port) => [api('bj', {}, undefined, port)], `[apim.jwt]\nenable = true\nuse_kid_property = false\n`);
  t.teardown(() => node.close());
  const app = await node.app('B64', { subscribe: ['bj'] });
  t.equal((await node.call('/bj/1/x', await node.token(app))).status, 200);
  const value = received(node.backend, 'X-JWT-Assertion') ?? '';
  t.match(value, /^[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/, 'standard base64 parts');
  const p = parts(value, 'base64');
  t.same(p.header, { typ: 'JWT', alg: 'RS256' }, 'no kid');
  const jwk = node.km.keys.publicJwks()[0];
  t.ok(
    verify('sha256', Buffer.from(p.input), createPublicKey({ key: jwk as never, format: 'jwk' }), p.signature),
    'signed over the base64 parts',
  );
  t.equal(p.claims['http://wso2.org/claims/apiname'], 'bj', 'the default claim dialect');
});

t.test('signing_algorithm = "NONE": an unsigned JWT (alg none, empty signature)', async (t) => {
  const node = await startNode(
    (port) => [api('bj', {}, undefined, port)],
    `[apim.jwt]\nenable = true\nsigning_algorithm = "NONE"\nencoding = "base64url"\n`,
  );
  t.teardown(() => node.close());
  const app = await node.app('None', { subscribe: ['bj'] });
  t.equal((await node.call('/bj/1/x', await node.token(app))).status, 200);
  const value = received(node.backend, 'X-JWT-Assertion') ?? '';
  t.ok(value.endsWith('.'), 'empty signature');
  t.same(parts(value, 'base64url').header, { typ: 'JWT', alg: 'none' });
});

t.test('disabled (the default): no backend JWT', async (t) => {
  const node = await startNode((port) => [api('bj', {}, undefined, port)]);
  t.teardown(() => node.close());
  const app = await node.app('Off', { subscribe: ['bj'] });
  t.equal((await node.call('/bj/1/x', await node.token(app))).status, 200);
  t.equal(received(node.backend, 'X-JWT-Assertion'), undefined);
});
