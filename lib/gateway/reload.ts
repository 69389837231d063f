/**
 * Deploy and reload: which APIs are live and the runtime built from them. Every deploy builds a new
 * GatewayRuntime (runtime.ts) and swaps the one reference, so calls in flight keep the state they started
 * with. The API source is the apis/ directory (hot-deployed on change), API texts, or definitions given
 * in code; reload() re-reads it and the fault templates (docs/apis.md).
 */
import type { Logger } from '../log';
import { loadFaultTemplates, type FaultTemplates } from '../faults/templates';
import { type ApiVars, defaultPath, validateApi, versionedPath } from './apis';
import type { GatewayParts } from './assembly';
import { type ApiState, type ApiText, type Candidate, selectApis } from './deploy';
import { type ApiDiagnostic, formatApiDiagnostic } from './diagnostics';
import { GatewayOptionsError } from './options';
import { buildTable, GatewayRuntime } from './runtime';

export interface DeployedApi {
  readonly name: string;
  readonly version: string;
  readonly context: string;
  /** The path it is invoked at: /<context>/<version>. */
  readonly path: string;
  readonly defaultPath: string | undefined;
  readonly state: string;
  readonly file: string;
}

export interface ReloadReport {
  readonly deployed: readonly DeployedApi[];
  readonly states: readonly ApiState[];
  /** Diagnostics of files that changed in this reload. */
  readonly diagnostics: readonly ApiDiagnostic[];
}

export interface ReloadOptions {
  readonly apis?: readonly unknown[];
  readonly apiTexts?: readonly ApiText[];
}

export function describe(states: readonly ApiState[]): DeployedApi[] {
  const out: DeployedApi[] = [];
  for (const s of states) {
    if ((s.status !== 'deployed' && s.status !== 'kept-previous') || s.api === undefined) continue;
    const a = s.api;
    const p = versionedPath(a);
    out.push({
      name: a.name,
      version: a.version,
      context: a.context,
      path: p,
      defaultPath: s.defaultRouting ? defaultPath(a) : undefined,
      state: a.state,
      file: s.file,
    });
  }
  return out;
}

function logDiagnostic(logger: Logger, d: ApiDiagnostic): void {
  const level = d.level === 'error' ? 'error' : d.level === 'warning' ? 'warn' : 'info';
  if (logger.enabled(level))
    logger.log(level, 'api_definition', { code: d.code, file: d.file, line: d.line, field: d.field, message: formatApiDiagnostic(d) });
}

/** Logs what appeared and disappeared between two deployed lists. */
function logChanges(logger: Logger, before: readonly DeployedApi[], deployed: readonly DeployedApi[]): void {
  const was = new Set(before.map((d) => `${d.file}\u0000${d.path}`));
  const after = new Set(deployed.map((d) => `${d.file}\u0000${d.path}`));
  for (const d of deployed)
    if (!was.has(`${d.file}\u0000${d.path}`))
      logger.log('info', 'api_deployed', {
        name: d.name,
        version: d.version,
        path: d.path,
        default: d.defaultPath,
        state: d.state,
        file: d.file,
      });
  for (const k of was) if (!after.has(k)) logger.log('info', 'api_undeployed', { file: k.split('\u0000')[0], path: k.split('\u0000')[1] });
}

/** The deployed state of one gateway: its runtime, the API states, the fault templates. */
export class Deployment {
  /** The runtime calls start with; replaced whole by every deploy. */
  rt!: GatewayRuntime;
  states: readonly ApiState[] = [];
  private templates: FaultTemplates | undefined;
  private policiesSeen: number;
  private pluginsSeen: number;

  constructor(
    private readonly parts: GatewayParts,
    /** Definitions given in code (createGateway `apis`); undefined when the APIs come from files. */
    private codeApis: readonly unknown[] | undefined,
    /** Hot deploy of the apis/ directory. */
    private readonly watching: boolean,
  ) {
    this.policiesSeen = parts.throttle.generation;
    this.pluginsSeen = parts.plugins.generation;
  }

  /** The files' source (directory or texts); undefined for definitions given in code. */
  private get files(): GatewayParts['directory'] | GatewayParts['texts'] {
    return this.parts.directory ?? this.parts.texts;
  }

  loadTemplates(): ApiDiagnostic[] {
    const r = loadFaultTemplates(this.parts.settings.faultTemplatesFile);
    // A broken templates file keeps the previous templates rather than dropping to none.
    if (r.templates !== undefined || !r.diagnostics.some((d) => d.level === 'error' && d.code === 'API_SYNTAX'))
      this.templates = r.templates;
    return [...r.diagnostics];
  }

