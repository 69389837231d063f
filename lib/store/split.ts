/**
 * `[database.shared_db]` apart from `[database.apim_db]` (spec 000): as in the reference, the user realm
 * (users with their roles and password digests, their profiles, and the tenants they belong to) lives in
 * the shared database, and applications, OAuth clients, subscriptions, tokens, signing keys, blocking
 * conditions, workflows, tenants' bandwidth counts and the rest of self-service in apim_db (docs/operations.md, "Two databases").
 * Both databases carry the whole schema (lib/store/migrations.ts); each table is written in one of them only.
 *
 * Rows of the user realm already in apim_db (a deployment that adds shared_db later) are moved once, at
 * start, before anything reads them: each row is copied to shared_db unless shared_db holds the same row
 * already, and deleted from apim_db only when every row is in shared_db. A row whose key shared_db holds
 * with other values stops the start (STORE_USERS_SPLIT) with nothing deleted.
 */
import { randomUUID } from 'node:crypto';
import type { SelfServiceStore } from './selfservice';
import type { Param, Row, SqlDriver } from './sql';
import { StoreError, type Store } from './types';

/** The Store methods answered by shared_db's store. */
export const SHARED_METHODS: ReadonlySet<keyof Store> = new Set<keyof Store>([
  'addTenant',
  'getTenant',
  'listTenants',
  'setTenantActive',
  'setTenantPackage',
  'addUser',
  'getUser',
  'getUsersIgnoringCase',
  'listUsers',
  'deleteUser',
  'setUserRoles',
  'setUserPassword',
]);

/** The self-service methods answered by shared_db's store: a user's profile (the reference's user claims). */
export const SHARED_SELF_SERVICE: ReadonlySet<keyof SelfServiceStore> = new Set<keyof SelfServiceStore>([
  'saveProfile',
  'getProfile',
  'profilesByEmail',
  'profilesByOrganization',
  'confirmProfile',
  'deleteProfile',
]);

/** The tables of the user realm, each with its key columns, in the order they are moved. */
export const SHARED_TABLES: readonly { readonly table: string; readonly key: readonly string[] }[] = [
  { table: 'tw_tenant', key: ['domain'] },
  { table: 'tw_user', key: ['username'] },
  { table: 'tw_user_profile', key: ['username'] },
];

function route<T extends object>(apim: T, shared: T, names: ReadonlySet<PropertyKey>, extra: (p: PropertyKey) => unknown): T {
  return new Proxy(apim, {
    get(target, p, receiver) {
      const special = extra(p);
      if (special !== undefined) return special;
      const from = names.has(p) ? shared : target;
      const v: unknown = Reflect.get(from, p, from === target ? receiver : from);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(from) : v;
    },
  });
}

/** One Store over two: the user realm's methods to `shared`, the rest to `apim`; closing closes both. */
export function splitStore(apim: Store, shared: Store): Store {
  const selfService = route(apim.selfService, shared.selfService, SHARED_SELF_SERVICE, () => undefined);
  const description = `${apim.description}; users, roles and tenants in ${shared.description} ([database.shared_db])`;
  const close = async (): Promise<void> => {
    const r = await Promise.allSettled([apim.close(), shared.close()]);
    const failed = r.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  };
  return route(apim, shared, SHARED_METHODS, (p) => {
    if (p === 'selfService') return selfService;
    if (p === 'description') return description;
    if (p === 'close') return close;
    return undefined;
  });
}

/** The database's own id (tw_database, made on first use): two drivers with the same id reach one database. */
export async function databaseId(db: SqlDriver): Promise<string> {
  const read = async (): Promise<string | undefined> => {
    const r = (await db.all(`SELECT id FROM tw_database WHERE name = ?`, ['self']))[0];
    return r === undefined ? undefined : String(r.id);
  };
  const found = await read();
  if (found !== undefined) return found;
  try {
    await db.run(`INSERT INTO tw_database (name, id) VALUES (?, ?)`, ['self', randomUUID()]);
  } catch (err) {
    // Another node made it between the read and the insert.
    if (!(err instanceof StoreError && err.code === 'STORE_CONFLICT')) throw err;
  }
  const made = await read();
  if (made === undefined) throw new StoreError('STORE_MIGRATION', `${db.description}: tw_database holds no id after it was written`);
  return made;
}

const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

/** Whether two rows of one table hold the same values (drivers differ in number types: compared as text). */
function same(a: Row, b: Row): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if (text(a[k]) !== text(b[k])) return false;
  return true;
}

type SharedTable = (typeof SHARED_TABLES)[number];
const whereKey = (t: SharedTable): string => t.key.map((k) => `${k} = ?`).join(' AND ');
const keyOf = (t: SharedTable, r: Row): string[] => t.key.map((k) => text(r[k]));
/** The row of `t` with `r`'s key in `db`, if any. */
async function byKey(db: SqlDriver, t: SharedTable, r: Row): Promise<Row | undefined> {
  return (await db.all(`SELECT * FROM ${t.table} WHERE ${whereKey(t)}`, keyOf(t, r)))[0];
}

export interface MovedRows {
  /** Rows moved from apim_db to shared_db, per table. */
  readonly moved: Readonly<Record<string, number>>;
  /** Rows apim_db held that shared_db held already, the same, deleted from apim_db. */
  readonly alreadyThere: number;
}

/**
 * Moves the user realm's rows from apim_db to shared_db (see the top of this file). Throws
 * STORE_USERS_SPLIT, having deleted nothing, when shared_db holds a key of apim_db's rows with other values.
 */
export async function moveUserRealm(apim: SqlDriver, shared: SqlDriver): Promise<MovedRows> {
  const pending: { table: string; key: readonly string[]; rows: Row[] }[] = [];
  const conflicts: string[] = [];
  for (const t of SHARED_TABLES) {
    const rows = await apim.all(`SELECT * FROM ${t.table}`);
    if (rows.length === 0) continue;
    for (const r of rows) {
      const there = await byKey(shared, t, r);
      if (there !== undefined && !same(r, there)) conflicts.push(`${t.table} ${keyOf(t, r).join(' ')}`);
    }
    pending.push({ ...t, rows });
  }
  if (conflicts.length > 0) {
    const shown = conflicts.slice(0, 10).join(', ') + (conflicts.length > 10 ? `, and ${conflicts.length - 10} more` : '');
    throw new StoreError(
      'STORE_USERS_SPLIT',
      `[database.apim_db] (${apim.description}) holds users, tenants or profiles whose names [database.shared_db] (${shared.description}) holds with other values: ${shown}. ` +
        'Nothing was moved or deleted. Keep one of each (delete the other row from its database, docs/operations.md "Two databases"), or remove [database.shared_db] to keep using apim_db alone',
    );
  }
  const moved: Record<string, number> = {};
  let alreadyThere = 0;
  for (const t of pending) {
    let n = 0;
    for (const r of t.rows) {
      if ((await byKey(shared, t, r)) !== undefined) {
        alreadyThere++;
        continue;
      }
      const cols = Object.keys(r);
      const values = cols.map((c): Param => {
        const v = r[c];
        return v === null || v === undefined ? null : typeof v === 'number' || typeof v === 'string' ? v : String(v);
      });
      await shared.run(`INSERT INTO ${t.table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, values);
      n++;
    }
    moved[t.table] = n;
  }
  // Every row is in shared_db now: apim_db's copies go.
  for (const t of pending) for (const r of t.rows) await apim.run(`DELETE FROM ${t.table} WHERE ${whereKey(t)}`, keyOf(t, r));
  return { moved, alreadyThere };
}
