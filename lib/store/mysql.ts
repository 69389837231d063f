/**
 * MySQL / MariaDB store driver (`[database.apim_db] type = "mysql"`, spec 000) over `mysql2`'s pool, with
 * `pool_options` applied as lib/store/pool.ts describes (mysql2 has no borrow timeout of its own, so
 * maxWait is a timer around getConnection).
 */
import type * as Mysql from 'mysql2/promise';
import type { PoolConnection, ResultSetHeader } from 'mysql2/promise';
import { load } from '../config/packages';
import { StoreError } from './types';
import type { Param, Row, SqlDriver } from './sql';
import { pooledDriver, type ConnectionTarget, type PoolSettings } from './pool';

function mapError(err: unknown): unknown {
  // ER_DUP_ENTRY (1062): duplicate key.
  if ((err as { code?: unknown }).code === 'ER_DUP_ENTRY') return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  return err;
}

/** `key`: the configuration key that asked for MySQL, named when mysql2 is not installed. */
export async function openMysql(target: ConnectionTarget, settings: PoolSettings, key = '[database.apim_db] type = "mysql"'): Promise<SqlDriver> {
  const { createPool } = load<typeof Mysql>('mysql2/promise', key);
  const pool = createPool({
    host: target.host,
    port: target.port,
    database: target.database,
    ...(target.user !== undefined ? { user: target.user } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    connectionLimit: settings.maxActive,
    connectTimeout: Math.max(1000, Math.min(settings.maxWait, 60000)),
    waitForConnections: true,
  });
  const description = `MySQL ${target.host}:${target.port}/${target.database}`;

  const acquire = (): Promise<PoolConnection> =>
    new Promise((resolve, reject) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        reject(new StoreError('STORE_POOL_TIMEOUT', `${description}: no free connection within ${settings.maxWait} ms (pool_options.maxWait)`));
      }, settings.maxWait);
      pool.getConnection().then(
        (c) => {
          clearTimeout(timer);
          if (timedOut) c.release();
          else resolve(c);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (!timedOut) reject(new StoreError('STORE_CONNECT', `${description}: ${(err as Error).message}`, { cause: err }));
        },
      );
    });

  return pooledDriver<PoolConnection>(
    {
      kind: 'mysql',
      description,
      acquire,
      validate: (c, sql) => c.query(sql),
      release: (c) => c.release(),
      discard: (c) => c.destroy(),
      query: async (c, sql, params) => {
        try {
          const [result] = await c.query(sql, params as Param[]);
          if (Array.isArray(result)) return { rows: result as Row[], count: 0 };
          return { rows: [], count: (result as ResultSetHeader).affectedRows };
        } catch (err) {
          throw mapError(err);
        }
      },
      end: () => pool.end(),
    },
    settings,
  );
}
