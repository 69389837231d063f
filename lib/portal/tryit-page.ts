/**
 * The try-it tab of an application's page (docs/portal.md, "Try it"): one form per operation of the
 * API, from its OpenAPI document (the operations the gateway serves: lib/sdk/operations.ts) or, without
 * a document, one per resource and method of the API file; path and query parameters are fields, a body
 * example comes from the document's schema. A GraphQL API gets a query box; a WebSocket API a note with
 * its URL (a page cannot hold the connection). The server makes every call (tryit.ts): what a form names
 * is only ever a path under the API's context and version, checked by `tryTarget`.
 */
import type { ApiDefinition } from '../gateway/apis';
import { sdkApi } from '../sdk/operations';
import { apiDocument } from './definition';
import { copyButton, csrfField, escapeHtml as h, field, prettyBody, select } from './html';
import type { TryResult } from './tryit';
import { GRPC_TRY_REFUSAL } from './grpc-page';

/** A field of an operation's form: a path parameter (`rest`: the tail a `/*` resource matches) or a query parameter. */
export interface TryField {
  readonly name: string;
  readonly in: 'path' | 'query';
  readonly required: boolean;
  readonly example: string;
  readonly rest?: boolean;
}

export interface TryOperation {
  /** `METHOD /path/template`: what the form posts as `operation`. */
  readonly key: string;
  readonly method: string;
  readonly path: string;
  readonly summary: string;
  readonly fields: readonly TryField[];
  /** The body's example when the operation takes one. */
  readonly body: string | undefined;
}

/** Most operations listed for one API (a larger document shows the first ones). */
export const MAX_OPERATIONS = 200;
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];

function fromResources(api: Pick<ApiDefinition, 'resources'>): TryOperation[] {
  const out: TryOperation[] = [];
  for (const r of api.resources) {
    for (const method of r.methods) {
      const fields: TryField[] = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
        name: m[1] as string,
        in: 'path' as const,
        required: true,
        example: '',
      }));
      const wildcard = r.path.endsWith('*');
      const path = wildcard ? `${r.path.slice(0, -1)}{rest}` : r.path;
      if (wildcard) fields.push({ name: 'rest', in: 'path', required: false, example: '', rest: true });
      out.push({ key: `${method} ${path}`, method, path, summary: '', fields, body: BODY_METHODS.includes(method) ? '{}' : undefined });
    }
  }
  return out;
}

/** The operations try-it offers for an API: its OpenAPI document's that the gateway serves, else its resources'. */
export function tryOperations(api: Pick<ApiDefinition, 'file' | 'definition' | 'resources' | 'name' | 'version'>): readonly TryOperation[] {
  const d = apiDocument(api);
  if (d !== undefined && 'doc' in d) {
    const ops = sdkApi(d.doc, api).operations.map((o) => ({
      key: `${o.method} ${o.path}`,
      method: o.method,
      path: o.path,
      summary: o.summary,
      fields: o.parameters
        .filter((p) => p.in !== 'header')
        .map((p) => ({ name: p.name, in: p.in as 'path' | 'query', required: p.required, example: p.in === 'path' ? p.example : '' })),
      body: o.body ?? (BODY_METHODS.includes(o.method) ? '{}' : undefined),
    }));
    if (ops.length > 0) return ops.slice(0, MAX_OPERATIONS);
  }
  return fromResources(api).slice(0, MAX_OPERATIONS);
}

/**
 * The resource path and query an operation's posted form asks for: path parameters percent-encoded
 * (RFC 3986 §3.3; the tail of a `/*` resource as written), query parameters form-encoded. tryTarget then
 * checks that the result stays inside the API.
 */
export function operationPath(op: TryOperation, form: URLSearchParams): { readonly path: string } | { readonly error: string } {
  let path = op.path;
  for (const f of op.fields.filter((x) => x.in === 'path')) {
    const v = (form.get(`p.${f.name}`) ?? '').trim();
    if (v === '' && f.required) return { error: `Fill in the path parameter ${f.name}.` };
    path = path.replace(`{${f.name}}`, f.rest === true ? v.replace(/^\/+/, '') : encodeURIComponent(v));
  }
  const query = new URLSearchParams();
  for (const f of op.fields.filter((x) => x.in === 'query')) {
    const v = form.get(`q.${f.name}`) ?? '';
    if (v !== '') query.append(f.name, v);
    else if (f.required) return { error: `Fill in the query parameter ${f.name}.` };
  }
  const qs = query.toString();
  return { path: `${path}${qs !== '' ? `?${qs}` : ''}` };
}

