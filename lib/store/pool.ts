/**
 * `[database.apim_db]` connection settings for the external databases (spec 000): the JDBC-style `url`
 * (or `hostname` + `port`), `username`, `password`, `validationQuery` and `pool_options`.
 *
 * pool_options honoured: maxActive (most connections at once), maxWait (a borrower waiting longer for a
 * free connection fails with STORE_POOL_TIMEOUT), testOnBorrow with validationQuery and
 * validationInterval (a connection not validated within the interval runs the validation query before
 * use; one that fails it is dropped and another borrowed). defaultAutoCommit: every store operation is
 * a single statement and commits on its own, which is what true means; false changes nothing.
 */
import { StoreError } from './types';
import type { Param, Row, SqlDriver } from './sql';

export interface ConnectionTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string | undefined;
  readonly password: string | undefined;
}

export interface PoolSettings {
  readonly maxActive: number;
  readonly maxWait: number;
  readonly testOnBorrow: boolean;
  readonly validationQuery: string;
  readonly validationInterval: number;
}

export interface DatabaseTable {
  readonly type?: string;
  readonly url?: string;
  readonly hostname?: string;
  readonly port?: number;
  readonly username?: string;
  readonly password?: string;
  readonly validationQuery?: string;
  readonly pool_options?: {
    readonly maxActive?: string | number;
    readonly maxWait?: number;
    readonly testOnBorrow?: boolean;
    readonly validationInterval?: number;
  };
}

/**
 * Reads `jdbc:postgresql://host:port/db?...`, `jdbc:mysql://host:port/db?...` and the plain
 * `postgres://user:pass@host/db` / `mysql://...` forms. `hostname`/`port` apply when the url gives none;
 * `username`/`password` win over credentials in the url.
 */
export function connectionTarget(table: DatabaseTable, defaultPort: number, defaultDatabase: string): ConnectionTarget {
  let host = table.hostname ?? '127.0.0.1';
  let port = table.port ?? defaultPort;
  let database = defaultDatabase;
  let user: string | undefined;
  let password: string | undefined;
  if (table.url !== undefined && table.url !== '') {
    const raw = table.url.replace(/^jdbc:/i, '');
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new StoreError(
        'STORE_UNSUPPORTED',
        `database url ${JSON.stringify(table.url)} is not a URL of the form jdbc:<type>://host:port/database`,
      );
    }
    if (u.hostname !== '') host = u.hostname.replace(/^\[|\]$/g, '');
    if (u.port !== '') port = Number(u.port);
    const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
    if (db !== '') database = db;
    if (u.username !== '') user = decodeURIComponent(u.username);
    if (u.password !== '') password = decodeURIComponent(u.password);
  }
  if (table.username !== undefined) user = table.username;
  if (table.password !== undefined) password = table.password;
  return { host, port, database, user, password };
}

export function poolSettings(table: DatabaseTable): PoolSettings {
  const o = table.pool_options ?? {};
  const maxActive = Number(o.maxActive ?? 50);
  return {
    maxActive: Number.isFinite(maxActive) && maxActive >= 1 ? Math.floor(maxActive) : 50,
    maxWait: o.maxWait ?? 60000,
    testOnBorrow: o.testOnBorrow ?? true,
    validationQuery: table.validationQuery ?? 'SELECT 1',
    validationInterval: o.validationInterval ?? 30000,
  };
}

/**
 * What a network driver gives the shared pool logic: how to take a connection (errors already mapped to
 * StoreError), run the validation query on it, release it, throw away a broken one, and run a statement
 * (a connection lost under it thrown as STORE_CONNECTION_LOST: the pool discards that connection).
 * Every connection the driver opens has an 'error' listener from its creation on, idle or borrowed: a
 * database link cut while a statement runs fails that statement with a code and never the process.
 */
export interface DriverOps<C> {
  readonly kind: 'postgres' | 'mysql';
  readonly description: string;
  acquire(): Promise<C>;
  validate(c: C, sql: string): Promise<unknown>;
  release(c: C): void;
  discard(c: C, err: Error): void;
  query(c: C, sql: string, params: readonly Param[]): Promise<{ rows: Row[]; count: number }>;
  end(): Promise<void>;
  /** The object that stays the same for one connection across borrows (default: the borrowed value). */
  identity?(c: C): object;
}

/**
 * A SqlDriver over a connection pool, with `pool_options` applied the same way for every network database:
 * testOnBorrow runs validationQuery on a borrowed connection not validated within validationInterval; a
 * connection that fails it is discarded and another borrowed (spec 000, [database.apim_db]). The first
 * connection is opened here, so an unreachable server fails at start, not at the first token request.
 */
export async function pooledDriver<C extends object>(ops: DriverOps<C>, settings: PoolSettings): Promise<SqlDriver> {
  const validated = new WeakMap<object, number>();
  const identity = ops.identity ?? ((c: C): object => c);
  /** Borrowers holding or waiting for a connection (the data source health checker's pool usage). */
  let active = 0;
  const borrow = async (): Promise<C> => {
    for (let attempt = 0; ; attempt++) {
      const c = await ops.acquire();
      if (!settings.testOnBorrow) return c;
      const last = validated.get(identity(c)) ?? 0;
      if (Date.now() - last < settings.validationInterval) return c;
      try {
        await ops.validate(c, settings.validationQuery);
        validated.set(identity(c), Date.now());
        return c;
      } catch (err) {
        ops.discard(c, err as Error);
        if (attempt >= settings.maxActive)
          throw new StoreError('STORE_CONNECT', `${ops.description}: validation query failed: ${(err as Error).message}`, { cause: err });
      }
    }
  };
  const query = async (sql: string, params: readonly Param[]): Promise<{ rows: Row[]; count: number }> => {
    active++;
    try {
      const c = await borrow();
      let result: { rows: Row[]; count: number };
      try {
        result = await ops.query(c, sql, params);
      } catch (err) {
        // A connection that broke under the statement is thrown away, never handed to the next borrower.
        if (err instanceof StoreError && err.code === 'STORE_CONNECTION_LOST') ops.discard(c, err);
        else ops.release(c);
        throw err;
      }
      ops.release(c);
      return result;
    } finally {
      active--;
    }
  };
  try {
    ops.release(await borrow());
  } catch (err) {
    await ops.end().catch(() => undefined);
    throw err;
  }
  return {
    kind: ops.kind,
    description: ops.description,
    all: async (sql, params = []) => (await query(sql, params)).rows,
    run: async (sql, params = []) => (await query(sql, params)).count,
    close: () => ops.end(),
    poolUsage: () => ({ active, max: settings.maxActive }),
  };
}
