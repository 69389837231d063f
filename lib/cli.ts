#!/usr/bin/env node
/**
 * The throughway command line (docs/configuration.md):
 *
 *   throughway init [DIR]
 *   throughway start [--config FILE] [--strict] [--check] [--sys name=value]...
 *   throughway config check [--config FILE] [--strict] [--sys name=value]...
 *   throughway config print [--config FILE] [--json] [--sys name=value]...
 *   throughway import api|apis|app|policies ... | export api NAME VERSION   (lib/import/cli.ts)
 *   throughway dump | diff FILE | apply FILE   (lib/remote/cli.ts)
 *   throughway status [--url URL] [--json]     (lib/remote/status.ts)
 *
 * Exit status: 0 success (warnings allowed), 1 configuration errors (all of them listed), 2 usage errors.
 * The configuration is read from conf/deployment.toml under the working directory unless --config names
 * another file; `$sys{name}` values come from --sys (the process-level properties of spec 000, part 1).
 */
import { environment } from './config/switches';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatPolicyDiagnostic, loadPolicies } from './throttle/policies';
import { throttleSettingsFrom } from './throttle/settings';
import { loadConfig, type LoadResult } from './config/load';
import { defaultAdminPasswordWarning } from './config/admin-password';
import { formatDiagnostic } from './config/diagnostics';
import { printConfig } from './config/print';
import { LISTENING_PORTS, portOpened } from './config/ports';
import { databaseMapping } from './config/database';
import { connectionTarget } from './store/pool';
import { sharedDatabase } from './store/open';
import { FormatConfigError, mediationSettingsFrom } from './mediation';
import { roleParts } from './scale/settings';
import { checkTlsStores } from './tls/settings';
import { checkUserStore } from './store/users';
import { UsageError } from './errors';

export const USAGE = `Usage: throughway <command> [options]

Commands:
  init [DIR]            write a starter configuration under DIR (default: here): conf/deployment.toml,
                        conf/apis/demo.toml (and its OpenAPI document), conf/policies.toml; never
                        overwrites a file
  start                 start the node for server.server_role
  config check          validate the configuration; list every error and warning
  config print          print the effective configuration (defaults filled, secrets as ****)
  apis list             list the API definitions in apis/ and what the gateway deploys of them
  apps|keys|subscriptions|users|blocking|registration ...
                        manage the key manager's store (\`throughway apps --help\`, docs/admin-api.md)
  dump | diff FILE | apply FILE [--dry-run] [--prune]
                        a running node's applications, subscriptions, users, blocking conditions and
                        tenants as a YAML file, compared and synced (\`throughway apply --help\`, docs/sync.md)
  status                a running node's runtime view: listeners, backend pools, recent faults, plugins,
                        tenants, the configuration's sources (\`throughway status --help\`, docs/operations.md)
  import api|apis|app|policies ..., export api NAME VERSION
                        the reference's exported projects in and out (\`throughway import --help\`,
                        docs/migrating.md)

Options:
  --config FILE         configuration file (default: conf/deployment.toml)
  --strict              unknown sections and keys are errors, not warnings
  --check               start: validate and print what would run (role, ports), then exit
  --sys NAME=VALUE      value of $sys{NAME} in the configuration (repeatable)
  --json                config print, apis list: JSON instead of text
  -h, --help            show this help
  -v, --version         show the version

Exit status: 0 ok (warnings allowed), 1 configuration errors, 2 usage errors.
`;

export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly cwd: string;
  /** The environment (secrets passed by name, never as arguments: `tenants add`); none when absent. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Standard input read whole (a secret piped in); absent when there is none to read. */
  readonly stdin?: () => Promise<string>;
}

/** Standard input read whole, at most 64 KiB (a password piped in); '' from a terminal. */
function readStdin(): Promise<string> {
  if (process.stdin.isTTY === true) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    process.stdin.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 64 * 1024) {
        process.stdin.destroy();
        reject(new Error('standard input is longer than 64 KiB'));
        return;
      }
      chunks.push(c);
    });
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