const KEY_OPTIONS: readonly (readonly [string, string])[] = [
  ['PRODUCTION', 'PRODUCTION keys'],
  ['SANDBOX', 'SANDBOX keys'],
];
const methodBadge = (m: string): string => `<span class="method m-${h(m.toLowerCase())}">${h(m)}</span>`;

/** The response of a call: status, headers, the body (JSON indented), a gateway fault explained. */
export function tryResultHtml(r: TryResult | string | undefined): string {
  if (r === undefined) return '';
  if (typeof r === 'string')
    return `<section aria-labelledby="result"><h3 id="result">Response</h3><p class="error" role="alert">${h(r)}</p></section>`;
  const headers = r.headers.map(([k, v]) => `${k}: ${v}`).join('\n');
  const fault =
    r.fault === undefined
      ? ''
      : `<div class="card" id="fault"><p><strong>Fault ${r.fault.code}</strong>${r.fault.def !== undefined ? `: ${h(r.fault.def.message)}. ${h(r.fault.def.description)} (HTTP ${r.fault.def.httpStatus}, raised by the ${h(r.fault.def.phase)} phase)` : ': not in the fault table'}. All codes: docs/faults.md.</p></div>`;
  const body = r.truncated ? r.body : prettyBody(r.body);
  return `<section aria-labelledby="result"><h3 id="result">Response</h3>
<p><code>${h(r.url)}</code></p>
<p>Status: <strong id="try-status" class="${r.status < 400 ? 'status-ok' : 'status-bad'}">${r.status}</strong></p>
${fault}
<h4>Body${r.truncated ? ' (first 64 KiB, as received)' : body !== r.body ? ' (JSON, indented)' : ''}</h4><pre class="json" id="try-body">${h(body)}</pre>
<details><summary>Headers (${r.headers.length})</summary><pre id="try-headers">${h(headers)}</pre></details></section>`;
}

/** What the try-it tab is drawn with: the API, where forms post, the form that was sent and its answer. */
export interface TryView {
  readonly api: ApiDefinition;
  readonly apiId: string;
  /** The application's try route (`…/try`). */
  readonly action: string;
  readonly csrf: string;
  /** The gateway URL of the API (the first gateway's), for the WebSocket note. */
  readonly url: string | undefined;
  /** The posted form, when this page answers one. */
  readonly form: URLSearchParams;
  readonly result: TryResult | string | undefined;
}

function keySelect(id: string, form: URLSearchParams): string {
  return select({ id, label: 'Token of', options: KEY_OPTIONS, value: form.get('tryKeyType') ?? 'PRODUCTION' }).replace(
    `name="${id}"`,
    'name="tryKeyType"',
  );
}

function operationHtml(v: TryView, op: TryOperation, i: number): string {
  const sent = v.form.get('operation') === op.key;
  const id = `op${i}`;
  const fields = op.fields
    .map((f, j) => {
      const name = `${f.in === 'path' ? 'p' : 'q'}.${f.name}`;
      const label = f.rest === true ? 'Rest of the path (optional)' : `${f.name} (${f.in}${f.required ? ', required' : ''})`;
      return field({ id: `${id}-f${j}`, label, value: sent ? (v.form.get(name) ?? '') : f.example }).replace(
        `name="${id}-f${j}"`,
        `name="${h(name)}"`,
      );
    })
    .join('\n');
  const body =
    op.body === undefined
      ? ''
      : field({
          id: `${id}-body`,
          label: 'Request body (JSON)',
          type: 'textarea',
          value: sent ? (v.form.get('body') ?? '') : prettyBody(op.body),
        }).replace(`name="${id}-body"`, 'name="body"');
  return `<details class="operation" id="${id}"${sent ? ' open' : ''}>
<summary>${methodBadge(op.method)} <code>${h(op.path)}</code>${op.summary !== '' ? ` <span>${h(op.summary)}</span>` : ''}</summary>
<form method="post" action="${h(v.action)}">${csrfField(v.csrf)}<input type="hidden" name="api" value="${h(v.apiId)}"><input type="hidden" name="operation" value="${h(op.key)}">
${fields}
${body}
${keySelect(`${id}-key`, sent ? v.form : new URLSearchParams())}
<button type="submit" aria-label="Send ${h(op.key)}">Send</button>
</form>
${sent ? tryResultHtml(v.result) : ''}
</details>`;
}

