/**
 * A private database on the machine's PostgreSQL or MariaDB/MySQL for tests that reach it through a
 * forwarder (test/store/forwarder.ts): THROUGHWAY_TEST_PG_URL / THROUGHWAY_TEST_MYSQL_URL when set, else
 * the local servers (postgres://postgres@127.0.0.1:5432, mysql://root@127.0.0.1:3306). Created for one
 * test, dropped after; `reason` says why there is none.
 */
import { randomBytes } from 'node:crypto';

export interface PrivateDatabase {
  readonly kind: 'postgre' | 'mysql';
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string | undefined;
  /** The jdbc URL of this database at another host:port (a forwarder). */
  urlVia(port: number): string;
  /** Reads the names of the store's applications directly, not through the node. */
  applicationNames(): Promise<string[]>;
  drop(): Promise<void>;
}

const unique = (): string => `throughway_cut_${process.pid}_${randomBytes(4).toString('hex')}`;

export async function privatePostgres(): Promise<PrivateDatabase | { reason: string }> {
  const url = new URL(process.env.THROUGHWAY_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres');
  const { Client } = await import('pg');
  const connect = async (database: string): Promise<InstanceType<typeof Client>> => {
    const u = new URL(url);
    u.pathname = `/${database}`;
    const c = new Client({ connectionString: u.toString(), connectionTimeoutMillis: 2000 });
    await c.connect();
    return c;
  };
  let admin;
  try {
    admin = await connect(url.pathname.slice(1) || 'postgres');
  } catch (err) {
    return { reason: `PostgreSQL at ${url.host} is unreachable: ${(err as Error).message}` };
  }
  const name = unique();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const user = decodeURIComponent(url.username) || 'postgres';
  const password = url.password !== '' ? decodeURIComponent(url.password) : undefined;
  return {
    kind: 'postgre',
    name,
    host: url.hostname,
    port: Number(url.port || 5432),
    user,
    password,
    urlVia: (port) => `jdbc:postgresql://127.0.0.1:${port}/${name}`,
    async applicationNames() {
      const c = await connect(name);
      try {
        return (await c.query('SELECT name FROM tw_application')).rows.map((r: { name: string }) => r.name);
      } finally {
        await c.end();
      }
    },
    async drop() {
      const c = await connect(url.pathname.slice(1) || 'postgres');
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function privateMysql(): Promise<PrivateDatabase | { reason: string }> {
  const url = new URL(process.env.THROUGHWAY_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/');
  const mysql = await import('mysql2/promise');
  const user = decodeURIComponent(url.username) || 'root';
  const password = url.password !== '' ? decodeURIComponent(url.password) : undefined;
  const connect = (database?: string) =>
    mysql.createConnection({
      host: url.hostname,
      port: Number(url.port || 3306),
      user,
      ...(password !== undefined ? { password } : {}),
      ...(database !== undefined ? { database } : {}),
      connectTimeout: 2000,
    });
  let admin;
  try {
    admin = await connect();
  } catch (err) {
    return { reason: `MySQL/MariaDB at ${url.host} is unreachable: ${(err as Error).message}` };
  }
  const name = unique();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    kind: 'mysql',
    name,
    host: url.hostname,
    port: Number(url.port || 3306),
    user,
    password,
    urlVia: (port) => `jdbc:mysql://127.0.0.1:${port}/${name}`,
    async applicationNames() {
      const c = await connect(name);
      try {
        const [rows] = await c.query('SELECT name FROM tw_application');
        return (rows as { name: string }[]).map((r) => r.name);
      } finally {
        await c.end();
      }
    },
    async drop() {
      const c = await connect();
      await c.query(`DROP DATABASE IF EXISTS ${name}`);
      await c.end();
    },
  };
}
