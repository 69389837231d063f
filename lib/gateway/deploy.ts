/**
 * Deploying API definitions: which parsed definitions go live, and hot deploy of the apis/ directory.
 *
 * Selection rules, in deploy order (APIs already deployed first, in the order they were deployed; new
 * files after them, by file name), so a new file can never push out an API that is serving traffic:
 *  - labels: deployed only when a label is in gateway_labels ([apim.sync_runtime_artifacts.gateway]);
 *  - context + version must be unique: a later duplicate is refused, naming the file that has it;
 *  - one default version per context: a later one is deployed without default-version routing;
 *  - the API's CORS override must be valid (credentials with the origin * is refused);
 *  - a tenant's APIs (apis/t/<domain>/) count against its billing package's `resource_volume.limit`: the
 *    files past it are refused (docs/tenants.md, "Billing packages").
 *
 * Hot deploy: fs.watch on the directory and its tenant folders (tenantFolders), debounced; every change re-reads the directory (files whose
 * text did not change are not parsed again) and swaps the route table in one assignment. Connections,
 * pools and in-flight calls are untouched. A changed file that no longer validates leaves its previous
 * version deployed (API_KEPT_PREVIOUS): an editor's half-written save never takes an API down.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type ApiDefinition,
  type ApiParseResult,
  type ApiVars,
  defaultPath,
  labelsMatch,
  parseApiText,
  readSchemaFile,
  type ServedProto,
  type ServedSchema,
  versionedPath,
  grpcServicesOf,
} from './apis';
import { CorsConfigError, type CorsPolicy } from './cors';
import type { ApiDiagnostic } from './diagnostics';
import type { Deployable } from './runtime';
import type { PolicyNames } from '../throttle/policies';
import type { PluginCatalogue } from './steps';

export type FileStatus = 'deployed' | 'invalid' | 'refused' | 'not-deployed' | 'kept-previous';

export interface ApiState {
  /** Absolute path, or '' for a definition given in code. */
  readonly file: string;
  readonly status: FileStatus;
  /** The definition deployed (or refused); undefined when the file never validated. */
  readonly api: ApiDefinition | undefined;
  /** Default-version routing in force. */
  readonly defaultRouting: boolean;
  readonly diagnostics: readonly ApiDiagnostic[];
}

export interface Candidate {
  readonly file: string;
  readonly api: ApiDefinition | undefined;
  readonly diagnostics: readonly ApiDiagnostic[];
  /** The file's current text is invalid and `api` is its last valid version. */
  readonly keptPrevious: boolean;
}

export interface Selection {
  readonly deployables: readonly Deployable[];
  readonly states: readonly ApiState[];
}

function where(api: ApiDefinition): string {
  return api.file === '' ? `${api.name} ${api.version}` : api.file;
}

/** A tenant's package and its API count limit (TenantDirectory.apiLimit). */
export type ApiLimit = (tenant: string) => { readonly package: string; readonly limit: number };

