/**
 * The SQL driver every SQL store runs over (SQLite, PostgreSQL, MySQL/MariaDB: sqlite.ts, postgres.ts,
 * mysql.ts): the key manager's tables (sql.ts) and the self-service tables (selfservice.ts) alike.
 */

export type Row = Record<string, unknown>;
export type Param = string | number | null;

export interface SqlDriver {
  readonly kind: 'sqlite' | 'postgres' | 'mysql';
  readonly description: string;
  /** Rows of a query. */
  all(sql: string, params?: readonly Param[]): Promise<Row[]>;
  /** Runs a statement; resolves to the number of rows it changed. A unique-key violation rejects with StoreError STORE_CONFLICT. */
  run(sql: string, params?: readonly Param[]): Promise<number>;
  close(): Promise<void>;
  /** Connections borrowed now and the pool's maximum (pooled drivers; the health check reads it). */
  poolUsage?(): PoolUsage;
}

export interface PoolUsage {
  readonly active: number;
  readonly max: number;
}
