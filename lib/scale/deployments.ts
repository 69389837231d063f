/**
 * API deployments and throttling policies served by the control plane (docs/scale-out.md: a `gateway-worker`
 * "gets ... policies and API deployments from the control plane — the api-key-manager (or default)
 * node, which loads its own apis/ and policies files and serves them as a snapshot plus events"; spec 000,
 * [apim.sync_runtime_artifacts.gateway]: "the gateway subscribes to labels; only APIs with those labels
 * are pulled and deployed").
 *
 * DeploymentSource (control plane nodes: default, api-key-manager, traffic-manager) reads the node's
 * apis/ directory and its [throughway.throttling] policies_file, serves them as `Deployments`
 * (GET /admin/v1/deployments, lib/keymanager/admin.ts) and, when they change (a debounced watch of both
 * directories, or SIGHUP), publishes `api.deployed`, `api.undeployed` and `policies.updated` on the bus:
 * the Redis hub carries them to the gateway-workers like every other event.
 *
 * What a control plane serves is what it could read: an API file must be TOML with a valid `labels`
 * (an array of strings; default ["Default"]). The rest of its validation is the gateway's, with the
 * gateway's runtime tokens and policy names, so its diagnostics name the file and line there. A file
 * that does not parse is logged (`deployment_file_unparsed`) and not served; one that parsed before and
 * stops parsing (a half-written save) keeps its last parsed text served, as a gateway keeps an API whose
 * file turned invalid (API_KEPT_PREVIOUS). The policies file is validated with the node's own policy
 * switches: a text with errors is logged and the last valid one stays served (none at start: the workers
 * then keep their own policies file).
 *
 * DeploymentFollower (gateway-worker) holds what was pulled (ControlPlane.pull, at start and after every
 * hub reconnect) and applies those events to its gateway: the API texts through Gateway.reload({ apiTexts })
 * (the gateway swaps its route table; no connection is dropped), the policies through Throttle.loadText.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as toml from 'toml';
import type { ApiDeploymentPayload, EventBus } from '../events/bus';
import { API_FIELDS, labelsMatch, readSchemaFile } from '../gateway/apis';
import { type ApiText, DebouncedWatch, listTenantedApiFiles, tenantFolders } from '../gateway/deploy';
import { syntaxDiagnostic } from '../gateway/diagnostics';
import type { Gateway } from '../gateway';
import type { Logger } from '../log';
import { DEFAULT_POLICIES_TOML, formatPolicyDiagnostic, parsePolicies, type PolicyOptions } from '../throttle/policies';

export interface PoliciesDeployment {
  /** The policies file's name ("" when it does not exist and the reference's default tiers are served). */
  readonly file: string;
  readonly text: string;
  readonly revision: string;
}

/** GET /admin/v1/deployments: the API files (filtered by labels when asked) and the policies. */
export interface Deployments {
  readonly apis: readonly ApiDeploymentPayload[];
  /** null: the control plane has no valid policies text (its file had errors at start). */
  readonly policies: PoliciesDeployment | null;
  /** deploymentsVersion() of the above, as served (also the answer's ETag). */
  readonly version?: string;
}

/**
 * One digest of a set of API files and policies: sha256 over each file's name and revision (sorted by
 * name) and the policies' revision. The control plane serves it with its deployments; a gateway-worker
 * computes it over what it holds, and the two agree exactly when both hold the same texts.
 */
export function deploymentsVersion(d: Pick<Deployments, 'apis' | 'policies'>): string {
  const h = createHash('sha256');
  for (const a of [...d.apis].sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0))) h.update(`${a.file}\0${a.revision}\n`);
  h.update(`policies\0${d.policies?.revision ?? ''}`);
  return h.digest('hex');
}

/** The revision of a text: sha256, hex. */
export function revisionOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The most .proto files served with one API (docs/scale-out.md): they travel in every snapshot and event. */
export const MAX_SERVED_PROTOS = 64;
/** The most bytes of .proto files served with one API, all together. */
export const MAX_SERVED_PROTO_BYTES = 4 * 1024 * 1024;

const DEFAULT_LABELS = (API_FIELDS.find((f) => f.key === 'labels')?.default ?? ['Default']) as readonly string[];