/** Applies the selection rules to candidates given in deploy order. */
export function selectApis(
  candidates: readonly Candidate[],
  gatewayLabels: readonly string[],
  globalCors: CorsPolicy,
  apiLimit?: ApiLimit,
): Selection {
  const perTenant = new Map<string, number>();
  const byPath = new Map<string, ApiDefinition>();
  const byDefault = new Map<string, ApiDefinition>();
  // gRPC calls name their service, not a context (docs/grpc.md): one API per service.
  const byService = new Map<string, ApiDefinition>();
  const deployables: Deployable[] = [];
  const states: ApiState[] = [];
  for (const c of candidates) {
    const api = c.api;
    const diagnostics = [...c.diagnostics];
    const file = c.file === '' ? '<api>' : c.file;
    if (api === undefined) {
      states.push({ file: c.file, status: 'invalid', api: undefined, defaultRouting: false, diagnostics });
      continue;
    }
    if (!labelsMatch(api, gatewayLabels)) {
      diagnostics.push({
        level: 'info',
        code: 'API_LABELS',
        file,
        line: 0,
        field: 'labels',
        message: `not deployed here: labels ${JSON.stringify(api.labels)} share none with gateway_labels ${JSON.stringify(gatewayLabels)}`,
      });
      states.push({ file: c.file, status: 'not-deployed', api, defaultRouting: false, diagnostics });
      continue;
    }
    const p = versionedPath(api);
    const other = byPath.get(p);
    if (other !== undefined) {
      diagnostics.push({
        level: 'error',
        code: 'API_DUPLICATE_CONTEXT',
        file,
        line: 0,
        field: 'context',
        message: `refused: context ${api.context} version ${api.version} (${p}) is already deployed by ${where(other)} (${other.name})`,
      });
      states.push({ file: c.file, status: 'refused', api, defaultRouting: false, diagnostics });
      continue;
    }
    const shared = grpcServicesOf(api).find((s) => byService.has(s));
    if (shared !== undefined) {
      const owner = byService.get(shared) as ApiDefinition;
      diagnostics.push({
        level: 'error',
        code: 'API_DUPLICATE_CONTEXT',
        file,
        line: 0,
        field: 'grpc',
        message: `refused: the gRPC service ${shared} is already served by ${where(owner)} (${owner.name} ${owner.version})`,
      });
      states.push({ file: c.file, status: 'refused', api, defaultRouting: false, diagnostics });
      continue;
    }
    if (api.tenant !== undefined && apiLimit !== undefined) {
      const n = perTenant.get(api.tenant) ?? 0;
      const l = apiLimit(api.tenant);
      if (n >= l.limit) {
        diagnostics.push({
          level: 'error',
          code: 'API_TENANT_LIMIT',
          file,
          line: 0,
          field: '',
          message: `refused: tenant ${api.tenant} has ${n} APIs deployed: package ${l.package} allows ${l.limit} ([multi_tenancy.billing.package.${l.package}.resource_volume] limit)`,
        });
        states.push({ file: c.file, status: 'refused', api, defaultRouting: false, diagnostics });
        continue;
      }
      perTenant.set(api.tenant, n + 1);
    }
    let cors: CorsPolicy;
    try {
      cors = globalCors.withOverride(api.cors, `${file}: [cors]`);
    } catch (err) {
      if (!(err instanceof CorsConfigError)) throw err;
      diagnostics.push({ level: 'error', code: 'API_VALUE', file, line: 0, field: 'cors', message: `refused: ${err.message}` });
      states.push({ file: c.file, status: 'refused', api, defaultRouting: false, diagnostics });
      continue;
    }
    byPath.set(p, api);
    for (const sv of grpcServicesOf(api)) byService.set(sv, api);
    let withDefault = false;
    if (api.defaultVersion) {
      const dp = defaultPath(api);
      const taken = byDefault.get(dp);
      if (taken !== undefined) {
        diagnostics.push({
          level: 'warning',
          code: 'API_DEFAULT_VERSION_TAKEN',
          file,
          line: 0,
          field: 'default_version',
          message: `${dp} already routes to the default version ${taken.version} (${where(taken)}); ${api.version} is deployed without default-version routing`,
        });
      } else {
        byDefault.set(dp, api);
        withDefault = true;
      }
    }
    deployables.push({ api, withDefault, cors });
    states.push({ file: c.file, status: c.keptPrevious ? 'kept-previous' : 'deployed', api, defaultRouting: withDefault, diagnostics });
  }
  return { deployables, states };
}

/** The API definition files of a directory (`*.toml`, not hidden), sorted; undefined when it cannot be listed. */
export function listApiFiles(dir: string): string[] | undefined {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isFile() && d.name.endsWith('.toml') && !d.name.startsWith('.'))
      .map((d) => path.join(dir, d.name))
      .sort();
  } catch {
    return undefined;
  }
}

/**
 * The API files of an apis directory with the name each is served by: the super tenant's `<file>`, then
 * each tenant folder's (apis/t/<domain>/*.toml, docs/tenants.md) `t/<domain>/<file>`; undefined when the
 * directory cannot be listed.
 */
