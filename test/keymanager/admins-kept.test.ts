/**
 * The admin API keeps the admins it relies on (docs/admin-api.md, users): DELETE /admin/v1/users/{name},
 * and PUT /admin/v1/users/{name}/roles without `admin`, are refused 409 for the caller itself
 * (USER_IS_CALLER), the super admin (USER_IS_SUPER_ADMIN) and a tenant's admin (USER_IS_TENANT_ADMIN),
 * the code at the start of error_description with the reason; the user is left as it was. An ordinary
 * user is still changed and removed.
 */
import t from 'tap';
import { adminAuth, basic, json, startKeyManager } from './helpers';

t.test('the caller, the super admin and a tenant admin are kept; an ordinary user is not', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  const acme = basic('bossy@acme.test', 'acme-pw-1');
  for (const [username, roles] of [
    ['second', ['admin']],
    ['plainuser', ['subscriber']],
  ] as const) {
    const r = await json('POST', `${A}/users`, { username, password: `${username}-pw-1`, roles }, adminAuth());
    t.equal(r.status, 201, r.text);
  }
  const deputy = await json('POST', `${A}/users`, { username: 'deputy', password: 'deputy-pw-1', roles: ['admin'] }, acme);
  t.match(deputy, { status: 201, body: { username: 'deputy@acme.test' } });
  const second = basic('second', 'second-pw-1');
  const acmeDeputy = basic('deputy@acme.test', 'deputy-pw-1');
  const cases: [string, string, string, RegExp][] = [
    [adminAuth(), 'admin', 'USER_IS_CALLER', /^USER_IS_CALLER: admin is the caller: /],
    [second, 'second', 'USER_IS_CALLER', /^USER_IS_CALLER: second is the caller: /],
    [second, 'admin', 'USER_IS_SUPER_ADMIN', /^USER_IS_SUPER_ADMIN: admin is the super admin: /],
    [acmeDeputy, 'bossy@acme.test', 'USER_IS_TENANT_ADMIN', /^USER_IS_TENANT_ADMIN: bossy@acme\.test is the admin of tenant acme\.test: /],
    [acme, 'bossy@acme.test', 'USER_IS_CALLER', /^USER_IS_CALLER: bossy@acme\.test is the caller: /],
  ];
  for (const [auth, name, code, message] of cases) {
    const before = await h.store.getUser(name);
    const roles = await json('PUT', `${A}/users/${encodeURIComponent(name)}/roles`, { roles: ['subscriber'] }, auth);
    t.match(roles, { status: 409, body: { error: 'conflict', error_description: message } }, `roles of ${name}: ${code}`);
    t.match(String(roles.body.error_description), /its admin role is kept$/);
    const removed = await json('DELETE', `${A}/users/${encodeURIComponent(name)}`, undefined, auth);
    t.match(removed, { status: 409, body: { error: 'conflict', error_description: message } }, `removal of ${name}: ${code}`);
    t.match(String(removed.body.error_description), /not removed$/);
    t.same(await h.store.getUser(name), before, `${name} is left as it was`);
  }
  // The super admin does not see a tenant's users (docs/admin-api.md, "Tenants"): 404, the tenant admin kept.
  t.equal((await json('DELETE', `${A}/users/bossy@acme.test`, undefined, adminAuth())).status, 404);
  t.ok(await h.store.getUser('bossy@acme.test'));
  // Roles that keep admin are a change like any other.
  const kept = await json('PUT', `${A}/users/second/roles`, { roles: ['admin', 'creator'] }, adminAuth());
  t.match(kept, { status: 200, body: { roles: ['admin', 'creator'] } });
  // An ordinary user: changed (even losing a role it never had), then removed, by either admin.
  const changed = await json('PUT', `${A}/users/plainuser/roles`, { roles: ['creator'] }, second);
  t.match(changed, { status: 200, body: { username: 'plainuser', roles: ['creator'] } });
  const gone = await json('DELETE', `${A}/users/plainuser`, undefined, second);
  t.match(gone, { status: 200, body: { username: 'plainuser' } });
  t.equal(await h.store.getUser('plainuser'), undefined);
  // Another admin can be demoted and removed: it is none of the three.
  t.equal((await json('PUT', `${A}/users/second/roles`, { roles: ['subscriber'] }, adminAuth())).status, 200);
  t.equal((await json('DELETE', `${A}/users/second`, undefined, adminAuth())).status, 200);
});