/**
 * An API file's `labels` (its default when absent), or why it cannot be read: not TOML, labels not strings;
 * and a GraphQL API's `[graphql] schema` value, when it is a string.
 */
export function apiLabels(
  text: string,
): { readonly labels: readonly string[]; readonly schema?: string; readonly protos?: readonly string[] } | { readonly error: string } {
  let raw: unknown;
  try {
    raw = toml.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    const d = syntaxDiagnostic(err, '', text);
    return { error: `line ${d.line}: ${d.message}` };
  }
  const t = raw as Record<string, unknown>;
  const labels = t.labels;
  if (labels !== undefined && (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string')))
    return { error: 'labels must be an array of strings' };
  const g = t.graphql as Record<string, unknown> | undefined;
  const schema = t.type === 'GRAPHQL' && g !== null && typeof g === 'object' && typeof g.schema === 'string' ? g.schema : undefined;
  const p = t.grpc as Record<string, unknown> | undefined;
  const protos =
    t.type === 'GRPC' && p !== null && typeof p === 'object' && Array.isArray(p.proto)
      ? p.proto.filter((x): x is string => typeof x === 'string')
      : undefined;
  return {
    labels: (labels as string[] | undefined) ?? DEFAULT_LABELS,
    ...(schema !== undefined ? { schema } : {}),
    ...(protos !== undefined ? { protos } : {}),
  };
}

/** `?labels=A,B`: the APIs whose labels share one with the list (every API without a list). */
export function selectByLabels(d: Deployments, labels: readonly string[] | undefined): Deployments {
  if (labels === undefined) return d;
  return { apis: d.apis.filter((a) => labelsMatch(a, labels)), policies: d.policies };
}

export interface DeploymentSourceOptions {
  readonly apisDir: string;
  readonly policiesFile: string;
  readonly policyOptions: PolicyOptions;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Watch both directories (default true); SIGHUP (refresh()) re-reads them either way. */
  readonly watch?: boolean;
  readonly debounceMs?: number;
}

/** The control plane's apis/ and policies file, served and followed (module comment). */
export class DeploymentSource {
  private apis = new Map<string, ApiDeploymentPayload>();
  private policies: PoliciesDeployment | null = null;
  /** Files logged as unparsed, with the text logged: each bad text is logged once. */
  private readonly unparsed = new Map<string, string>();
  private readonly apisWatch: DebouncedWatch;
  private readonly policiesWatch: DebouncedWatch;

  constructor(private readonly o: DeploymentSourceOptions) {
    // With the tenant folders (apis/t/<domain>/), as the gateway's own watch (lib/gateway/deploy.ts).
    this.apisWatch = new DebouncedWatch(o.apisDir, o.debounceMs ?? 50, tenantFolders);
    this.policiesWatch = new DebouncedWatch(path.dirname(o.policiesFile), o.debounceMs ?? 50);
    this.refresh(false);
    this.watch();
  }

  /** What is served now; `labels`: only the APIs sharing one of them. */
  snapshot(labels?: readonly string[]): Deployments {
    const d = selectByLabels({ apis: [...this.apis.values()], policies: this.policies }, labels);
    return { apis: d.apis, policies: d.policies, version: deploymentsVersion(d) };
  }

  private watch(): void {
    if (this.o.watch === false) return;
    this.policiesWatch.start(() => this.refreshPolicies(true));
    if (this.apisWatch.watching || this.apisWatch.start(() => this.refresh())) return;
    // No apis/ at all is common on a node that serves no APIs: said quietly; SIGHUP looks again.
    const missing = !fs.existsSync(this.o.apisDir);
    this.o.logger.log(missing ? 'info' : 'warn', 'deployment_dir_not_watched', {
      dir: this.o.apisDir,
      message: `API files served to gateway-workers are re-read on SIGHUP only (${missing ? 'no such directory' : 'the directory cannot be watched'})`,
    });
  }

  /** Re-reads both (SIGHUP; also the watch), publishing what changed when `publish`. */
  refresh(publish = true): void {
    this.refreshPolicies(publish);
    this.refreshApis(publish);
    // A directory created since the start (or re-created) is watched from now on.
    if (publish) this.watch();
  }

  /**
   * The super tenant's files, then each tenant folder's (apis/t/<domain>/*.toml, docs/tenants.md), by the
   * name they are served with: `<file>`, `t/<domain>/<file>`.
   */
  private apiFiles(): { readonly full: string; readonly file: string }[] | undefined {
    return listTenantedApiFiles(this.o.apisDir);
  }

  private refreshApis(publish: boolean): void {
    const files = this.apiFiles();
    if (files === undefined && publish) this.apisWatch.stop();
    const next = new Map<string, ApiDeploymentPayload>();
    for (const { full, file } of files ?? []) {
      let text: string;
      try {
        text = fs.readFileSync(full, 'utf8');
      } catch (err) {
        const before = this.apis.get(file);
        if (before !== undefined) next.set(file, before);
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
          this.o.logger.log('warn', 'deployment_file_unparsed', { file: full, message: `cannot read (${(err as Error).message})` });
        continue;
      }
      const before = this.apis.get(file);
      const r = apiLabels(text);
      if ('error' in r) {
        if (this.unparsed.get(file) !== text) {
          this.unparsed.set(file, text);
          this.o.logger.log('warn', 'deployment_file_unparsed', {
            file: full,
            message: `${r.error}: not served to gateway-workers${before !== undefined ? '; its last parsed text stays served' : ''}`,
          });
        }
        if (before !== undefined) next.set(file, before);
        continue;
      }
      this.unparsed.delete(file);
      const schema = r.schema !== undefined ? this.schemaOf(full, r.schema) : undefined;
      const protos = r.protos !== undefined ? this.protosOf(full, r.protos) : undefined;
      const protoText = protos === undefined ? undefined : JSON.stringify(protos.map((x) => [x.file, x.text]));
      if (
        before !== undefined &&
        before.text === text &&
        before.schema?.text === schema?.text &&
        (before.protos === undefined ? undefined : JSON.stringify(before.protos.map((x) => [x.file, x.text]))) === protoText
      ) {
        next.set(file, before);
        continue;
      }
      // The revision covers the schema and the .proto files too: a changed one redeploys its API on the workers.
      const parts = [schema?.text, protoText].filter((x): x is string => x !== undefined);
      const revision = parts.length === 0 ? revisionOf(text) : revisionOf([text, ...parts].map(revisionOf).join('\n'));
      next.set(file, {
        file,
        text,
        labels: r.labels,
        ...(schema !== undefined ? { schema } : {}),
        ...(protos !== undefined ? { protos } : {}),
        revision,
      });
    }
    const previous = this.apis;
    this.apis = next;
    if (!publish) return;
    for (const [file, a] of previous) {
      if (!next.has(file)) {
        this.unparsed.delete(file);
        this.o.bus.publish('api.undeployed', { file, labels: a.labels });
      }
    }
    for (const [file, a] of next) if (previous.get(file)?.revision !== a.revision) this.o.bus.publish('api.deployed', a);
  }

  /**
   * A GraphQL API's schema file, read as the gateway reads it (inside the API file's directory, at most
   * MAX_SCHEMA_BYTES of lib/gateway/apis.ts). Unreadable: logged once per reason, and the API is served
   * without it (the workers refuse it, naming the schema; API_VALUE).
   */
  private schemaOf(apiFile: string, name: string): { readonly file: string; readonly text: string } | undefined {
    const dir = path.dirname(apiFile);
    const read = readSchemaFile(dir, path.resolve(dir, name), true);
    if ('text' in read) {
      this.unparsed.delete(`${apiFile}\0schema`);
      return { file: name, text: read.text };
    }
    if (this.unparsed.get(`${apiFile}\0schema`) !== read.error) {
      this.unparsed.set(`${apiFile}\0schema`, read.error);
      this.o.logger.log('warn', 'deployment_file_unparsed', {
        file: apiFile,
        message: `its schema ${JSON.stringify(name)} cannot be served: ${read.error}`,
      });
    }
    return undefined;
  }

  /**
   * A gRPC API's .proto files, read as the gateway reads them (inside the API file's directory, imports
   * too, each at most MAX_PROTO_BYTES of lib/grpc/proto.ts), by their names relative to that directory;
   * at most MAX_SERVED_PROTOS files and MAX_SERVED_PROTO_BYTES in all. Files that do not parse are served as
   * they are (the workers refuse the API naming the file and line, as the gateway here does: API_PROTO);
   * unreadable or too many: logged once per reason, and the API is served without them (the workers refuse
   * it: API_PROTO, "was not served with the API file").
   */
  private protosOf(apiFile: string, names: readonly string[]): { file: string; text: string }[] | undefined {
    const dir = path.dirname(apiFile);
    const key = `${apiFile}\0protos`;
    const fail = (reason: string): undefined => {
      if (this.unparsed.get(key) !== reason) {
        this.unparsed.set(key, reason);
        this.o.logger.log('warn', 'deployment_file_unparsed', { file: apiFile, message: `its .proto files cannot be served: ${reason}` });
      }
      return undefined;
    };
    if (names.length === 0) return [];
    // Loaded with the first gRPC API (as lib/gateway/apis.ts does): a control plane serving none never loads protobufjs.
    const { loadProtos, MAX_PROTO_BYTES } = require('../grpc/proto') as typeof import('../grpc/proto');
    const loaded = loadProtos(dir, names, true, `type = "GRPC" (${apiFile})`);
    const files = loaded.ok ? loaded.files : names.map((n) => path.resolve(dir, n));
    if (files.length > MAX_SERVED_PROTOS) return fail(`${files.length} files, more than ${MAX_SERVED_PROTOS}`);
    const out: { file: string; text: string }[] = [];
    let total = 0;
    for (const f of files) {
      if (f.startsWith('google/protobuf/')) continue;
      const rel = path.relative(dir, f);
      if (rel.startsWith('..') || path.isAbsolute(rel)) return fail(`${rel} leaves the API file's directory`);
      const read = readSchemaFile(dir, f, true, MAX_PROTO_BYTES);
      // A listed file that does not exist: served without it, the workers name it as this gateway does.
      if ('error' in read) {
        if (loaded.ok) return fail(`${rel}: ${read.error}`);
        continue;
      }
      total += Buffer.byteLength(read.text);
      if (total > MAX_SERVED_PROTO_BYTES) return fail(`more than ${MAX_SERVED_PROTO_BYTES} bytes in all`);
      out.push({ file: rel.split(path.sep).join('/'), text: read.text });
    }
    this.unparsed.delete(key);
    return out;
  }

  private refreshPolicies(publish: boolean): void {
    const file = this.o.policiesFile;
    let text: string;
    let name = path.basename(file);
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.o.logger.log('error', 'deployment_policies_invalid', {
          file,
          message: `cannot read (${(err as Error).message}); the policies served stay`,
        });
        return;
      }
      // As the gateway does (lib/throttle/policies.ts loadPolicies): no file, the reference's default tiers.
      text = DEFAULT_POLICIES_TOML;
      name = '';
    }
    const revision = revisionOf(text);
    if (this.policies?.revision === revision) return;
    const r = parsePolicies(text, file, this.o.policyOptions);
    if (r.policies === undefined) {
      const errors = r.diagnostics.filter((d) => d.level === 'error').map(formatPolicyDiagnostic);
      this.o.logger.log('error', 'deployment_policies_invalid', {
        file,
        errors,
        message: `the policies file has errors: ${this.policies === null ? 'no policies are served to gateway-workers' : 'the last valid text stays served'}`,
      });
      return;
    }
    this.policies = { file: name, text, revision };
    if (publish) this.o.bus.publish('policies.updated', { text, revision });
  }

  close(): void {
    this.apisWatch.stop();
    this.policiesWatch.stop();
  }
}

