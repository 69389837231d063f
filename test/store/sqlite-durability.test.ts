/**
 * The embedded store's durability (docs/key-manager.md, "Durability of the embedded store"): WAL with
 * `synchronous = FULL` in force on the file the node opens, read back from SQLite itself.
 */
import t from 'tap';
import { sqliteBackend } from './backends';
import { openDatabase } from '../../lib/store/open';

t.test('the embedded store syncs every commit: journal_mode WAL, synchronous FULL', async (t) => {
  const opened = await sqliteBackend.open();
  if ('reason' in opened) throw new Error(opened.reason);
  t.teardown(opened.drop);
  const driver = await openDatabase('apim_db', opened.table, opened.cwd);
  t.teardown(() => driver.close());
  t.same(await driver.all('PRAGMA journal_mode'), [{ journal_mode: 'wal' }], 'WAL journal');
  // PRAGMA synchronous answers a number: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA (sqlite.org/pragma.html).
  t.same(await driver.all('PRAGMA synchronous'), [{ synchronous: 2 }], 'synchronous = FULL');
});
