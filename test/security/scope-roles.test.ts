/**
 * Scopes bound to roles (docs/security.md, "Scopes and roles"): an API's [[scopes]] entry names the roles
 * allowed to hold a scope. The token endpoint grants it only to a user (password grant) or an application
 * owner (client_credentials) with one of them, so the resource's 900910 (403) stays a 403 for anyone
 * else. A scope a resource lists without roles goes to applications subscribed to the API only.
 */
import t from 'tap';
import { apiScopeBindings, validateApi, type ApiDefinition } from '../../lib/gateway/apis';
import { api, code, startNode, type Node } from './helpers';

const shop = (port: number): Record<string, unknown> =>
  api(
    'shop',
    { scopes: [{ name: 'shop:admin', description: 'manage the shop', roles: ['shop-admin'] }] },
    [
      { path: '/menu', methods: ['GET'], scopes: ['shop:read'] },
      { path: '/admin', methods: ['GET'], scopes: ['shop:admin'] },
    ],
    port,
  );

let node: Node;
t.before(async () => {
  const def = validateApi(shop(9), '').api as ApiDefinition;
  node = await startNode((port) => [shop(port)], '', { scopes: apiScopeBindings(def) });
  await node.km.manager.addUser({ username: 'bob', password: 'bob-pw-12', roles: ['subscriber'] });
  await node.km.manager.addUser({ username: 'carol', password: 'carol-pw-1', roles: ['subscriber', 'shop-admin'] });
});
t.teardown(() => node.close());

const grant = async (
  app: { consumerKey: string; consumerSecret: string },
  form: Record<string, string>,
): Promise<{ access_token: string; scope: string }> =>
  node.km.oauth.token(`Basic ${Buffer.from(`${app.consumerKey}:${app.consumerSecret}`).toString('base64')}`, new URLSearchParams(form));

t.test('the API file declares the scope with its roles', async (t) => {
  const def = validateApi(shop(9), '').api as ApiDefinition;
  t.same(def.scopes, [{ name: 'shop:admin', description: 'manage the shop', roles: ['shop-admin'] }]);
  t.same(
    apiScopeBindings(def).map((b) => [b.name, b.roles]),
    [
      ['shop:admin', ['shop-admin']],
      ['shop:read', []],
    ],
  );
});

t.test('password grant: a user without the role does not get the scope; the 403 stays', async (t) => {
  const app = await node.app('Users', { subscribe: ['shop'] });
  const bob = await grant(app, { grant_type: 'password', username: 'bob', password: 'bob-pw-12', scope: 'shop:admin' });
  t.equal(bob.scope, 'default', 'shop:admin not granted to bob');
  const r = await node.call('/shop/1/admin', bob.access_token);
  t.equal(r.status, 403);
  t.equal(code(r), 900910);
  const carol = await grant(app, { grant_type: 'password', username: 'carol', password: 'carol-pw-1', scope: 'shop:admin' });
  t.equal(carol.scope, 'shop:admin', 'carol holds shop-admin');
  t.equal((await node.call('/shop/1/admin', carol.access_token)).status, 200);
});

t.test("client_credentials: the application owner's roles decide", async (t) => {
  const adminOwned = await node.app('ByAdmin', { subscribe: ['shop'] });
  const a = await grant(adminOwned, { grant_type: 'client_credentials', scope: 'shop:admin' });
  t.equal(a.scope, 'default', 'the super admin does not hold shop-admin');
  t.equal(code(await node.call('/shop/1/admin', a.access_token)), 900910);

  const created = await node.km.manager.createApplication({ name: 'ByCarol', owner: 'carol' });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/shop', apiVersion: '1' });
  const c = await grant(keys, { grant_type: 'client_credentials', scope: 'shop:admin' });
  t.equal(c.scope, 'shop:admin');
  t.equal((await node.call('/shop/1/admin', c.access_token)).status, 200);
});

t.test('a scope without roles: subscribed applications only', async (t) => {
  const subscribed = await node.app('Sub', { subscribe: ['shop'] });
  const s = await grant(subscribed, { grant_type: 'client_credentials', scope: 'shop:read' });
  t.equal(s.scope, 'shop:read');
  t.equal((await node.call('/shop/1/menu', s.access_token)).status, 200);
  const other = await node.app('NotSub');
  const o = await grant(other, { grant_type: 'client_credentials', scope: 'shop:read' });
  t.equal(o.scope, 'default', 'not subscribed to shop: not granted');
});
