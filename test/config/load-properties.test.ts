/**
 * Property-based tests (fast-check) of the configuration loader: random edits of the reference's own
 * deployment.toml files (test/fixtures/deployment-toml, the same files as the shared fixtures) never make
 * loadConfig throw (lib/config/load.ts: "Never throws: every problem is a diagnostic"), and every error
 * names the file and a line of it (1-based, within the edited text), as docs/configuration.md promises for
 * `throughway config check`. fast-check prints the seed and the shrunk edit list on failure;
 * the suite runs a fixed seed (test/helpers/fc-seed.ts: `FC_SEED=<n>` replays a run,
 * `FC_SEED=random` explores).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import fc from 'fast-check';
import { loadConfig } from '../../lib/config/load';
import { FIXTURES } from './helpers';
import { fcParams } from '../helpers/fc-seed';

const params = fcParams;

const FILES = fs
  .readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.toml'))
  .sort();
const TEXTS = FILES.map((f) => ({ name: f, text: fs.readFileSync(path.join(FIXTURES, f), 'utf8') }));

/** Values of every TOML type (and some that are not TOML), for "change a value's type". */
const VALUES = [
  '"text"',
  '123',
  '-1',
  '1.5',
  'true',
  'false',
  '[1, "a"]',
  '{ a = 1 }',
  '1979-05-27T07:32:00Z',
  '"$env{NOT_SET}"',
  '"$ref{nowhere.key}"',
  '""',
  '99999999999999999999',
  'nan',
  '"\\u0000"',
  '[[]]',
  '{',
  '"unterminated',
];
/** Garbage lines: broken syntax, headers of every shape, stray bytes. */
const GARBAGE = [
  '[',
  ']]',
  '[[server]]',
  '[server',
  'a = ',
  '= 1',
  'x.y.z = 1',
  '"quoted key" = 2',
  '[apim.gateway.environment]',
  '[[apim.gateway.environment]]',
  '\u0000\u0001',
  '\ufeff',
  'key = """',
  "key = '''",
  '#',
  'a.b = 1\na = 2',
  '[transport.passthru_http]\n"listener.port" = "x"',
  '🙂 = 1',
];

type Edit =
  | { kind: 'delete'; line: number }
  | { kind: 'duplicate'; line: number }
  | { kind: 'retype'; line: number; value: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'garbage'; line: number; what: number | string }
  | { kind: 'swap'; line: number; other: number };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), line: fc.nat(), value: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('garbage' as const), line: fc.nat(), what: fc.oneof(fc.nat(), fc.string({ maxLength: 20 })) }),
  fc.record({ kind: fc.constant('swap' as const), line: fc.nat(), other: fc.nat() }),
);

