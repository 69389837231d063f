/**
 * The authentication phase with tokens of the built-in key manager: every fault code it sends with its
 * status, body and WWW-Authenticate (RFC 6750 §3), the order of the checks (API state first, then the
 * token, the subscription, the token type, the scopes), and what the backend receives when the call passes.
 */
import t, { type Test } from 'tap';
import { api, code, startNode, type Node, type Response } from './helpers';

function challenge(r: Response): string | undefined {
  return r.headers['www-authenticate'] as string | undefined;
}

function fault(t: Test, r: Response, status: number, faultCode: number, wwwAuthenticate: string | undefined, what: string): void {
  t.equal(r.status, status, `${what}: status`);
  t.equal(code(r), faultCode, `${what}: code`);
  t.equal(challenge(r), wwwAuthenticate, `${what}: WWW-Authenticate`);
  t.equal(r.headers['content-type'], 'application/json; charset=UTF-8', `${what}: JSON fault`);
  t.match(JSON.parse(r.body), { fault: { code: faultCode, type: 'Status report' } }, `${what}: body`);
}

const INVALID = 'Bearer realm="throughway", error="invalid_token"';

let node: Node;

t.before(async () => {
  node = await startNode(
    (port) => [
      api(
        'shop',
        {},
        [
          { path: '/open', methods: ['GET'], auth: 'none' },
          { path: '/menu', methods: ['GET'] },
          { path: '/admin', methods: ['GET'], scopes: ['shop:admin', 'shop:root'] },
          { path: '/mine', methods: ['GET'], token_type: 'user' },
          { path: '/machine', methods: ['GET'], token_type: 'application' },
        ],
        port,
      ),
      api('other', {}, undefined, port),
      api('blocked', { state: 'BLOCKED' }, undefined, port),
      api('dual', { endpoints: { production: `http://127.0.0.1:${port}/p`, sandbox: `http://127.0.0.1:${port}/s` } }, undefined, port),
    ],
    '',
    { scopes: ['shop:admin', 'shop:read'] },
  );
});
t.teardown(() => node.close());

t.test('no token: 900902, 401, a challenge with the realm only (RFC 6750 §3.1)', async (t) => {
  fault(t, await node.call('/shop/1/menu'), 401, 900902, 'Bearer realm="throughway"', 'no Authorization');
  fault(
    t,
    await node.call('/shop/1/menu', undefined, { Authorization: 'Basic dTpw' }),
    401,
    900902,
    'Bearer realm="throughway"',
    'another scheme',
  );
  fault(
    t,
    await node.call('/shop/1/menu', undefined, { Authorization: 'Bearer ' }),
    401,
    900902,
    'Bearer realm="throughway"',
    'an empty token',
  );
  t.equal(node.backend.seen.length, 0, 'the backend saw nothing');
});

t.test('auth = "none" needs no token; a BLOCKED API answers 700700 before any token check', async (t) => {
  const r = await node.call('/shop/1/open');
  t.equal(r.status, 200);
  fault(t, await node.call('/blocked/1/x'), 503, 700700, undefined, 'blocked API without a token');
});

t.test('invalid tokens: 900901 with error="invalid_token"', async (t) => {
  fault(t, await node.call('/shop/1/menu', 'not-a-jwt.at-all'), 401, 900901, INVALID, 'garbage');
  const app = await node.app('Inv', { subscribe: ['shop'] });
  const token = await node.token(app);
  const parts = token.split('.');
  const tampered = `${parts[0]}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString()), scope: 'shop:admin' })).toString('base64url')}.${parts[2]}`;
  const r = await node.call('/shop/1/admin', tampered);
  fault(t, r, 401, 900901, INVALID, 'a payload changed after signing');
  t.match(JSON.parse(r.body).fault.description, /signature/);
  t.equal((await node.call('/shop/1/menu', token)).status, 200, 'the untouched token passes');
  t.equal(
    (await node.call('/shop/1/menu', undefined, { Authorization: `bearer ${token}` })).status,
    200,
    'the scheme is case-insensitive (RFC 6750 §2.1, RFC 9110 §11.1)',
  );
});

t.test('a pass: the backend gets the call without the token; ctx.auth is what the key manager knows', async (t) => {
  const app = await node.app('Pass', { subscribe: ['shop'] });
  const token = await node.token(app);
  const before = node.backend.seen.length;
  const r = await node.call('/shop/1/menu', token);
  t.equal(r.status, 200);
  t.equal(node.backend.seen.length, before + 1);
  const seen = node.backend.seen[before];
  t.equal(seen?.url, '/shop/menu');
  t.notOk(
    seen?.headers.some((h) => h.toLowerCase() === 'authorization'),
    'the token is not sent on ([apim.oauth_config] enable_outbound_auth_header = false)',
  );
});

