/**
 * `throughway import api|apis|app|policies ...` and `throughway export api NAME VERSION`
 * (docs/migrating.md, "Importing the reference's projects"). Every project is read and converted, and
 * every file checked, before the first write; `--dry-run` prints the same report and writes nothing.
 * Exit status: 0 done (or nothing to do), 1 an IMPORT_* error (nothing written), 2 usage.
 */
import * as path from 'node:path';
import { loadConfig } from '../config/load';
import { formatDiagnostic } from '../config/diagnostics';
import { openStore } from '../store/open';
import { loadPolicies, policyNames, type PolicyOptions } from '../throttle/policies';
import { throttleSettingsFrom } from '../throttle/settings';
import type { ApiImport, EnvParams } from './api';
import { checkDistinct, importOne, plannedFiles, projectsIn, readParams } from './apis';
import { applyApp, convertApp } from './app';
import { ImportError } from './codes';
import type { Dropped } from './dropped';
import { exportApi, findApiFile } from './export';
import { convertPolicy, mergePolicies, policyFiles } from './policies';
import { writeFiles, type FileOutcome } from './write';
import { writeZip } from './zip';
import { UsageError } from '../errors';

export const IMPORT_USAGE = `Importing the reference's projects (docs/migrating.md):
  import api DIR|ZIP [--params FILE [--env NAME]]   one API project (apictl export api) into apis/
  import apis DIR [--params FILE [--env NAME]]      every project (directory or .zip) in DIR
  import app DIR|ZIP                                 an application with its keys and subscriptions into the store
  import policies FILE|DIR                           exported throttling policies into the policies file
  export api NAME VERSION [--out DIR] [--zip]        an API file back as a project of the reference's CLI
Options: --config FILE, --dry-run (print what would be written, write nothing), --force (replace files
and store entries that exist with other content), --json.
`;

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly cwd: string;
}

const FLAGS = new Set(['--dry-run', '--force', '--json', '--zip']);
const VALUED = new Set(['--config', '--params', '--env', '--out']);

