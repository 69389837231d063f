/**
 * Opens the store `[database.apim_db]` names (spec 000) and brings its schema up to date.
 *
 * - `h2` (the default): embedded SQLite file (lib/config/database.ts maps the h2 URL to a path under the
 *   working directory; `jdbc:h2:mem:` stays in memory).
 * - `postgre`: PostgreSQL; `mysql`: MySQL or MariaDB; `pool_options` honoured (lib/store/pool.ts).
 * - `mssql`, `oracle`, `db2`: refused at start with STORE_UNSUPPORTED: no driver ships with throughway.
 *
 * `[database.shared_db]` with a database of its own holds the user realm (lib/store/split.ts).
 *
 * Then `[super_admin]`: when create_admin_account is true and the user does not exist, it is created with
 * the configured password (kept as scrypt: lib/store/passwords.ts). An existing admin keeps its stored password.
 */
import { databaseMapping } from '../config/database';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { newPasswordHash } from './passwords';
import { connectionTarget, poolSettings, type DatabaseTable } from './pool';
import { migrate, SqlStore, type MigrationProgress, type SqlDriver } from './sql';
import { databaseId, moveUserRealm, splitStore } from './split';
import { StoreError, type Store } from './types';

export const SUPPORTED_DATABASES = ['h2', 'postgre', 'mysql'] as const;

export async function openDatabase(name: string, table: DatabaseTable, cwd: string): Promise<SqlDriver> {
  const type = table.type ?? 'h2';
  if (type === 'h2') {
    const m = databaseMapping(name, table, cwd);
    if (m.kind !== 'sqlite') throw new StoreError('STORE_UNSUPPORTED', `database.${name}: unexpected mapping`);
    const { openSqlite } = await import('./sqlite');
    return openSqlite(m.file, `[database.${name}] type = "h2"`);
  }
  if (type === 'postgre') {
    const { openPostgres } = await import('./postgres');
    return openPostgres(connectionTarget(table, 5432, name), poolSettings(table), `[database.${name}] type = "postgre"`);
  }
  if (type === 'mysql') {
    const { openMysql } = await import('./mysql');
    return openMysql(connectionTarget(table, 3306, name), poolSettings(table), `[database.${name}] type = "mysql"`);
  }
  throw new StoreError(
    'STORE_UNSUPPORTED',
    `[database.${name}] type = "${type}" is not supported by throughway: use "h2" (embedded SQLite file), "postgre" (PostgreSQL) or "mysql" (MySQL/MariaDB)`,
  );
}

/** Opens, migrates and wraps a driver. */
export async function storeOver(db: SqlDriver, onProgress?: MigrationProgress): Promise<Store> {
  try {
    await migrate(db, undefined, onProgress);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return new SqlStore(db);
}

export async function ensureSuperAdmin(store: Store, config: DeploymentConfig): Promise<boolean> {
  const admin = config.super_admin;
  if (!admin.create_admin_account) return false;
  if ((await store.getUser(admin.username)) !== undefined) return false;
  try {
    await store.addUser({ username: admin.username, ...(await newPasswordHash(admin.password)), roles: ['admin'] });
  } catch (err) {
    // Another node created it between our read and insert.
    if (!(err instanceof StoreError && err.code === 'STORE_CONFLICT')) throw err;
    return false;
  }
  return true;
}

/**
 * `[database.shared_db]` when it names a database of its own: its url is written and, for h2, names another
 * file than apim_db's. Two external URLs that reach one database are found out by its id (split.ts).
 */
export function sharedDatabase(config: DeploymentConfig, cwd: string): DatabaseTable | undefined {
  const shared = config.database.shared_db;
  if (shared.url === undefined || shared.url === '') return undefined;
  const a = databaseMapping('apim_db', config.database.apim_db, cwd);
  const b = databaseMapping('shared_db', shared, cwd);
  if (a.kind === 'sqlite' && b.kind === 'sqlite' && a.file === b.file) return undefined;
  return shared;
}

/** What openStore did beyond migrations, as lines for the start-up output. */
export type StoreNote = (line: string) => void;

/**
 * The node's store: `[database.apim_db]`, migrated, with the super admin in place; with a
 * `[database.shared_db]` of its own, the user realm in that second database (lib/store/split.ts), rows of
 * it found in apim_db moved there first.
 */
export async function openStore(config: DeploymentConfig, cwd: string, onProgress?: MigrationProgress, note?: StoreNote): Promise<Store> {
  const apimDb = await openDatabase('apim_db', config.database.apim_db, cwd);
  let store = await storeOver(apimDb, onProgress);
  const sharedTable = sharedDatabase(config, cwd);
  if (sharedTable !== undefined) {
    try {
      store = await openShared(store, apimDb, sharedTable, cwd, onProgress, note);
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }
  try {
    await ensureSuperAdmin(store, config);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}

async function openShared(
  apim: Store,
  apimDb: SqlDriver,
  table: DatabaseTable,
  cwd: string,
  onProgress: MigrationProgress | undefined,
  note: StoreNote | undefined,
): Promise<Store> {
  const sharedDb = await openDatabase('shared_db', table, cwd);
  const shared = await storeOver(sharedDb, onProgress);
  try {
    if ((await databaseId(apimDb)) === (await databaseId(sharedDb))) {
      await shared.close();
      note?.('[database.shared_db] reaches the database of [database.apim_db]: one store');
      return apim;
    }
    const r = await moveUserRealm(apimDb, sharedDb);
    const n = Object.values(r.moved).reduce((a, b) => a + b, 0);
    if (n + r.alreadyThere > 0)
      note?.(
        `moved from [database.apim_db] to [database.shared_db]: ${Object.entries(r.moved)
          .map(([t, k]) => `${k} ${t}`)
          .join(', ')}${r.alreadyThere > 0 ? ` (${r.alreadyThere} rows were there already, the same)` : ''}`,
      );
  } catch (err) {
    await shared.close().catch(() => undefined);
    throw err;
  }
  return splitStore(apim, shared);
}
