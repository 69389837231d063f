/**
 * The API files of a remote control plane (docs/portal.md, "Server roles"), for a console node whose
 * [apim.key_manager] service_url names another node: read with GET /admin/v1/api-files once per console
 * request (refresh), with the tiers of the policies it serves (GET /admin/v1/deployments?labels=, which
 * lists no API file), written with PUT /admin/v1/api-files/{id} and moved with POST
 * /admin/v1/api-files/{id}/lifecycle (docs/admin-api.md); a gRPC API's .proto files are read, uploaded
 * and deleted with GET and PUT /admin/v1/api-files/{id}/protos and DELETE .../protos/{name} (docs/grpc.md). The control plane validates every write with
 * the gateway's validator and answers its errors by field; its gateway deploys what it writes.
 * Entries are parsed here with this node's API file variables, for display, and as a gateway-worker
 * parses served texts: no file named beside them (an OpenAPI `definition`, a GraphQL schema) is read on
 * this node, so the developer portal shows no OpenAPI document of a remote API. A gRPC API's entry is
 * parsed with the .proto files its `[grpc] proto` list names, as the control plane answers them (one
 * request per gRPC API on refresh); an import the list does not name is not sent, so such an API shows as
 * invalid here. The control plane's parse is the one that counts.
 *
 * A tenant's files (docs/tenants.md, "Console nodes"): forTenant(domain) is the catalogue of one tenant,
 * which asks only for `GET /admin/v1/api-files?tenant=<domain>` and sends only ids of that tenant
 * (`t:<domain>:<file>`, `t:<domain>:created:<file>`, a plain file name after the prefix). This node calls
 * the control plane as its super admin, whose credentials reach every tenant's files, so the boundary is
 * kept here: the publisher takes the tenant from the signed-in user (publisher.ts catalogueOf), and an id
 * of another tenant, of the super tenant or naming a path is refused (404) without a request. The
 * control plane checks every id again and applies the tenant's package limit (TENANT_LIMIT_REACHED).
 */
import { type ApiVars, parseApiText } from '../gateway/apis';
import type { ApiFileRefusal, ApiProtos } from '../keymanager/http';
import { ControlPlaneError, type ControlPlane } from '../scale/control-plane';
import { domainProblem } from '../tenants';
import { parsePolicies, type PolicyOptions } from '../throttle/policies';
import { remoteFailure } from './backend';
import {
  API_FILE_NAME,
  type ApiCatalogue,
  type CatalogueEntry,
  type ConsoleState,
  fileNameFor,
  type ProtoChanges,
  type Transitioned,
} from './catalogue';
import { isGrpcText, protoNameProblem, type ProtoUpload, uploadProblem } from './protos';

const refused = (id: string): ApiFileRefusal => ({ status: 404, message: `no API file ${id.slice(0, 300)}`, fields: {} });

export class RemoteCatalogue implements ApiCatalogue {
  private entries: CatalogueEntry[] = [];
  readonly description: string;
  /** The tenant whose files this catalogue reads and writes; undefined: the super tenant's. */
  readonly tenant: string | undefined;
  /** Its ids' prefix: '' or `t:<domain>:`. */
  private readonly prefix: string;
  /** Subscription and application tiers of the control plane's policies; undefined: it serves none valid. */
  tiers: { readonly subscription: readonly string[]; readonly application: readonly string[] } | undefined;

  constructor(
    private readonly cp: ControlPlane,
    private readonly origin: string,
    readonly vars: ApiVars,
    private readonly policyOptions: PolicyOptions,
    tenant?: string,
  ) {
    if (tenant !== undefined && domainProblem(tenant) !== undefined) throw new TypeError(`${tenant} is no tenant domain`);
    this.tenant = tenant;
    this.prefix = tenant === undefined ? '' : `t:${tenant}:`;
    this.description = tenant === undefined ? `the control plane ${origin}` : `the control plane ${origin}, tenant ${tenant}`;
  }

  /** The catalogue of a tenant's files on the control plane; undefined for a name that is no tenant domain. */
  forTenant(domain: string): RemoteCatalogue | undefined {
    if (domainProblem(domain) !== undefined) return undefined;
    return new RemoteCatalogue(this.cp, this.origin, this.vars, this.policyOptions, domain);
  }

  /** The file name of an id of this catalogue's tenant, and whether it is a draft; undefined for any other id. */
  private nameOf(id: string): { readonly name: string; readonly draft: boolean } | undefined {
    if (!id.startsWith(this.prefix)) return undefined;
    const rest = id.slice(this.prefix.length);
    const draft = rest.startsWith('created:');
    const name = draft ? rest.slice('created:'.length) : rest;
    return API_FILE_NAME.test(name) ? { name, draft } : undefined;
  }