function apply(text: string, e: Edit): string {
  const lines = text.split('\n');
  const n = lines.length;
  switch (e.kind) {
    case 'delete':
      lines.splice(e.line % n, 1);
      break;
    case 'duplicate':
      lines.splice(e.line % n, 0, lines[e.line % n]!);
      break;
    case 'retype': {
      // The first key = value line at or after the chosen one gets a value of another type.
      for (let k = 0; k < n; k++) {
        const i = (e.line + k) % n;
        const m = /^(\s*[^#=[\s][^=]*=\s*)(.*)$/.exec(lines[i]!);
        if (m !== null) {
          lines[i] = m[1]! + VALUES[e.value % VALUES.length]!;
          break;
        }
      }
      break;
    }
    case 'truncate':
      return text.slice(0, e.at % (text.length + 1));
    case 'garbage':
      lines.splice(e.line % (n + 1), 0, typeof e.what === 'number' ? GARBAGE[e.what % GARBAGE.length]! : e.what);
      break;
    case 'swap': {
      const a = e.line % n;
      const b = e.other % n;
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      break;
    }
  }
  return lines.join('\n');
}

t.test('the fixtures are there', async (t) => {
  t.equal(TEXTS.length, 4, FILES.join(', '));
});

t.test('random edits of real files: never a throw, every error has the file and a line', async (t) => {
  let failing = 0;
  const codes = new Set<string>();
  fc.assert(
    fc.property(fc.nat({ max: TEXTS.length - 1 }), fc.array(edit, { minLength: 1, maxLength: 4 }), fc.boolean(), (which, edits, strict) => {
      const { name, text: original } = TEXTS[which]!;
      const text = edits.reduce(apply, original);
      const file = `conf/${name}`;
      const r = loadConfig({ file, text, env: {}, strict });
      const lineCount = text.split('\n').length;
      for (const d of r.diagnostics) {
        if (d.level !== 'error') continue;
        codes.add(d.code);
        if (d.file !== file) throw new Error(`${d.code} ${d.key}: file ${JSON.stringify(d.file)}, expected ${file}`);
        if (!Number.isInteger(d.line) || d.line < 1 || d.line > lineCount) {
          throw new Error(`${d.code} ${d.key}: line ${d.line} is not a line of the ${lineCount}-line file (${d.message})`);
        }
        if (typeof d.message !== 'string' || d.message === '') throw new Error(`${d.code} ${d.key}: no message`);
      }
      if (r.ok !== !r.diagnostics.some((d) => d.level === 'error')) throw new Error('ok disagrees with the diagnostics');
      if (!r.ok) failing++;
    }),
    params(250),
  );
  t.ok(failing > 30, `the edits did break files (${failing} of 250 refused; codes: ${[...codes].sort().join(' ')})`);
});

t.test('found by the property above: a wrong-typed value copied into schema defaults by $ref is placed on its line', async (t) => {
  // [super_admin] username feeds nine defaults through $ref{super_admin.username}; each default's type
  // error used to say line 0 (no line), nine times.
  const text = '[server]\nhostname = "localhost"\n\n[super_admin]\nusername = [[]]\npassword = "admin"\n';
  const r = loadConfig({ file: 'conf/x.toml', text, env: {} });
  const errs = r.diagnostics.filter((d) => d.level === 'error');
  t.ok(errs.length > 1, `${errs.length} errors`);
  t.same(
    errs.filter((d) => d.line !== 5).map((d) => `${d.key} @${d.line}`),
    [],
    'every error on line 5',
  );
  t.match(errs.find((d) => d.key === 'apim.key_manager.username')?.message, /\(schema default, from super_admin\.username\)/);
});

t.test('found by the property above: a dotted key is located on its own line, also where the diagnostic names a prefix', async (t) => {
  // `x.y.z = 1` at the top of a file reported "unknown key 'x'" on line 0, and under [server] on the
  // header's line: only the full dotted path had a position, not the tables it implies.
  const top = loadConfig({ file: 'conf/x.toml', text: 'x.y.z = 1\n[server]\nhostname = "a"\n', env: {}, strict: true });
  t.same(
    top.diagnostics.filter((d) => d.level === 'error').map((d) => [d.code, d.key, d.line]),
    [['CONFIG_UNKNOWN_KEY', 'x', 1]],
  );
  const inner = loadConfig({ file: 'conf/x.toml', text: '[server]\nhostname = "a"\nx.y.z = 1\n', env: {}, strict: true });
  t.same(
    inner.diagnostics.filter((d) => d.level === 'error').map((d) => [d.code, d.key, d.line]),
    [['CONFIG_UNKNOWN_KEY', 'server.x', 3]],
  );
  // A table written after the dotted keys that implied it is not a duplicate of them.
  const later = loadConfig({
    file: 'conf/x.toml',
    text: '[server]\nhostname = "a"\n[apim]\nsync_runtime_artifacts.gateway.skip_list.apis = []\n',
    env: {},
  });
  t.same(
    later.diagnostics.filter((d) => d.code === 'CONFIG_DUPLICATE'),
    [],
    'no duplicate',
  );
});
