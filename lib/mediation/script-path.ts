/**
 * Where an API's script may live (docs/mediation.md, "Where scripts may live"): its real path, symbolic
 * links resolved, must be inside the configuration directory or one of [throughway.mediation]
 * script_dirs. A script runs for every call of its API, so an API file must not be able to name any file
 * of the machine (`../../etc/passwd`, `/srv/other/app.js`, or a link inside the directory that points out).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type ScriptPlace =
  /** `real`: the script's path with every link resolved (what the worker loads). */
  { readonly ok: true; readonly real: string } | { readonly ok: false; readonly problem: string; readonly missing: boolean };

/** Whether `file` is below `dir` (both absolute and normalised; `dir` itself is not below it). */
function inside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** Each root as given and as its real path (a missing root allows nothing). */
function realRoots(roots: readonly string[]): (readonly [given: string, real: string])[] {
  const out: (readonly [string, string])[] = [];
  for (const root of roots) {
    try {
      out.push([root, fs.realpathSync(root)]);
    } catch {
      // a directory that does not exist holds no script
    }
  }
  return out;
}

/**
 * Resolves `script` (an absolute path) through its links and checks it against `roots` (absolute
 * directories; their own links are resolved too). A path outside them as written is refused before the
 * file system is asked whether it exists (an API file learns nothing of the files around), then the real
 * path must be inside too. `roots` undefined: any place (an API validated on its own, outside a gateway:
 * tests, tools).
 */
export function placeScript(script: string, roots: readonly string[] | undefined): ScriptPlace {
  const dirs = roots === undefined ? undefined : realRoots(roots);
  const outside = (via: string): ScriptPlace => ({
    ok: false,
    problem: `script ${script}${via} is outside the configuration directory and [throughway.mediation] script_dirs`,
    missing: false,
  });
  if (dirs !== undefined && !dirs.some((d) => d.some((dir) => inside(dir, script)))) return outside('');
  let real: string;
  try {
    real = fs.realpathSync(script);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      ok: false,
      problem:
        code === 'ENOENT' || code === 'ENOTDIR'
          ? `script ${script} does not exist`
          : `script ${script} cannot be read (${code ?? 'error'})`,
      missing: true,
    };
  }
  if (dirs !== undefined && !dirs.some((d) => inside(d[1], real))) return outside(` (a link to ${real})`);
  if (!fs.statSync(real).isFile()) return { ok: false, problem: `script ${script} is not a file`, missing: true };
  return { ok: true, real };
}