function parse(argv: readonly string[]): { words: string[]; opts: Map<string, string> } {
  const words: string[] = [];
  const opts = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.has(name)) opts.set(name, 'true');
    else if (VALUED.has(name)) {
      const v = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : argv[++i];
      if (v === undefined) throw new UsageError(`${name} needs a value`);
      opts.set(name, v);
    } else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`);
    else words.push(arg);
  }
  return { words, opts };
}

/** What one run did, printed as text or JSON. */
interface Report {
  items: { title: string; changes: { what: string; outcome: FileOutcome }[]; dropped: readonly Dropped[] }[];
  dryRun: boolean;
}

function printReport(r: Report, io: Io, json: boolean): void {
  if (json) {
    io.out(`${JSON.stringify(r, null, 2)}\n`);
    return;
  }
  const lines: string[] = [];
  for (const it of r.items) {
    lines.push(`${it.title}:`);
    for (const c of it.changes)
      lines.push(`  ${(r.dryRun && c.outcome !== 'unchanged' ? `would be ${c.outcome}` : c.outcome).padEnd(17)} ${c.what}`);
    if (it.dropped.length > 0) {
      lines.push(`  not carried (${it.dropped.length}):`);
      for (const d of it.dropped) lines.push(`    ${d.path}: ${d.why}`);
    }
  }
  const changed = r.items.some((it) => it.changes.some((c) => c.outcome !== 'unchanged'));
  lines.push(r.dryRun ? 'dry run: nothing written' : changed ? 'done' : 'nothing to change');
  io.out(`${lines.join('\n')}\n`);
}

function loaded(opts: Map<string, string>, io: Io): ReturnType<typeof loadConfig> {
  const file = path.resolve(io.cwd, opts.get('--config') ?? path.join('conf', 'deployment.toml'));
  const l = loadConfig({ file });
  for (const d of l.diagnostics) if (d.level === 'error') io.err(`${formatDiagnostic(d)}\n`);
  if (!l.ok) throw new ImportError('IMPORT_IO', file, 'the configuration has errors: run `throughway config check`');
  return l;
}

function policyOptions(l: ReturnType<typeof loadConfig>): { file: string; options: PolicyOptions } {
  const ts = throttleSettingsFrom(l.config, l.dir);
  return {
    file: ts.policiesFile,
    options: {
      enableUnlimitedTier: ts.enableUnlimitedTier,
      headerConditions: ts.headerConditions,
      queryConditions: ts.queryConditions,
      claimConditions: ts.claimConditions,
    },
  };
}

const shown = (io: Io, file: string): string => path.relative(io.cwd, file) || file;

async function run(words: string[], opts: Map<string, string>, io: Io): Promise<number> {
  const [cmd, what, ...rest] = words;
  const o = { dryRun: opts.has('--dry-run'), force: opts.has('--force') };
  const report: Report = { items: [], dryRun: o.dryRun };
  const json = opts.has('--json');
  if (cmd === 'import' && (what === 'api' || what === 'apis') && rest.length === 1) {
    const l = loaded(opts, io);
    const apisDir = path.resolve(l.dir, l.config.throughway.apis_dir);
    const pol = policyOptions(l);
    const policies = loadPolicies(pol.file, pol.options).policies;
    const params: EnvParams | undefined = opts.has('--params')
      ? readParams(opts.get('--params') as string, opts.get('--env'), io.cwd)
      : undefined;
    const sources = what === 'api' ? [rest[0] as string] : projectsIn(rest[0] as string, io.cwd);
    const list: { a: ApiImport; source: string }[] = sources.map((source) => ({
      a: importOne(source, io.cwd, params, policies !== undefined ? policyNames(policies) : undefined),
      source,
    }));
    checkDistinct(list);
    // Every project converted and checked; then every file compared, then written (or none is).
    const plan = writeFiles(
      list.flatMap(({ a }) => plannedFiles(a, apisDir)),
      o,
    );
    for (const { a, source } of list) {
      const mine = new Set(plannedFiles(a, apisDir).map((f) => f.path));
      report.items.push({
        title: `${a.name} ${a.version} from ${source}`,
        changes: plan.filter((p) => mine.has(p.file.path)).map((p) => ({ what: shown(io, p.file.path), outcome: p.outcome })),
        dropped: a.dropped,
      });
    }
    printReport(report, io, json);
    return 0;
  }
  if (cmd === 'import' && what === 'app' && rest.length === 1) {
    const l = loaded(opts, io);
    const a = convertApp(rest[0] as string, io.cwd, path.resolve(l.dir, l.config.throughway.apis_dir));
    const store = await openStore(l.config, io.cwd);
    try {
      const changes = await applyApp(store, a, o);
      report.items.push({ title: `application ${a.name} of ${a.owner} from ${rest[0] as string}`, changes, dropped: a.dropped });
    } finally {
      await store.close();
    }
    printReport(report, io, json);
    return 0;
  }
  if (cmd === 'import' && what === 'policies' && rest.length === 1) {
    const l = loaded(opts, io);
    const pol = policyOptions(l);
    const imports = policyFiles(rest[0] as string, io.cwd).map((f) => ({ f, p: convertPolicy(f.bytes, f.file) }));
    // A dry run reports a differing policy as replaced instead of refusing, as it does for files.
    const merged = mergePolicies(
      pol.file,
      imports.map((x) => x.p),
      o.force || o.dryRun,
      pol.options,
    );
    const written = writeFiles([merged.file], { dryRun: o.dryRun, force: true });
    imports.forEach(({ f, p }, i) => {
      const m = merged.outcomes[i];
      report.items.push({
        title: `${p.kind} policy ${String(p.entry.name)} from ${f.file}`,
        changes: [{ what: shown(io, pol.file), outcome: m?.outcome ?? 'unchanged' }],
        dropped: p.dropped,
      });
    });
    if (written[0]?.outcome === 'unchanged') for (const it of report.items) for (const c of it.changes) c.outcome = 'unchanged';
    printReport(report, io, json);
    return 0;
  }
  if (cmd === 'export' && what === 'api' && rest.length === 2) {
    const l = loaded(opts, io);
    const { file, doc } = findApiFile(path.resolve(l.dir, l.config.throughway.apis_dir), rest[0] as string, rest[1] as string, true);
    const e = exportApi(file, doc);
    const outDir = path.resolve(io.cwd, opts.get('--out') ?? '.');
    const files = opts.has('--zip')
      ? [{ path: path.join(outDir, `${e.base}.zip`), bytes: writeZip(new Map([...e.files].map(([n, b]) => [`${e.base}/${n}`, b]))) }]
      : [...e.files].map(([n, bytes]) => ({ path: path.join(outDir, e.base, ...n.split('/')), bytes }));
    const plan = writeFiles(files, o);
    report.items.push({
      title: `${rest[0] as string} ${rest[1] as string} from ${shown(io, file)}`,
      changes: plan.map((p) => ({ what: shown(io, p.file.path), outcome: p.outcome })),
      dropped: e.dropped,
    });
    printReport(report, io, json);
    return 0;
  }
  throw new UsageError(`unknown command: ${words.join(' ')}`);
}

export async function runImportCli(argv: readonly string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`throughway: ${(err as Error).message}\n\n${IMPORT_USAGE}`);
    return 2;
  }
  try {
    return await run(parsed.words, parsed.opts, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`throughway: ${err.message}\n\n${IMPORT_USAGE}`);
      return 2;
    }
    if (err instanceof ImportError) {
      io.err(`throughway: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
