/**
 * OAuth 2.0 backend security (docs/apis.md, "Backend security") against a real token endpoint (throughway's
 * own key manager, behind a counting forwarder) and a backend that verifies the JWT with the key manager's
 * JWKS: one token for many calls, a new one after expiry and after a 401, and 900424 when no valid token
 * can be had.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import type { JSONWebKeySet } from 'jose';
import { adminAuth, appWithKeys, json, startKeyManager, type Harness } from '../keymanager/helpers';
import { BASE_TOML, HOST, closedPort, request, startGateway, type TestGateway } from '../gateway/helpers';
import { oauthBackend, securedApi, tokenForwarder, type OAuthBackend, type TokenForwarder } from './helpers';

interface Rig {
  readonly km: Harness;
  readonly token: TokenForwarder;
  readonly backend: OAuthBackend;
  readonly gw: TestGateway;
  readonly key: string;
  readonly secret: string;
}

async function rig(
  t: Test,
  o: { kmToml?: string; security?: (r: { tokenUrl: string; key: string; secret: string }) => string; extra?: string } = {},
): Promise<Rig> {
  const km = await startKeyManager(o.kmToml ?? '');
  t.teardown(() => km.close());
  const { key, secret } = await appWithKeys(km, 'BackendClient');
  const token = await tokenForwarder(km.url);
  t.teardown(() => token.close());
  const jwks = await json('GET', `${km.url}/oauth2/jwks`);
  const backend = await oauthBackend(jwks.body as unknown as JSONWebKeySet);
  t.teardown(() => backend.close());
  const security =
    o.security?.({ tokenUrl: token.url, key, secret }) ??
    `type = "oauth"\ntoken_url = "${token.url}"\nclient_id = "${key}"\nclient_secret = "${secret}"`;
  const gw = await startGateway(BASE_TOML, { orders: securedApi('orders', backend.port, security, o.extra) });
  t.teardown(() => gw.close());
  return { km, token, backend, gw, key, secret };
}

t.test("one token for many calls, concurrent ones included; the client's Authorization is replaced", async (t) => {
  const r = await rig(t);
  const first = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      request(r.gw.port, `/orders/1/items/${i}`, { headers: { Authorization: 'Bearer the-clients-own-token' } }),
    ),
  );
  t.same(
    first.map((x) => x.status),
    Array(10).fill(200),
    'ten concurrent calls answered',
  );
  for (let i = 0; i < 10; i++)
    t.equal(
      (await request(r.gw.port, '/orders/1/items', { method: 'POST', body: `{"n":${i}}`, headers: { 'Content-Type': 'application/json' } }))
        .status,
      200,
    );
  t.equal(r.token.calls(), 1, 'the token endpoint was called once for 20 calls (single-flight, then cached)');
  t.equal(r.backend.hits.length, 20);
  t.equal(new Set(r.backend.hits.map((h) => h.jti)).size, 1, 'every call carried the same token');
  t.ok(
    r.backend.hits.every((h) => h.authorization.length === 1 && h.authorization[0]?.startsWith('Bearer ey')),
    "one Authorization field, the gateway's token, never the client's",
  );
  t.equal(r.backend.hits.at(-1)?.body, '{"n":9}');
  // The token request: client_credentials, client authenticated with Basic (RFC 6749 §2.3.1).
  const form = r.token.forms[0] as URLSearchParams;
  t.equal(form.get('grant_type'), 'client_credentials');
  t.notOk(form.has('client_secret'), 'the secret is not in the body with client_auth = basic');
  t.equal(r.token.auths[0], `Basic ${Buffer.from(`${r.key}:${r.secret}`).toString('base64')}`);
  // Secrets and tokens never reach the log.
  const log = JSON.stringify(r.gw.logger.lines);
  t.notOk(log.includes(r.secret), 'client secret not logged');
  t.notOk(/eyJ[A-Za-z0-9_-]{20,}/.test(log), 'no token logged');
});

t.test('a short-lived token is fetched again before it expires', async (t) => {
  const r = await rig(t, { kmToml: '[oauth.token_validation]\napp_access_token_validity = 2\n' });
  t.equal((await request(r.gw.port, '/orders/1/a')).status, 200);
  t.equal((await request(r.gw.port, '/orders/1/b')).status, 200);
  t.equal(r.token.calls(), 1, 'cached while fresh');
  // expires_in 2 s and expiry_margin 30 s: the margin is capped at half the lifetime, so refreshed after 1 s.
  await new Promise((res) => setTimeout(res, 1300));
  t.equal((await request(r.gw.port, '/orders/1/c')).status, 200);
  t.equal(r.token.calls(), 2, 'fetched again once its refresh time passed');
  const jtis = r.backend.hits.map((h) => h.jti);
  t.equal(jtis[0], jtis[1]);
  t.not(jtis[2], jtis[0], 'the third call carried a new token');
});

t.test('a 401 from the backend: a new token, the call sent again with its body', async (t) => {
  const r = await rig(t);
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  const revoked = r.backend.hits[0]?.jti as string;
  r.backend.refused.add(revoked);
  const res = await request(r.gw.port, '/orders/1/items', {
    method: 'POST',
    body: '{"pizza":"margherita"}',
    headers: { 'Content-Type': 'application/json' },
  });
  t.equal(res.status, 200, res.body);
  t.equal(r.token.calls(), 2, 'one new token after the 401');
  const [refused, resent] = r.backend.hits.slice(1);
  t.equal(refused?.status, 401);
  t.equal(refused?.jti, revoked);
  t.equal(resent?.status, 200);
  t.not(resent?.jti, revoked);
  t.equal(resent?.body, '{"pizza":"margherita"}', 'the body sent again, whole');
  t.equal(res.json().body, '{"pizza":"margherita"}', 'the client got the second answer');
  // The new token is cached for the next call.
  t.equal((await request(r.gw.port, '/orders/1/y')).status, 200);
  t.equal(r.token.calls(), 2);
});

t.test('the backend refuses a fresh token too: 900424, 503, after one new token only', async (t) => {
  const r = await rig(t);
  r.backend.refuseAll = true;
  const res = await request(r.gw.port, '/orders/1/x', { headers: { Origin: 'http://example.com' } });
  t.equal(res.status, 503);
  t.equal(res.json().fault.code, 900424);
  t.equal(res.json().fault.message, 'Temporary Server Error');
  t.match(res.json().fault.description, /refused a freshly obtained OAuth 2.0 token/);
  t.equal(r.token.calls(), 2, 'the first token and one refresh');
  t.equal(r.backend.hits.length, 2, 'sent twice, not more');
  t.notOk(res.headers['www-authenticate'], "the backend's challenge does not reach the client");
});

t.test('a 401 to a streamed (chunked) body: not sent again, 900424, and the next call gets a new token', async (t) => {
  const r = await rig(t);
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  r.backend.refused.add(r.backend.hits[0]?.jti as string);
  const res = await request(r.gw.port, '/orders/1/upload', {
    method: 'POST',
    body: 'streamed',
    headers: { 'Transfer-Encoding': 'chunked' },
  });
  t.equal(res.status, 503);
  t.equal(res.json().fault.code, 900424);
  t.match(res.json().fault.description, /cannot be sent again/);
  t.equal(r.backend.hits.length, 2, 'the streamed call went once');
  t.equal((await request(r.gw.port, '/orders/1/y')).status, 200);
  t.equal(r.token.calls(), 2, 'the refused token was dropped; the next call fetched a new one');
});

t.test('the token endpoint down, refusing, answering 500 or too slow: 900424, 503', async (t) => {
  const r = await rig(t, {
    security: ({ tokenUrl, key }) => `type = "oauth"\ntoken_url = "${tokenUrl}"\nclient_id = "${key}"\nclient_secret = "wrong-secret"`,
  });
  const refused = await request(r.gw.port, '/orders/1/x');
  t.equal(refused.status, 503);
  t.equal(refused.json().fault.code, 900424);
  t.match(refused.json().fault.description, /refused the request \(HTTP 401: invalid_client\)/);
  t.equal(r.backend.hits.length, 0, 'the backend was not called without a token');
  t.notOk(JSON.stringify(r.gw.logger.lines).includes('wrong-secret'), 'the secret is not logged');

  r.token.mode = 'error';
  const err = await request(r.gw.port, '/orders/1/x');
  t.equal(err.json().fault.code, 900424);
  t.match(err.json().fault.description, /HTTP 500: server_error/);
  t.notOk(err.body.includes('maintenance'), "the token endpoint's error_description is not repeated");

  const down = await closedPort();
  const gw2 = await startGateway(BASE_TOML, {
    orders: securedApi(
      'orders',
      r.backend.port,
      `type = "oauth"\ntoken_url = "http://${HOST}:${down}/token"\nclient_id = "${r.key}"\nclient_secret = "${r.secret}"`,
    ),
  });
  t.teardown(() => gw2.close());
  const unreachable = await request(gw2.port, '/orders/1/x');
  t.equal(unreachable.status, 503);
  t.equal(unreachable.json().fault.code, 900424);
  t.match(unreachable.json().fault.description, /unreachable \(ECONNREFUSED\)/);

  r.token.mode = 'hang';
  const gw3 = await startGateway(BASE_TOML, {
    orders: securedApi(
      'orders',
      r.backend.port,
      `type = "oauth"\ntoken_url = "${r.token.url}"\nclient_id = "${r.key}"\nclient_secret = "${r.secret}"\ntoken_timeout = "300ms"`,
    ),
  });
  t.teardown(() => gw3.close());
  const slow = await request(gw3.port, '/orders/1/x');
  t.equal(slow.status, 503);
  t.equal(slow.json().fault.code, 900424);
  t.match(slow.json().fault.description, /did not answer within 300 ms/);
});

t.test('the token endpoint going down after a token was cached does not matter until it expires', async (t) => {
  const r = await rig(t);
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  await r.token.close();
  t.equal((await request(r.gw.port, '/orders/1/y')).status, 200, 'the cached token still serves');
  r.backend.refuseAll = true;
  const res = await request(r.gw.port, '/orders/1/z');
  t.equal(res.json().fault.code, 900424, 'a refused token cannot be replaced while the token endpoint is down');
});

t.test('password grant, client authentication in the body, scopes, extra parameters, $env{...} values', async (t) => {
  process.env.TW_TEST_BACKEND_PASSWORD = 'alice-pw-1';
  t.teardown(() => {
    delete process.env.TW_TEST_BACKEND_PASSWORD;
    delete process.env.TW_TEST_BACKEND_SECRET;
  });
  const r = await rig(t, {
    security: ({ tokenUrl, key, secret }) => {
      process.env.TW_TEST_BACKEND_SECRET = secret;
      return `type = "oauth"\ngrant_type = "password"\ntoken_url = "${tokenUrl}"\nclient_id = "${key}"\nclient_secret = "$env{TW_TEST_BACKEND_SECRET}"\nusername = "alice"\npassword = "$env{TW_TEST_BACKEND_PASSWORD}"\nclient_auth = "body"\nscopes = ["orders:read", "orders:write"]\nparameters = { audience = "orders-backend" }`;
    },
  });
  t.equal((await json('POST', `${r.km.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1' }, adminAuth())).status, 201);
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  const form = r.token.forms[0] as URLSearchParams;
  t.equal(form.get('grant_type'), 'password');
  t.equal(form.get('username'), 'alice');
  t.equal(form.get('password'), 'alice-pw-1', '$env{...} read at deploy time');
  t.equal(form.get('client_id'), r.key);
  t.equal(form.get('client_secret'), r.secret);
  t.equal(form.get('scope'), 'orders:read orders:write');
  t.equal(form.get('audience'), 'orders-backend');
  t.equal(r.token.auths[0], undefined, 'no Authorization with client_auth = body');
  t.equal(r.backend.hits[0]?.sub, 'alice', 'a user token');
  t.notOk(JSON.stringify(r.gw.logger.lines).includes('alice-pw-1'), 'the password is not logged');
});

t.test('with mediation gathering every response: the 401 is answered, the second response converted', async (t) => {
  const r = await rig(t, { extra: '[mediation]\nresponse_format = "xml"\n' });
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  r.backend.refused.add(r.backend.hits[0]?.jti as string);
  const res = await request(r.gw.port, '/orders/1/items', {
    method: 'POST',
    body: '{"n":1}',
    headers: { 'Content-Type': 'application/json' },
  });
  t.equal(res.status, 200, res.body);
  t.match(res.headers['content-type'], /xml/, "the backend's JSON converted by mediation");
  t.match(res.body, /<ok>true<\/ok>/);
  t.equal(r.backend.hits.at(-1)?.body, '{"n":1}');
  t.equal(r.token.calls(), 2);
});

t.test('a redeploy keeps the token of unchanged credentials; changed ones get their own', async (t) => {
  const r = await rig(t);
  t.equal((await request(r.gw.port, '/orders/1/x')).status, 200);
  const file = path.join(r.gw.dir, 'apis', 'orders.toml');
  const security = `type = "oauth"\ntoken_url = "${r.token.url}"\nclient_id = "${r.key}"\nclient_secret = "${r.secret}"`;
  fs.writeFileSync(file, securedApi('orders', r.backend.port, security, 'description = "changed"\n'));
  r.gw.gw.reload();
  t.equal((await request(r.gw.port, '/orders/1/y')).status, 200);
  t.equal(r.token.calls(), 1, 'the cached token survived the redeploy');
  fs.writeFileSync(file, securedApi('orders', r.backend.port, `${security}\nscopes = ["orders:read"]`));
  r.gw.gw.reload();
  t.equal((await request(r.gw.port, '/orders/1/z')).status, 200);
  t.equal(r.token.calls(), 2, 'other scopes: another token');
  t.equal(r.token.forms[1]?.get('scope'), 'orders:read');
});

t.test('token responses the gateway does not use: 900424 with the reason, nothing cached', async (t) => {
  const answers: { status: number; body: string }[] = [
    { status: 200, body: '{"access_token":"abc\\r\\nX-Injected: 1","token_type":"Bearer","expires_in":60}' },
    { status: 200, body: '{"access_token":"abc","token_type":"mac","expires_in":60}' },
    { status: 200, body: 'not json' },
    { status: 200, body: `{"access_token":"abc","pad":"${'x'.repeat(70 * 1024)}"}` },
    { status: 200, body: '{"access_token":"good-token","token_type":"bearer"}' },
  ];
  let calls = 0;
  const idp = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const a = answers[Math.min(calls++, answers.length - 1)] as { status: number; body: string };
      res.writeHead(a.status, { 'Content-Type': 'application/json' });
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => idp.listen(0, HOST, () => resolve()));
  t.teardown(() => idp.close());
  const seen: string[] = [];
  const be = http.createServer((req, res) => {
    seen.push(req.headers.authorization ?? '');
    res.end('ok');
  });
  await new Promise<void>((resolve) => be.listen(0, HOST, () => resolve()));
  t.teardown(() => be.close());
  const gw = await startGateway(BASE_TOML, {
    orders: securedApi(
      'orders',
      (be.address() as net.AddressInfo).port,
      `type = "oauth"\ntoken_url = "http://${HOST}:${(idp.address() as net.AddressInfo).port}/token"\nclient_id = "c"\nclient_secret = "s"`,
    ),
  });
  t.teardown(() => gw.close());
  const want = [/no usable access_token/, /not a bearer token/, /no usable access_token/, /larger than 65536 bytes/];
  for (const w of want) {
    const res = await request(gw.port, '/orders/1/x');
    t.equal(res.json().fault.code, 900424);
    t.match(res.json().fault.description, w);
  }
  t.equal(seen.length, 0, 'the backend was never called without a token');
  t.equal((await request(gw.port, '/orders/1/x')).status, 200, 'a good response: used (token_type is case-insensitive, RFC 6749 §5.1)');
  t.equal((await request(gw.port, '/orders/1/x')).status, 200);
  t.same(seen, ['Bearer good-token', 'Bearer good-token'], 'without expires_in the token is kept');
  t.equal(calls, 5);
});