interface Parsed {
  command: string[];
  config?: string;
  strict: boolean;
  check: boolean;
  json: boolean;
  help: boolean;
  version: boolean;
  sys: Record<string, string>;
}

function parseArgs(argv: readonly string[]): Parsed {
  const p: Parsed = { command: [], strict: false, check: false, json: false, help: false, version: false, sys: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[++i];
      if (next === undefined) throw new UsageError(`${name} needs a value`);
      return next;
    };
    switch (name) {
      case '--config':
      case '-c':
        p.config = value();
        break;
      case '--strict':
        p.strict = true;
        break;
      case '--json':
        p.json = true;
        break;
      case '--check':
        p.check = true;
        break;
      case '--help':
      case '-h':
        p.help = true;
        break;
      case '--version':
      case '-v':
        p.version = true;
        break;
      case '--sys': {
        const pair = value();
        const at = pair.indexOf('=');
        if (at <= 0) throw new UsageError(`--sys expects NAME=VALUE, got ${JSON.stringify(pair)}`);
        p.sys[pair.slice(0, at)] = pair.slice(at + 1);
        break;
      }
      default:
        if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`);
        p.command.push(arg);
    }
  }
  return p;
}

/**
 * The configuration file when --config names none: conf/deployment.toml, else the reference's home layout's
 * repository/conf/deployment.toml (its stores then come from repository/resources/security: docs/tls.md).
 */
function defaultConfig(cwd: string): string {
  const own = path.join('conf', 'deployment.toml');
  const reference = path.join('repository', 'conf', 'deployment.toml');
  return !fs.existsSync(path.join(cwd, own)) && fs.existsSync(path.join(cwd, reference)) ? reference : own;
}

function load(p: Parsed, io: CliIo): LoadResult {
  const shown = p.config ?? defaultConfig(io.cwd);
  const file = path.resolve(io.cwd, shown);
  // What a starting node refuses (missing store files, database types without a driver) is refused here too.
  const result = loadConfig({ file, strict: p.strict, sys: p.sys, startChecks: true });
  // Diagnostics name the file as the user wrote it, not as an absolute path.
  if (shown !== file) {
    return { ...result, diagnostics: result.diagnostics.map((d) => ({ ...d, file: d.file === file ? shown : d.file })) };
  }
  return result;
}

function listDiagnostics(result: LoadResult, io: CliIo): { errors: number; warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const d of result.diagnostics) {
    if (d.level === 'error') errors++;
    else warnings++;
    io.err(`${formatDiagnostic(d)}\n`);
  }
  return { errors, warnings };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function describePorts(result: LoadResult): string[] {
  const lines = [`effective ports (server.offset ${result.ports.offset}):`];
  for (const spec of LISTENING_PORTS) {
    // Whether the configuration switches the listener on; which listeners a role opens is lib/node/'s call.
    const state = spec.openedBy === null ? 'accepted, not opened' : portOpened(result.config, spec) ? 'on' : 'off';
    lines.push(`  ${spec.title.padEnd(30)} ${String(result.ports[spec.name]).padStart(5)}  ${spec.key} (${state})`);
  }
  return lines;
}

/**
 * What the file's keys do (docs/migrating.md has every key's status): a count of each status, then each
 * key not acted on at its place with the reason, so a migrating user sees which of their settings change
 * nothing and why.
 */
function describeKeyStatus(result: LoadResult): string[] {
  const n = result.writtenStatus;
  const total = n.acts + n.differs + n.inactive;
  const lines = [`keys written: ${total} (${n.acts} act, ${n.differs} act differently, ${n.inactive} not acted on; docs/migrating.md)`];
  for (const k of result.notActedOn) {
    lines.push(
      `  ${k.file}:${k.line}:${k.column}: ${k.key}: not acted on${k.sectionRuns ? '' : ` ([${k.section}] is not run)`}: ${k.reason}`,
    );
  }
  return lines;
}

function check(p: Parsed, io: CliIo): number {
  const result = load(p, io);
  const shown = p.config ?? defaultConfig(io.cwd);
  const listed = listDiagnostics(result, io);
  const errors = listed.errors;
  let warnings = listed.warnings;
  if (!result.ok) {
    io.out(`${shown}: invalid: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}\n`);
    return 1;
  }
  const admin = defaultAdminPasswordWarning(result.config, result.file);
  if (admin !== undefined) {
    warnings++;
    io.err(`${formatDiagnostic(admin)}\n`);
  }
  try {
    // Builder/formatter classes map to built-in formats (docs/mediation.md); the gateway refuses unknown ones.
    mediationSettingsFrom(result.config);
  } catch (err) {
    if (!(err instanceof FormatConfigError)) throw err;
    io.out(`${shown}: invalid: ${err.message}\n`);
    return 1;
  }
  // Key and trust stores opened with their passwords and alias, as start opens them (docs/tls.md).
  const stores = checkTlsStores(result.config, io.cwd);
  for (const s of stores) io.err(`${shown}: error ${s.code}: ${s.message}\n`);
  if (stores.length > 0) {
    io.out(`${shown}: invalid: ${plural(stores.length, 'key or trust store')} start would refuse\n`);
    return 1;
  }
  // An LDAP user store's settings, as start reads them (the directory itself is not contacted: docs/user-stores.md).
  const userStore = checkUserStore(result.config);
  for (const e of userStore) io.err(`${shown}: error ${e.code}: ${e.message}\n`);
  if (userStore.length > 0) {
    io.out(`${shown}: invalid: the user store start would refuse\n`);
    return 1;
  }
  const lines = [
    `${shown}: valid (${plural(warnings, 'warning')}${p.strict ? ', strict' : ''})`,
    `role: ${result.config.server.server_role}`,
  ];
  lines.push(...describePorts(result));
  const sharedApart = sharedDatabase(result.config, io.cwd) !== undefined;
  for (const name of ['apim_db', 'shared_db'] as const) {
    const m = databaseMapping(name, result.config.database[name], io.cwd);
    const use =
      name === 'apim_db'
        ? `the key manager's store${sharedApart ? ': applications, keys, subscriptions, tokens' : ''}`
        : sharedApart
          ? 'users, roles, tenants and profiles: a second store (docs/operations.md, "Two databases")'
          : 'no url of its own: users, roles and tenants are in apim_db, one store';
    if (m.kind === 'sqlite') lines.push(`database.${name}: type h2 → embedded SQLite file ${m.file} (${use})`);
    else if (m.type === 'postgre' || m.type === 'mysql') {
      const target = connectionTarget(result.config.database[name], m.type === 'postgre' ? 5432 : 3306, name);
      lines.push(
        `database.${name}: type ${m.type} → ${m.type === 'postgre' ? 'PostgreSQL' : 'MySQL/MariaDB'} ${target.host}:${target.port}/${target.database} (${use})`,
      );
    } else
      lines.push(
        `database.${name}: type ${m.type} is not supported by throughway${name === 'apim_db' ? ': start refuses it (use h2, postgre or mysql)' : ` (${use})`}`,
      );
  }
  // The throttling policies file is part of the configuration (docs/throttling.md): checked here too.
  const ts = throttleSettingsFrom(result.config, result.dir);
  const pol = loadPolicies(ts.policiesFile, {
    enableUnlimitedTier: ts.enableUnlimitedTier,
    headerConditions: ts.headerConditions,
    queryConditions: ts.queryConditions,
    claimConditions: ts.claimConditions,
  });
  for (const d of pol.diagnostics) if (d.level !== 'info') io.err(`${formatPolicyDiagnostic(d)}\n`);
  if (pol.policies === undefined) {
    io.out(`${ts.policiesFile}: invalid: ${plural(pol.diagnostics.filter((d) => d.level === 'error').length, 'error')}\n`);
    return 1;
  }
  const pp = pol.policies;
  lines.push(
    `throttling: ${pp.file === '' ? `built-in default policies (no ${ts.policiesFile})` : pp.file}: ${pp.subscription.size} subscription, ${pp.application.size} application, ${pp.api.size} API, ${pp.custom.length} custom policies; counters ${ts.counterStore}`,
  );
  lines.push(`accepted but inactive: ${result.inactive.length > 0 ? result.inactive.join(', ') : '(none)'}`);
  if (result.inactiveKeys.length > 0) lines.push(`accepted keys throughway does not act on: ${result.inactiveKeys.join(', ')}`);
  lines.push(...describeKeyStatus(result));
  io.out(`${lines.join('\n')}\n`);
  return 0;
}

