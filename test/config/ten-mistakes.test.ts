/**
 * One file with ten different mistakes reports all ten, each with its code and line (docs/configuration.md,
 * "Validation": all errors are reported at once, not only the first).
 */
import t from 'tap';
import { formatDiagnostic } from '../../lib/config/diagnostics';
import { brief, errors, load } from './helpers';

// [line, code, key] for each mistake, next to the line that makes it.
const LINES: [string, string?, string?][] = [
  ['# A deployment.toml with ten mistakes.'],
  ['[server]'],
  ['hostname = "localhost"'],
  ['offset = "one"', 'CONFIG_TYPE', 'server.offset'],
  ['server_role = "gateway"', 'CONFIG_ALLOWED', 'server.server_role'],
  ['hostname = "example.com"', 'CONFIG_DUPLICATE', 'server.hostname'],
  [''],
  ['[passthru_http]'],
  ['worker_pool_size_core = 0', 'CONFIG_RANGE', 'passthru_http.worker_pool_size_core'],
  ['\'http.socket.timeout\' = "soon"', 'CONFIG_DURATION', 'passthru_http.http.socket.timeout'],
  ["'http.user.agent.preserve' = true"],
  [''],
  ['[apim.key_manager]'],
  ['service_url = "not a url"', 'CONFIG_URL', 'apim.key_manager.service_url'],
  ['username = "$ref{super_admin.nickname}"', 'CONFIG_REF_MISSING', 'apim.key_manager.username'],
  [''],
  ['[apim.workflow]'],
  ['username = "$ref{apim.event_hub.username}"', 'CONFIG_REF_CYCLE', 'apim.workflow.username'],
  ['[apim.event_hub]'],
  ['username = "$ref{apim.workflow.username}"'],
  [''],
  ['[super_admin]'],
  ['password = "$env{ADMIN_PASSWORD}"', 'CONFIG_ENV_MISSING', 'super_admin.password'],
  [''],
  ['[apim.cors]'],
  ['allow_origins = *', 'CONFIG_SYNTAX', ''],
];
const TEXT = `${LINES.map((l) => l[0]).join('\n')}\n`;
const EXPECTED = LINES.flatMap(([, code, key], i) => (code !== undefined ? [{ line: i + 1, code, key }] : []));

t.test('all ten mistakes are reported, in file order, with code, key and line', async (t) => {
  t.equal(EXPECTED.length, 10);
  t.equal(new Set(EXPECTED.map((e) => e.code)).size, 10, 'ten different kinds');
  const r = load(TEXT, { file: 'ten.toml' });
  t.notOk(r.ok);
  const got = errors(r).map((d) => ({ line: d.line, code: d.code, key: d.key }));
  t.same(got, EXPECTED, brief(r).join('\n'));
  t.same(
    r.diagnostics.filter((d) => d.level === 'warning'),
    [],
    'and nothing else',
  );
  for (const d of errors(r)) {
    const text = formatDiagnostic(d);
    t.match(text, new RegExp(`^ten\\.toml:${d.line}:\\d+: error ${d.code}`), `${d.code} formatted with file:line:col`);
    t.match(text, `\n  ${d.line} | `, `${d.code} shows its source line`);
  }
});

t.test('the syntax error carries line and column and the offending line', async (t) => {
  const r = load(TEXT, { file: 'ten.toml' });
  const syntax = errors(r).find((d) => d.code === 'CONFIG_SYNTAX');
  t.match(syntax, { line: 26, column: 17, source: 'allow_origins = *' });
  t.match(formatDiagnostic(syntax ?? ({} as never)), /\n {5}\| {17}\^/, 'a caret under the column');
  t.match(syntax?.expected, /a value/, 'what would have been accepted, in words');
});

t.test('under --strict an unknown key is an eleventh error', async (t) => {
  const r = load(TEXT.replace('[apim.cors]\n', '[apim.cors]\nallow_method = "GET"\n'), { strict: true });
  const unknown = errors(r).filter((d) => d.code === 'CONFIG_UNKNOWN_KEY');
  t.match(unknown, [{ key: 'apim.cors.allow_method', line: 26 }]);
  t.equal(errors(r).length, 11);
});
