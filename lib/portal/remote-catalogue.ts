/**
 * The API files of a remote control plane (docs/portal.md, "Server roles"), for a console node whose
 * [apim.key_manager] service_url names another node: read with GET /admin/v1/api-files once per console
 * request (refresh), with the tiers of the policies it serves (GET /admin/v1/deployments?labels=, which
 * lists no API file), written with PUT /admin/v1/api-files/{id} and moved with POST
 * /admin/v1/api-files/{id}/lifecycle (docs/admin-api.md). The control plane validates every write with
 * the gateway's validator and answers its errors by field; its gateway deploys what it writes.
 * Entries are parsed here with this node's API file variables, for display, and as a gateway-worker
 * parses served texts: no file named beside them (an OpenAPI `definition`, a GraphQL schema) is read on
 * this node, so the developer portal shows no OpenAPI document of a remote API. The control plane's
 * parse is the one that counts.
 */
import { type ApiVars, parseApiText } from '../gateway/apis';
import type { ApiFileRefusal } from '../keymanager/http';
import { ControlPlaneError, type ControlPlane } from '../scale/control-plane';
import { parsePolicies, type PolicyOptions } from '../throttle/policies';
import { remoteFailure } from './backend';
import { type ApiCatalogue, type CatalogueEntry, type ConsoleState, fileNameFor, type ProtoChanges } from './catalogue';

export class RemoteCatalogue implements ApiCatalogue {
  private entries: CatalogueEntry[] = [];
  readonly description: string;
  /** Subscription and application tiers of the control plane's policies; undefined: it serves none valid. */
  tiers: { readonly subscription: readonly string[]; readonly application: readonly string[] } | undefined;

  constructor(
    private readonly cp: ControlPlane,
    private readonly origin: string,
    readonly vars: ApiVars,
    private readonly policyOptions: PolicyOptions,
  ) {
    this.description = `the control plane ${origin}`;
  }

  private entry(id: string, text: string): CatalogueEntry {
    const draft = id.startsWith('created:');
    // As a gateway-worker parses served texts (served: null): no file beside it is read on this node.
    const r = parseApiText(text, id.replace(/^created:/, ''), this.vars, undefined, undefined, null);
    return { id, file: id, text, state: draft ? 'CREATED' : (r.api?.state ?? 'PUBLISHED'), api: r.api, diagnostics: r.diagnostics };
  }

  async refresh(): Promise<void> {
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
    const list = Array.isArray(r.list) ? (r.list as { id: unknown; text: unknown }[]) : [];
    this.entries = list
      .filter((x) => typeof x.id === 'string' && typeof x.text === 'string')
      .map((x) => this.entry(x.id as string, x.text as string));
  }

  list(): CatalogueEntry[] {
    return this.entries;
  }

  get(id: string): CatalogueEntry | undefined {
    return this.entries.find((e) => e.id === id);
  }

  draftFor(name: string, version: string): { id: string; file: string } {
    const base = fileNameFor(name, version);
    return { id: `created:${base}`, file: base };
  }

  /** A refusal the control plane answered (4xx with fields), or the page error of an unreachable one. */
  private async send(
    path: string,
    body: Record<string, unknown>,
    method: 'PUT' | 'POST',
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

  async transition(id: string, to: ConsoleState): Promise<{ id: string; from: string } | ApiFileRefusal> {
    const r = await this.send(`/admin/v1/api-files/${encodeURIComponent(id)}/lifecycle`, { state: to }, 'POST');
    return 'status' in r && typeof r.status === 'number'
      ? (r as ApiFileRefusal)
      : { id: String((r as Record<string, unknown>).id), from: String((r as Record<string, unknown>).from) };
  }
}
