/**
 * A tenant's billing package changed after it was made (docs/tenants.md, "Billing packages"):
 * `PUT /admin/v1/tenants/{domain}/package` by the super admin answers 200 with the tenant; an unknown
 * package 400 TENANT_PACKAGE_UNKNOWN naming the known keys, an unknown tenant 404 TENANT_NOT_FOUND,
 * `carbon.super` 400 TENANT_RESERVED, a tenant's admin 403 with nothing changed. Users past the new
 * package's users.limit are kept and a new one is refused. `throughway tenants package` does the same in its
 * local mode (its own store connection) and with --url, each error a clear line and exit status 1, a
 * missing argument exit status 2.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ADMIN, adminAuth, basic, json, startKeyManager } from '../keymanager/helpers';
import { main } from '../../lib/cli';

const PACKAGES = `[multi_tenancy.billing.package.demo.users]\nlimit = "2"\n[multi_tenancy.billing.package.smb.users]\nlimit = "unlimited"\n`;

t.test('the admin API: the super admin changes a package; every error case', async (t) => {
  const h = await startKeyManager(PACKAGES);
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const made = await json(
    'POST',
    `${A}/tenants`,
    { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'smb' },
    adminAuth(),
  );
  t.equal(made.status, 201, made.text);
  t.equal((await json('POST', `${A}/tenants`, { domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' }, adminAuth())).status, 201);
  const boss = basic('bossy@acme.test', 'acme-pw-1');
  for (const u of ['user1', 'user2'])
    t.equal((await json('POST', `${A}/users`, { username: u, password: `${u}-password-1` }, boss)).status, 201, `smb: ${u}`);

  const changed = await json('PUT', `${A}/tenants/acme.test/package`, { package: 'demo' }, adminAuth());
  t.match(changed, { status: 200, body: { domain: 'acme.test', admin: 'bossy@acme.test', package: 'demo', active: true } }, changed.text);
  t.equal((await h.store.getTenant('acme.test'))?.package, 'demo', 'stored');
  t.match(await json('GET', `${A}/tenants/acme.test`, undefined, adminAuth()), { body: { package: 'demo' } });
  t.ok(
    h.logLines.some((l) => /"event":"tenant_package_changed"/.test(l) && /"from":"smb"/.test(l) && /"package":"demo"/.test(l)),
    'logged with the package before and after',
  );

  // Three users past demo's limit of 2: kept, signing in; a fourth refused.
  const users = await json('GET', `${A}/users`, undefined, boss);
  t.same(
    (users.body.list as { username: string }[]).map((u) => u.username).sort(),
    ['bossy@acme.test', 'user1@acme.test', 'user2@acme.test'],
    'the users past the new limit are kept (and the admin still signs in)',
  );
  const past = await json('POST', `${A}/users`, { username: 'user3', password: 'user3-password-1' }, boss);
  t.match(past, {
    status: 403,
    body: { error: 'access_denied', error_description: /^TENANT_LIMIT_REACHED: tenant acme.test has 3 users: package demo allows 2 / },
  });

  const unknown = await json('PUT', `${A}/tenants/acme.test/package`, { package: 'gold' }, adminAuth());
  t.match(unknown, {
    status: 400,
    body: { error: 'invalid_request', error_description: 'TENANT_PACKAGE_UNKNOWN: package "gold" is none of demo, smb, custom' },
  });
  t.match(await json('PUT', `${A}/tenants/acme.test/package`, {}, adminAuth()), {
    status: 400,
    body: { error_description: /^TENANT_PACKAGE_UNKNOWN: package "" is none of demo, smb, custom/ },
  });
  t.match(await json('PUT', `${A}/tenants/acme.test/package`, { package: 3 }, adminAuth()), {
    status: 400,
    body: { error: 'invalid_request', error_description: /package must be a string: demo, smb, custom/ },
  });
  t.match(await json('PUT', `${A}/tenants/nope.test/package`, { package: 'smb' }, adminAuth()), {
    status: 404,
    body: { error: 'not_found', error_description: 'TENANT_NOT_FOUND: no tenant nope.test' },
  });
  t.match(await json('PUT', `${A}/tenants/carbon.super/package`, { package: 'smb' }, adminAuth()), {
    status: 400,
    body: { error_description: /^TENANT_RESERVED: / },
  });
  for (const [who, auth] of [
    ["acme.test's own admin", boss],
    ["beta.test's admin", basic('chief@beta.test', 'beta-pw-1')],
  ] as const) {
    const r = await json('PUT', `${A}/tenants/acme.test/package`, { package: 'smb' }, auth);
    t.match(r, { status: 403, body: { error: 'access_denied' } }, `${who}: 403`);
  }
  t.equal((await h.store.getTenant('acme.test'))?.package, 'demo', 'nothing changed by the refused calls');
});

t.test('throughway tenants package: local mode and --url, each error', async (t) => {
  const h = await startKeyManager(PACKAGES);
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  t.equal(
    (await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'demo' }, adminAuth()))
      .status,
    201,
  );
  const conf = path.join(h.dir, 'deployment.toml');
  fs.writeFileSync(
    conf,
    `[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(h.dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n${PACKAGES}`,
  );
  const cli = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await main(['tenants', 'package', ...args], { out: (x) => (out += x), err: (x) => (err += x), cwd: h.dir, env: {} });
    return { code, out, err };
  };

  const local = await cli('acme.test', 'smb', '--config', conf);
  t.same([local.code, local.err], [0, '']);
  t.match(local.out, /^tenant acme.test: package smb /);
  t.equal((await h.store.getTenant('acme.test'))?.package, 'smb', 'written to the store');
  // The running key manager reads tw_tenant every 500 ms: the change made on its store reaches it.
  const seen = await (async () => {
    for (let i = 0; i < 100; i++) {
      if (h.km.tenants.get('acme.test')?.package === 'smb') return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  })();
  t.ok(seen, 'the running key manager follows it');

  const remote = await cli('acme.test', 'demo', '--url', h.url, '--config', conf, '--json');
  t.equal(remote.code, 0, remote.err);
  t.match(JSON.parse(remote.out), { domain: 'acme.test', package: 'demo' });
  t.equal(h.km.tenants.get('acme.test')?.package, 'demo', 'through the admin API: at once');

  for (const mode of [
    ['--config', conf],
    ['--url', h.url, '--config', conf],
  ]) {
    const where = mode[0] === '--url' ? 'remote' : 'local';
    const bad = await cli('acme.test', 'gold', ...mode);
    t.equal(bad.code, 1, `${where}: an unknown package`);
    t.match(bad.err, /TENANT_PACKAGE_UNKNOWN: package "gold" is none of demo, smb, custom\n$/);
    const none = await cli('nope.test', 'smb', ...mode);
    t.equal(none.code, 1, `${where}: an unknown tenant`);
    t.match(none.err, /TENANT_NOT_FOUND: no tenant nope.test\n$/);
    const reserved = await cli('carbon.super', 'smb', ...mode);
    t.equal(reserved.code, 1);
    t.match(reserved.err, /TENANT_RESERVED: carbon.super is the super tenant: it has no package/);
    const missing = await cli('acme.test', ...mode);
    t.equal(missing.code, 2, `${where}: no package named`);
    t.match(missing.err, /tenants package takes a domain and a package \(demo, smb, custom\)/);
  }
  const asTenant = await cli('acme.test', 'smb', '--url', h.url, '--admin-user', 'bossy@acme.test', '--admin-password', 'acme-pw-1');
  t.equal(asTenant.code, 1, "a tenant's admin");
  t.match(asTenant.err, /403 access_denied: PUT \/admin\/v1\/tenants\/\{domain\}\/package is for the super tenant's admins/);
  t.equal((await h.store.getTenant('acme.test'))?.package, 'demo', 'unchanged by every refusal');
});