export function listTenantedApiFiles(dir: string): { readonly full: string; readonly file: string }[] | undefined {
  const top = listApiFiles(dir);
  if (top === undefined) return undefined;
  const out = top.map((full) => ({ full, file: path.basename(full) }));
  const tenantsDir = path.join(dir, 't');
  let domains: string[] = [];
  try {
    domains = fs
      .readdirSync(tenantsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name)
      .sort();
  } catch {
    domains = [];
  }
  for (const d of domains)
    for (const full of listApiFiles(path.join(tenantsDir, d)) ?? []) out.push({ full, file: `t/${d}/${path.basename(full)}` });
  return out;
}

interface Cached {
  readonly text: string;
  /** The schema text the result was built with (ApiText.schema's, or a GraphQL API file's on disk). */
  readonly schemaText: string | undefined;
  /** The .proto texts it was built with (protoKey: ApiText.protos, or a gRPC API's files on disk). */
  readonly protoKey: string;
  readonly result: ApiParseResult;
}

export interface DirectoryRead {
  readonly candidates: readonly Candidate[];
  /** Diagnostics of files whose text changed since the last read (to be logged once). */
  readonly fresh: readonly ApiDiagnostic[];
  /** Files that appeared, changed or disappeared. */
  readonly changedFiles: readonly string[];
  /** The directory could not be listed (missing): no APIs from it. */
  readonly missing: boolean;
}

/** One API definition file's text, by name (a gateway-worker's, pulled from its control plane). */
export interface ApiText {
  /** What diagnostics and states name it by (e.g. the control plane's URL and the file's name). */
  readonly file: string;
  readonly text: string;
  /**
   * A GraphQL API's schema, served with its text (docs/scale-out.md): given texts never read a schema from
   * disk, so a GraphQL API given without it is refused.
   */
  readonly schema?: ServedSchema;
  /**
   * A gRPC API's .proto files (those its `[grpc] proto` names and their imports), served with its text
   * (docs/scale-out.md): given texts never read them from disk.
   */
  readonly protos?: readonly ServedProto[];
}

/** A file that could not be read: its previous version stays deployed, if any. */
interface Unreadable {
  readonly file: string;
  readonly error: string;
}

/**
 * API definition files from any source: parses and caches them by text, keeps the last valid version of
 * each and the deploy order. ApiDirectory reads them from disk, ApiTexts is given them.
 */
export class ApiFiles {
  private readonly cache = new Map<string, Cached>();
  /** The last valid definition of each file (what stays deployed while the file is invalid). */
  private readonly lastGood = new Map<string, ApiDefinition>();
  private readonly order = new Map<string, number>();
  private seq = 0;
  /** The texts are given (ApiTexts): a GraphQL API's schema comes with its text, never from disk. */
  protected given = false;

  /** The tenant whose API file this is (ApiDirectory: apis/t/<domain>/); undefined: the super tenant's. */
  protected tenantOf(_file: string): string | undefined {
    return undefined;
  }

  /** A tenant's definition is served under /t/<domain> (docs/tenants.md). */
  private inTenant(file: string, result: ApiParseResult): ApiParseResult {
    const tenant = this.tenantOf(file);
    const api = result.api;
    if (tenant === undefined || api === undefined) return result;
    return { ...result, api: { ...api, context: `/t/${tenant}${api.context}`, tenant } };
  }

  constructor(
    private readonly vars: ApiVars,
    /** Throttling policy names the files may use (docs/throttling.md). */
    private readonly policies?: PolicyNames,
    /** Where [mediation] scripts may be (GatewaySettings.scriptDirs). */
    private readonly scriptDirs?: readonly string[],
  ) {}

  /** What the files' `plugins` may name (docs/plugins.md); set by the gateway (lib/gateway/assembly.ts). Undefined: names not checked. */
  plugins: PluginCatalogue | undefined = undefined;

