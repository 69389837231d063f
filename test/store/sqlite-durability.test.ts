/**
 * The embedded store's durability (docs/key-manager.md, "Durability of the embedded store"): WAL with
 * `synchronous = FULL`, the busy timeout and secure_delete in force on the file the node opens, read back
 * from SQLite itself, through each engine this Node has (node:sqlite from Node 22.13, libsql always).
 */
import t from 'tap';
import { libsqlBackend, openDriver, sqliteBackend } from './backends';
import { defaultEngine } from '../../lib/store/sqlite';

t.equal(
  defaultEngine(),
  process.getBuiltinModule?.('node:sqlite') === undefined ? 'libsql' : 'node:sqlite',
  'node:sqlite where this Node has it',
);

for (const backend of defaultEngine() === 'libsql' ? [sqliteBackend] : [sqliteBackend, libsqlBackend]) {
  t.test(`${backend.name}: the embedded store syncs every commit: journal_mode WAL, synchronous FULL`, async (t) => {
    const opened = await backend.open();
    if ('reason' in opened) throw new Error(opened.reason);
    t.teardown(opened.drop);
    const driver = await openDriver(backend, opened);
    t.teardown(() => driver.close());
    t.same(await driver.all('PRAGMA journal_mode'), [{ journal_mode: 'wal' }], 'WAL journal');
    // PRAGMA synchronous answers a number: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA (sqlite.org/pragma.html).
    t.same(await driver.all('PRAGMA synchronous'), [{ synchronous: 2 }], 'synchronous = FULL');
    t.same(await driver.all('PRAGMA busy_timeout'), [{ timeout: 5000 }], 'busy timeout 5 s');
    t.same(await driver.all('PRAGMA secure_delete'), [{ secure_delete: 1 }], 'secure_delete on');
    await driver.run('CREATE TABLE t (k TEXT PRIMARY KEY)');
    t.equal(await driver.run('INSERT INTO t (k) VALUES (?)', ['a']), 1, 'the row count of a write');
    await t.rejects(
      driver.run('INSERT INTO t (k) VALUES (?)', ['a']),
      { name: 'StoreError', code: 'STORE_CONFLICT' },
      'a duplicate key is STORE_CONFLICT',
    );
  });
}
