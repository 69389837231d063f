/**
 * SIGHUP's reload, in process (the signal itself is sent to a real node in shutdown.test.ts): a
 * deployment.toml with errors is refused with every error logged (file:line) and the running
 * configuration stays; a valid one applies the log level at once and names the keys that need a restart.
 * `throughway start --check` validates, prints role and ports, and exits without starting.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { main } from '../../lib/cli';
import { changedKeys } from '../../lib/observability/reload';
import { apiToml, echoBackend, request } from '../gateway/helpers';
import { NODE_TOML, startTestNode } from './node-helpers';

t.test('a configuration with errors is refused; a valid one is applied', async (t) => {
  const backend = await echoBackend();
  const api = { a: apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }) };
  const base = `${NODE_TOML}[throughway]\nlog_level = "warn"\n`;
  const n = await startTestNode(base, api);
  t.teardown(async () => {
    await n.close();
    await backend.close();
  });
  const file = path.join(n.dir, 'deployment.toml');
  fs.writeFileSync(file, `${NODE_TOML}[throughway]\nlog_level = "loud"\nbacklog = 0\n`);
  const refused = n.node.reload();
  t.equal(refused?.ok, false);
  t.equal(refused?.errors.length, 2, 'both errors');
  t.match(refused?.errors[0], /deployment\.toml:\d+:\d+: error .*log_level/);
  t.equal(n.lines.filter((l) => l.event === 'config_reload_error').length, 2, 'each error logged');
  t.ok(n.lines.some((l) => l.event === 'config_reload_refused' && l.level === 'error'));
  t.match(n.out.join('\n'), /reload refused: the configuration has 2 error\(s\); the running configuration stays/);
  t.equal((await request(n.gw, '/a/1.0.0/x')).status, 200, 'still serving');
  t.notOk(
    n.lines.some((l) => l.level === 'info'),
    'still at warn',
  );

  fs.writeFileSync(file, `${NODE_TOML}[throughway]\nlog_level = "info"\nvia = "1.1 other"\n`);
  const applied = n.node.reload();
  t.equal(applied?.ok, true);
  t.same(applied?.applied, ['throughway.log_level']);
  t.same(applied?.restartNeeded, ['throughway.via'], 'named, not silently ignored');
  t.ok(n.lines.some((l) => l.event === 'config_reload_restart_needed' && JSON.stringify(l.keys) === '["throughway.via"]'));
  t.ok(
    n.lines.some((l) => l.event === 'config_reloaded' && l.level === 'info'),
    'info lines are written now',
  );
  t.match(n.out.join('\n'), /reloaded configuration: applied throughway\.log_level; at the next start: throughway\.via/);
  t.match(n.out.join('\n'), /reloaded: 1 API\(s\) deployed/, 'the APIs are re-read too');
});

t.test('changedKeys: two levels deep', async (t) => {
  t.same(changedKeys({ a: { x: 1, y: 2 }, b: 1, c: [1] }, { a: { x: 1, y: 3, z: 0 }, b: 1, c: [2], d: true }), ['a.y', 'a.z', 'c', 'd']);
});

t.test('start --check validates and exits without starting', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-check-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(dir, 'ok.toml'),
    `${NODE_TOML}[server]\n`.replace('[server]\n', '[server]\noffset = 3\n').replace(/\[server\]\n$/, ''),
  );
  fs.writeFileSync(path.join(dir, 'bad.toml'), `${NODE_TOML}[throughway]\nlog_level = "loud"\n`);
  let out = '';
  let err = '';
  const io = { out: (s: string) => (out += s), err: (s: string) => (err += s), cwd: dir };
  t.equal(await main(['start', '--check', '--config', 'ok.toml'], io), 0, err);
  t.match(out, 'ok.toml: valid');
  t.match(out, 'role: default');
  t.match(out, /gateway HTTP +8283/, 'effective ports, offset applied');
  t.notOk(fs.existsSync(path.join(dir, 'var')), 'nothing started: no store created');
  out = '';
  t.equal(await main(['start', '--check', '--config', 'bad.toml'], io), 1);
  t.match(err, /bad\.toml:\d+:\d+: error .*log_level/);
  t.match(out, 'bad.toml: invalid: 1 error');
});

t.test('start-up shows the progress of schema migrations', async (t) => {
  const n = await startTestNode(NODE_TOML);
  t.teardown(() => n.close());
  const lines = n.out.filter((l) => l.includes('store migration'));
  t.ok(lines.length >= 1, 'a line per migration on a new store');
  t.match(lines[0], /store migration\s+1\/\d+: version 1, applications, clients/);
  t.match(lines[lines.length - 1], new RegExp(`${lines.length}/${lines.length}:`), 'numbered to the last');
});
