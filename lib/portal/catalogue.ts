/**
 * The APIs the consoles show and edit: the API files of `[throughway] apis_dir`, read and validated by
 * the gateway's own validator (lib/gateway/apis.ts), and the publisher's drafts in its `created/`
 * subdirectory. A draft is an API in the CREATED lifecycle state: the gateway reads only the files of
 * apis_dir itself (lib/gateway/deploy.ts listApiFiles), so a draft is never deployed. docs/portal.md.
 *
 * Two kinds (docs/portal.md, "Server roles"): Catalogue reads and writes this node's apis_dir, and is
 * also what the control plane's admin routes /admin/v1/api-files serve (lib/keymanager/admin.ts);
 * RemoteCatalogue (remote-catalogue.ts) reads and writes those routes of a remote control plane.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { API_CODES, type ApiDefinition, type ApiVars, parseApiText, versionedPath } from '../gateway/apis';
import { isTable, parseDocument } from '../config/document';
import { listApiFiles } from '../gateway/deploy';
import type { ApiDiagnostic } from '../gateway/diagnostics';
import type { ApiFileRefusal, ApiFileService, ApiFileText, ApiProtos } from '../keymanager/http';
import { movedCredentials, type MovedCredentials, TRANSITIONS, withState, writeAtomic } from './api-form';
import { domainProblem, SUPER_TENANT, tenantOfFileId } from '../tenants';
import { isGrpcText, protoList, protoNameProblem, type ProtoUpload, uploadProblem, withProtoList } from './protos';

/** The reference's lifecycle states (CREATED: a draft, only in the publisher). */
export const CONSOLE_STATES = ['CREATED', 'PROTOTYPED', 'PUBLISHED', 'BLOCKED', 'DEPRECATED', 'RETIRED'] as const;
export type ConsoleState = (typeof CONSOLE_STATES)[number];

/** Largest API file the consoles read or write. */
export const MAX_API_FILE = 256 * 1024;

export interface CatalogueEntry {
  /** File name without directory: the entry's id in URLs. */
  readonly id: string;
  readonly file: string;
  readonly text: string;
  readonly state: ConsoleState;
  readonly api: ApiDefinition | undefined;
  readonly diagnostics: readonly ApiDiagnostic[];
}

/** What the consoles read and write API files through (Catalogue here, RemoteCatalogue on a remote control plane). */
export interface ApiCatalogue {
  readonly vars: ApiVars;
  /** Where the entries come from, for the start-up lines. */
  readonly description: string;
  /** Reads the list again (remote: one request; local: nothing to do, list() reads the directory). */
  refresh(): Promise<void>;
  list(): CatalogueEntry[];
  /**
   * The tenant whose files this catalogue shows and writes (forTenant); undefined: the super tenant's. Its
   * entries' contexts are the served ones (`/t/<domain><context>`), its files' contexts as written.
   */
  readonly tenant?: string | undefined;
  /**
   * The catalogue of a tenant's files (docs/tenants.md, "The publisher", "Console nodes"): ids
   * `t:<domain>:<file>` and `t:<domain>:created:<file>`, read with its own refresh(); undefined for a name
   * that is no tenant domain.
   */
  forTenant(domain: string): ApiCatalogue | undefined;
  get(id: string): CatalogueEntry | undefined;
  /** A new draft's id and the file name the validator is given for it. */
  draftFor(name: string, version: string): { readonly id: string; readonly file: string };
  /** Writes a file the form validated (`create`: refused when it exists); the control plane validates again. */
  write(id: string, text: string, create: boolean, protos?: ProtoChanges): Promise<{ readonly id: string } | ApiFileRefusal>;
  /** Moves an entry to a lifecycle state. */
  transition(id: string, to: ConsoleState): Promise<Transitioned | ApiFileRefusal>;
  /**
   * A gRPC API's .proto files and methods (docs/grpc.md, "The .proto files in the publisher"); undefined:
   * no such entry. A remote control plane's are read through its admin API (remote-catalogue.ts).
   */
  protos?(id: string): ApiProtos | undefined | Promise<ApiProtos | undefined>;
  /** Adds or replaces .proto files beside a gRPC API's file and names them in its `[grpc] proto` list. */
  putProtos?(id: string, files: readonly ProtoUpload[]): Promise<ApiProtos | ApiFileRefusal>;
  /** Removes a .proto file from a gRPC API's list, and the file when no other API file beside it reads it. */
  deleteProto?(id: string, name: string): Promise<ApiProtos | ApiFileRefusal>;
}

