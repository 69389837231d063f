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
      throw new Error(`database url ${JSON.stringify(table.url)} is not a URL of the form jdbc:<type>://host:port/database`);
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
