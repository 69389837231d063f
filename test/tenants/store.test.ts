/**
 * Tenants in the store, against SQLite always and PostgreSQL / MariaDB when reachable
 * (test/store/backends.ts): the migration keeps every existing row as the super tenant's, tenants are
 * stored, the rows of a tenant's application (clients, subscriptions, refresh tokens) are that tenant's,
 * and a blocking condition is unique within its tenant (migration 8), found and removed within it.
 */
import t from 'tap';
import { eachBackend } from '../store/backends';
import { openDatabase, storeOver } from '../../lib/store/open';
import { migrate } from '../../lib/store/sql';
import { MIGRATIONS } from '../../lib/store/migrations';
import { digest, findSignInUser } from '../../lib/store/passwords';

eachBackend(async (t, backend, opened) => {
  const driver = await openDatabase('apim_db', opened.table, opened.cwd);
  // A database as it was before tenants (version 3), with an application, a user and a blocking condition.
  t.equal(
    await migrate(
      driver,
      MIGRATIONS.filter((m) => m.version <= 3),
    ),
    3,
  );
  await driver.run(
    `INSERT INTO tw_application (id, name, owner, tier, description, created_at) VALUES ('a0', 'Old', 'admin', 'Unlimited', '', 1)`,
  );
  await driver.run(
    `INSERT INTO tw_user (username, password_hash, salt, hash_method, roles, created_at) VALUES ('olduser', 'x', 'y', 'SCRYPT', 'subscriber', 1)`,
  );
  await driver.run(`INSERT INTO tw_blocking_condition (id, type, value, invert, created_at) VALUES ('b0', 'IP', '10.0.0.1', 0, 1)`);
  const store = await storeOver(driver);
  t.teardown(() => store.close());

  t.equal((await store.getApplication('a0'))?.tenant, 'carbon.super', "an application from before tenants is the super tenant's");
  t.equal((await store.getUser('olduser'))?.tenant, 'carbon.super', "a user from before tenants is the super tenant's");
  const old = await driver.all(`SELECT tenant FROM tw_blocking_condition WHERE id = 'b0'`);
  t.equal(old[0]?.tenant, 'carbon.super', 'every table got the column, filled for its old rows');
  // Blocking conditions (migration 8): the old row kept as the super tenant's, each unique within its tenant.
  t.match(await store.listBlockingConditions(), [
    { id: 'b0', tenant: 'carbon.super', type: 'IP', value: '10.0.0.1', invert: false, createdAt: 1 },
  ]);
  const acmeBlock = await store.addBlockingCondition({ tenant: 'acme.test', type: 'IP', value: '10.0.0.1', invert: false });
  t.equal(acmeBlock.tenant, 'acme.test', "the super tenant's condition again, as another tenant's");
  await t.rejects(
    store.addBlockingCondition({ tenant: 'carbon.super', type: 'IP', value: '10.0.0.1', invert: false }),
    { code: 'STORE_CONFLICT' },
    'the same condition twice in one tenant',
  );
  t.same(
    (await store.listBlockingConditions('acme.test')).map((c) => c.id),
    [acmeBlock.id],
  );
  t.same(
    (await store.listBlockingConditions('carbon.super')).map((c) => c.id),
    ['b0'],
  );
  t.equal(await store.deleteBlockingCondition('b0', 'acme.test'), undefined, "another tenant's id: not found");
  t.equal((await store.listBlockingConditions()).length, 2, 'and not removed');
  t.equal((await store.deleteBlockingCondition(acmeBlock.id, 'acme.test'))?.id, acmeBlock.id);
  t.same(await store.listTenants(), [], 'no tenant yet');

  // Tenants
  const acme = await store.addTenant({ domain: 'acme.test', admin: 'admin@acme.test', package: 'smb', active: true });
  t.match(acme, { domain: 'acme.test', admin: 'admin@acme.test', package: 'smb', active: true });
  t.same(await store.getTenant('acme.test'), acme);
  await t.rejects(
    store.addTenant({ domain: 'acme.test', admin: 'x@acme.test', package: '', active: true }),
    { code: 'STORE_CONFLICT' },
    'one row per domain',
  );
  await store.addTenant({ domain: 'beta.test', admin: 'admin@beta.test', package: '', active: false });
  t.same(
    (await store.listTenants()).map((x) => [x.domain, x.active]),
    [
      ['acme.test', true],
      ['beta.test', false],
    ],
  );
  t.equal((await store.setTenantActive('beta.test', true))?.active, true);
  t.equal((await store.setTenantActive('beta.test', true))?.active, true, 'activating twice');
  t.equal((await store.setTenantActive('acme.test', false))?.active, false);
  t.equal(await store.setTenantActive('nope.test', false), undefined);
  t.equal(await store.getTenant('nope.test'), undefined);

  // A tenant's rows
  const app = await store.createApplication({
    name: 'Old',
    owner: 'jane@acme.test',
    tenant: 'acme.test',
    tier: 'Unlimited',
    description: '',
  });
  t.equal(app.tenant, 'acme.test');
  t.equal((await store.getApplication(app.id))?.tenant, 'acme.test');
  t.same(
    (await store.listApplications(undefined, 'acme.test')).map((a) => a.id),
    [app.id],
    "one tenant's applications",
  );
  t.same(
    (await store.listApplications(undefined, 'carbon.super')).map((a) => a.id),
    ['a0'],
  );
  t.same(await store.listApplications('jane@acme.test', 'carbon.super'), [], 'owner and tenant both apply');
  await store.createClient({
    consumerKey: 'ck-acme',
    secretHash: digest('s'),
    applicationId: app.id,
    keyType: 'PRODUCTION',
    grantTypes: [],
    callbackUrl: '',
  });
  await store.addSubscription({
    applicationId: app.id,
    apiContext: '/t/acme.test/pizza',
    apiVersion: '1',
    tier: 'Gold',
    state: 'UNBLOCKED',
  });
  await store.saveRefreshToken({
    tokenHash: 'rh',
    family: 'f',
    consumerKey: 'ck-acme',
    subject: 'jane@acme.test',
    scope: '',
    authorizedUserType: 'APPLICATION_USER',
    keyType: 'PRODUCTION',
    issuedAt: 1,
    expiresAt: 2,
  });
  for (const table of ['tw_client', 'tw_subscription', 'tw_refresh_token']) {
    const rows = await driver.all(`SELECT tenant FROM ${table}`);
    t.same(
      rows.map((r) => r.tenant),
      ['acme.test'],
      `${table}: the application's tenant`,
    );
  }
  await store.addUser({
    username: 'jane@acme.test',
    tenant: 'acme.test',
    passwordHash: 'h',
    salt: 's',
    hashMethod: 'SCRYPT',
    roles: ['subscriber'],
  });
  t.same(
    (await store.listUsers('acme.test')).map((u) => u.username),
    ['jane@acme.test'],
  );
  t.same(
    (await store.listUsers('carbon.super')).map((u) => u.username),
    ['olduser'],
  );
  t.equal((await store.listUsers()).length, 2, "unfiltered: every tenant's");

  // Sign-in names ([apim.devportal] login_username_case_insensitive): exact on every database when off
  // (MariaDB's collation ignores case by itself), any letter case of the one user when on.
  const signIn = async (typed: string, ignoreCase: boolean): Promise<string | undefined> =>
    (await findSignInUser(store, typed, ignoreCase))?.username;
  t.equal(await signIn('JANE@ACME.TEST', false), undefined, 'off: another letter case is no user');
  t.equal(await signIn('jane@acme.test', false), 'jane@acme.test');
  t.equal(await signIn('JANE@Acme.Test', true), 'jane@acme.test', 'on: the stored user, its tenant named in any case');
  t.equal(await signIn('OldUser', true), 'olduser');
  t.equal(await signIn('jane@beta.test', true), undefined, 'not a user of another tenant');
});