  /** The next read validates every file again (the policy names changed: SIGHUP re-read the policies). */
  revalidate(): void {
    this.cache.clear();
  }

  /**
   * Whether a GraphQL API's schema changed since its file was parsed: the served text (given texts), or
   * the schema file on disk (docs/graphql.md), so a saved schema redeploys its API like a saved API file.
   * The path is the last built one's: an API file never valid is parsed again when it changes.
   */
  private schemaChanged(file: string, cached: Cached, entry: ApiText): boolean {
    if (this.protoKey(file, cached.result, entry) !== cached.protoKey) return true;
    return this.given ? cached.schemaText !== entry.schema?.text : this.diskSchema(file, cached.result) !== cached.schemaText;
  }

  /**
   * The .proto texts of a gRPC API as one string: the served ones (given texts), or those of its files on
   * disk now (the files the last build read, imports included), so a saved .proto file redeploys its API
   * like a saved API file (docs/grpc.md). "" for other APIs.
   */
  private protoKey(file: string, result: ApiParseResult, entry: ApiText): string {
    if (this.given) return entry.protos === undefined ? '' : JSON.stringify(entry.protos.map((p) => [p.file, p.text]));
    const g = result.api?.grpc ?? this.lastGood.get(file)?.grpc;
    if (g === undefined) {
      // Never valid (a .proto with a syntax error, say): the .proto files beside it, by size and time.
      if (!/GRPC/.test(entry.text)) return '';
      try {
        const dir = path.dirname(file);
        return JSON.stringify(
          fs
            .readdirSync(dir)
            .filter((n) => n.endsWith('.proto'))
            .sort()
            .map((n) => {
              const st = fs.statSync(path.join(dir, n));
              return [n, st.size, st.mtimeMs];
            }),
        );
      } catch {
        return '';
      }
    }
    return JSON.stringify(
      g.protoFiles.map((f) => {
        try {
          return [f, fs.readFileSync(f, 'utf8')];
        } catch {
          return [f, null];
        }
      }),
    );
  }

  /** The schema text on disk now of a GraphQL API file (undefined: none, or unreadable). */
  private diskSchema(file: string, result: ApiParseResult): string | undefined {
    const g = result.api?.graphql ?? this.lastGood.get(file)?.graphql;
    if (g === undefined) return undefined;
    const read = readSchemaFile(path.dirname(g.schemaFile), g.schemaFile, false);
    return 'text' in read ? read.text : undefined;
  }

