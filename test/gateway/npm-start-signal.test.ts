/**
 * `npm start` signalled stops the node (docs/operations.md, "Stopping"): npm forwards SIGTERM and SIGINT to
 * the script's shell, and a shell does not pass them on to its child, so the start script `exec`s the node
 * (package.json) and the node is npm's child. A real `npm start` in a temporary project whose start script
 * is this repository's, on a copy of conf/ with a free offset; the signal goes to the npm process only.
 * Before the `exec`, npm exited and the node kept running, holding its ports.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { until } from './helpers';
import { freeOffset } from '../ports';

const root = path.join(__dirname, '..', '..', '..');
const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
const skip = npm.status === 0 ? false : 'npm is not on PATH: `npm start` cannot be tried';
const script = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} to the npm start process stops the node and frees its ports`, { skip }, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-npm-start-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.cpSync(path.join(root, 'conf'), path.join(dir, 'conf'), { recursive: true });
    const offset = await freeOffset();
    const toml = path.join(dir, 'conf', 'deployment.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`));
    // The repository's start script, its CLI path made absolute: npm runs it through `sh -c` as in the repository.
    const start = script.replace('dist/lib/cli.js', JSON.stringify(path.join(root, 'dist', 'lib', 'cli.js')));
    t.match(script, /^exec node /, 'the start script execs the node');
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'npm-start-signal', version: '1.0.0', private: true, scripts: { start } }),
    );
    const child = spawn('npm', ['start'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const port = 8280 + offset;
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    if (!t.ok(await until(() => out.includes('Try:'), 120_000), 'the node started')) t.comment(out);
    t.ok(await listening(port), 'the gateway port is open');
    child.kill(signal);
    await exited;
    if (!t.ok(await until(async () => !(await listening(port)), 30_000), 'the gateway port is closed after npm exited')) t.comment(out);
    t.match(out, /shutdown_complete/, 'the node shut down');
  });
}
