/**
 * The databases the store tests run against: SQLite always (a temporary file; on a Node with node:sqlite
 * twice, once per engine of lib/store/sqlite.ts), PostgreSQL and
 * MariaDB/MySQL when THROUGHWAY_TEST_PG_URL / THROUGHWAY_TEST_MYSQL_URL point at a reachable server
 * (.ci/run exports both). Each run creates its own database and drops it afterwards, so concurrent runs
 * do not collide. `reason` says why a backend is skipped.
 */
import t, { type Test } from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DatabaseTable } from '../../lib/store/pool';
import type { SqlDriver } from '../../lib/store/sql';
import { defaultEngine, openSqlite, type SqliteEngine } from '../../lib/store/sqlite';
import { openDatabase } from '../../lib/store/open';

export interface Backend {
  readonly name: string;
  /** An SQLite engine other than the default one, opened directly (openDatabase picks the default). */
  readonly engine?: SqliteEngine;
  /** A `[database.apim_db]` table for a fresh database, or why there is none. */
  open(): Promise<{ table: DatabaseTable; cwd: string; drop: () => Promise<void> } | { reason: string }>;
}

const unique = (): string => `throughway_test_${process.pid}_${randomBytes(4).toString('hex')}`;

async function openSqliteDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-store-'));
  return {
    table: { type: 'h2', url: `jdbc:h2:${path.join(dir, 'apim_db')}` },
    cwd: dir,
    drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** SQLite through the engine this Node uses by default (node:sqlite from Node 22.13, else libsql). */
export const sqliteBackend: Backend = { name: `sqlite (${defaultEngine()})`, open: openSqliteDir };

/** SQLite through libsql on a Node that would use node:sqlite: the fallback engine tested on every Node. */
export const libsqlBackend: Backend = { name: 'sqlite (libsql)', engine: 'libsql', open: openSqliteDir };

/** The driver of an opened backend: openDatabase, or the backend's own SQLite engine. */
export async function openDriver(backend: Backend, opened: { table: DatabaseTable; cwd: string }): Promise<SqlDriver> {
  if (backend.engine === undefined) return openDatabase('apim_db', opened.table, opened.cwd);
  return openSqlite(path.join(opened.cwd, 'apim_db.sqlite'), undefined, backend.engine);
}

export const postgresBackend: Backend = {
  name: 'postgres',
  async open() {
    const url = process.env.THROUGHWAY_TEST_PG_URL;
    if (url === undefined || url === '') return { reason: 'THROUGHWAY_TEST_PG_URL is not set' };
    const { Client } = await import('pg');
    const admin = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await admin.connect();
    } catch (err) {
      return { reason: `PostgreSQL at ${url} is unreachable: ${(err as Error).message}` };
    }
    const db = unique();
    await admin.query(`CREATE DATABASE ${db}`);
    await admin.end();
    const u = new URL(url);
    u.pathname = `/${db}`;
    return {
      table: {
        type: 'postgre',
        url: `jdbc:${u.toString().replace(/^postgres:/, 'postgresql:')}`,
        pool_options: { maxActive: '4', maxWait: 5000 },
      },
      cwd: os.tmpdir(),
      drop: async () => {
        const c = new Client({ connectionString: url });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
        await c.end();
      },
    };
  },
};

export const mysqlBackend: Backend = {
  name: 'mysql',
  async open() {
    const url = process.env.THROUGHWAY_TEST_MYSQL_URL;
    if (url === undefined || url === '') return { reason: 'THROUGHWAY_TEST_MYSQL_URL is not set' };
    const mysql = await import('mysql2/promise');
    let admin;
    try {
      admin = await mysql.createConnection({ uri: url, connectTimeout: 2000 });
    } catch (err) {
      return { reason: `MySQL/MariaDB at ${url} is unreachable: ${(err as Error).message}` };
    }
    const db = unique();
    await admin.query(`CREATE DATABASE ${db}`);
    await admin.end();
    const u = new URL(url);
    u.pathname = `/${db}`;
    return {
      table: { type: 'mysql', url: `jdbc:${u.toString()}`, pool_options: { maxActive: '4', maxWait: 5000 } },
      cwd: os.tmpdir(),
      drop: async () => {
        const c = await mysql.createConnection({ uri: url });
        await c.query(`DROP DATABASE IF EXISTS ${db}`);
        await c.end();
      },
    };
  },
};

export const BACKENDS: readonly Backend[] = [
  sqliteBackend,
  ...(defaultEngine() === 'libsql' ? [] : [libsqlBackend]),
  postgresBackend,
  mysqlBackend,
];

/**
 * One tap subtest per backend, named after it: skipped with its reason when it cannot run, its database
 * dropped at the end, `run` given the opened database; `backends`: all of them unless named.
 */
export function eachBackend(
  run: (t: Test, backend: Backend, opened: { table: DatabaseTable; cwd: string }) => Promise<void>,
  backends: readonly Backend[] = BACKENDS,
): void {
  for (const backend of backends) {
    t.test(backend.name, async (t) => {
      const opened = await backend.open();
      if ('reason' in opened) {
        t.skip(`${backend.name}: ${opened.reason}`, () => undefined);
        return;
      }
      t.teardown(opened.drop);
      await run(t, backend, opened);
    });
  }
}