/** Changes to .proto files beside an API file written with it (Catalogue.write). */
export interface ProtoChanges {
  readonly put?: readonly ProtoUpload[];
  readonly remove?: readonly string[];
}

/**
 * A lifecycle move made: the entry's id after it and the state it left; `pending` when a remote control
 * plane's API state workflow holds it for approval (docs/workflows.md): nothing moved yet.
 */
export interface Transitioned {
  readonly id: string;
  readonly from: string;
  readonly pending?: { readonly taskId: string };
}

/** A file name an API file id may end with: no directory, no path (the ids' last part). */
export const API_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.toml$/;

const refused = (status: number, message: string, fields: Record<string, string> = {}): ApiFileRefusal => ({ status, message, fields });

/**
 * The validator's errors by field (`general` for none), as the admin route returns them; `dir`: the API
 * file's directory, left out of the paths the messages name.
 */
function errorFields(diagnostics: readonly ApiDiagnostic[], dir?: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of diagnostics) {
    if (d.level !== 'error') continue;
    const k = d.field === '' ? 'general' : d.field;
    const message = dir === undefined ? d.message : d.message.split(`${dir}${path.sep}`).join('');
    const msg = `${message}${d.expected !== undefined ? ` (expected ${d.expected})` : ''}`;
    out[k] = out[k] === undefined ? msg : `${out[k]}; ${msg}`;
  }
  return out;
}

/** A tenant's package and its `resource_volume.limit` (lib/tenants Tenants.apiLimit); undefined: no limit. */
export type CatalogueApiLimit = (domain: string) => { readonly package: string; readonly limit: number } | undefined;

export interface CatalogueOptions {
  /** The tenant whose files this catalogue reads and writes (apis/t/<domain>/); absent: the super tenant's. */
  readonly tenant?: string;
  /** The billing package limit a new API of a tenant is checked against (docs/tenants.md, "Billing packages"). */
  readonly apiLimit?: CatalogueApiLimit;
}

/**
 * The API files of one tenant (module comment): the super tenant's `apis_dir/*.toml` and drafts in
 * `apis_dir/created/` (ids `<file>`, `created:<file>`), or, for a tenant (`forTenant`), its
 * `apis_dir/t/<domain>/*.toml` and drafts in `apis_dir/t/<domain>/created/` (ids `t:<domain>:<file>`,
 * `t:<domain>:created:<file>`) with the contexts they are served at (`/t/<domain><context>`, as
 * lib/gateway/deploy.ts deploys them). The ApiCatalogue methods (the consoles') never reach another tenant's
 * file; the ApiFileService methods (the admin API's, whose routes check the caller's tenant) find the
 * catalogue of the tenant an id names.
 */
export class Catalogue implements ApiCatalogue, ApiFileService {
  readonly description: string;
  /** The tenant of these files; undefined: the super tenant. */
  readonly tenant: string | undefined;
  /** Where this tenant's API files are: apis_dir, or apis_dir/t/<domain>. */
  readonly dir: string;
  private readonly prefix: string;

  constructor(
    readonly apisDir: string,
    readonly vars: ApiVars,
    private readonly options: CatalogueOptions = {},
  ) {
    const tenant = options.tenant;
    if (tenant !== undefined && domainProblem(tenant) !== undefined) throw new TypeError(`${tenant} is no tenant domain`);
    this.tenant = tenant;
    this.dir = tenant === undefined ? apisDir : path.join(apisDir, 't', tenant);
    this.prefix = tenant === undefined ? '' : `t:${tenant}:`;
    this.description = tenant === undefined ? "this node's apis_dir" : `this node's apis_dir/t/${tenant}`;
  }

