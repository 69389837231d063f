/**
 * `require('throughway')` loads no driver, Redis client, node-forge, XML parser or worker pool: they are
 * required on first use (lib/config/packages.ts; docs/performance.md, "Import and start-up"). A missing
 * one is PACKAGE_MISSING, naming the package and the key that asked for it (docs/operations.md,
 * "Start-up errors").
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LAZY_PACKAGES, load, PackageMissingError } from '../../lib/config/packages';

const dist = path.join(__dirname, '..', '..');

t.test('the import loads none of the packages loaded on first use', async (t) => {
  const script = `require(${JSON.stringify(path.join(dist, 'lib', 'index.js'))}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
  t.ok(
    loaded.some((f) => f.includes(`${path.sep}node_modules${path.sep}pino${path.sep}`)),
    'the list is real: pino (the logger) is loaded',
  );
  for (const name of LAZY_PACKAGES) {
    const hits = loaded.filter((f) => f.includes(`${path.sep}node_modules${path.sep}${name}${path.sep}`));
    t.strictSame(hits, [], `${name} is not loaded at import`);
  }
});

t.test('a package that is not installed is PACKAGE_MISSING with the package and the key', async (t) => {
  let err: unknown;
  try {
    load('throughway-no-such-package/promise', '[database.apim_db] type = "postgre"');
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof PackageMissingError);
  const e = err as PackageMissingError;
  t.equal(e.code, 'PACKAGE_MISSING');
  t.equal(e.packageName, 'throughway-no-such-package', 'the package to install, not the file inside it');
  t.equal(e.key, '[database.apim_db] type = "postgre"');
  t.match(e.message, /npm install throughway-no-such-package\b/);
  t.match(e.message, /\[database\.apim_db\] type = "postgre"/);
  t.equal(load<typeof import('node:path')>('node:path', 'x').sep, path.sep, 'an installed module is returned');
});

t.test('a store whose driver is absent refuses to open, naming it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-lazy-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // libsql and pg made unresolvable, as in an install with --omit=optional.
  const hide = path.join(dir, 'hide.js');
  fs.writeFileSync(
    hide,
    `const M = require('node:module'); const r = M._resolveFilename; M._resolveFilename = function (req, ...a) {
      if (req === 'libsql' || req === 'pg') { const e = new Error("Cannot find module '" + req + "'"); e.code = 'MODULE_NOT_FOUND'; throw e; }
      return r.call(this, req, ...a); };`,
  );
  const open = path.join(dist, 'lib', 'store', 'open.js');
  const sqlite = path.join(dist, 'lib', 'store', 'sqlite.js');
  // The libsql engine asked for directly: on Node 22.13 and later the default engine is node:sqlite, which
  // needs no package.
  const script = `const { openDatabase } = require(${JSON.stringify(open)}); const { openSqlite, defaultEngine } = require(${JSON.stringify(sqlite)});
    const report = (p) => p.then((d) => { d.close(); return 'opened ' + d.description; }, (e) => e.code + ' ' + e.message);
    Promise.all([report(openDatabase('apim_db', {}, ${JSON.stringify(dir)})), report(openDatabase('shared_db', { type: 'postgre', url: 'jdbc:postgresql://127.0.0.1:1/x' }, ${JSON.stringify(dir)})),
      report(Promise.resolve().then(() => openSqlite(${JSON.stringify(path.join(dir, 'direct.sqlite'))}, '[database.apim_db] type = "h2"', 'libsql'))), defaultEngine()]).then((r) => process.stdout.write(JSON.stringify(r)));`;
  const [h2, pg, direct, engine] = JSON.parse(execFileSync(process.execPath, ['-r', hide, '-e', script], { encoding: 'utf8' })) as [
    string,
    string,
    string,
    string,
  ];
  t.match(
    direct,
    /^PACKAGE_MISSING .*\[database\.apim_db\] type = "h2".*npm install libsql\b/,
    'the libsql engine without libsql: the key and the package',
  );
  if (engine === 'libsql')
    t.equal(h2, direct.replace(/direct\.sqlite/g, 'apim_db.sqlite'), 'this Node has no node:sqlite: the embedded store needs libsql');
  else t.match(h2, /^opened embedded SQLite .*apim_db\.sqlite$/, 'node:sqlite needs no package');
  t.match(pg, /^PACKAGE_MISSING .*\[database\.shared_db\] type = "postgre".*npm install pg\b/);
});
