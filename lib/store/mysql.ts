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

/**
 * A statement's error as the store reports it: mysql2 marks the errors that end a connection `fatal`
 * (PROTOCOL_CONNECTION_LOST, ECONNRESET, EPIPE, a closed connection): STORE_CONNECTION_LOST, and whether
 * a write committed is unknown.
 */
function mapError(err: unknown, description: string): unknown {
  // ER_DUP_ENTRY (1062): duplicate key.
  if ((err as { code?: unknown }).code === 'ER_DUP_ENTRY') return new StoreError('STORE_CONFLICT', (err as Error).message, { cause: err });
  if ((err as { fatal?: unknown }).fatal === true)
    return new StoreError(
      'STORE_CONNECTION_LOST',
      `${description}: connection lost during a statement (${(err as Error).message}); its outcome is unknown`,
      { cause: err },
    );
  return err;
}

/** `key`: the configuration key that asked for MySQL, named when mysql2 is not installed. */
export async function openMysql(
  target: ConnectionTarget,
  settings: PoolSettings,
  key = '[database.apim_db] type = "mysql"',
): Promise<SqlDriver> {
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
  // mysql2 gives a pooled connection one `once('error')` listener of its own: a second error on it would
  // have none and end the process. Every connection gets a lasting one when it is created.
  pool.on('connection', (c) => c.on('error', () => undefined));

  const acquire = (): Promise<PoolConnection> =>
    new Promise((resolve, reject) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        reject(
          new StoreError('STORE_POOL_TIMEOUT', `${description}: no free connection within ${settings.maxWait} ms (pool_options.maxWait)`),
        );
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
          throw mapError(err, description);
        }
      },
      end: () => pool.end(),
      // mysql2/promise wraps the same pooled connection in a new object at every getConnection: the
      // validation time is kept on the connection itself, or validationInterval would never spare a query.
      identity: (c) => c.connection,
    },
    settings,
  );
}
