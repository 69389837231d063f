/**
 * The embedded store: `[database.apim_db] type = "h2"` (the spec's embedded default) is an SQLite file
 * (lib/config/database.ts says where), through better-sqlite3. Its calls are synchronous and take
 * microseconds on a local file, which is why the key manager can share the event loop with the gateway.
 * WAL journal: readers (a CLI on the same file) do not block the running node's writes. Its files are the
 * owner's only (0600, directory 0700). `synchronous = FULL`: every commit is on disk before the write
 * returns (docs/key-manager.md, "Durability of the embedded store").
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Database from 'better-sqlite3';
import { load } from '../config/packages';
import { StoreError } from './types';
import type { Param, Row, SqlDriver } from './sql';

function mapError(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  }
  return err;
}

/** The database file and SQLite's companions (WAL journal, shared-memory index, rollback journal). */
const COMPANIONS = ['', '-wal', '-shm', '-journal'] as const;

/**
 * Owner-only files (docs/security.md, "Secrets at rest"): the directory this creates is 0700, the database
 * file is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the database file's
 * mode), and files of an existing store are narrowed to 0600 (a store made by an older version was 0644).
 */
function ownerOnly(file: string): void {
  const created = fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (created !== undefined) fs.chmodSync(path.dirname(file), 0o700);
  fs.closeSync(fs.openSync(file, fs.constants.O_CREAT | fs.constants.O_RDWR, 0o600));
  for (const suffix of COMPANIONS) {
    try {
      fs.chmodSync(file + suffix, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** `key`: the configuration key that asked for the embedded store, named when better-sqlite3 is not installed. */
export function openSqlite(file: string, key = '[database.apim_db] type = "h2"'): SqlDriver {
  const Sqlite = load<typeof Database>('better-sqlite3', key);
  let db: Database.Database;
  try {
    if (file !== ':memory:') ownerOnly(file);
    db = new Sqlite(file);
  } catch (err) {
    throw new StoreError('STORE_CONNECT', `cannot open the embedded database ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (file !== ':memory:') db.pragma('journal_mode = WAL');
  // FULL: the WAL is synced at every commit, so an acknowledged write (a revocation, a new client) survives
  // an OS crash or power loss, not only a process kill; NORMAL (SQLite's WAL default) syncs only at
  // checkpoints and may lose the last commits to an OS crash (sqlite.org/pragma.html#pragma_synchronous).
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  // Deleted and overwritten rows are zeroed, so a secret replaced in place (a signing key encrypted at
  // start, a password hash upgraded) does not linger in free space of the file.
  db.pragma('secure_delete = ON');
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let s = statements.get(sql);
    if (s === undefined) {
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s;
  };
  return {
    kind: 'sqlite',
    description: `embedded SQLite ${file}`,
    all(sql: string, params: readonly Param[] = []): Promise<Row[]> {
      try {
        return Promise.resolve(prepare(sql).all(...params) as Row[]);
      } catch (err) {
        return Promise.reject(mapError(err));
      }
    },
    run(sql: string, params: readonly Param[] = []): Promise<number> {
      try {
        return Promise.resolve(prepare(sql).run(...params).changes);
      } catch (err) {
        return Promise.reject(mapError(err));
      }
    },
    close(): Promise<void> {
      statements.clear();
      if (db.open) db.close();
      return Promise.resolve();
    },
  };
}
