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

function mapError(err: unknown): unknown {
  // 23505 unique_violation (PostgreSQL Appendix A, class 23: integrity constraint violation).
  if ((err as { code?: unknown }).code === '23505') return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  return err;
}

/** `key`: the configuration key that asked for PostgreSQL, named when pg is not installed. */
export async function openPostgres(target: ConnectionTarget, settings: PoolSettings, key = '[database.apim_db] type = "postgre"'): Promise<SqlDriver> {
  const { Pool } = load<typeof Pg>('pg', key);
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
  // An idle client's connection dropped by the server must not crash the process (pg emits it on the pool).
  pool.on('error', () => undefined);
  const description = `PostgreSQL ${target.host}:${target.port}/${target.database}`;
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
          throw mapError(err);
        }
      },
      end: () => pool.end(),
    },
    settings,
  );
}