function graphqlHtml(v: TryView): string {
  const sent = v.form.get('graphql') === '1';
  const sdl = v.api.graphql?.sdl ?? '';
  return `<p>A GraphQL API: the query is sent as <code>POST</code> with a JSON body <code>{"query", "variables", "operationName"}</code> to the API's URL (docs/graphql.md).</p>
<form method="post" action="${h(v.action)}">${csrfField(v.csrf)}<input type="hidden" name="api" value="${h(v.apiId)}"><input type="hidden" name="graphql" value="1">
${field({ id: 'gql-query', label: 'Query', type: 'textarea', value: sent ? (v.form.get('query') ?? '') : '{ __typename }' }).replace('name="gql-query"', 'name="query"')}
${field({ id: 'gql-variables', label: 'Variables (JSON object, optional)', type: 'textarea', value: sent ? (v.form.get('variables') ?? '') : '' }).replace('name="gql-variables"', 'name="variables"')}
${field({ id: 'gql-operation', label: 'Operation name (optional)', value: sent ? (v.form.get('operationName') ?? '') : '' }).replace('name="gql-operation"', 'name="operationName"')}
${keySelect('gql-key', sent ? v.form : new URLSearchParams())}
<button type="submit">Run query</button>
</form>
${sent ? tryResultHtml(v.result) : ''}
${sdl !== '' ? `<details><summary>Schema (SDL)</summary><pre id="gql-schema">${h(sdl.slice(0, 64 * 1024))}</pre></details>` : ''}`;
}

/** The WebSocket URL of a gateway URL: ws:// for http://, wss:// for https:// (RFC 6455 §3). */
export const wsUrl = (url: string): string => url.replace(/^http(s?):\/\//, 'ws$1://');

function websocketHtml(v: TryView): string {
  const url = v.url === undefined ? undefined : wsUrl(v.url);
  const paths = v.api.resources.map((r) => `<li><code>${h(r.path)}</code></li>`).join('');
  return `<div class="card" id="ws-note"><p>A WebSocket API: a call is a handshake that stays open (RFC 6455), which this page does not hold. Connect with a WebSocket client${url !== undefined ? ' to' : ''}:</p>
${url !== undefined ? `<p class="keyline"><code id="ws-url">${h(url)}</code> ${copyButton('ws-url', 'WebSocket URL')}</p>` : '<p>No gateway URL is known.</p>'}
<p>with the access token of the keys tabs as <code>Authorization: Bearer …</code>, or from a browser as the <code>access_token</code> query parameter (docs/websocket.md). Its resources:</p><ul>${paths}</ul></div>`;
}

/** The try-it forms of one API: per operation, a GraphQL query box, or a WebSocket API's note. */
export function tryFormsHtml(v: TryView): string {
  // An answer no form of the API shows (a refusal before any form was matched) comes first.
  if (v.api.type === 'WS') return `${tryResultHtml(v.result)}${websocketHtml(v)}`;
  if (v.api.type === 'GRPC') return `${tryResultHtml(v.result)}<div class="card" id="grpc-note"><p>${h(GRPC_TRY_REFUSAL)}</p></div>`;
  if (v.api.type === 'GRAPHQL') return `${v.form.get('graphql') === '1' ? '' : tryResultHtml(v.result)}${graphqlHtml(v)}`;
  const ops = tryOperations(v.api);
  const methods = [...new Set(v.api.resources.flatMap((r) => r.methods))];
  const custom = v.form.get('operation') === null && v.form.get('path') !== null;
  const placed = custom || ops.some((op) => op.key === v.form.get('operation'));
  return `${placed ? '' : tryResultHtml(v.result)}<p>${ops.length} operation${ops.length === 1 ? '' : 's'}${v.api.definition !== undefined ? ' of its OpenAPI document' : ' of its resources'}. Open one, fill in its parameters and send it.</p>
${ops.map((op, i) => operationHtml(v, op, i + 1)).join('\n')}
<details class="operation" id="op-custom"${custom ? ' open' : ''}><summary>Another path of this API</summary>
<form method="post" action="${h(v.action)}">${csrfField(v.csrf)}<input type="hidden" name="api" value="${h(v.apiId)}">
${select({ id: 'method', label: 'Method', options: methods.map((m) => [m, m]), value: v.form.get('method') ?? methods[0] ?? 'GET' })}
${field({ id: 'path', label: 'Resource path', value: v.form.get('path') ?? '/', hint: "After the API's context and version, e.g. /menu?limit=2" })}
${field({ id: 'body', label: 'Request body (JSON, optional)', type: 'textarea', value: custom ? (v.form.get('body') ?? '') : '' })}
${keySelect('custom-key', custom ? v.form : new URLSearchParams())}
<button type="submit" aria-label="Send to another path">Send</button>
</form>
${custom ? tryResultHtml(v.result) : ''}
</details>`;
}