function print(p: Parsed, io: CliIo): number {
  const result = load(p, io);
  listDiagnostics(result, io);
  if (!result.ok) return 1;
  io.out(printConfig(result, p.json ? 'json' : 'toml'));
  return 0;
}

/** The starter configuration `throughway init` copies: the package's own conf/ (shipped, package.json "files"). */
export const STARTER_FILES = [
  'conf/deployment.toml',
  'conf/apis/demo.toml',
  'conf/apis/pizzashack.openapi.json',
  'conf/policies.toml',
] as const;

/**
 * `throughway init [dir]` (docs/quickstart.md): copies the starter files under dir and prints the next
 * steps. Refuses, writing nothing, when one of them exists already (status 1, each one named).
 */
function init(dir: string | undefined, io: CliIo): number {
  const target = path.resolve(io.cwd, dir ?? '.');
  const source = path.join(__dirname, '..', '..');
  const taken = STARTER_FILES.filter((f) => fs.existsSync(path.join(target, f)));
  if (taken.length > 0) {
    io.err(
      `throughway init: not overwriting ${taken.map((f) => path.join(target, f)).join(', ')}; nothing written (remove them or choose another directory)\n`,
    );
    return 1;
  }
  for (const f of STARTER_FILES) {
    fs.mkdirSync(path.dirname(path.join(target, f)), { recursive: true });
    fs.copyFileSync(path.join(source, f), path.join(target, f), fs.constants.COPYFILE_EXCL);
    io.out(`  wrote ${path.join(target, f)}\n`);
  }
  const cd = target === io.cwd ? '' : `  cd ${path.relative(io.cwd, target) || '.'}\n`;
  io.out(
    `\nNext steps:\n${cd}  npx throughway start          # gateway on 8280 with the demo API, key manager on 9443\n  curl http://localhost:8280/pizzashack/1.0.0/menu\nEdit conf/deployment.toml (every key: docs/configuration.md); add APIs under conf/apis/ (docs/apis.md).\n`,
  );
  return 0;
}

