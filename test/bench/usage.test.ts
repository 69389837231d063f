/**
 * `npm run bench -- --help` answers without compiling (bench/run.sh prints bench/usage.txt): an `npm`
 * that records being called and fails stands first on PATH, so a help path that built would be seen.
 * The help names every scenario and its default connections (bench/common.ts SCENARIOS).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SCENARIOS } from '../../bench/common';

const root = path.join(__dirname, '..', '..', '..');
const usage = fs.readFileSync(path.join(root, 'bench', 'usage.txt'), 'utf8');

t.test('--help and -h print the usage without running npm (no build)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-help-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const marker = path.join(dir, 'npm-called');
  fs.writeFileSync(path.join(dir, 'npm'), `#!/bin/sh\necho "$@" > '${marker}'\nexit 1\n`, { mode: 0o755 });
  const env = { ...process.env, PATH: `${dir}${path.delimiter}${process.env.PATH ?? ''}` };
  for (const flag of ['--help', '-h']) {
    const r = spawnSync('sh', [path.join(root, 'bench', 'run.sh'), '--duration', '3', flag], { cwd: root, env, encoding: 'utf8' });
    t.equal(r.status, 0, `${flag}: ${r.stderr}`);
    t.equal(r.stdout, usage, `${flag} prints bench/usage.txt`);
  }
  t.notOk(fs.existsSync(marker), 'npm (the build) was not run');
  // Without --help the script does build: the fake npm is called and its failure stops the run.
  const run = spawnSync('sh', [path.join(root, 'bench', 'run.sh'), '--duration', '3'], { cwd: root, env, encoding: 'utf8' });
  t.equal(run.status, 1, 'a failed build stops the bench');
  t.equal(fs.readFileSync(marker, 'utf8').trim(), 'run -s build');
});

t.test('the usage names every scenario and its default connections', async (t) => {
  t.match(usage, `of ${SCENARIOS.map((s) => s.name).join(',')} (default all)`);
  t.match(usage, `the scenario's own, ${SCENARIOS.map((s) => s.conns).join('/')})`);
  t.match(usage, /^usage: npm run bench -- \[options\]$/m);
});
