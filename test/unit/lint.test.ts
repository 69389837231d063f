/**
 * The house rules ESLint keeps (eslint.config.mjs, scripts/lint/rules.ts; docs/architecture.md, "House
 * rules a machine keeps"): each rule reports a planted violation and stays quiet on the allowed form.
 * The whole tree is linted by `npm test`'s pretest (`npm run lint`).
 */
import t from 'tap';
import * as path from 'node:path';
import { ESLint } from 'eslint';

const root = path.join(__dirname, '..', '..', '..');
const eslint = new ESLint({ cwd: root });

/** The rule ids ESLint reports for `code` as if it were the file `file` (relative to the repository). */
async function reported(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

t.test('floors: an import up the floors is reported, one down is not', async (t) => {
  const up = await reported('lib/transport/planted.ts', "import { x } from '../gateway/router';\nexport const y = x;\n");
  t.equal(up.length, 2, up.join('\n'));
  t.match(up.join('\n'), /throughway\/floors: \.\.\/gateway\/router: transport\/ and tls\/ import nothing above them/);
  t.match(up.join('\n'), /transport \(floor 2\) imports gateway \(floor 5\), a floor above it/);
  t.same(await reported('lib/gateway/planted.ts', "import { x } from '../transport/source';\nexport const y = x;\n"), []);
  const lazy = await reported('lib/security/planted.ts', "export const load = () => require('../gateway/router');\n");
  t.match(lazy.join('\n'), /security\/, throttle\/ and mediation\/ do not import gateway\//, 'a require() is read too');
  const observers = await reported('lib/gateway/planted.ts', "export { a } from '../observability/metrics';\n");
  t.match(observers.join('\n'), /only the boot and the face .* import observability\//);
  const noFloor = await reported('lib/attic/planted.ts', "import '../log';\n");
  t.match(noFloor.join('\n'), /room "attic" has no floor in FLOORS/);
});

t.test('process.env only in lib/config', async (t) => {
  const code = 'export const port = process.env.PORT;\n';
  const outside = await reported('lib/gateway/planted.ts', code);
  t.match(outside.join('\n'), /no-restricted-properties: .*read only in lib\/config/);
  t.same(await reported('lib/config/planted.ts', code), []);
  t.same(await reported('test/unit/planted.ts', code), [], 'tests may read it');
});

t.test('errors: no bare throw new Error, no class extending Error directly', async (t) => {
  const bare = await reported('lib/store/planted.ts', "export function f(): never {\n  throw new Error('x');\n}\n");
  t.match(bare.join('\n'), /no-restricted-syntax: throw a ThroughwayError subclass/);
  const klass = await reported('lib/store/planted.ts', 'export class E extends Error {}\n');
  t.match(klass.join('\n'), /no-restricted-syntax: errors extend ThroughwayError/);
  const good = await reported(
    'lib/store/planted.ts',
    "import { InternalError } from '../errors';\nexport function f(): never {\n  throw new InternalError('x');\n}\n",
  );
  t.same(good, []);
});

t.test('a disable comment that silences nothing is itself reported', async (t) => {
  const stale = await reported(
    'lib/store/planted.ts',
    '// eslint-disable-next-line no-restricted-syntax -- nothing here\nexport const a = 1;\n',
  );
  t.match(stale.join('\n'), /Unused eslint-disable directive/);
});