  /** `entries` undefined: the source is missing (no APIs from it). */
  protected readEntries(entries: readonly (ApiText | Unreadable)[] | undefined): DirectoryRead {
    const fresh: ApiDiagnostic[] = [];
    const changedFiles: string[] = [];
    const present = new Set((entries ?? []).map((e) => e.file));
    for (const f of [...this.cache.keys()]) {
      if (!present.has(f)) {
        this.cache.delete(f);
        this.lastGood.delete(f);
        this.order.delete(f);
        changedFiles.push(f);
      }
    }
    const candidates: Candidate[] = [];
    for (const entry of entries ?? []) {
      const file = entry.file;
      if (!('text' in entry)) {
        const d: ApiDiagnostic = { level: 'error', code: 'API_IO', file, line: 0, field: '', message: `cannot read (${entry.error})` };
        fresh.push(d);
        candidates.push({ file, api: this.lastGood.get(file), diagnostics: [d], keptPrevious: this.lastGood.has(file) });
        continue;
      }
      const text = entry.text;
      let cached = this.cache.get(file);
      if (cached === undefined || cached.text !== text || this.schemaChanged(file, cached, entry)) {
        const result = this.inTenant(
          file,
          parseApiText(
            text,
            file,
            this.vars,
            this.policies,
            this.scriptDirs,
            this.given
              ? {
                  ...(entry.schema !== undefined ? { schema: entry.schema } : {}),
                  ...(entry.protos !== undefined ? { protos: entry.protos } : {}),
                }
              : undefined,
            this.plugins,
          ),
        );
        cached = {
          text,
          schemaText: this.given ? entry.schema?.text : (result.api?.graphql?.sdl ?? this.diskSchema(file, result)),
          protoKey: this.protoKey(file, result, entry),
          result,
        };
        this.cache.set(file, cached);
        changedFiles.push(file);
        fresh.push(...cached.result.diagnostics);
      }
      const api = cached.result.api;
      if (api !== undefined) {
        this.lastGood.set(file, api);
        candidates.push({ file, api, diagnostics: cached.result.diagnostics, keptPrevious: false });
      } else {
        const previous = this.lastGood.get(file);
        const diagnostics = [...cached.result.diagnostics];
        if (previous !== undefined) {
          const kept: ApiDiagnostic = {
            level: 'warning',
            code: 'API_KEPT_PREVIOUS',
            file,
            line: 0,
            field: '',
            message: `the file is invalid; ${previous.name} ${previous.version} stays deployed as last read`,
          };
          diagnostics.push(kept);
          if (changedFiles.includes(file)) fresh.push(kept);
        }
        candidates.push({ file, api: previous, diagnostics, keptPrevious: previous !== undefined });
      }
    }
    // Deploy order: what was deployed before keeps its place; new files follow by name.
    candidates.sort(
      (a, b) =>
        (this.order.get(a.file) ?? Infinity) - (this.order.get(b.file) ?? Infinity) || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0),
    );
    return { candidates, fresh, changedFiles, missing: entries === undefined };
  }

  /** Records the files that were deployed, so they keep their place in later reads. */
  deployed(states: readonly ApiState[]): void {
    for (const s of states) {
      if ((s.status === 'deployed' || s.status === 'kept-previous') && !this.order.has(s.file)) this.order.set(s.file, this.seq++);
      if (s.status === 'invalid' || s.status === 'refused' || s.status === 'not-deployed') this.order.delete(s.file);
    }
  }
}

/**
 * API definition texts given whole (a gateway-worker's, from its control plane: docs/scale-out.md):
 * set() replaces them, read() deploys them with the rules of a directory's files.
 */
export class ApiTexts extends ApiFiles {
  private entries: readonly ApiText[] = [];

  constructor(
    /** Where the texts come from, for the start output and logs (e.g. the control plane's URL). */
    readonly origin: string,
    entries: readonly ApiText[],
    vars: ApiVars,
    policies?: PolicyNames,
    scriptDirs?: readonly string[],
  ) {
    super(vars, policies, scriptDirs);
    this.given = true;
    this.set(entries);
  }

  set(entries: readonly ApiText[]): void {
    this.entries = [...entries].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  }

  /**
   * A text named `.../apis/t/<domain>/<file>` is a tenant's API file, as in a directory (a gateway-worker's
   * texts from its control plane are named `<origin>/apis/t/<domain>/<file>`; docs/scale-out.md).
   */
  protected override tenantOf(file: string): string | undefined {
    return /\/apis\/t\/([^/]+)\/[^/]+$/.exec(file)?.[1];
  }

  read(): DirectoryRead {
    return this.readEntries(this.entries);
  }
}

/**
 * The tenant folders of an apis directory that hot deploy watches besides the directory itself: apis/t/
 * and each apis/t/<domain>/ (docs/tenants.md), those that exist now. A tenant's `created/` (the
 * publisher's drafts) is not among them: drafts are never deployed.
 */
export function tenantFolders(dir: string): string[] {
  const tenantsDir = path.join(dir, 't');
  let names: string[];
  try {
    names = fs
      .readdirSync(tenantsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name);
  } catch {
    return [];
  }
  return [tenantsDir, ...names.map((n) => path.join(tenantsDir, n))];
}