  /** `protos`: a gRPC API's .proto files as the control plane holds them. */
  private entry(id: string, name: string, draft: boolean, text: string, protos?: ApiProtos): CatalogueEntry {
    // As a gateway-worker parses served texts (served: null): no file beside it is read on this node.
    const served = protos === undefined ? null : { protos: protos.protos.map((p) => ({ file: p.name, text: p.text })) };
    const r = parseApiText(text, name, this.vars, undefined, undefined, served);
    // A tenant's API is listed at the context it is served at (lib/gateway/deploy.ts), as Catalogue does.
    const api =
      r.api === undefined || this.tenant === undefined
        ? r.api
        : { ...r.api, context: `/t/${this.tenant}${r.api.context}`, tenant: this.tenant };
    return { id, file: id, text, state: draft ? 'CREATED' : (r.api?.state ?? 'PUBLISHED'), api, diagnostics: r.diagnostics };
  }

  async refresh(): Promise<void> {
    if (this.tenant !== undefined) {
      let r: Record<string, unknown>;
      try {
        r = await this.cp.request('GET', `/admin/v1/api-files?tenant=${encodeURIComponent(this.tenant)}`);
      } catch (err) {
        return remoteFailure(err, this.origin);
      }
      this.entries = await this.withProtos(this.entriesOf(r));
      return;
    }
    let r: Record<string, unknown>;
    let d: Record<string, unknown>;
    try {
      [r, d] = await Promise.all([this.cp.request('GET', '/admin/v1/api-files'), this.cp.request('GET', '/admin/v1/deployments?labels=')]);
    } catch (err) {
      return remoteFailure(err, this.origin);
    }
    const policies = d.policies as { text?: unknown; file?: unknown } | null | undefined;
    const parsed =
      typeof policies?.text === 'string'
        ? parsePolicies(policies.text, String(policies.file ?? ''), this.policyOptions).policies
        : undefined;
    this.tiers =
      parsed === undefined ? undefined : { subscription: [...parsed.subscription.keys()], application: [...parsed.application.keys()] };
    this.entries = await this.withProtos(this.entriesOf(r));
  }

  /** The entries with each gRPC API parsed again with its .proto files (GET /admin/v1/api-files/{id}/protos). */
  private async withProtos(entries: CatalogueEntry[]): Promise<CatalogueEntry[]> {
    return Promise.all(
      entries.map(async (e) => {
        if (!isGrpcText(e.text)) return e;
        const p = await this.fetchProtos(e.id);
        return p === undefined ? e : this.reparsed(e, p);
      }),
    );
  }

  private reparsed(e: CatalogueEntry, p: ApiProtos): CatalogueEntry {
    const n = this.nameOf(e.id);
    return n === undefined ? e : this.entry(e.id, n.name, n.draft, e.text, p);
  }

  /** undefined: the control plane has no such file, or no .proto routes (404). */
  private async fetchProtos(id: string): Promise<ApiProtos | undefined> {
    let r: Record<string, unknown>;
    try {
      r = await this.cp.request('GET', `/admin/v1/api-files/${encodeURIComponent(id)}/protos`);
    } catch (err) {
      if (err instanceof ControlPlaneError && err.status === 404) return undefined;
      return remoteFailure(err, this.origin);
    }
    return protosOf(r, id);
  }

  /** The listed files of this catalogue's tenant; any other id the answer might hold is left out. */
  private entriesOf(r: Record<string, unknown>): CatalogueEntry[] {
    const list = Array.isArray(r.list) ? (r.list as { id: unknown; text: unknown }[]) : [];
    const out: CatalogueEntry[] = [];
    for (const x of list) {
      if (typeof x.id !== 'string' || typeof x.text !== 'string') continue;
      const n = this.nameOf(x.id);
      if (n !== undefined) out.push(this.entry(x.id, n.name, n.draft, x.text));
    }
    return out;
  }

  list(): CatalogueEntry[] {
    return this.entries;
  }

  get(id: string): CatalogueEntry | undefined {
    return this.entries.find((e) => e.id === id);
  }

  draftFor(name: string, version: string): { id: string; file: string } {
    const base = fileNameFor(name, version);
    return { id: `${this.prefix}created:${base}`, file: base };
  }

  /** A refusal the control plane answered (4xx with fields), or the page error of an unreachable one. */
  private async send(
    path: string,
    body: Record<string, unknown> | undefined,
    method: 'PUT' | 'POST' | 'DELETE',
  ): Promise<Record<string, unknown> | ApiFileRefusal> {
    try {
      return await this.cp.request(method, path, body);
    } catch (err) {
      if (
        err instanceof ControlPlaneError &&
        err.status !== undefined &&
        err.status < 500 &&
        err.status !== 401 &&
        err.body !== undefined
      ) {
        const fields = err.body.fields !== null && typeof err.body.fields === 'object' ? (err.body.fields as Record<string, string>) : {};
        return { status: err.status, message: String(err.body.error_description ?? err.message), fields };
      }
      return remoteFailure(err, this.origin);
    }
  }