/**
 * A gateway-worker's deployments: what was pulled, kept current by the control plane's events (before
 * its gateway exists too), and applied to the gateway once attached.
 */
export class DeploymentFollower {
  private readonly apis = new Map<string, ApiDeploymentPayload>();
  private policies: PoliciesDeployment | null = null;
  /** The policies the control plane serves (its last pull or event), applied or refused by the gateway. */
  private served: PoliciesDeployment | null = null;
  private gateway: Gateway | undefined;
  private pending = false;
  private readonly unsubscribe: () => void;

  constructor(
    /** The control plane's origin: pulled files are named `<origin>/apis/<file>` in diagnostics and states. */
    readonly origin: string,
    /** [apim.sync_runtime_artifacts.gateway] gateway_labels: events of other labels undeploy, not deploy. */
    private readonly labels: readonly string[],
    first: Deployments,
    bus: EventBus,
    private readonly logger: Logger,
  ) {
    this.replace(first);
    this.unsubscribe = bus.subscribe((e) => {
      if (e.name === 'api.deployed') this.put(e.payload);
      else if (e.name === 'api.undeployed') this.remove(e.payload.file);
      else if (e.name === 'policies.updated') {
        this.served = { file: this.served?.file ?? this.policies?.file ?? '', text: e.payload.text, revision: e.payload.revision };
        this.setPolicies(this.served);
      }
    });
  }

