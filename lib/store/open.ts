/**
 * Opens the store `[database.apim_db]` names (spec 000) and brings its schema up to date.
 *
 * - `h2` (the default): embedded SQLite file (lib/config/database.ts maps the h2 URL to a path under the
 *   working directory; `jdbc:h2:mem:` stays in memory).
 * - `postgre`: PostgreSQL; `mysql`: MySQL or MariaDB; `pool_options` honoured (lib/store/pool.ts).
 * - `mssql`, `oracle`, `db2`: refused at start with STORE_UNSUPPORTED: no driver ships with throughway.
 *
 * Then `[super_admin]`: when create_admin_account is true and the user does not exist, it is created with
 * the configured password (kept as scrypt: lib/store/passwords.ts). An existing admin keeps its stored password.
 */
import { databaseMapping } from '../config/database';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { newPasswordHash } from './passwords';
import { connectionTarget, poolSettings, type DatabaseTable } from './pool';
import { migrate, SqlStore, type MigrationProgress, type SqlDriver } from './sql';
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

/** The node's store: `[database.apim_db]`, migrated, with the super admin in place. */
export async function openStore(config: DeploymentConfig, cwd: string, onProgress?: MigrationProgress): Promise<Store> {
  const store = await storeOver(await openDatabase('apim_db', config.database.apim_db, cwd), onProgress);
  try {
    await ensureSuperAdmin(store, config);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}
