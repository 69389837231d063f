/**
 * The package as a user installs it (docs/quickstart.md): `npm pack`, then the tarball installed in an
 * empty directory with no compiler (`CC=/bin/false CXX=/bin/false`: nothing of it builds native code).
 * With `--omit=optional`: createTransport and createGateway with inject() work; on a Node without
 * node:sqlite (before 22.13) a node with the embedded store refuses to start naming libsql and the key
 * (PACKAGE_MISSING, docs/operations.md), and starts with libsql linked from this repository's copy; on a
 * Node with node:sqlite it starts as it is. Then `throughway init` and `start` serve the example API.
 * A plain install (optional dependencies included) brings libsql's prebuilt binary and opens the store.
 */
import t from 'tap';
import { execFile, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { freeOffset } from '../ports';

// npm pack and install take 40-100 s on a loaded machine: near .taprc's per-file timeout with the node's start.
t.setTimeout(300_000);
const run = promisify(execFile);
const root = path.join(__dirname, '..', '..', '..');
const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
const skip = npm.status === 0 ? false : 'npm is not on PATH: the packed install cannot be tried';
// A compiler that always fails: an install that tried to build native code would fail.
const noCompiler = { ...process.env, CC: '/bin/false', CXX: '/bin/false' };
const hasNodeSqlite = process.getBuiltinModule?.('node:sqlite') !== undefined;

async function pack(dir: string): Promise<string> {
  // --ignore-scripts: `prepare` would compile again; dist/ is built already (npm's pretest).
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root, maxBuffer: 64 << 20 });
  return path.join(dir, (JSON.parse(packed.stdout) as { filename: string }[])[0]?.filename as string);
}

/** `npm install` of the tarball into a new project `app` in dir, offline first (from npm's cache). */
async function installInto(t: { comment(message: string): void }, dir: string, tarball: string, extra: readonly string[]): Promise<string> {
  const app = path.join(dir, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  const args = ['install', ...extra, '--no-audit', '--no-fund', tarball];
  try {
    await run('npm', [...args, '--offline'], { cwd: app, env: noCompiler, maxBuffer: 64 << 20 });
  } catch {
    t.comment('npm install --offline could not resolve every package from the cache: trying the registry');
    await run('npm', args, { cwd: app, env: noCompiler, maxBuffer: 64 << 20 });
  }
  return app;
}

function get(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => req.destroy());
  });
}

