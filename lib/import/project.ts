/**
 * A project as the reference's CLI exports it (a directory or a .zip of one), read whole into memory
 * within the bounds of lib/import/zip.ts ZIP_LIMITS: names relative to the project's root (a zip whose
 * entries all sit under one folder, as `apictl export` writes them, is rooted in that folder). Links in a
 * directory are refused, so a project cannot name the host's files. YAML and JSON files are parsed with
 * the yaml package's alias bound (maxAliasCount), so a small file cannot expand without limit.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { ImportError } from './codes';
import { readZip, safeEntryName, ZIP_LIMITS, type ZipLimits } from './zip';

export interface Project {
  /** As the user named it (a directory or a .zip), for messages. */
  readonly where: string;
  /** Relative name (with /) -> bytes. */
  readonly files: ReadonlyMap<string, Buffer>;
}

/** Deepest directory level read below a project's root. */
export const MAX_DEPTH = 8;

function readDir(root: string, where: string, limits: ZipLimits): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let total = 0;
  const walk = (dir: string, rel: string, depth: number): void => {
    if (depth > MAX_DEPTH) throw new ImportError('IMPORT_LIMIT', path.join(where, rel), `deeper than ${MAX_DEPTH} levels`);
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      throw new ImportError('IMPORT_IO', path.join(where, rel), (err as Error).message);
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const name = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isSymbolicLink())
        throw new ImportError('IMPORT_ZIP_PATH', path.join(where, name), 'a link: a project is read without following links');
      if (e.isDirectory()) walk(path.join(dir, e.name), name, depth + 1);
      else if (e.isFile()) {
        if (out.size >= limits.maxEntries)
          throw new ImportError('IMPORT_LIMIT', path.join(where, name), `more than ${limits.maxEntries} files`);
        const size = fs.statSync(path.join(dir, e.name)).size;
        total += size;
        if (total > limits.maxTotalBytes)
          throw new ImportError('IMPORT_LIMIT', path.join(where, name), `more than ${limits.maxTotalBytes} bytes in all`);
        out.set(name, fs.readFileSync(path.join(dir, e.name)));
      }
    }
  };
  walk(root, '', 0);
  return out;
}

/** The files under one common top folder moved up to the root (a zip of `PizzaShackAPI-1.0.0/...`). */
function rooted(files: Map<string, Buffer>, marker: (names: readonly string[]) => boolean): Map<string, Buffer> {
  const names = [...files.keys()];
  if (marker(names)) return files;
  const tops = new Set(names.map((n) => n.split('/')[0]));
  if (tops.size !== 1 || names.some((n) => !n.includes('/'))) return files;
  const top = `${[...tops][0] as string}/`;
  return new Map([...files].map(([n, b]) => [n.slice(top.length), b]));
}

/** Reads a directory or a .zip file; `marker` says whether a list of names is already a project's root. */
export function readProject(
  source: string,
  cwd: string,
  marker: (names: readonly string[]) => boolean,
  limits: ZipLimits = ZIP_LIMITS,
): Project {
  const file = path.resolve(cwd, source);
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (err) {
    throw new ImportError('IMPORT_IO', source, (err as Error).message);
  }
  if (st.isDirectory()) return { where: source, files: rooted(readDir(file, source, limits), marker) };
  // The archive itself is bounded too: a zip larger than its largest possible contents is not read.
  if (st.size > limits.maxTotalBytes) throw new ImportError('IMPORT_LIMIT', source, `${st.size} bytes, more than ${limits.maxTotalBytes}`);
  const buf = fs.readFileSync(file);
  return { where: source, files: rooted(readZip(buf, source, limits), marker) };
}

/** Parses a YAML (or JSON, a subset of YAML 1.2) project file; IMPORT_YAML with the line otherwise. */
export function parseProjectFile(bytes: Buffer, where: string): unknown {
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  try {
    return parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    const line = err instanceof YAMLParseError && err.linePos !== undefined ? `:${err.linePos[0].line}` : '';
    throw new ImportError('IMPORT_YAML', `${where}${line}`, (err as Error).message.split('\n')[0] ?? 'not YAML');
  }
}

export { safeEntryName };
