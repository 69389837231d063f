/**
 * [database.shared_db] apart from [database.apim_db] (docs/operations.md, "Two databases"): apim_db an
 * embedded file, shared_db an embedded file of its own, PostgreSQL and MariaDB/MySQL (private databases made
 * and dropped by test/store/backends.ts; skipped with the reason when THROUGHWAY_TEST_PG_URL /
 * THROUGHWAY_TEST_MYSQL_URL is not set or not reachable). Users and tenants added over the admin API land
 * in shared_db (read back with SQL on a connection of its own), sign in with the password grant, and apim_db
 * holds none; users already in apim_db move to shared_db once; a clash stops the start with nothing
 * deleted; one database written twice stays one store.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { openDatabase, openStore } from '../../lib/store/open';
import type { DatabaseTable } from '../../lib/store/pool';
import { ADMIN, adminAuth, appWithKeys, basic, decodePayload, json, postForm, startKeyManager } from '../keymanager/helpers';
import { mysqlBackend, postgresBackend, type Backend } from './backends';
import { CLI } from '../config/helpers';
import { NODE_TOML, startTestNode } from '../observability/node-helpers';
import { http } from '../scale/helpers';

/** shared_db as an embedded file in a directory of its own. */
const sqliteShared: Backend = {
  name: 'embedded (h2 → SQLite)',
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-shared-'));
    return {
      table: { type: 'h2', url: `jdbc:h2:${path.join(dir, 'WSO2SHARED_DB')}` },
      cwd: dir,
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  },
};

const tomlOf = (name: string, table: DatabaseTable): string =>
  `[database.${name}]\ntype = "${table.type ?? 'h2'}"\nurl = "${table.url ?? ''}"\n`;
const apimOf = (dir: string): DatabaseTable => ({ type: 'h2', url: `jdbc:h2:${path.join(dir, 'WSO2AM_DB')}` });

/** Rows of a query on a connection of its own (not the key manager's). */
async function rows(name: string, table: DatabaseTable, cwd: string, sql: string): Promise<Record<string, unknown>[]> {
  const db = await openDatabase(name, table, cwd);
  try {
    return await db.all(sql);
  } finally {
    await db.close();
  }
}
const names = async (name: string, table: DatabaseTable, cwd: string, sql: string): Promise<string[]> =>
  (await rows(name, table, cwd, sql)).map((r) => String(Object.values(r)[0])).sort();
const count = async (name: string, table: DatabaseTable, cwd: string, tableName: string): Promise<number> =>
  Number((await rows(name, table, cwd, `SELECT COUNT(*) AS n FROM ${tableName}`))[0]?.n);