  private candidatesFromCode(vars: ApiVars, scriptDirs: readonly string[]): { candidates: Candidate[]; fresh: ApiDiagnostic[] } {
    const candidates: Candidate[] = [];
    const fresh: ApiDiagnostic[] = [];
    for (const raw of this.codeApis ?? []) {
      const r = validateApi(raw, '', vars, undefined, this.parts.throttle.names(), scriptDirs, undefined, this.parts.plugins);
      candidates.push({ file: '', api: r.api, diagnostics: r.diagnostics, keptPrevious: false });
      fresh.push(...r.diagnostics);
    }
    return { candidates, fresh };
  }

  /** Reads the source, selects what goes live, builds and swaps the runtime, logs what changed. */
  deploy(templateDiagnostics: ApiDiagnostic[]): ReloadReport {
    const { settings, directory, logger, globalCors } = this.parts;
    const files = this.files;
    const before = describe(this.states);
    let candidates: readonly Candidate[];
    let fresh: ApiDiagnostic[];
    let changed: ReadonlySet<string> | undefined;
    if (files !== undefined) {
      const read = files.read();
      if (read.missing && directory !== undefined) {
        // A watcher on a removed directory sees nothing of the one created in its place.
        directory.unwatch();
        logger.log('warn', 'apis_dir_missing', {
          dir: directory.dir,
          message: 'no API definitions directory: no API is deployed; create it, then reload (SIGHUP)',
        });
      }
      candidates = read.candidates;
      fresh = [...read.fresh];
      changed = new Set(read.changedFiles);
    } else {
      ({ candidates, fresh } = this.candidatesFromCode(settings.vars, settings.scriptDirs));
    }
    const tenants = this.parts.tenants;
    const selection = selectApis(
      candidates,
      settings.gatewayLabels,
      globalCors,
      tenants?.apiLimit !== undefined ? (d) => tenants.apiLimit?.(d) ?? { package: '', limit: Infinity } : undefined,
    );
    files?.deployed(selection.states);
    // Selection-time diagnostics (duplicates, labels, default version, CORS) are logged when their file
    // changed, so a reload caused by another file does not repeat them.
    const known = new Set(fresh);
    for (const s of selection.states) {
      if (changed !== undefined && !changed.has(s.file)) continue;
      for (const d of s.diagnostics) if (!known.has(d) && d.code !== 'API_KEPT_PREVIOUS') fresh.push(d);
    }
    fresh.push(...templateDiagnostics);
    this.swap(selection.deployables, selection.states);
    for (const d of fresh) logDiagnostic(logger, d);
    const deployed = describe(this.states);
    logChanges(logger, before, deployed);
    return { deployed, states: this.states, diagnostics: fresh };
  }

  private swap(deployables: Parameters<typeof buildTable>[0], states: readonly ApiState[]): void {
    const p = this.parts;
    const table = buildTable(deployables, p.registry);
    this.rt = new GatewayRuntime(table, p.globalCors, p.headers, this.templates, p.tracked, p.security, p.throttle, p.mediation, p.tenants);
    this.states = states;
  }

  /** Starts hot deploy (idempotent): at creation, and again on reload for a directory created since. */
  watch(): boolean {
    const directory = this.parts.directory;
    return directory !== undefined && this.watching && directory.watch(() => this.deploy([]));
  }

  /** The first deploy, then hot deploy of the directory. */
  start(): void {
    this.deploy(this.loadTemplates());
    const directory = this.parts.directory;
    if (directory !== undefined && this.watching && !this.watch())
      this.parts.logger.log('warn', 'apis_dir_not_watched', {
        dir: directory.dir,
        message: 'hot deploy is off: the directory cannot be watched; `reload()` (SIGHUP) re-reads it',
      });
  }

  reload(o: ReloadOptions | undefined): ReloadReport {
    const { directory, texts, throttle } = this.parts;
    if (o?.apis !== undefined) {
      if (this.files !== undefined)
        throw new GatewayOptionsError(
          `reload({ apis }): this gateway reads its APIs from ${directory !== undefined ? 'the apis/ directory' : 'API texts (reload({ apiTexts }))'}; create it with \`apis\` to deploy definitions in code`,
        );
      this.codeApis = o.apis;
    }
    if (o?.apiTexts !== undefined) {
      if (texts === undefined) throw new GatewayOptionsError('reload({ apiTexts }): this gateway was not created with `apiTexts`');
      texts.set(o.apiTexts);
    }
    // Policies re-read since the last deploy (SIGHUP): every API file is validated against the new names.
    if (throttle.generation !== this.policiesSeen) {
      this.policiesSeen = throttle.generation;
      this.files?.revalidate();
    }
    // Plugins loaded again (SIGHUP, docs/plugins.md): every attachment is made again from the new modules.
    const plugins = this.parts.plugins.generation;
    if (plugins !== this.pluginsSeen) {
      this.pluginsSeen = plugins;
      this.files?.revalidate();
    }
    const report = this.deploy(this.loadTemplates());
    this.watch();
    return report;
  }
}
