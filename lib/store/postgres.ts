/**
 * PostgreSQL store driver (`[database.apim_db] type = "postgre"`, spec 000) over `pg`'s pool, with
 * `pool_options` applied as lib/store/pool.ts describes.
 */
import type * as Pg from 'pg';
import type { PoolClient } from 'pg';
import { load } from '../config/packages';
import { StoreError } from './types';
import type { Param, Row, SqlDriver } from './sql';
import { pooledDriver, type ConnectionTarget, type PoolSettings } from './pool';

/** `?` placeholders to PostgreSQL's `$1, $2, ...` (the store's SQL has no `?` inside literals). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * A statement's error as the store reports it. `isServerError`: the error is the server's answer (pg's
 * DatabaseError, with an SQLSTATE). Anything else thrown by a query (the socket reset or ended, "Connection
 * terminated unexpectedly", a client no longer queryable) and the server's own connection classes (08
 * connection exception, 57P01..57P03 shutdown / cannot connect now; PostgreSQL Appendix A) mean the
 * link is gone: STORE_CONNECTION_LOST, and whether a write committed is unknown.
 */
function mapError(err: unknown, isServerError: (e: unknown) => boolean, description: string): unknown {
  const code = (err as { code?: unknown }).code;
  // 23505 unique_violation (PostgreSQL Appendix A, class 23: integrity constraint violation).
  if (code === '23505') return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  const lost = !isServerError(err) || (typeof code === 'string' && (code.startsWith('08') || /^57P0[123]$/.test(code)));
  if (lost)
    return new StoreError(
      'STORE_CONNECTION_LOST',
      `${description}: connection lost during a statement (${(err as Error).message}); its outcome is unknown`,
      { cause: err },
    );
  return err;
}

const ignore = (): void => undefined;

/** `key`: the configuration key that asked for PostgreSQL, named when pg is not installed. */
export async function openPostgres(
  target: ConnectionTarget,
  settings: PoolSettings,
  key = '[database.apim_db] type = "postgre"',
): Promise<SqlDriver> {
  const { Pool, DatabaseError } = load<typeof Pg>('pg', key);
  const pool = new Pool({
    host: target.host,
    port: target.port,
    database: target.database,
    ...(target.user !== undefined ? { user: target.user } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    max: settings.maxActive,
    // pg applies this both to waiting for a free pooled client and to connecting: maxWait's meaning.
    connectionTimeoutMillis: settings.maxWait,
  });
  // pg emits 'error' on the pool for an idle client and on the client itself, idle or checked out: a
  // client with no listener whose link breaks during a query ends the process. Every client gets one
  // when it is created; the failed query rejects on its own and mapError codes it.
  pool.on('error', ignore);
  pool.on('connect', (client) => client.on('error', ignore));
  const description = `PostgreSQL ${target.host}:${target.port}/${target.database}`;
  const isServerError = (e: unknown): boolean => e instanceof DatabaseError;
  return pooledDriver<PoolClient>(
    {
      kind: 'postgres',
      description,
      acquire: async () => {
        try {
          return await pool.connect();
        } catch (err) {
          const msg = (err as Error).message;
          const code = /timeout/i.test(msg) ? 'STORE_POOL_TIMEOUT' : 'STORE_CONNECT';
          throw new StoreError(code, `${description}: ${msg}`, { cause: err });
        }
      },
      validate: (c, sql) => c.query(sql),
      release: (c) => c.release(),
      discard: (c, err) => c.release(err),
      query: async (c, sql, params) => {
        try {
          const r = await c.query(numbered(sql), params as Param[]);
          return { rows: r.rows as Row[], count: r.rowCount ?? 0 };
        } catch (err) {
          throw mapError(err, isServerError, description);
        }
      },
      end: () => pool.end(),
    },
    settings,
  );
}
