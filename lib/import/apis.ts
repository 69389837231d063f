/**
 * `import api` and `import apis`: projects converted (lib/import/api.ts), each API file checked by the
 * gateway's own validator against the files it names, in a staging directory, before anything is
 * written to apis/ (lib/import/write.ts). Versions of one API are separate projects and become separate
 * API files of the same name and context, as the gateway deploys versions (docs/apis.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { toTomlText } from '../config/print';
import { parseApiText } from '../gateway/apis';
import { formatApiDiagnostic } from '../gateway/diagnostics';
import type { PolicyNames } from '../throttle/policies';
import { convertApi, isApiRoot, type ApiImport, type EnvParams } from './api';
import { ImportError } from './codes';
import { parseProjectFile, readProject } from './project';
import type { PlannedFile } from './write';

/** The API file's text: a first line naming its origin (no path: the same project gives the same text). */
export function apiFileText(a: ApiImport): string {
  return `# Imported from the reference's project ${a.base} by \`throughway import api\` (docs/migrating.md).\n${toTomlText(a.api)}`;
}

/** The files of one import, with absolute paths under apisDir. */
export function plannedFiles(a: ApiImport, apisDir: string): PlannedFile[] {
  const out: PlannedFile[] = [{ path: path.join(apisDir, `${a.base}.toml`), bytes: Buffer.from(apiFileText(a)) }];
  for (const [rel, bytes] of a.files) out.push({ path: path.join(apisDir, ...rel.split('/')), bytes });
  return out;
}

/**
 * The API file as the gateway would read it: written with its files into a fresh directory and parsed
 * there (definition and schema included). IMPORT_INVALID_API with the gateway's diagnostics otherwise.
 */
export function checkApi(a: ApiImport, where: string, policies: PolicyNames | undefined): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-import-'));
  try {
    for (const f of plannedFiles(a, dir)) {
      fs.mkdirSync(path.dirname(f.path), { recursive: true });
      fs.writeFileSync(f.path, f.bytes);
    }
    const file = path.join(dir, `${a.base}.toml`);
    const r = parseApiText(apiFileText(a), file, {}, policies);
    const errors = r.diagnostics.filter((d) => d.level === 'error');
    if (errors.length > 0) {
      const lines = errors.map((d) => formatApiDiagnostic({ ...d, file: `${a.base}.toml` })).join('; ');
      throw new ImportError('IMPORT_INVALID_API', where, `the API file would not deploy: ${lines}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The largest api_params.yaml read. */
export const MAX_PARAMS_BYTES = 1024 * 1024;

/** apictl's api_params.yaml: the `configs` of the environment named `env` (the first when none is named). */
export function readParams(file: string, env: string | undefined, cwd: string): EnvParams {
  let bytes: Buffer;
  try {
    // A parameters file is a few endpoints: bounded like an exported policy file.
    if (fs.statSync(path.resolve(cwd, file)).size > MAX_PARAMS_BYTES)
      throw new ImportError('IMPORT_LIMIT', file, `larger than ${MAX_PARAMS_BYTES} bytes`);
    bytes = fs.readFileSync(path.resolve(cwd, file));
  } catch (err) {
    if (err instanceof ImportError) throw err;
    throw new ImportError('IMPORT_IO', file, (err as Error).message);
  }
  const doc = parseProjectFile(bytes, file) as { environments?: unknown };
  const list = Array.isArray(doc?.environments) ? (doc.environments as Record<string, unknown>[]) : [];
  const chosen = env === undefined ? list[0] : list.find((e) => e !== null && typeof e === 'object' && e.name === env);
  if (chosen === undefined || chosen === null || typeof chosen !== 'object')
    throw new ImportError(
      'IMPORT_FIELD',
      `${file}:environments`,
      env === undefined ? 'no environment' : `no environment named ${JSON.stringify(env)}`,
    );
  const configs = chosen.configs;
  return configs !== null && typeof configs === 'object' ? (configs as EnvParams) : {};
}

/** One project (a directory or a .zip) converted and checked. */
export function importOne(source: string, cwd: string, params: EnvParams | undefined, policies: PolicyNames | undefined): ApiImport {
  const project = readProject(source, cwd, isApiRoot);
  const a = convertApi(project, params);
  checkApi(a, source, policies);
  return a;
}

/** The projects of a directory: its subdirectories and .zip files, each one project, sorted by name. */
export function projectsIn(dir: string, cwd: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.resolve(cwd, dir), { withFileTypes: true });
  } catch (err) {
    throw new ImportError('IMPORT_IO', dir, (err as Error).message);
  }
  const out = entries
    .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || (e.isFile() && e.name.endsWith('.zip'))))
    .map((e) => path.join(dir, e.name));
  if (out.length === 0) throw new ImportError('IMPORT_NOT_PROJECT', dir, 'no project directories or .zip files in it');
  return out.sort();
}

/** Two projects of one run that would write the same API file (same name and version). */
export function checkDistinct(list: readonly { a: ApiImport; source: string }[]): void {
  const seen = new Map<string, string>();
  for (const { a, source } of list) {
    const prior = seen.get(a.base);
    if (prior !== undefined)
      throw new ImportError('IMPORT_EXISTS', source, `${a.name} ${a.version} is also the project ${prior}: one API file each`);
    seen.set(a.base, source);
  }
}
