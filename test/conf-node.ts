/**
 * `npm start` as a newcomer runs it, for tests: a copy of conf/ in a temporary directory with
 * `server.offset` set to a free block (test/ports.ts), then `throughway start` in it with its output kept.
 * The directory and the process are removed at the test's end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Test } from 'tap';
import { freeOffset } from './ports';

const root = path.join(__dirname, '..', '..');

export interface ConfNode {
  readonly dir: string;
  readonly offset: number;
  readonly child: ChildProcess;
  /** Standard output and error so far (the start lines; the JSON log). */
  out: string;
  err: string;
  readonly exited: Promise<number | null>;
}

/** The shipped conf/deployment.toml, whose `offset = 0` line the copy changes. */
export const SHIPPED_TOML = path.join(root, 'conf', 'deployment.toml');

export async function startConfCopy(t: Test, prefix: string): Promise<ConfNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.cpSync(path.join(root, 'conf'), path.join(dir, 'conf'), { recursive: true });
  const offset = await freeOffset();
  const tomlPath = path.join(dir, 'conf', 'deployment.toml');
  fs.writeFileSync(tomlPath, fs.readFileSync(tomlPath, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`));
  const child = spawn(process.execPath, [path.join(root, 'dist', 'lib', 'cli.js'), 'start'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const node: ConfNode = {
    dir,
    offset,
    child,
    out: '',
    err: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  child.stdout?.on('data', (c: Buffer) => (node.out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (node.err += c.toString()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return node;
}
