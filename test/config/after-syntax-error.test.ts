/**
 * A TOML syntax error does not hide the file's other errors (docs/configuration.md, "Validation"): the
 * broken statement is set aside and the rest is parsed and checked, each error with its line. A table
 * header that does not parse takes its keys with it (they are not checked as keys of the table above);
 * a value left open ([, {, or a multi-line string) is reported where it starts, not on every line after.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { brief, CLI, errors, load, warnings } from './helpers';

const REST =
  '[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[apim.devportal]\nenable_comments = "yes"\n[transport.http]\nsocket_timeout = "soon"\n';

t.test('a broken table header: its keys set aside, the errors after it reported', async (t) => {
  const r = load(`[server]\nhostname = "localhost"\n[apim.sdk\ngroup_id = "x"\nenable_ratings = 3\n${REST}`);
  const syntax = errors(r).find((d) => d.code === 'CONFIG_SYNTAX');
  t.match(syntax, { line: 3, message: /the keys under it \(lines 4-5\) are not checked/ }, brief(r).join('\n'));
  t.notOk(
    r.diagnostics.some((d) => d.key.startsWith('server.group_id') || d.key.startsWith('server.enable_ratings')),
    'its keys are not taken as keys of [server]',
  );
  t.match(
    errors(r).find((d) => d.code === 'CONFIG_TYPE'),
    { key: 'apim.devportal.enable_comments', line: 10 },
    'an error after it, with its line',
  );
  t.match(warnings(r), [{ code: 'CONFIG_UNKNOWN_KEY', key: 'transport.http.socket_timeout', line: 12 }]);
});

t.test('an array left open: one error where it starts, the rest checked', async (t) => {
  const r = load(`[server]\nhostname = "localhost"\nx = [1, 2\n${REST}`);
  const syntax = errors(r).filter((d) => d.code === 'CONFIG_SYNTAX');
  t.equal(syntax.length, 1, brief(r).join('\n'));
  t.match(syntax[0], { line: 3, message: /the value of x is not closed before line 4/ });
  t.match(
    errors(r).find((d) => d.code === 'CONFIG_TYPE'),
    { key: 'apim.devportal.enable_comments', line: 8 },
  );
  const inline = load(`[server]\nhostname = "localhost"\nx = { a = 1\n${REST}`);
  t.match(
    errors(inline).filter((d) => d.code === 'CONFIG_SYNTAX'),
    [{ line: 3, message: /the value of x is not closed/ }],
    'an inline table too',
  );
  t.ok(errors(inline).some((d) => d.code === 'CONFIG_TYPE' && d.line === 8));
});

t.test('a multi-line string left open: reported where it starts, and why the rest is not checked', async (t) => {
  const r = load(`[server]\nhostname = """localhost\n${REST}`);
  t.match(
    errors(r),
    [
      {
        code: 'CONFIG_SYNTAX',
        line: 2,
        message: /the value of hostname is not closed before the end of the file \(the lines after it cannot be checked\)/,
      },
    ],
    brief(r).join('\n'),
  );
  t.equal(errors(r).length, 1, 'one error, not one per line');
});

t.test('config check prints them with file:line', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-syntax-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'deployment.toml');
  fs.writeFileSync(file, `[server]\nhostname = "localhost"\nx = [1, 2\n${REST}`);
  let out = '';
  try {
    execFileSync(process.execPath, [CLI, 'config', 'check', '--config', file], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    t.equal(e.status, 1, 'exit 1: configuration errors');
    out = `${e.stdout}${e.stderr}`;
  }
  t.match(out, /deployment\.toml:3:1: error CONFIG_SYNTAX: invalid TOML: the value of x is not closed before line 4/);
  t.match(out, /deployment\.toml:8:1: error CONFIG_TYPE apim\.devportal\.enable_comments/);
});

t.test(
  'the open value is found by counting brackets: an array left open before a table header, an inline table, a good array',
  async (t) => {
    // A table header after an array left open reads as a nested array: the error falls inside the header.
    const array = load(
      `[server]\nhostname = "localhost"\n[apim.cors]\nallow_origins = [\n  "https://a.example", # a [comment\n  "https://b.example]",\n${REST}`,
    );
    const syntax = errors(array).filter((d) => d.code === 'CONFIG_SYNTAX');
    t.equal(syntax.length, 1, brief(array).join('\n'));
    t.match(syntax[0], { line: 4, message: /the value of allow_origins is not closed before line 7$/ });
    t.ok(
      errors(array).some((d) => d.code === 'CONFIG_TYPE' && d.key === 'apim.devportal.enable_comments' && d.line === 11),
      'the rest is checked',
    );
    // An inline table left open before a header.
    const inline = load(`[server]\nhostname = "localhost"\nx = { a = [1, 2], b = "}"\n${REST}`);
    t.match(
      errors(inline).filter((d) => d.code === 'CONFIG_SYNTAX'),
      [{ line: 3, message: /the value of x is not closed before line 4$/ }],
    );
    // A multi-line array that is closed is no syntax error, and a broken header after it is the header's own.
    const good = load(`[apim.cors]\nallow_origins = [\n  "https://a.example",\n  "https://b.example",\n]\n${REST}`);
    t.same(
      errors(good).filter((d) => d.code === 'CONFIG_SYNTAX'),
      [],
      brief(good).join('\n'),
    );
    const header = load(`[apim.cors]\nallow_origins = [\n  "https://a.example",\n]\n[database.apim_db\n${REST}`);
    t.match(
      errors(header).filter((d) => d.code === 'CONFIG_SYNTAX'),
      [{ line: 5, message: /^invalid TOML: unexpected/ }],
    );
  },
);