  /** The name a pulled file has on this gateway. */
  name(file: string): string {
    return `${this.origin}/apis/${file}`;
  }

  get policiesSource(): string {
    return `${this.origin}/${this.policies?.file === '' || this.policies === null ? 'policies (default tiers)' : this.policies.file}`;
  }

  /** The pulled texts, as createGateway's `apiTexts`. */
  entries(): ApiText[] {
    return [...this.apis.values()].map((a) => ({
      file: this.name(a.file),
      text: a.text,
      ...(a.schema !== undefined ? { schema: a.schema } : {}),
      ...(a.protos !== undefined ? { protos: a.protos } : {}),
    }));
  }

  /** The pulled policies text (undefined: the control plane serves none; the gateway keeps its own). */
  policiesText(): { readonly text: string; readonly source: string } | undefined {
    return this.policies === null ? undefined : { text: this.policies.text, source: this.policiesSource };
  }

  attach(gateway: Gateway): void {
    this.gateway = gateway;
  }

  /** deploymentsVersion() of what this gateway holds from the control plane (compared with the control plane's). */
  version(): string {
    return deploymentsVersion({ apis: [...this.apis.values()], policies: this.served });
  }

  /** A full pull (SIGHUP on the worker): what it holds becomes exactly that. */
  replace(d: Deployments): void {
    this.served = d.policies;
    if (d.policies !== null) this.setPolicies(d.policies);
    this.apis.clear();
    for (const a of d.apis) if (labelsMatch(a, this.labels)) this.apis.set(a.file, a);
    this.schedule();
  }