for (const backend of [sqliteShared, postgresBackend, mysqlBackend]) {
  t.test(`apim_db embedded, shared_db ${backend.name}`, async (t) => {
    const opened = await backend.open();
    if ('reason' in opened) {
      t.comment(`skipped: ${opened.reason}`);
      t.pass(`skipped: ${opened.reason}`);
      return;
    }
    t.teardown(() => opened.drop());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-apim-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const apim = apimOf(dir);
    const shared = opened.table;
    const both = tomlOf('apim_db', apim) + tomlOf('shared_db', shared);

    t.test('users and tenants added over the admin API live in shared_db and sign in', async (t) => {
      const h = await startKeyManager('', { dir, database: both });
      t.teardown(() => h.close());
      t.match(h.store.description, /users, roles and tenants in .*\[database\.shared_db\]/, h.store.description);
      const add = await json(
        'POST',
        `${h.url}/admin/v1/users`,
        { username: 'samuel', password: 'samuel-pw-1', roles: ['subscriber'] },
        adminAuth(),
      );
      t.equal(add.status, 201, add.text);
      const tenant = await json(
        'POST',
        `${h.url}/admin/v1/tenants`,
        { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' },
        adminAuth(),
      );
      t.equal(tenant.status, 201, tenant.text);
      const app = await appWithKeys(h, 'App1', { grantTypes: ['password', 'refresh_token'] });
      const token = (username: string, password: string) =>
        postForm(`${h.url}/oauth2/token`, { grant_type: 'password', username, password }, basic(app.key, app.secret));
      const ok = await token('samuel', 'samuel-pw-1');
      t.equal(ok.status, 200, ok.status === 200 ? 'the shared_db user gets a password-grant token' : ok.text);
      t.match(decodePayload(String(ok.body.access_token)), { sub: 'samuel', aut: 'APPLICATION_USER' });
      t.match(await token('samuel', 'wrong-pw-1'), { status: 400, body: { error: 'invalid_grant' } }, 'a wrong password is still refused');
      t.match(
        await token('bossy@acme.test', 'acme-pw-1'),
        { status: 400, body: { error: 'invalid_grant', error_description: /not a user of the client's tenant carbon.super/ } },
        "the tenant's admin, in shared_db, gets no token from a super tenant client",
      );
      t.same(
        await names('shared_db', shared, opened.cwd, 'SELECT username FROM tw_user'),
        [ADMIN.user, 'bossy@acme.test', 'samuel'].sort(),
        'shared_db holds the super admin, the user and the tenant admin',
      );
      t.same(await names('shared_db', shared, opened.cwd, 'SELECT domain FROM tw_tenant'), ['acme.test'], 'and the tenant');
      t.equal(await count('apim_db', apim, dir, 'tw_user'), 0, 'apim_db holds no user row');
      t.equal(await count('apim_db', apim, dir, 'tw_tenant'), 0, 'nor a tenant');
      t.equal(await count('apim_db', apim, dir, 'tw_application'), 1, 'the application is in apim_db');
      t.equal(await count('apim_db', apim, dir, 'tw_client'), 1, 'with its keys');
      t.ok((await count('apim_db', apim, dir, 'tw_refresh_token')) >= 1, 'and the refresh token');
      t.equal(await count('shared_db', shared, opened.cwd, 'tw_application'), 0, 'shared_db holds no application');
      t.equal(await count('shared_db', shared, opened.cwd, 'tw_refresh_token'), 0, 'nor a token');
      const roles = await json('PUT', `${h.url}/admin/v1/users/samuel/roles`, { roles: ['subscriber', 'creator'] }, adminAuth());
      t.equal(roles.status, 200, roles.text);
      t.same(
        await names('shared_db', shared, opened.cwd, `SELECT roles FROM tw_user WHERE username = 'samuel'`),
        ['subscriber creator'],
        'roles are written to shared_db',
      );
    });

    t.test('users already in apim_db move to shared_db once', async (t) => {
      const dir2 = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-apim-'));
      t.teardown(() => fs.rmSync(dir2, { recursive: true, force: true }));
      const apim2 = apimOf(dir2);
      const before = await startKeyManager('', { dir: dir2, database: tomlOf('apim_db', apim2) });
      await before.km.manager.addUser({ username: 'early', password: 'early-pw-1' });
      await before.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
      await before.store.selfService.saveProfile(
        { username: 'early', tenant: 'carbon.super', email: 'early@example.org', organization: 'Org', confirmed: true },
        Date.now(),
      );
      await before.close();
      t.equal(await count('apim_db', apim2, dir2, 'tw_user'), 3, 'apim_db alone: admin, early, chief@beta.test');
      // shared_db holds the first test's users already: the super admin there is another row (its own salt).
      await t.rejects(
        openStore(
          loadConfig({
            text: `[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n${tomlOf('apim_db', apim2)}${tomlOf('shared_db', shared)}`,
          }).config,
          dir2,
        ),
        { code: 'STORE_USERS_SPLIT', message: /tw_user admin\b.*Nothing was moved or deleted/ },
        'a user of the same name with another password in both: refused',
      );
      t.equal(await count('apim_db', apim2, dir2, 'tw_user'), 3, 'nothing left apim_db');
      t.notOk(
        (await names('shared_db', shared, opened.cwd, 'SELECT username FROM tw_user')).includes('early'),
        'nothing reached shared_db',
      );
      // The clash settled as the message says: the super admin kept in shared_db only.
      const db = await openDatabase('apim_db', apim2, dir2);
      await db.run(`DELETE FROM tw_user WHERE username = 'admin'`);
      await db.close();
      const h = await startKeyManager('', { dir: dir2, database: tomlOf('apim_db', apim2) + tomlOf('shared_db', shared) });
      t.teardown(() => h.close());
      t.equal(await count('apim_db', apim2, dir2, 'tw_user'), 0, 'apim_db holds no user row after the move');
      t.equal(await count('apim_db', apim2, dir2, 'tw_tenant'), 0, 'nor the tenant');
      t.equal(await count('apim_db', apim2, dir2, 'tw_user_profile'), 0, 'nor the profile');
      t.ok((await names('shared_db', shared, opened.cwd, 'SELECT username FROM tw_user')).includes('early'), 'the user is in shared_db');
      t.match(await h.store.selfService.getProfile('early'), { email: 'early@example.org' }, 'with its profile');
      t.ok(h.km.tenants.get('beta.test'), 'the tenant moved and is known');
      const app = await appWithKeys(h, 'App2', { grantTypes: ['password'] });
      const r = await postForm(
        `${h.url}/oauth2/token`,
        { grant_type: 'password', username: 'early', password: 'early-pw-1' },
        basic(app.key, app.secret),
      );
      t.equal(r.status, 200, r.status === 200 ? 'the moved user signs in with their password' : r.text);
    });

    t.test('a move cut off after the copy is finished by the next start', async (t) => {
      const dir3 = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-apim-'));
      t.teardown(() => fs.rmSync(dir3, { recursive: true, force: true }));
      const apim3 = apimOf(dir3);
      const config = (db: string) =>
        loadConfig({ text: `[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\ncreate_admin_account = false\n${db}` }).config;
      const before = await openStore(config(tomlOf('apim_db', apim3)), dir3);
      await before.addUser({ username: 'halfway', passwordHash: 'h', salt: 's', hashMethod: 'SCRYPT', roles: ['subscriber'] });
      await before.close();
      // The row copied to shared_db, not yet deleted from apim_db.
      const row = (await rows('apim_db', apim3, dir3, `SELECT * FROM tw_user`))[0] ?? {};
      const cols = Object.keys(row);
      const s = await openDatabase('shared_db', shared, opened.cwd);
      await s.run(
        `INSERT INTO tw_user (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
        cols.map((c) => row[c] as string | number),
      );
      await s.close();
      const lines: string[] = [];
      const store = await openStore(config(tomlOf('apim_db', apim3) + tomlOf('shared_db', shared)), dir3, undefined, (l) => lines.push(l));
      t.teardown(() => store.close());
      t.match(lines.join('\n'), /1 rows were there already, the same/, lines.join('; '));
      t.equal(await count('apim_db', apim3, dir3, 'tw_user'), 0, "apim_db's copy is gone");
      t.match(await store.getUser('halfway'), { roles: ['subscriber'], hashMethod: 'SCRYPT' }, 'the user is read from shared_db');
    });
  });
}

t.test('one database written as both, however spelled, stays one store', async (t) => {
  const opened = await postgresBackend.open();
  if ('reason' in opened) {
    t.pass(`skipped: ${opened.reason}`);
    return;
  }
  t.teardown(() => opened.drop());
  const url = String(opened.table.url);
  const respelled = url.replace('127.0.0.1', 'localhost');
  t.not(respelled, url, 'the URL is spelled another way');
  const h = await startKeyManager('', {
    database: `${tomlOf('apim_db', { type: 'postgre', url })}${tomlOf('shared_db', { type: 'postgre', url: respelled })}`,
  });
  t.teardown(() => h.close());
  t.notMatch(h.store.description, /shared_db/, `one store: ${h.store.description}`);
  t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'samuel', password: 'samuel-pw-1' }, adminAuth())).status, 201);
  t.same(
    await names('apim_db', opened.table, opened.cwd, 'SELECT username FROM tw_user'),
    [ADMIN.user, 'samuel'],
    'users stay, none deleted',
  );
});

t.test('an embedded shared_db without a url of its own, or naming the same file, is apim_db', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-apim-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const shared of ['[database.shared_db]\ntype = "h2"\n', tomlOf('shared_db', apimOf(dir)), '']) {
    const h = await startKeyManager('', { dir, database: tomlOf('apim_db', apimOf(dir)) + shared });
    t.notMatch(h.store.description, /shared_db/, `one store for ${JSON.stringify(shared)}`);
    await h.close();
  }
  t.notOk(fs.existsSync(path.join(dir, 'var', 'shared_db.sqlite')), 'no second file was made');
});

t.test('config check says which database holds what; a node prints its two stores', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-shared-node-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'deployment.toml');
  const check = (text: string): string => {
    fs.writeFileSync(file, text);
    const r = spawnSync(process.execPath, [CLI, 'config', 'check', '--config', file], { cwd: dir, encoding: 'utf8' });
    t.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  const apart = check(`${NODE_TOML}[database.shared_db]\ntype = "h2"\nurl = "jdbc:h2:./WSO2SHARED_DB"\n`);
  t.match(
    apart,
    /database\.apim_db: type h2 → embedded SQLite file \S+ \(the key manager's store: applications, keys, subscriptions, tokens\)/,
  );
  t.match(
    apart,
    /database\.shared_db: type h2 → embedded SQLite file \S+WSO2SHARED_DB\.sqlite \(users, roles, tenants and profiles: a second store/,
  );
  const one = check(NODE_TOML);
  t.match(one, /database\.shared_db: .*\(no url of its own: users, roles and tenants are in apim_db, one store\)/);

  const n = await startTestNode(`${NODE_TOML}[database.shared_db]\ntype = "h2"\nurl = "jdbc:h2:./WSO2SHARED_DB"\n`);
  t.teardown(() => n.close());
  t.match(
    n.out.join('\n'),
    /management HTTP .*users, roles and tenants in embedded SQLite \S+WSO2SHARED_DB\.sqlite \(\[database\.shared_db\]\)/,
  );
  const add = await http(`http://127.0.0.1:${n.mgmt}/admin/v1/users`, {
    json: { username: 'nodeuser', password: 'nodeuser-pw-1' },
    auth: ADMIN,
  });
  t.equal(add.status, 201, add.text);
  t.same(await names('shared_db', { type: 'h2', url: 'jdbc:h2:./WSO2SHARED_DB' }, n.dir, 'SELECT username FROM tw_user'), [
    ADMIN.user,
    'nodeuser',
  ]);
});
