/**
 * PATH holding only `sh` (which the bench's hasCommand asks) for the rest of a test: how the bench modes
 * are checked to name a missing tool before starting anything. Restored, and the directory removed, at teardown.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function pathWithOnlySh(t: { teardown(fn: () => void): void }): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-path-only-sh-'));
  const saved = process.env.PATH;
  t.teardown(() => {
    process.env.PATH = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  });
  fs.symlinkSync('/bin/sh', path.join(dir, 'sh'));
  process.env.PATH = dir;
}