  private put(a: ApiDeploymentPayload): void {
    // Its labels may have changed to none of ours: it goes (the control plane publishes to every gateway).
    if (!labelsMatch(a, this.labels)) return this.remove(a.file);
    if (this.apis.get(a.file)?.revision === a.revision) return;
    this.apis.set(a.file, a);
    this.schedule();
  }

  private remove(file: string): void {
    if (this.apis.delete(file)) this.schedule();
  }

  private setPolicies(p: PoliciesDeployment): void {
    if (this.policies?.revision === p.revision) return;
    const gw = this.gateway;
    if (gw !== undefined) {
      // Refused (logged by the engine): the running policies stay, and so does their revision.
      if (!gw.throttle.loadText(p.text, `${this.origin}/${p.file === '' ? 'policies (default tiers)' : p.file}`).ok) return;
      this.schedule();
    }
    this.policies = p;
  }

  /**
   * One gateway reload for a burst of events (a resync delivers many in one go): after the policies,
   * so an API naming a policy the new text defines validates.
   */
  private schedule(): void {
    if (this.gateway === undefined || this.pending) return;
    this.pending = true;
    queueMicrotask(() => {
      this.pending = false;
      const gw = this.gateway;
      if (gw === undefined) return;
      const r = gw.reload({ apiTexts: this.entries() });
      this.logger.log('info', 'deployments_applied', { from: this.origin, apis: this.apis.size, deployed: r.deployed.length });
    });
  }

  close(): void {
    this.unsubscribe();
    this.gateway = undefined;
  }
}