  get draftsDir(): string {
    return path.join(this.dir, 'created');
  }

  /** The catalogue of a tenant's files (apis_dir/t/<domain>/); undefined for a name that is no tenant domain. */
  forTenant(domain: string): Catalogue | undefined {
    if (domainProblem(domain) !== undefined) return undefined;
    return new Catalogue(this.apisDir, this.vars, { ...this.options, tenant: domain });
  }

  /** The catalogue of the tenant an id names (tenantOfFileId); undefined for a `t:` id whose domain is invalid. */
  private scopeOf(id: string): Catalogue | undefined {
    const tenant = tenantOfFileId(id);
    if (tenant === this.tenant || (tenant === SUPER_TENANT && this.tenant === undefined)) return this;
    return tenant === SUPER_TENANT
      ? new Catalogue(this.apisDir, this.vars, { ...this.options, tenant: undefined })
      : this.forTenant(tenant);
  }

  /** A context as it is served: a tenant's under /t/<domain> (lib/gateway/deploy.ts). */
  private served(context: string): string {
    return this.tenant === undefined ? context : `/t/${this.tenant}${context}`;
  }

  private read(file: string, draft: boolean): CatalogueEntry | undefined {
    let text: string;
    try {
      if (fs.statSync(file).size > MAX_API_FILE) return undefined;
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    const r = parseApiText(text, file, this.vars);
    const state: ConsoleState = draft ? 'CREATED' : (r.api?.state ?? 'PUBLISHED');
    const api =
      r.api === undefined || this.tenant === undefined ? r.api : { ...r.api, context: this.served(r.api.context), tenant: this.tenant };
    return {
      id: `${this.prefix}${draft ? 'created:' : ''}${path.basename(file)}`,
      file,
      text,
      state,
      api,
      diagnostics: r.diagnostics,
    };
  }

  /** The API files this tenant's gateway URLs serve (no drafts). */
  private deployed(): CatalogueEntry[] {
    const out: CatalogueEntry[] = [];
    for (const f of listApiFiles(this.dir) ?? []) {
      const e = this.read(f, false);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** Every API file and draft of this tenant, drafts last. */
  list(): CatalogueEntry[] {
    const out = this.deployed();
    for (const f of listApiFiles(this.draftsDir) ?? []) {
      const e = this.read(f, true);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** One entry by id (this tenant's `name.toml` or `created:name.toml`); never a path outside its two directories. */
  get(id: string): CatalogueEntry | undefined {
    const file = this.fileOf(id);
    return file === undefined ? undefined : this.read(file, id.startsWith(`${this.prefix}created:`));
  }

  async refresh(): Promise<void> {
    return undefined;
  }

  draftFor(name: string, version: string): { id: string; file: string } {
    const base = fileNameFor(name, version);
    return { id: `${this.prefix}created:${base}`, file: path.join(this.draftsDir, base) };
  }

  /** The file of an id of this tenant; undefined for another tenant's id or a name that is no plain file name. */
  private fileOf(id: string): string | undefined {
    if (!id.startsWith(this.prefix)) return undefined;
    const rest = id.slice(this.prefix.length);
    const draft = rest.startsWith('created:');
    const name = draft ? rest.slice('created:'.length) : rest;
    return API_FILE_NAME.test(name) ? path.join(draft ? this.draftsDir : this.dir, name) : undefined;
  }

  /**
   * Refuses a new API of a tenant at its package's `resource_volume.limit` (docs/tenants.md, "Billing
   * packages"): its API files and drafts together, so publishing every draft stays within what the gateway
   * deploys.
   */
  private limitRefusal(): ApiFileRefusal | undefined {
    if (this.tenant === undefined) return undefined;
    const l = this.options.apiLimit?.(this.tenant);
    if (l === undefined || l.limit === Infinity) return undefined;
    const n = this.list().length;
    if (n < l.limit) return undefined;
    const message = `TENANT_LIMIT_REACHED: tenant ${this.tenant} has ${n} APIs: package ${l.package} allows ${l.limit} ([multi_tenancy.billing.package.${l.package}.resource_volume] limit)`;
    return refused(403, message);
  }

  /**
   * Writes an API file (`protos`: with .proto files put beside it or removed, checked together with it
   * before anything is written; docs/grpc.md, "The .proto files in the publisher").
   */
  async write(id: string, text: string, create: boolean, protos: ProtoChanges = {}): Promise<{ id: string } | ApiFileRefusal> {
    const file = this.fileOf(id);
    if (file === undefined)
      return refused(400, `${id} is not an API file name (${this.prefix}name.toml or ${this.prefix}created:name.toml)`);
    if (Buffer.byteLength(text) > MAX_API_FILE) return refused(400, `an API file is at most ${MAX_API_FILE} bytes`);
    if (create && fs.existsSync(file))
      return refused(409, `a file ${path.basename(file)} already exists`, { name: `a file ${path.basename(file)} already exists` });
    if (!create && !fs.existsSync(file)) return refused(404, `no API file ${id}`);
    const put = protos.put ?? [];
    const remove = protos.remove ?? [];
    if (put.length > 0) {
      const bad = uploadProblem(put, protoList(text));
      if (bad !== undefined) return refused(400, bad, { 'grpc.proto': bad });
    }
    const dir = path.dirname(file);
    const served =
      put.length + remove.length === 0
        ? undefined
        : {
            protos: [...put.map((p) => ({ file: p.name, text: p.text })), ...remove.map((n) => ({ file: n, text: null }))],
            disk: true,
          };
    const r = parseApiText(text, file, this.vars, undefined, undefined, served);
    // Messages name the .proto files by name: the caller is not told this node's paths.
    if (r.api === undefined) return refused(422, 'the API file does not validate', errorFields(r.diagnostics, dir));
    const moved = create ? [] : this.moved(file, text);
    if (moved.length > 0)
      return refused(
        422,
        'backend credentials would follow the endpoint URL to another host',
        Object.fromEntries(
          moved.map((m) => [
            `endpoints.${m.name}.security`,
            `the ${m.type} credentials are bound to ${m.bound} and the url is now at ${m.now}: they are never sent to another host; re-enter them (a new password or client secret), or write origin = "${m.now}" in this table once they are meant for that host`,
          ]),
        ),
      );
    const context = this.served(r.api.context);
    const other = this.list().find(
      (e) => e.id !== id && e.api !== undefined && e.api.context === context && e.api.version === r.api?.version,
    );
    if (other !== undefined)
      return refused(409, `context ${r.api.context} version ${r.api.version} is already used by ${other.id}`, {
        context: `context ${r.api.context} version ${r.api.version} is already used by ${other.id}`,
      });
    const full = create ? this.limitRefusal() : undefined;
    if (full !== undefined) return full;
    // The .proto files first: the gateway's watch reads the API file with its .proto files in place.
    for (const p of put) writeAtomic(path.join(dir, p.name), p.text);
    writeAtomic(file, text);
    const used = this.protosUsed(dir, file);
    for (const n of remove) if (!used.has(path.join(dir, n))) fs.rmSync(path.join(dir, n), { force: true });
    return { id };
  }

  /** The .proto files (absolute) the API files in `dir` other than `except` read, imports included. */
  private protosUsed(dir: string, except: string): Set<string> {
    const out = new Set<string>();
    for (const e of this.list()) {
      if (e.file === except || path.dirname(e.file) !== dir) continue;
      for (const f of e.api?.grpc?.protoFiles ?? protoList(e.text).map((n) => path.resolve(dir, n))) out.add(f);
    }
    return out;
  }

  protos(id: string): ApiProtos | undefined {
    const e = this.get(id);
    if (e === undefined) return undefined;
    const dir = path.dirname(e.file);
    const protos = protoList(e.text).flatMap((name) => {
      const full = path.resolve(dir, name);
      if (path.dirname(full) !== dir) return [];
      try {
        return [{ name, text: fs.readFileSync(full, 'utf8') }];
      } catch {
        return [];
      }
    });
    const methods = (e.api?.grpc?.services ?? []).flatMap((s) => s.methods.map((m) => ({ path: m.path, kind: m.kind })));
    return { id: e.id, grpc: isGrpcText(e.text), protos, methods };
  }

  async putProtos(id: string, files: readonly ProtoUpload[]): Promise<ApiProtos | ApiFileRefusal> {
    const e = this.get(id);
    if (e === undefined) return refused(404, `no API file ${id}`);
    if (!isGrpcText(e.text)) return refused(400, `API_PROTO_UPLOAD: ${id} is not a gRPC API (type = "GRPC")`);
    const current = protoList(e.text);
    const bad = uploadProblem(files, current);
    if (bad !== undefined) return refused(400, bad, { 'grpc.proto': bad });
    const list = [...current, ...files.map((f) => f.name).filter((n) => !current.includes(n))];
    const text = withProtoList(e.text, list);
    if (text === undefined) return refused(422, `${id} is not readable TOML`);
    const w = await this.write(e.id, text, false, { put: files });
    return 'status' in w ? w : (this.protos(e.id) as ApiProtos);
  }

  async deleteProto(id: string, name: string): Promise<ApiProtos | ApiFileRefusal> {
    const e = this.get(id);
    if (e === undefined) return refused(404, `no API file ${id}`);
    const bad = protoNameProblem(name);
    const current = protoList(e.text);
    if (bad !== undefined || !current.includes(name)) return refused(404, `${id} names no .proto file ${name.slice(0, 130)}`);
    const text = withProtoList(
      e.text,
      current.filter((n) => n !== name),
    );
    if (text === undefined) return refused(422, `${id} is not readable TOML`);
    const w = await this.write(e.id, text, false, { remove: [name] });
    return 'status' in w ? w : (this.protos(e.id) as ApiProtos);
  }

  /** The credentials `text` would move to another origin than the file on disk binds them to (api-form.ts movedCredentials). */
  private moved(file: string, text: string): MovedCredentials[] {
    let before: Record<string, unknown> | undefined;
    try {
      const p = parseDocument(fs.readFileSync(file, 'utf8'), file, API_CODES);
      before = p.ok && isTable(p.doc) ? p.doc : undefined;
    } catch {
      before = undefined;
    }
    const p = parseDocument(text, file, API_CODES);
    return before === undefined || !p.ok || !isTable(p.doc) ? [] : movedCredentials(before, p.doc, this.vars);
  }

  async transition(id: string, to: ConsoleState): Promise<{ id: string; from: string } | ApiFileRefusal> {
    const e = this.get(id);
    if (e === undefined) return refused(404, `no API file ${id}`);
    if (!(CONSOLE_STATES as readonly string[]).includes(to) || !TRANSITIONS[e.state].includes(to))
      return refused(400, `${e.state} cannot move to ${String(to)}`);
    const name = path.basename(e.file);
    const target = path.join(to === 'CREATED' ? this.draftsDir : this.dir, name);
    if (target !== e.file && fs.existsSync(target)) return refused(409, `${target} already exists`);
    // A gRPC API's .proto files move with it (docs/grpc.md): the same name there must hold the same text.
    const from = path.dirname(e.file);
    const into = path.dirname(target);
    const protos =
      into === from
        ? []
        : (e.api?.grpc?.protoFiles ?? [])
            .filter((f) => !path.relative(from, f).startsWith('..'))
            .map((f) => ({ from: f, to: path.join(into, path.relative(from, f)), text: fs.readFileSync(f, 'utf8') }));
    for (const p of protos)
      if (fs.existsSync(p.to) && fs.readFileSync(p.to, 'utf8') !== p.text)
        return refused(409, `${path.relative(into, p.to)} already exists beside it with another text`);
    for (const p of protos) if (!fs.existsSync(p.to)) writeAtomic(p.to, p.text);
    const text = withState(e.text, to);
    // The text written must validate as the file the gateway reads.
    const r = parseApiText(text, target, this.vars);
    if (r.api === undefined)
      return refused(
        422,
        `the file would not validate: ${r.diagnostics
          .filter((d) => d.level === 'error')
          .map((d) => d.message)
          .join('; ')}`,
        errorFields(r.diagnostics),
      );
    writeAtomic(target, text);
    if (target !== e.file) fs.unlinkSync(e.file);
    const used = this.protosUsed(from, e.file);
    for (const p of protos) if (!used.has(p.from)) fs.rmSync(p.from, { force: true });
    return { id: `${this.prefix}${to === 'CREATED' ? 'created:' : ''}${name}`, from: e.state };
  }

  // ApiFileService: what the admin routes /admin/v1/api-files serve (lib/keymanager/admin.ts), which check
  // that the caller may reach the tenant an id names.
  listFiles(tenant?: string): ApiFileText[] {
    const c = tenant === undefined || tenant === SUPER_TENANT ? this.scopeOf('') : this.forTenant(tenant);
    return (c?.list() ?? []).map((e) => ({ id: e.id, text: e.text }));
  }

  readFile(id: string): ApiFileText | undefined {
    const e = this.scopeOf(id)?.get(id);
    return e === undefined ? undefined : { id: e.id, text: e.text };
  }

  writeFile(id: string, text: string, create: boolean, protos?: readonly ProtoUpload[]): Promise<{ id: string } | ApiFileRefusal> {
    const c = this.scopeOf(id);
    return c === undefined
      ? Promise.resolve(refused(404, `no API file ${id}`))
      : c.write(id, text, create, protos === undefined ? {} : { put: protos });
  }

  transitionFile(id: string, to: string): Promise<{ id: string; from: string } | ApiFileRefusal> {
    const c = this.scopeOf(id);
    return c === undefined ? Promise.resolve(refused(404, `no API file ${id}`)) : c.transition(id, to as ConsoleState);
  }

  readProtos(id: string): ApiProtos | undefined {
    return this.scopeOf(id)?.protos(id);
  }

  writeProtos(id: string, files: readonly ProtoUpload[]): Promise<ApiProtos | ApiFileRefusal> {
    const c = this.scopeOf(id);
    return c === undefined ? Promise.resolve(refused(404, `no API file ${id}`)) : c.putProtos(id, files);
  }

  removeProto(id: string, name: string): Promise<ApiProtos | ApiFileRefusal> {
    const c = this.scopeOf(id);
    return c === undefined ? Promise.resolve(refused(404, `no API file ${id}`)) : c.deleteProto(id, name);
  }

  /** The entry serving context + version (to find an API a subscription names). */
  byPath(context: string, version: string): CatalogueEntry | undefined {
    return this.list().find((e) => e.api !== undefined && e.api.context === context && e.api.version === version);
  }
}

/** A file name for a new API: `<name>-<version>.toml` in lower case, safe characters only. */
export function fileNameFor(name: string, version: string): string {
  const base = `${name}-${version}`
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 100);
  return `${base === '' ? 'api' : base}.toml`;
}

/** Full gateway URLs of an API on each gateway base URL. */
export function apiUrls(
  api: Pick<ApiDefinition, 'context' | 'version'>,
  gateways: readonly { readonly name: string; readonly url: string }[],
): { name: string; url: string }[] {
  return gateways.map((g) => ({ name: g.name, url: `${g.url.replace(/\/+$/, '')}${versionedPath(api)}` }));
}