async function start(p: Parsed, io: CliIo): Promise<number> {
  // `start --check` (docs/operations.md): the validation and start-up summary of `config check`, no start.
  if (p.check) return check(p, io);
  if (p.config === undefined && !fs.existsSync(path.join(io.cwd, defaultConfig(io.cwd)))) {
    io.err(
      `throughway: no conf/deployment.toml in ${io.cwd}: run \`throughway init\` to write a starter configuration, or name one with --config FILE\n`,
    );
    return 1;
  }
  const result = load(p, io);
  const { errors } = listDiagnostics(result, io);
  if (!result.ok) {
    io.err(`not starting: ${plural(errors, 'configuration error')}\n`);
    return 1;
  }
  // A role marked not built (lib/scale/settings.ts ROLE_PARTS; none today): say so rather than half-work.
  const role = result.config.server.server_role;
  if (roleParts(role).notBuilt) {
    io.err(`throughway: server.server_role = "${role}" is not built by throughway (docs/scale-out.md)\n`);
    return 2;
  }
  // lib/node/ is the boot entry point; loaded lazily so `config` commands never pull in the runtime.
  const { startNode } = await import('./node');
  // Cluster mode (docs/scale-out.md): the primary runs the control plane part and the workers.
  const cl = result.config.throughway.cluster;
  let workers: number;
  try {
    workers = (await import('./scale/cluster')).clusterWorkers(cl.workers);
  } catch (err) {
    io.err(`throughway: ${(err as Error).message}\n`);
    return 1;
  }
  let node: { close(): Promise<void> };
  if (workers > 1) {
    const c = await import('./scale/cluster');
    const log = (line: string): void => io.out(`${c.isClusterWorker() ? `[worker ${process.pid}] ` : ''}${line}\n`);
    node = c.isClusterWorker()
      ? await c.runWorker(result, { start: startNode, workers, log })
      : await c.runPrimary(result, {
          start: startNode,
          workers,
          log,
          reload: () => load(p, io),
          restartMin: cl.restart_delay_min,
          restartMax: cl.restart_delay_max,
        });
  } else {
    // SIGHUP reads the file again with the same options; startNode refuses a configuration with errors.
    node = await startNode(result, { log: (line) => io.out(`${line}\n`), reload: () => load(p, io) });
  }
  const stop = (signal: NodeJS.Signals): void => {
    // A second SIGINT/SIGTERM during the shutdown finds no handler: the default action ends the process.
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
    io.out(`${signal}: stopping (in-flight calls get up to ${result.config.throughway.shutdown_timeout} ms)\n`);
    node.close().then(
      () => process.exit(0),
      (err: unknown) => {
        io.err(`throughway: shutdown failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return 0;
}

async function apisList(p: Parsed, io: CliIo): Promise<number> {
  const result = load(p, io);
  listDiagnostics(result, io);
  if (!result.ok) return 1;
  const { listApis, formatApiListing } = await import('./gateway/list');
  const listing = listApis(result);
  io.out(formatApiListing(listing, io.cwd, p.json));
  return listing.errors > 0 ? 1 : 0;
}

function version(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Runs the CLI; resolves to the exit status (the process is not exited here, so tests can call it). */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  // Key manager commands take their own options (lib/keymanager/cli.ts), loaded only when used.
  if (
    argv[0] !== undefined &&
    ['apps', 'keys', 'subscriptions', 'users', 'blocking', 'registration', 'tenants', 'tasks'].includes(argv[0])
  ) {
    const admin = await import('./keymanager/cli');
    if (argv.includes('--help') || argv.includes('-h')) {
      io.out(admin.ADMIN_USAGE);
      return 0;
    }
    return admin.runAdminCli(argv, io);
  }
  // Declarative state of a running node (lib/remote/cli.ts), loaded only when used.
  if (argv[0] === 'dump' || argv[0] === 'diff' || argv[0] === 'apply') {
    const rem = await import('./remote/cli');
    if (argv.includes('--help') || argv.includes('-h')) {
      io.out(rem.REMOTE_USAGE);
      return 0;
    }
    return rem.runRemoteCli(argv, io);
  }
  // The runtime view of a running node (lib/remote/status.ts), loaded only when used.
  if (argv[0] === 'status') {
    const st = await import('./remote/status');
    if (argv.includes('--help') || argv.includes('-h')) {
      io.out(st.STATUS_USAGE);
      return 0;
    }
    return st.runStatusCli(argv, io);
  }
  // Import and export of the reference's projects (lib/import/cli.ts), loaded only when used.
  if (argv[0] === 'import' || argv[0] === 'export') {
    const imp = await import('./import/cli');
    if (argv.includes('--help') || argv.includes('-h')) {
      io.out(imp.IMPORT_USAGE);
      return 0;
    }
    return imp.runImportCli(argv, io);
  }
  let p: Parsed;
  try {
    p = parseArgs(argv);
  } catch (err) {
    io.err(`throughway: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (p.help) {
    io.out(USAGE);
    return 0;
  }
  if (p.version) {
    io.out(`throughway ${version()}\n`);
    return 0;
  }
  const [cmd, sub, ...rest] = p.command;
  if (cmd === 'help' && sub === undefined) {
    io.out(USAGE);
    return 0;
  }
  if (cmd === 'init' && rest.length === 0) return init(sub, io);
  if (cmd === 'start' && sub === undefined) return start(p, io);
  if (cmd === 'config' && (sub === 'check' || sub === 'print') && rest.length === 0) return sub === 'check' ? check(p, io) : print(p, io);
  if (cmd === 'apis' && sub === 'list' && rest.length === 0) return apisList(p, io);
  io.err(`throughway: ${cmd === undefined ? 'no command given' : `unknown command: ${p.command.join(' ')}`}\n\n${USAGE}`);
  return 2;
}

if (require.main === module) {
  const io: CliIo = {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    cwd: process.cwd(),
    env: environment(),
    stdin: readStdin,
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`throughway: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