t.test('npm install --omit=optional of the packed package, then init and start', { skip, timeout: 240_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-packed-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const app = await installInto(t, dir, await pack(dir), ['--omit=optional', '--ignore-scripts']);
  const mods = path.join(app, 'node_modules');
  t.ok(fs.existsSync(path.join(mods, 'throughway', 'dist', 'lib', 'index.js')), 'throughway installed');
  for (const name of ['libsql', 'pg', 'mysql2', 'ioredis'])
    t.notOk(fs.existsSync(path.join(mods, name)), `${name} (optional) not installed`);
  t.notOk(
    fs.existsSync(path.join(mods, 'node-gyp-build')) || fs.existsSync(path.join(mods, 'prebuild-install')),
    'nothing that builds native code',
  );

  const embed = `const http = require('node:http');
    const { createTransport, createGateway, loadConfig } = require('throughway');
    if (typeof createTransport !== 'function') throw new Error('no createTransport');
    const backend = http.createServer((req, res) => res.end('pets ' + req.url));
    backend.listen(0, '127.0.0.1', async () => {
      const gw = createGateway({ loaded: loadConfig({ text: '' }), apis: [{ name: 'Pets', context: '/pets', version: 'v1', auth: 'none',
        endpoints: { production: 'http://127.0.0.1:' + backend.address().port + '/api' }, resources: [{ path: '/pets/{id}', methods: ['GET'] }] }] });
      const r = await gw.inject({ url: '/pets/v1/pets/7' });
      process.stdout.write(r.status + ' ' + r.body);
      await gw.close(); backend.close();
    });`;
  const embedded = await run(process.execPath, ['-e', embed], { cwd: app });
  t.equal(embedded.stdout, '200 pets /api/pets/7', 'createGateway + inject() without the optional packages');

  const bin = path.join(mods, '.bin', 'throughway');
  const noConf = spawnSync(bin, ['start'], { cwd: app, encoding: 'utf8' });
  t.equal(noConf.status, 1);
  t.match(noConf.stderr, /run `throughway init`/, 'start without a configuration says to run init');

  const init = spawnSync(bin, ['init'], { cwd: app, encoding: 'utf8' });
  t.equal(init.status, 0, init.stderr);
  t.match(init.stdout, /Next steps/);
  const again = spawnSync(bin, ['init'], { cwd: app, encoding: 'utf8' });
  t.equal(again.status, 1, 'a second init refuses');
  t.match(again.stderr, /not overwriting .*conf\/deployment\.toml/);

  const offset = await freeOffset();
  const conf = path.join(app, 'conf', 'deployment.toml');
  fs.writeFileSync(conf, fs.readFileSync(conf, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`));
  if (!hasNodeSqlite) {
    const refused = spawnSync(bin, ['start'], { cwd: app, encoding: 'utf8', timeout: 60_000 });
    t.not(refused.status, 0, 'the embedded store without libsql on a Node without node:sqlite: no start');
    t.match(refused.stderr, /\[database\.apim_db\] type = "h2".*npm install libsql/, 'the message names the key and the package');
    // The optional engine present: linked from this repository's copy (its @libsql/<platform> binary beside it).
    fs.symlinkSync(fs.realpathSync(path.join(root, 'node_modules', 'libsql')), path.join(mods, 'libsql'), 'dir');
  }
  const node = spawn(bin, ['start'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  node.stdout.on('data', (b: Buffer) => (output += b.toString()));
  node.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise((resolve) => node.once('exit', resolve));
  t.teardown(async () => {
    node.kill('SIGTERM');
    await exited;
  });
  const url = `http://127.0.0.1:${8280 + offset}/pizzashack/1.0.0/menu`;
  let status = 0;
  for (let i = 0; i < 120 && status !== 200 && node.exitCode === null; i++) {
    await new Promise((r) => setTimeout(r, 500));
    status = await get(url);
  }
  t.equal(status, 200, `the example API answers (${output.split('\n').slice(-5).join(' | ')})`);
  // In a project of its own, `npm run -s throughway` is no script: the hints name npx.
  t.match(output, /^ {2}npx throughway apps create MyApp --url /m, 'the start-up hints run the CLI with npx');
  t.notMatch(output, /npm run -s throughway/, 'no npm run hint in an installed project');
});

t.test(
  'npm install of the packed package with no compiler: libsql prebuilt, the embedded store opens',
  { skip, timeout: 240_000 },
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-packed-full-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const app = await installInto(t, dir, await pack(dir), []);
    const mods = path.join(app, 'node_modules');
    t.ok(fs.existsSync(path.join(mods, 'libsql', 'package.json')), 'libsql installed');
    t.ok(
      fs.readdirSync(path.join(mods, '@libsql')).some((d) => fs.existsSync(path.join(mods, '@libsql', d, 'index.node'))),
      'its binary came prebuilt in an @libsql/<platform> package',
    );
    t.notOk(fs.existsSync(path.join(mods, 'better-sqlite3')), 'no better-sqlite3');
    const script = `const { openSqlite } = require(${JSON.stringify(path.join(mods, 'throughway', 'dist', 'lib', 'store', 'sqlite.js'))});
    const d = openSqlite(${JSON.stringify(path.join(dir, 'x.sqlite'))}, 'k', 'libsql');
    d.run('CREATE TABLE t (k TEXT)').then(() => d.run('INSERT INTO t VALUES (?)', ['a'])).then((n) => { process.stdout.write(d.description + ' ' + n); return d.close(); });`;
    const opened = await run(process.execPath, ['-e', script], { cwd: app });
    t.match(opened.stdout, /^embedded SQLite .*x\.sqlite 1$/, 'libsql opens and writes the embedded store');
  },
);