/**
 * fs.watch on a directory, debounced: `onChange` runs once after a burst of changes (an editor's save is
 * several events). Not persistent: a watch never keeps the process up.
 *
 * `folders` names folders below to watch too (an apis/ directory's tenant folders, tenantFolders): each
 * is a flat watch of its own, and the list is looked at again on every event, so a folder created after
 * the start is watched from the event that shows it. A recursive fs.watch is not used: Node 20's on Linux
 * missed the publisher's rewrite of a file in the top folder (a lifecycle change not hot-deployed, seen in
 * test/portal/browser.test.ts), and a flat watch on apis/ alone misses the files of apis/t/<domain>/
 * (test/tenants/hot-deploy.test.ts).
 */
export class DebouncedWatch {
  private watcher: fs.FSWatcher | undefined;
  private readonly below = new Map<string, fs.FSWatcher>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    private readonly debounceMs = 50,
    private readonly folders?: (dir: string) => readonly string[],
  ) {}

  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /** Idempotent. Returns false when the directory cannot be watched (missing). */
  start(onChange: () => void): boolean {
    if (this.watcher !== undefined) return true;
    const changed = (): void => {
      // The folders first: what a new folder holds is read by the debounced onChange, after its watch started.
      this.follow(changed);
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        onChange();
      }, this.debounceMs);
      this.timer.unref();
    };
    try {
      this.watcher = fs.watch(this.dir, { persistent: false }, changed);
      this.watcher.on('error', () => this.stop());
    } catch {
      return false;
    }
    this.follow(changed);
    return true;
  }

  /** Watches the folders below that exist now, and stops watching those gone. */
  private follow(changed: () => void): void {
    if (this.folders === undefined || this.watcher === undefined) return;
    const want = new Set(this.folders(this.dir));
    for (const [d, w] of this.below)
      if (!want.has(d)) {
        w.close();
        this.below.delete(d);
      }
    for (const d of want) {
      if (this.below.has(d)) continue;
      try {
        const w = fs.watch(d, { persistent: false }, changed);
        w.on('error', () => {
          w.close();
          if (this.below.get(d) === w) this.below.delete(d);
        });
        this.below.set(d, w);
      } catch {
        // Removed since it was listed: the event of its removal looks again.
      }
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    for (const w of this.below.values()) w.close();
    this.below.clear();
  }
}

/** The apis/ directory: reads and caches definition files, keeps deploy order, and watches for changes. */
export class ApiDirectory extends ApiFiles {
  private watcher: DebouncedWatch | undefined;

  constructor(
    readonly dir: string,
    vars: ApiVars,
    /** Throttling policy names the files may use (docs/throttling.md). */
    policies?: PolicyNames,
    scriptDirs?: readonly string[],
  ) {
    super(vars, policies, scriptDirs);
  }

  /** Tenants' API files are in apis/t/<domain>/ (docs/tenants.md); the folder names the tenant. */
  protected override tenantOf(file: string): string | undefined {
    const folder = path.dirname(file);
    return path.dirname(folder) === path.join(this.dir, 't') ? path.basename(folder) : undefined;
  }

  /** The super tenant's files, then each tenant folder's (apis/t/<domain>/*.toml). */
  private allFiles(): string[] | undefined {
    return listTenantedApiFiles(this.dir)?.map((f) => f.full);
  }

  read(): DirectoryRead {
    const files = this.allFiles();
    if (files === undefined) return this.readEntries(undefined);
    const entries: (ApiText | Unreadable)[] = [];
    for (const file of files) {
      try {
        entries.push({ file, text: fs.readFileSync(file, 'utf8') });
      } catch (err) {
        // Removed between listing and reading: the next event re-reads the directory.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        entries.push({ file, error: (err as Error).message });
      }
    }
    return this.readEntries(entries);
  }

  /** Calls `onChange` (debounced) after files in the directory change. Returns false when it cannot watch. */
  watch(onChange: () => void, debounceMs = 50): boolean {
    // Tenants' API files are in apis/t/<domain>/ (docs/tenants.md): those folders are watched too.
    this.watcher ??= new DebouncedWatch(this.dir, debounceMs, tenantFolders);
    return this.watcher.start(onChange);
  }

  unwatch(): void {
    this.watcher?.stop();
  }
}
