/**
 * Where a script may live (docs/mediation.md, "Where scripts may live"): an API's [mediation] script must
 * resolve, links included, inside the configuration directory or [throughway.mediation] script_dirs.
 * `../../etc/passwd`, an absolute path elsewhere and a link that points out are refused at deploy with
 * API_SCRIPT_PATH naming the API file, the line and the key, and the API is not served; a script inside
 * (or behind a link that stays inside, or in script_dirs) runs.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createGateway } from '../../lib/embed';
import { parseApiText } from '../../lib/gateway/apis';
import { apiToml, memoryLogger, request, HOST } from '../gateway/helpers';
import { TOML } from './script-helpers';

const RUNS = (where: string): string => `module.exports.onRequest = () => ({ status: 203, body: { ran: '${where}' } });`;

interface Layout {
  readonly base: string;
  readonly conf: string;
}

/**
 * base/etc/passwd and base/elsewhere/abs.js (scripts outside), base/shared/ok.js, and the configuration
 * directory base/node: deployment.toml, apis/s.toml naming `script`, scripts/ok.js, scripts/out.js (a link
 * to base/elsewhere/abs.js) and scripts/alias.js (a link to scripts/ok.js).
 */
function layout(t: Test, script: string, scriptDirs?: readonly string[]): Layout {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-script-paths-'));
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }));
  const conf = path.join(base, 'node');
  const write = (file: string, text: string): void => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  };
  write(path.join(base, 'etc', 'passwd'), RUNS('etc/passwd'));
  write(path.join(base, 'elsewhere', 'abs.js'), RUNS('elsewhere'));
  write(path.join(base, 'shared', 'ok.js'), RUNS('shared'));
  write(path.join(conf, 'scripts', 'ok.js'), RUNS('inside'));
  fs.symlinkSync(path.join(base, 'elsewhere', 'abs.js'), path.join(conf, 'scripts', 'out.js'));
  fs.symlinkSync(path.join(conf, 'scripts', 'ok.js'), path.join(conf, 'scripts', 'alias.js'));
  write(path.join(conf, 'deployment.toml'), TOML + (scriptDirs === undefined ? '' : `script_dirs = ${JSON.stringify(scriptDirs)}\n`));
  write(
    path.join(conf, 'apis', 's.toml'),
    apiToml({
      context: '/s',
      endpoint: 'http://127.0.0.1:1',
      resources: [['/*', ['GET']]],
      extra: `[mediation]\nscript = ${JSON.stringify(script)}`,
    }),
  );
  return { base, conf };
}

async function start(t: Test, l: Layout) {
  const loaded = loadConfig({ file: path.join(l.conf, 'deployment.toml'), env: {} });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const logger = memoryLogger();
  const gw = createGateway({ loaded, logger, cwd: l.conf });
  const a = await gw.listen({ port: 0, host: HOST });
  t.teardown(() => gw.close());
  return { gw, port: a.port, logger };
}

/** The line of `script = ...` in apis/s.toml. */
function scriptLine(l: Layout): number {
  return (
    fs
      .readFileSync(path.join(l.conf, 'apis', 's.toml'), 'utf8')
      .split('\n')
      .findIndex((s) => s.startsWith('script = ')) + 1
  );
}

async function refused(t: Test, l: Layout, why: RegExp): Promise<void> {
  const g = await start(t, l);
  const lines = g.logger.lines.filter((x) => x.event === 'api_definition' && x.code === 'API_SCRIPT_PATH');
  t.equal(lines.length, 1, 'one API_SCRIPT_PATH diagnostic');
  const d = lines[0] ?? {};
  t.equal(d.file, path.join(l.conf, 'apis', 's.toml'), 'names the API file');
  t.equal(d.line, scriptLine(l), 'names the line of the script key');
  t.equal(d.field, 'mediation.script', 'names the key');
  t.equal(d.level, 'error');
  t.match(String(d.message), `${path.join(l.conf, 'apis', 's.toml')}:${scriptLine(l)}:`, 'printed as file:line:column');
  t.match(String(d.message), why);
  const res = await request(g.port, '/s/1.0.0/x');
  t.equal(res.status, 404, 'the API is not deployed');
  t.notMatch(res.body, /ran/, 'the script did not run');
  t.equal(g.gw.deployed().length, 0);
}

t.test('../../etc/passwd (relative to the API file) is refused at deploy', async (t) => {
  const l = layout(t, '../../etc/passwd');
  t.ok(fs.existsSync(path.join(l.conf, 'apis', '../../etc/passwd')), 'the file exists: only its place refuses it');
  await refused(t, l, /script .*etc\/passwd is outside the configuration directory and \[throughway\.mediation\] script_dirs/);
});

t.test('an absolute path outside is refused', async (t) => {
  const l = layout(t, '');
  fs.writeFileSync(
    path.join(l.conf, 'apis', 's.toml'),
    apiToml({
      context: '/s',
      endpoint: 'http://127.0.0.1:1',
      resources: [['/*', ['GET']]],
      extra: `[mediation]\nscript = ${JSON.stringify(path.join(l.base, 'elsewhere', 'abs.js'))}`,
    }),
  );
  await refused(t, l, /elsewhere\/abs\.js is outside/);
});

t.test('a link inside the configuration directory that points out is refused, naming where it points', async (t) => {
  const l = layout(t, '../scripts/out.js');
  await refused(t, l, /scripts\/out\.js \(a link to .*elsewhere\/abs\.js\) is outside/);
});

t.test('a path outside that does not exist is refused for its place, not reported missing', async (t) => {
  const l = layout(t, '../../nothing-here.js');
  await refused(t, l, /nothing-here\.js is outside/);
});

t.test('a script inside runs, also behind a link that stays inside', async (t) => {
  for (const script of ['../scripts/ok.js', '../scripts/alias.js']) {
    const l = layout(t, script);
    const g = await start(t, l);
    const res = await request(g.port, '/s/1.0.0/x');
    t.equal(res.status, 203, `${script}: the script answered`);
    t.same(res.json(), { ran: 'inside' });
    t.notOk(
      g.logger.lines.some((x) => x.event === 'api_definition' && x.level === 'error'),
      `${script}: no error`,
    );
  }
});

t.test('a directory listed in script_dirs (relative to the configuration directory) is allowed', async (t) => {
  const l = layout(t, '../../shared/ok.js', ['../shared']);
  const g = await start(t, l);
  const res = await request(g.port, '/s/1.0.0/x');
  t.equal(res.status, 203);
  t.same(res.json(), { ran: 'shared' });
  // The same file without the list is refused.
  const bare = layout(t, '../../shared/ok.js');
  await refused(t, bare, /shared\/ok\.js is outside/);
});

t.test('an API validated on its own (no gateway directories) is only checked for existence', async (t) => {
  const l = layout(t, '../../etc/passwd');
  const file = path.join(l.conf, 'apis', 's.toml');
  const text = fs.readFileSync(file, 'utf8');
  t.same(
    parseApiText(text, file).diagnostics.filter((d) => d.level === 'error'),
    [],
  );
  const confined = parseApiText(text, file, {}, undefined, [l.conf]);
  t.same(
    confined.diagnostics.map((d) => `${d.code} ${d.field} @${d.line}`),
    [`API_SCRIPT_PATH mediation.script @${scriptLine(l)}`],
  );
  t.equal(confined.api, undefined);
});
