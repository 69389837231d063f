/**
 * Every IMPORT_* code is in docs/migrating.md's code table with the meaning lib/import/codes.ts gives it,
 * and the table lists no other; each code is asserted by a test of test/import/.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { IMPORT_CODES } from '../../lib/import/codes';

const root = path.join(__dirname, '..', '..', '..');
const doc = fs.readFileSync(path.join(root, 'docs', 'migrating.md'), 'utf8');

t.test('each code documented with its meaning, and only these', async (t) => {
  const rows = [...doc.matchAll(/^\| (IMPORT_[A-Z_]+) \| (.*) \|$/gm)].map((m) => [m[1], (m[2] as string).replace(/\\\|/g, '|')]);
  t.same(Object.fromEntries(rows), IMPORT_CODES);
});

t.test('each code is asserted by a test of test/import/', async (t) => {
  const dir = path.join(root, 'test', 'import');
  const tests = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts') && f !== 'codes.test.ts')
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
    .join('\n');
  for (const code of Object.keys(IMPORT_CODES)) t.match(tests, new RegExp(`${code}:`), code);
});
