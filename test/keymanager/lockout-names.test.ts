/**
 * Name variants of one account share its sign-in lockout (docs/security.md, "Guessing passwords"): the
 * guard counts every spelling a user store takes for the same name (case, trailing and inner spaces,
 * characters LDAP maps to nothing, accents a MariaDB `_ai_ci` collation ignores) under one key, for the
 * key manager's SQL store (embedded SQLite always; MariaDB when THROUGHWAY_TEST_MYSQL_URL is set, where
 * the store itself matches "DORA1 " to dora1). The directory's case is in ldap-user-store.test.ts.
 */
import t from 'tap';
import { accountKey } from '../../lib/keymanager/lockout';
import { mysqlBackend } from '../store/backends';
import { adminAuth, appWithKeys, basic, json, postForm, startKeyManager } from './helpers';

t.test('the account key folds what a user store folds', async (t) => {
  t.equal(accountKey('Alice'), 'alice');
  t.equal(accountKey('  ALICE \t'), 'alice', 'trimmed, case folded');
  t.equal(accountKey('Mary  \u00a0Ann'), 'mary ann', 'inner runs of spaces are one space (RFC 4518 §2.6.1)');
  t.equal(accountKey('ali\u00adce\u200b'), 'alice', 'soft hyphen and zero width space are mapped to nothing (RFC 4518 §2.2)');
  t.equal(accountKey('\uff21lice'), 'alice', 'compatibility forms (NFKC)');
  t.equal(accountKey('Ålice'), 'alice', 'accents dropped, as an _ai_ci collation compares');
  t.equal(accountKey('STRASSE'), accountKey('straße'), 'ß folds as SS');
  t.not(accountKey('alice'), accountKey('alicia'));
});

const stores: {
  name: string;
  database?: () => Promise<{ toml: string; drop: () => Promise<void> } | { reason: string }>;
  foldsInStore: boolean;
}[] = [
  { name: 'embedded SQLite', foldsInStore: false },
  {
    name: 'MariaDB/MySQL',
    foldsInStore: true,
    async database() {
      const opened = await mysqlBackend.open();
      if ('reason' in opened) return opened;
      const tb = opened.table;
      return {
        toml: `[database.apim_db]\ntype = "mysql"\nurl = "${tb.url ?? ''}"\nusername = "${tb.username ?? 'root'}"\npassword = "${tb.password ?? ''}"\npool_options.maxActive = "4"\n`,
        drop: opened.drop,
      };
    },
  },
];

for (const store of stores) {
  t.test(
    `${store.name}: failures under name variants lock the account's pair; the right password in another case is refused`,
    async (t) => {
      let database: string | undefined;
      if (store.database !== undefined) {
        const d = await store.database();
        if ('reason' in d) {
          t.skip(`${store.name}: ${d.reason}`, () => undefined);
          return;
        }
        t.teardown(d.drop);
        database = d.toml;
      }
      const h = await startKeyManager(
        '[throughway.management]\nlogin_max_failures = 3\nlogin_delay = 0\n',
        database !== undefined ? { database } : {},
      );
      t.teardown(() => h.close());
      const app = await appWithKeys(h, 'VariantApp');
      t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'dora1', password: 'dora-pw-1' }, adminAuth())).status, 201);
      const token = (username: string, password: string): Promise<{ status: number; body: Record<string, unknown> }> =>
        postForm(`${h.url}/oauth2/token`, { grant_type: 'password', username, password }, basic(app.key, app.secret));
      if (store.foldsInStore) t.equal((await token('DORA1 ', 'dora-pw-1')).status, 200, 'the store itself signs "DORA1 " in as dora1');
      for (const variant of ['Dora1', 'dora1 ', 'DORA1'])
        t.match(
          await token(variant, 'wrong-pw-1'),
          { status: 400, body: { error: 'invalid_grant' } },
          `a wrong password as ${JSON.stringify(variant)}`,
        );
      t.match(
        await token('dora1', 'dora-pw-1'),
        { status: 429, body: { error: 'access_denied' } },
        'three failures of one account: locked, whatever the spelling',
      );
      t.match(await token('dOrA1', 'dora-pw-1'), { status: 429 }, 'the right password in another case is refused too');
      // The admin API's Basic credentials: the super admin's name in another case shares the admin's count.
      for (const variant of ['Admin', 'ADMIN', 'admin '])
        await json('GET', `${h.url}/admin/v1/users`, undefined, basic(variant, 'wrong-pw-2'));
      t.equal(
        (await json('GET', `${h.url}/admin/v1/users`, undefined, adminAuth())).status,
        429,
        'the super admin is locked from this address after three variants',
      );
    },
  );
}
