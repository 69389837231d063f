/**
 * How a [database.*] table maps onto storage throughway can open.
 *
 * The spec's embedded database is h2 (spec 000, [database.apim_db]: type default h2, url "embedded file
 * database URL"); Node has no h2, so an h2 database becomes an embedded SQLite file at the same place the
 * h2 URL names (`jdbc:h2:./repository/database/WSO2AM_DB` → `./repository/database/WSO2AM_DB.sqlite`),
 * or `var/<name>.sqlite` when no URL is given; `jdbc:h2:mem:` stays in memory. Relative paths are
 * resolved from the working directory, as the reference resolves them from its server home.
 */
import * as path from 'node:path';

export type DatabaseMapping =
  | { readonly kind: 'sqlite'; readonly file: string; readonly from: string }
  | { readonly kind: 'external'; readonly type: string; readonly url?: string };

export function databaseMapping(
  name: string,
  table: { readonly type?: string; readonly url?: string } | undefined,
  cwd: string,
): DatabaseMapping {
  const type = table?.type ?? 'h2';
  const url = table?.url;
  if (type !== 'h2') return url !== undefined ? { kind: 'external', type, url } : { kind: 'external', type };
  if (url === undefined || url === '') return { kind: 'sqlite', file: path.resolve(cwd, 'var', `${name}.sqlite`), from: 'no url given' };
  const m = /^jdbc:h2:(?:file:)?([^;]*)/i.exec(url);
  const target = m?.[1] ?? '';
  if (/^mem:/i.test(target)) return { kind: 'sqlite', file: ':memory:', from: url };
  if (target === '' || target.includes('${')) return { kind: 'sqlite', file: path.resolve(cwd, 'var', `${name}.sqlite`), from: url };
  return { kind: 'sqlite', file: path.resolve(cwd, `${target}.sqlite`), from: url };
}
