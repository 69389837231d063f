/**
 * `throughway config check` on a file that writes keys of every status (lib/config/key-status.ts): each
 * key not acted on is named with file:line:column, keys that act are not, and the counts add up; the
 * loader's result carries the same list for embedders.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { CLI, REPO } from './helpers';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-status-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

// Line numbers matter: the expectations below name them. Keys other work is making act are left out.
const TOML = [
  '[server]', // 1
  'hostname = "gw.example.com"', // 2  acts
  'mode = "single"', // 3  not acted on (key)
  '', // 4
  '[database.apim_db]', // 5
  'type = "h2"', // 6  acts differently
  '', // 7
  '[database.shared_db]', // 8
  'type = "h2"', // 9  acts differently (a shared_db with a url of its own holds the user realm)
  '', // 10
  '[apim.oauth_config]', // 11
  'enable_token_hashing = true', // 12 not acted on (key)
  '', // 13
  '[apim.ai]', // 14
  'enable = true', // 15 not acted on (section not run)
  '', // 16
  '[passthru_http]', // 17
  'worker_pool_size_max = 400', // 18 acts differently
  'worker_pool_size_core = 400', // 19 not acted on (key)
  '', // 20
  '[apim.key_manager]', // 21
  'pool.max_idle = 50', // 22 not acted on (key)
  '', // 23
].join('\n');

const file = path.join(dir, 'deployment.toml');
fs.writeFileSync(file, TOML);

const NOT_ACTED_ON = [
  ['server.mode', 3],
  ['apim.oauth_config.enable_token_hashing', 12],
  ['apim.ai.enable', 15],
  ['passthru_http.worker_pool_size_core', 19],
  ['apim.key_manager.pool.max_idle', 22],
] as const;

t.test('the loader lists each key not acted on with its place, and counts each status', async (t) => {
  const r = loadConfig({ file });
  t.equal(r.ok, true, JSON.stringify(r.diagnostics));
  t.same(
    r.notActedOn.map((k) => [k.key, k.line]),
    NOT_ACTED_ON.map(([k, l]) => [k, l]),
  );
  t.same(
    r.notActedOn.map((k) => k.column),
    NOT_ACTED_ON.map(() => 1),
  );
  t.equal(r.notActedOn.find((k) => k.key === 'apim.ai.enable')?.sectionRuns, false);
  t.ok(
    r.notActedOn.every((k) => k.reason.length > 20),
    'each carries its reason',
  );
  t.same(r.writtenStatus, { acts: 1, differs: 3, inactive: 5 });
});

t.test('config check names each key not acted on at file:line:column, and no key that acts', async (t) => {
  const r = spawnSync(process.execPath, [CLI, 'config', 'check', '--config', file], { cwd: REPO, encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, 'keys written: 9 (1 act, 3 act differently, 5 not acted on; docs/migrating.md)');
  for (const [key, line] of NOT_ACTED_ON) t.match(r.stdout, `${file}:${line}:1: ${key}: not acted on`, key);
  t.match(r.stdout, `${file}:15:1: apim.ai.enable: not acted on ([apim.ai] is not run)`);
  // Each line ends with the schema's reason: the key's own, or (for a section not run) the section's.
  t.match(r.stdout, `${file}:22:1: apim.key_manager.pool.max_idle: not acted on: the gateway checks tokens in-process`);
  t.match(
    r.stdout,
    `${file}:15:1: apim.ai.enable: not acted on ([apim.ai] is not run): the reference's AI features call a hosted AI service`,
  );
  for (const line of r.stdout.split('\n').filter((l) => l.includes(': not acted on')))
    t.match(line, /: not acted on( \(\[[^\]]+\] is not run\))?: \S.{19,}$/, `a reason: ${line}`);
  for (const key of ['server.hostname', 'database.apim_db.type', 'database.shared_db.type', 'passthru_http.worker_pool_size_max'])
    t.notMatch(r.stdout, `: ${key}: not acted on`, key);
});

t.test('--strict does not turn keys not acted on into errors', async (t) => {
  const r = spawnSync(process.execPath, [CLI, 'config', 'check', '--strict', '--config', file], { cwd: REPO, encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, '5 not acted on');
});
