/**
 * Every store operation, against SQLite always and PostgreSQL / MariaDB when reachable
 * (test/store/backends.ts; a skipped backend prints its reason).
 */
import t from 'tap';
import { eachBackend, openDriver } from './backends';
import { openDatabase, storeOver, ensureSuperAdmin } from '../../lib/store/open';
import { migrate } from '../../lib/store/sql';
import { MIGRATIONS, SCHEMA_VERSION } from '../../lib/store/migrations';
import { checkUserPassword, digest, hashPassword, verifyPassword } from '../../lib/store/passwords';
import { loadConfig } from '../../lib/config/load';

eachBackend(async (t, backend, opened) => {
  const driver = await openDriver(backend, opened);
  // A database at version 1 with a row in it, then the current migrations: the row survives.
  t.equal(await migrate(driver, MIGRATIONS.slice(0, 1)), 1);
  await driver.run(
    `INSERT INTO tw_refresh_token (token_hash, family, consumer_key, subject, scope, aut, key_type, issued_at, expires_at, used_at, revoked) VALUES ('h0', 'f0', 'ck', 's', '', 'APPLICATION', 'PRODUCTION', 1, 2, NULL, 0)`,
  );
  const store = await storeOver(driver);
  t.teardown(() => store.close());

  t.equal(await store.schemaVersion(), SCHEMA_VERSION, 'migrations applied');
  t.equal(SCHEMA_VERSION, 10);
  t.equal(await migrate(driver), SCHEMA_VERSION, 'migrating again is a no-op');
  t.match(await store.getRefreshToken('h0'), { family: 'f0', accessJti: null, accessExpiresAt: null }, 'a version 1 row after migration 2');

  // Applications
  const app = await store.createApplication({ name: 'PizzaApp', owner: 'admin', tier: 'Unlimited', description: 'orders' });
  t.match(app, { name: 'PizzaApp', owner: 'admin', tier: 'Unlimited' });
  t.same(await store.getApplication(app.id), app);
  t.same(await store.findApplication('PizzaApp'), app);
  t.same(await store.findApplication('PizzaApp', 'admin'), app);
  t.equal(await store.findApplication('PizzaApp', 'bob'), undefined);
  await t.rejects(
    store.createApplication({ name: 'PizzaApp', owner: 'admin', tier: 'x', description: '' }),
    { code: 'STORE_CONFLICT' },
    'name unique per owner',
  );
  const other = await store.createApplication({ name: 'PizzaApp', owner: 'bob', tier: '10PerMin', description: '' });
  t.same(
    (await store.listApplications()).map((a) => a.owner),
    ['admin', 'bob'],
  );
  t.same(
    (await store.listApplications('bob')).map((a) => a.id),
    [other.id],
  );
  t.match(await store.updateApplication(other.id, { tier: 'Gold' }), { tier: 'Gold' });
  t.equal((await store.getApplication(other.id))?.tier, 'Gold');
  t.equal(await store.updateApplication('nope', { tier: 'Gold' }), undefined);

  // Clients
  const client = await store.createClient({
    consumerKey: 'ck1',
    secretHash: digest('s1'),
    applicationId: app.id,
    keyType: 'PRODUCTION',
    grantTypes: ['client_credentials', 'password'],
    callbackUrl: '',
  });
  t.same(await store.getClient('ck1'), client);
  await t.rejects(
    store.createClient({
      consumerKey: 'ck2',
      secretHash: digest('s2'),
      applicationId: app.id,
      keyType: 'PRODUCTION',
      grantTypes: [],
      callbackUrl: '',
    }),
    { code: 'STORE_CONFLICT' },
    'one client per key type',
  );
  await store.createClient({
    consumerKey: 'ck3',
    secretHash: digest('s3'),
    applicationId: app.id,
    keyType: 'SANDBOX',
    grantTypes: [],
    callbackUrl: 'https://cb',
  });
  t.same(
    (await store.listClients(app.id)).map((c) => c.keyType),
    ['PRODUCTION', 'SANDBOX'],
  );
  t.same((await store.getClient('ck3'))?.grantTypes, []);
  t.ok(await store.deleteClient('ck3'));
  t.notOk(await store.deleteClient('ck3'));

  // Subscriptions
  const sub = await store.addSubscription({
    applicationId: app.id,
    apiContext: '/pizzashack',
    apiVersion: '1.0.0',
    tier: 'Gold',
    state: 'UNBLOCKED',
  });
  t.same(await store.getSubscription(sub.id), sub);
  t.same(await store.findSubscription(app.id, '/pizzashack', '1.0.0'), sub);
  await t.rejects(
    store.addSubscription({ applicationId: app.id, apiContext: '/pizzashack', apiVersion: '1.0.0', tier: 'Gold', state: 'UNBLOCKED' }),
    { code: 'STORE_CONFLICT' },
  );
  await store.addSubscription({
    applicationId: other.id,
    apiContext: '/pizzashack',
    apiVersion: '1.0.0',
    tier: 'Bronze',
    state: 'ON_HOLD',
  });
  await store.addSubscription({ applicationId: app.id, apiContext: '/menu', apiVersion: '2', tier: 'Gold', state: 'UNBLOCKED' });
  t.equal((await store.listSubscriptions()).length, 3);
  t.equal((await store.listSubscriptions({ applicationId: app.id })).length, 2);
  t.equal((await store.listSubscriptions({ apiContext: '/pizzashack' })).length, 2);
  for (const state of ['BLOCKED', 'PROD_ONLY_BLOCKED', 'ON_HOLD', 'UNBLOCKED'] as const) {
    t.equal((await store.setSubscriptionState(sub.id, state))?.state, state, `state ${state}`);
  }
  t.equal((await store.setSubscriptionState(sub.id, 'UNBLOCKED'))?.state, 'UNBLOCKED', 'setting the same state again');
  t.equal(await store.setSubscriptionState('nope', 'BLOCKED'), undefined);
  t.ok(await store.deleteSubscription(sub.id));
  t.equal(await store.getSubscription(sub.id), undefined);

  // Deleting an application removes its clients and subscriptions.
  t.ok(await store.deleteApplication(app.id));
  t.equal(await store.getClient('ck1'), undefined);
  t.same(await store.listSubscriptions({ applicationId: app.id }), []);
  t.notOk(await store.deleteApplication(app.id));

  // Users
  const u = await store.addUser({
    username: 'alice',
    passwordHash: hashPassword('pw-alice', 'SHA-256', 'salt'),
    salt: 'salt',
    hashMethod: 'SHA-256',
    roles: ['subscriber', 'internal'],
  });
  t.same(await store.getUser('alice'), u);
  t.ok(await verifyPassword('pw-alice', u));
  t.notOk(await verifyPassword('pw-bob', u));
  // An older digest is stored again as scrypt at its next successful sign-in.
  t.equal(await checkUserPassword(store, 'alice', 'pw-bob'), undefined);
  t.equal((await store.getUser('alice'))?.hashMethod, 'SHA-256', 'a wrong password upgrades nothing');
  t.equal((await checkUserPassword(store, 'alice', 'pw-alice'))?.username, 'alice');
  const upgraded = await store.getUser('alice');
  t.equal(upgraded?.hashMethod, 'SCRYPT', 'upgraded to scrypt');
  t.not(upgraded?.salt, 'salt', 'with a new salt');
  t.ok(upgraded !== undefined && (await verifyPassword('pw-alice', upgraded)));
  t.ok(upgraded !== undefined && !(await verifyPassword('pw-bob', upgraded)));
  t.notOk(await store.setUserPassword('nobody', { passwordHash: 'x', salt: 'y', hashMethod: 'SCRYPT' }));
  await t.rejects(store.addUser({ ...u, username: 'alice' }), { code: 'STORE_CONFLICT' });
  t.same(
    (await store.listUsers()).map((x) => x.username),
    ['alice'],
  );
  t.ok(await store.deleteUser('alice'));
  t.notOk(await store.deleteUser('alice'));

  // Super admin from [super_admin]
  const cfg = loadConfig({ text: '[super_admin]\nusername = "root1"\npassword = "s3cret-admin"\n', env: {} });
  t.ok(cfg.ok);
  t.ok(await ensureSuperAdmin(store, cfg.config), 'created');
  t.notOk(await ensureSuperAdmin(store, cfg.config), 'kept');
  const admin = await store.getUser('root1');
  t.ok(admin !== undefined && (await verifyPassword('s3cret-admin', admin)));
  t.equal(admin?.hashMethod, 'SCRYPT', 'new passwords are scrypt');
  t.same(admin?.roles, ['admin']);

  // Refresh tokens: rotation is atomic, a family is revoked at once.
  const now = Date.now();
  const base = {
    family: 'f1',
    consumerKey: 'ck1',
    subject: 'alice',
    scope: 'openid',
    authorizedUserType: 'APPLICATION_USER',
    keyType: 'PRODUCTION' as const,
    issuedAt: now,
    expiresAt: now + 60_000,
  };
  await store.saveRefreshToken({ ...base, tokenHash: digest('r1') });
  await store.saveRefreshToken({ ...base, tokenHash: digest('r2'), accessJti: 'at-2', accessExpiresAt: now + 1000 });
  t.match(await store.getRefreshToken(digest('r1')), { ...base, usedAt: null, revoked: false, accessJti: null, accessExpiresAt: null });
  t.same(
    (await store.listRefreshFamily('f1')).map((r) => [r.accessJti, r.accessExpiresAt]).sort(),
    [
      ['at-2', now + 1000],
      [null, null],
    ].sort(),
  );
  const race = await Promise.all([store.markRefreshTokenUsed(digest('r1'), now), store.markRefreshTokenUsed(digest('r1'), now)]);
  t.same(race.sort(), [false, true], 'only one of two concurrent exchanges wins');
  t.equal((await store.getRefreshToken(digest('r1')))?.usedAt, now);
  t.equal(await store.revokeRefreshFamily('f1'), 2);
  t.equal((await store.getRefreshToken(digest('r2')))?.revoked, true);
  t.notOk(await store.markRefreshTokenUsed(digest('r2'), now), 'a revoked token cannot be exchanged');
  await store.saveRefreshToken({ ...base, family: 'f2', tokenHash: digest('old'), expiresAt: now - 1 });

  // Revoked token ids
  await store.revokeToken('jti-1', now + 60_000, now);
  await store.revokeToken('jti-1', now + 60_000, now);
  await store.revokeToken('jti-old', now - 1, now - 10);
  t.ok(await store.isRevoked('jti-1', now));
  t.notOk(await store.isRevoked('jti-old', now), 'past its expiry it no longer matters');
  t.notOk(await store.isRevoked('jti-2', now));
  t.same(
    (await store.listRevoked(now)).map((r) => r.jti),
    ['jti-1'],
  );

  // Signing keys
  await store.addSigningKey({ kid: 'k1', alg: 'RS256', privateJwk: '{"d":1}', publicJwk: '{"n":1}', createdAt: now - 1000 });
  await store.addSigningKey({ kid: 'k2', alg: 'RS256', privateJwk: '{"d":2}', publicJwk: '{"n":2}', createdAt: now });
  t.same(
    (await store.listSigningKeys()).map((k) => k.kid),
    ['k2', 'k1'],
    'newest first',
  );
  await store.setSigningKeyPrivate('k2', 'enc:v1:sealed');
  t.equal((await store.listSigningKeys()).find((k) => k.kid === 'k2')?.privateJwk, 'enc:v1:sealed', 'private JWK replaced');
  await store.retireSigningKey('k1', now - 5);
  t.equal((await store.listSigningKeys()).find((k) => k.kid === 'k1')?.retiredAt, now - 5);

  // Cleanup
  t.same(
    await store.cleanup(now, now),
    { refreshTokens: 2, revoked: 1, keys: 1 },
    'expired refresh tokens (one from the version 1 row), revocations, retired keys',
  );
  t.same(
    (await store.listSigningKeys()).map((k) => k.kid),
    ['k2'],
  );
  await store.deleteSigningKey('k2');
  t.same(await store.listSigningKeys(), []);
});

t.test('unsupported database types are refused at start with a clear message', async (t) => {
  for (const type of ['mssql', 'oracle', 'db2']) {
    await t.rejects(openDatabase('apim_db', { type }, '/tmp'), {
      name: 'StoreError',
      code: 'STORE_UNSUPPORTED',
      message: `[database.apim_db] type = "${type}" is not supported by throughway: use "h2" (embedded SQLite file), "postgre" (PostgreSQL) or "mysql" (MySQL/MariaDB)`,
    });
  }
});

t.test('an unreachable external database fails at start', async (t) => {
  await t.rejects(
    openDatabase('apim_db', { type: 'postgre', url: 'jdbc:postgresql://127.0.0.1:1/x', pool_options: { maxWait: 1000 } }, '/tmp'),
    { code: 'STORE_CONNECT' },
  );
  await t.rejects(openDatabase('apim_db', { type: 'mysql', url: 'jdbc:mysql://127.0.0.1:1/x', pool_options: { maxWait: 1000 } }, '/tmp'), {
    code: 'STORE_CONNECT',
  });
});