t.test('subscriptions: none 900908 (403), BLOCKED 900907, PROD_ONLY_BLOCKED 900907 for production keys only, ON_HOLD 900909', async (t) => {
  const app = await node.app('Subs', { subscribe: ['shop'] });
  const token = await node.token(app);
  fault(t, await node.call('/other/1/x', token), 403, 900908, 'Bearer realm="throughway"', 'not subscribed');
  const ref = { application: app.id, apiContext: '/shop', apiVersion: '1' };
  await node.km.manager.setSubscriptionState(ref, 'BLOCKED');
  fault(t, await node.call('/shop/1/menu', token), 401, 900907, INVALID, 'blocked');
  await node.km.manager.setSubscriptionState(ref, 'ON_HOLD');
  fault(t, await node.call('/shop/1/menu', token), 401, 900909, INVALID, 'on hold');
  await node.km.manager.setSubscriptionState(ref, 'PROD_ONLY_BLOCKED');
  fault(t, await node.call('/shop/1/menu', token), 401, 900907, INVALID, 'prod-only blocked, production key');
  await node.km.manager.setSubscriptionState(ref, 'UNBLOCKED');
  t.equal((await node.call('/shop/1/menu', token)).status, 200, 'unblocked: served again, without a restart');

  const sandbox = await node.app('SubsSandbox', { keyType: 'SANDBOX', subscribe: ['dual', 'shop'] });
  const st = await node.token(sandbox);
  await node.km.manager.setSubscriptionState({ application: sandbox.id, apiContext: '/dual', apiVersion: '1' }, 'PROD_ONLY_BLOCKED');
  const r = await node.call('/dual/1/x', st);
  t.equal(r.status, 200, 'prod-only blocked, sandbox key: served');
  t.equal(node.backend.seen[node.backend.seen.length - 1]?.url, '/s/x', 'by the sandbox endpoint');
  const noSandbox = await node.call('/shop/1/menu', st);
  fault(t, noSandbox, 401, 900901, INVALID, 'sandbox key, API without a sandbox endpoint');
  t.match(JSON.parse(noSandbox.body).fault.description, /no sandbox endpoint/);
});

t.test('token type: 900905 for an application token on a user-only resource, and the reverse', async (t) => {
  await node.km.manager.addUser({ username: 'alice', password: 'alice-pw-1' });
  const app = await node.app('Types', { subscribe: ['shop'] });
  const appToken = await node.token(app);
  const userToken = await node.token(app, { user: { username: 'alice', password: 'alice-pw-1' } });
  fault(t, await node.call('/shop/1/mine', appToken), 401, 900905, INVALID, 'application token, user-only resource');
  t.equal((await node.call('/shop/1/mine', userToken)).status, 200, 'user token, user-only resource');
  fault(t, await node.call('/shop/1/machine', userToken), 401, 900905, INVALID, 'user token, application-only resource');
  t.equal((await node.call('/shop/1/machine', appToken)).status, 200);
});

t.test('scopes: 900910 (403) with error="insufficient_scope" and the scope needed; any one of them passes', async (t) => {
  const app = await node.app('Scopes', { subscribe: ['shop'] });
  const plain = await node.token(app, { scope: 'shop:read' });
  const r = await node.call('/shop/1/admin', plain);
  fault(t, r, 403, 900910, 'Bearer realm="throughway", error="insufficient_scope", scope="shop:admin shop:root"', 'scope missing');
  const admin = await node.token(app, { scope: 'shop:admin' });
  t.equal((await node.call('/shop/1/admin', admin)).status, 200, 'one of the scopes is enough');
  t.equal((await node.call('/shop/1/menu', plain)).status, 200, 'a resource without scopes takes any token');
});

t.test('a deleted application invalidates its tokens, even cached ones', async (t) => {
  const app = await node.app('Gone', { subscribe: ['shop'] });
  const token = await node.token(app);
  t.equal((await node.call('/shop/1/menu', token)).status, 200);
  await node.km.manager.deleteApplication(app.id);
  fault(t, await node.call('/shop/1/menu', token), 401, 900901, INVALID, 'application deleted (token cached)');
});