  /** `protos.put`: a gRPC API's .proto files, sent with its text (the control plane checks them together). */
  async write(id: string, text: string, create: boolean, protos: ProtoChanges = {}): Promise<{ id: string } | ApiFileRefusal> {
    if (this.nameOf(id) === undefined) return refused(id);
    if ((protos.remove ?? []).length > 0)
      return {
        status: 400,
        message: "API_PROTO_UPLOAD: a remote control plane's .proto files are removed through its own publisher",
        fields: {},
      };
    const put = protos.put ?? [];
    const r = await this.send(
      `/admin/v1/api-files/${encodeURIComponent(id)}`,
      { text, create, ...(put.length > 0 ? { protos: put } : {}) },
      'PUT',
    );
    return 'status' in r && typeof r.status === 'number' ? (r as ApiFileRefusal) : { id: String((r as Record<string, unknown>).id) };
  }

  /**
   * A gRPC API's .proto files and methods as the control plane holds them now (its entry, when listed,
   * parsed again with them); undefined: no such file (or a control plane without the .proto routes: 404).
   */
  async protos(id: string): Promise<ApiProtos | undefined> {
    if (this.nameOf(id) === undefined) return undefined;
    const p = await this.fetchProtos(id);
    // A file written since refresh() (a new draft) is not an entry yet: its answer is still the control plane's.
    const i = this.entries.findIndex((e) => e.id === id);
    if (p !== undefined && i >= 0) this.entries[i] = this.reparsed(this.entries[i] as CatalogueEntry, p);
    return p;
  }

  /** Uploads .proto files of a gRPC API: the control plane checks them with its API file and stores them beside it. */
  async putProtos(id: string, files: readonly ProtoUpload[]): Promise<ApiProtos | ApiFileRefusal> {
    if (this.nameOf(id) === undefined) return refused(id);
    // The control plane checks again; these refusals need no request.
    const bad = uploadProblem(files, []);
    if (bad !== undefined) return { status: 400, message: bad, fields: { 'grpc.proto': bad } };
    const r = await this.send(`/admin/v1/api-files/${encodeURIComponent(id)}/protos`, { files }, 'PUT');
    return 'status' in r && typeof r.status === 'number' ? (r as ApiFileRefusal) : protosOf(r as Record<string, unknown>, id);
  }

  async deleteProto(id: string, name: string): Promise<ApiProtos | ApiFileRefusal> {
    if (this.nameOf(id) === undefined) return refused(id);
    if (protoNameProblem(name) !== undefined)
      return { status: 404, message: `${id} names no .proto file ${name.slice(0, 130)}`, fields: {} };
    const r = await this.send(`/admin/v1/api-files/${encodeURIComponent(id)}/protos/${encodeURIComponent(name)}`, undefined, 'DELETE');
    return 'status' in r && typeof r.status === 'number' ? (r as ApiFileRefusal) : protosOf(r as Record<string, unknown>, id);
  }

  async transition(id: string, to: ConsoleState): Promise<Transitioned | ApiFileRefusal> {
    if (this.nameOf(id) === undefined) return refused(id);
    const r = await this.send(`/admin/v1/api-files/${encodeURIComponent(id)}/lifecycle`, { state: to }, 'POST');
    if ('status' in r && typeof r.status === 'number') return r as ApiFileRefusal;
    const a = r as Record<string, unknown>;
    // The control plane's API state workflow (docs/workflows.md) answers 202 with the task: nothing moved yet.
    const w = a.workflow as { status?: unknown; taskId?: unknown } | undefined;
    return {
      id: String(a.id),
      from: String(a.from),
      ...(w?.status === 'pending' ? { pending: { taskId: String(w.taskId) } } : {}),
    };
  }
}

/** The control plane's answer of a .proto route as ApiProtos: what is not a string is left out. */
function protosOf(r: Record<string, unknown>, id: string): ApiProtos {
  const list = (v: unknown): Record<string, unknown>[] =>
    Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object') : [];
  return {
    id: typeof r.id === 'string' ? r.id : id,
    grpc: r.grpc === true,
    protos: list(r.protos).flatMap((p) =>
      typeof p.name === 'string' && typeof p.text === 'string' ? [{ name: p.name, text: p.text }] : [],
    ),
    methods: list(r.methods).flatMap((m) =>
      typeof m.path === 'string' && typeof m.kind === 'string' ? [{ path: m.path, kind: m.kind }] : [],
    ),
  };
}
