/**
 * The embedded store: `[database.apim_db] type = "h2"` (the spec's embedded default) is an SQLite file
 * (lib/config/database.ts says where). Its engine is Node's built-in `node:sqlite` where the running Node
 * has it unflagged (22.13 and later), else libsql's better-sqlite3-compatible driver (an optional
 * dependency whose binary ships prebuilt in registry packages, `@libsql/<platform>`): neither compiles
 * anything at install (docs/key-manager.md, "The embedded store's engine"). Both are synchronous and take
 * microseconds on a local file, which is why the key manager can share the event loop with the gateway.
 * WAL journal: readers (a CLI on the same file) do not block the running node's writes. Its files are the
 * owner's only (0600, directory 0700). `synchronous = FULL`: every commit is on disk before the write
 * returns (docs/key-manager.md, "Durability of the embedded store").
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { load } from '../config/packages';
import { StoreError } from './types';
import type { Param, Row, SqlDriver } from './sql';

/** SQLite's extended result codes of a unique-key violation (sqlite.org/rescode.html): node:sqlite's `errcode`. */
const SQLITE_CONSTRAINT_UNIQUE = 2067;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;

function mapError(err: unknown): unknown {
  // libsql names the extended code (`code`); node:sqlite numbers it (`errcode`, with `code` ERR_SQLITE_ERROR).
  const { code, errcode } = err as { code?: unknown; errcode?: unknown };
  if (
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    errcode === SQLITE_CONSTRAINT_UNIQUE ||
    errcode === SQLITE_CONSTRAINT_PRIMARYKEY
  ) {
    return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  }
  return err;
}

/** What the store uses of either engine: node:sqlite's DatabaseSync and libsql's Database both have it. */
interface SyncStatement {
  all(...params: Param[]): unknown[];
  run(...params: Param[]): { changes: number | bigint };
}
interface SyncDatabase {
  prepare(sql: string): SyncStatement;
  exec(sql: string): void;
  close(): void;
}
type SyncDatabaseClass = new (file: string) => SyncDatabase;

/** `node:sqlite` (Node's own, 22.13 and later) or `libsql` (the optional dependency, for older Node). */
export type SqliteEngine = 'node:sqlite' | 'libsql';

let builtin: SyncDatabaseClass | null | undefined;

/**
 * node:sqlite's DatabaseSync, or null where this Node has none (Node 20; 22.5 to 22.12 only behind a flag).
 * Node 22 announces the module with an ExperimentalWarning on stderr at load; that one warning is not
 * printed (the store relies only on prepare, run, all and close, which Node 22.13 to 26 keep alike).
 */
function nodeSqlite(): SyncDatabaseClass | null {
  if (builtin !== undefined) return builtin;
  const emit = process.emitWarning;
  process.emitWarning = function quiet(this: NodeJS.Process, warning: string | Error, ...rest: unknown[]): void {
    const first = rest[0];
    const type = typeof first === 'string' ? first : (first as { type?: unknown } | undefined)?.type;
    if (type === 'ExperimentalWarning' && String(warning).startsWith('SQLite')) return;
    (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    builtin = (require('node:sqlite') as { DatabaseSync: SyncDatabaseClass }).DatabaseSync;
  } catch {
    builtin = null;
  } finally {
    process.emitWarning = emit;
  }
  return builtin;
}

/** The engine openSqlite uses by default on this Node. */
export function defaultEngine(): SqliteEngine {
  return nodeSqlite() === null ? 'libsql' : 'node:sqlite';
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

/**
 * `key`: the configuration key that asked for the embedded store, named when libsql is needed and not
 * installed. `engine`: defaultEngine() unless a test asks for the other.
 */
export function openSqlite(file: string, key = '[database.apim_db] type = "h2"', engine: SqliteEngine = defaultEngine()): SqlDriver {
  const Sqlite = engine === 'node:sqlite' ? nodeSqlite() : load<SyncDatabaseClass>('libsql', key);
  if (Sqlite === null)
    throw new StoreError(
      'STORE_CONNECT',
      `this Node.js (${process.version}) has no node:sqlite: the embedded store needs 22.13 or later, or the package libsql`,
    );
  let db: SyncDatabase;
  try {
    if (file !== ':memory:') ownerOnly(file);
    db = new Sqlite(file);
  } catch (err) {
    throw new StoreError('STORE_CONNECT', `cannot open the embedded database ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (file !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
  // FULL: the WAL is synced at every commit, so an acknowledged write (a revocation, a new client) survives
  // an OS crash or power loss, not only a process kill; NORMAL (SQLite's WAL default) syncs only at
  // checkpoints and may lose the last commits to an OS crash (sqlite.org/pragma.html#pragma_synchronous).
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA busy_timeout = 5000');
  // Deleted and overwritten rows are zeroed, so a secret replaced in place (a signing key encrypted at
  // start, a password hash upgraded) does not linger in free space of the file.
  db.exec('PRAGMA secure_delete = ON');
  let open = true;
  const statements = new Map<string, SyncStatement>();
  const prepare = (sql: string): SyncStatement => {
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
        return Promise.resolve(Number(prepare(sql).run(...params).changes));
      } catch (err) {
        return Promise.reject(mapError(err));
      }
    },
    close(): Promise<void> {
      statements.clear();
      // The write-ahead log still holds the old pages of rows replaced in place (a signing key encrypted at
      // start): emptied here, as SQLite does when its last connection closes cleanly. libsql's driver leaves
      // the -wal file whole at close (the plain JWK was found in it: test/keymanager/management-defences).
      if (open && file !== ':memory:') {
        try {
          db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        } catch {
          // Another connection may hold the log; its own close empties it.
        }
      }
      if (open) db.close();
      open = false;
      return Promise.resolve();
    },
  };
}
