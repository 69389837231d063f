/**
 * Secrets never appear in `config print` output nor in any diagnostic (docs/configuration.md): one distinctive value
 * is written into every kind of secret place, including keys with errors, and all output is searched.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { formatDiagnostic } from '../../lib/config/diagnostics';
import { printConfig } from '../../lib/config/print';
import { CLI, at, load } from './helpers';

const SECRET = 'Zq7xSECRETvalue41';

const TEXT = [
  '[super_admin]',
  `password = "${SECRET}"`,
  '[database.apim_db]',
  'username = "db"',
  'password = "$env{DB_PASS}"',
  '[apim.ai]',
  `token = "${SECRET}"`,
  '[keystore.tls]',
  `password = "${SECRET}"`,
  `key_password = "${SECRET}"`,
  '[apim.key_manager]',
  'username = "$ref{super_admin.password}"',
  '[apim.devportal]',
  'url = "$ref{super_admin.password}"',
  '[apim.workflow]',
  `client_registration_password = { nested = "${SECRET}" }`,
  '[passthru_http]',
  'http.socket.timeout = "$ref{super_admin.password}"',
  "'http.user.agent.preserve' = true",
  '[user_store.properties]',
  `ConnectionPassword = "${SECRET}"`,
  '[security_audit]',
  `api_token = "${SECRET}"`,
  '[custom_keystore.partner]',
  `password = "${SECRET}"`,
  `key_password = "${SECRET}"`,
  `inline = { user = "x", password = "${SECRET}", port = "bad" }`,
  '[apim.throttling.jms]',
  `password = ${SECRET}`,
  '',
].join('\n');

const ENV = { DB_PASS: SECRET };

t.test('the test file exercises errors on secret keys', async (t) => {
  const r = load(TEXT, { env: ENV });
  const codes = r.diagnostics.map((d) => `${d.code} ${d.key}`);
  t.ok(codes.includes('CONFIG_SYNTAX '), 'a syntax error on a password line');
  t.ok(codes.includes('CONFIG_TYPE apim.workflow.client_registration_password'), 'a type error on a secret');
  t.ok(codes.includes('CONFIG_URL apim.devportal.url'), 'a URL error on a value copied from a secret');
  t.ok(
    codes.some((c) => c.startsWith('CONFIG_DURATION passthru_http')),
    'a duration error on a value copied from a secret',
  );
});

t.test('no diagnostic carries a secret, formatted or raw', async (t) => {
  for (const strict of [false, true]) {
    const r = load(TEXT, { env: ENV, strict });
    t.ok(r.diagnostics.length >= 5);
    for (const d of r.diagnostics) {
      t.notMatch(JSON.stringify(d), SECRET, `${d.code} ${d.key} raw`);
      t.notMatch(formatDiagnostic(d), SECRET, `${d.code} ${d.key} formatted`);
    }
  }
});

t.test('config print masks every secret, in text and JSON', async (t) => {
  // A valid file: the same secrets without the deliberate mistakes.
  const valid = TEXT.split('\n')
    .filter((l) => !/^(url|http\.socket|client_registration|password = Zq|inline)/.test(l))
    .join('\n');
  const r = load(valid, { env: ENV });
  t.ok(r.ok, r.diagnostics.map(formatDiagnostic).join('\n'));
  t.equal(r.config.super_admin.password, SECRET, 'the loaded value itself is intact');
  t.equal(at(r.config, 'apim.key_manager.username'), SECRET, 'copied by reference');
  for (const format of ['toml', 'json'] as const) {
    const out = printConfig(r, format);
    t.notMatch(out, SECRET, `${format} output`);
    t.match(out, '****', `${format} output shows the mask`);
  }
  const json = JSON.parse(printConfig(r, 'json')) as Record<string, Record<string, unknown>>;
  t.equal(json.super_admin?.password, '****');
  t.equal(at(json, 'apim.key_manager.username'), '****', 'a value built from a secret is masked too');
  t.equal(at(json, 'database.apim_db.password'), '****', 'a secret from the environment');
  t.equal(at(json, 'apim.ai.token'), '****');
  t.equal(at(json, 'custom_keystore.partner.key_password'), '****');
  t.equal(at(json, 'server.hostname'), 'localhost', 'other values are printed');
});

t.test('the CLI never prints a secret (config check, config print, start)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-secrets-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bad = path.join(dir, 'bad.toml');
  fs.writeFileSync(bad, TEXT);
  const env = { ...process.env, DB_PASS: SECRET };
  for (const args of [
    ['config', 'check', '--config', bad],
    ['config', 'check', '--strict', '--config', bad],
    ['config', 'print', '--config', bad],
    ['start', '--config', bad],
  ]) {
    const run = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
    t.equal(run.status, 1, `${args.join(' ')} fails`);
    t.notMatch(run.stdout + run.stderr, SECRET, `${args.join(' ')}: no secret in the output`);
    t.match(run.stderr, 'CONFIG_', 'diagnostics were printed');
  }
});
