/**
 * An API's OpenAPI document in the developer portal (docs/portal.md, "The catalogue"): the document its
 * API file names (`definition`, lib/gateway/openapi-file.ts) rendered on the API's page, server-side and
 * without script, and served for download with the gateway URLs as its servers. Every value of the
 * document is HTML-escaped; local `$ref`s (`#/components/...`, OpenAPI 3.1 §4.8.23) are followed, others
 * shown as written.
 */
import type * as http from 'node:http';
import type { ApiDefinition } from '../gateway/apis';
import { type OpenApiDocument, readDefinition } from '../gateway/openapi-file';
import { escapeHtml as h, PAGE_HEADERS } from './html';

/** The operations of a Path Item, in the order OpenAPI 3.1 §4.8.9 lists them. */
const OPERATIONS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** Most `$ref` hops followed for one value (a cycle ends here). */
const MAX_REF_HOPS = 8;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');

/** The API's document as it is on disk now, or why not (undefined: the API names none). */
export function apiDocument(api: Pick<ApiDefinition, 'file' | 'definition'>): { doc: OpenApiDocument } | { error: string } | undefined {
  if (api.definition === undefined) return undefined;
  const r = readDefinition(api.file, api.definition, api.file !== '');
  return r.ok ? { doc: r.doc } : { error: r.error };
}

/** A local reference followed (a JSON Pointer into the document, RFC 6901); anything else as it is. */
function deref(doc: OpenApiDocument, v: unknown): unknown {
  let cur = v;
  for (let i = 0; i < MAX_REF_HOPS && isObj(cur) && typeof cur.$ref === 'string' && cur.$ref.startsWith('#/'); i++) {
    let at: unknown = doc;
    for (const raw of cur.$ref.slice(2).split('/')) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      at = isObj(at) && Object.hasOwn(at, key) ? at[key] : Array.isArray(at) ? at[Number(key)] : undefined;
    }
    if (at === undefined) return cur;
    cur = at;
  }
  return cur;
}

/** A schema's type in a few words: `array of Pizza`, `string (date-time)`, or a reference's last name. */
function schemaText(doc: OpenApiDocument, s: unknown): string {
  if (!isObj(s)) return '';
  if (typeof s.$ref === 'string') return s.$ref.slice(s.$ref.lastIndexOf('/') + 1);
  const type = Array.isArray(s.type) ? s.type.map(str).join(' | ') : str(s.type);
  if (type === 'array') return `array of ${schemaText(doc, s.items) || 'any'}`;
  return `${type}${typeof s.format === 'string' ? ` (${s.format})` : ''}` || (isObj(s.properties) ? 'object' : '');
}

/** A list of security requirements (OpenAPI 3.1 §4.8.30): alternatives joined by "or"; [] or {} alone: none. */
function securityText(security: unknown): string {
  if (!Array.isArray(security)) return '';
  const alts = security.filter(isObj).map((req) => {
    const names = Object.entries(req).map(
      ([scheme, scopes]) => `${scheme}${Array.isArray(scopes) && scopes.length > 0 ? ` (scopes: ${scopes.map(str).join(', ')})` : ''}`,
    );
    return names.length === 0 ? 'none' : names.join(' and ');
  });
  return alts.length === 0 ? 'none' : alts.join(' or ');
}

function parametersTable(doc: OpenApiDocument, params: readonly unknown[]): string {
  if (params.length === 0) return '';
  const rows = params
    .map((p) => deref(doc, p))
    .filter(isObj)
    .map(
      (p) =>
        `<tr><td><code>${h(str(p.name))}</code></td><td>${h(str(p.in))}</td><td>${p.required === true ? 'yes' : 'no'}</td><td>${h(schemaText(doc, p.schema))}</td><td>${h(str(p.description))}</td></tr>`,
    )
    .join('');
  return `<h4>Parameters</h4><div class="table"><table><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Required</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

const mediaTypes = (content: unknown): string =>
  isObj(content)
    ? Object.keys(content)
        .map((m) => `<code>${h(m)}</code>`)
        .join(', ')
    : '';

function operationHtml(doc: OpenApiDocument, p: string, method: string, op: Obj, shared: readonly unknown[], id: number): string {
  // Operation parameters override the Path Item's of the same name and location (OpenAPI 3.1 §4.8.10.1).
  const own = (Array.isArray(op.parameters) ? op.parameters : []).map((x) => deref(doc, x)).filter(isObj);
  const key = (x: Obj): string => `${str(x.name)}\u0000${str(x.in)}`;
  const ownKeys = new Set(own.map(key));
  const params = [
    ...shared
      .map((x) => deref(doc, x))
      .filter(isObj)
      .filter((x) => !ownKeys.has(key(x))),
    ...own,
  ];
  const body = deref(doc, op.requestBody);
  const requestBody = isObj(body)
    ? `<h4>Request body${body.required === true ? ' (required)' : ''}</h4><p>${mediaTypes(body.content) || 'no media type'}${typeof body.description === 'string' ? `: ${h(body.description)}` : ''}</p>`
    : '';
  const responses = isObj(op.responses)
    ? Object.entries(op.responses)
        .map(([code, r]) => {
          const resp = deref(doc, r);
          return `<tr><td>${h(code)}</td><td>${h(isObj(resp) ? str(resp.description) : '')}</td><td>${isObj(resp) ? mediaTypes(resp.content) : ''}</td></tr>`;
        })
        .join('')
    : '';
  const security = securityText(op.security ?? doc.security);
  return `<div class="card operation" id="operation-${id}">
<h3><span class="method">${h(method.toUpperCase())}</span> <code>${h(p)}</code></h3>
${typeof op.summary === 'string' ? `<p class="summary">${h(op.summary)}</p>` : ''}${typeof op.description === 'string' ? `<p>${h(op.description)}</p>` : ''}${op.deprecated === true ? '<p><span class="state">deprecated</span></p>' : ''}
${parametersTable(doc, params)}${requestBody}
${responses !== '' ? `<h4>Responses</h4><div class="table"><table><thead><tr><th scope="col">Status</th><th scope="col">Description</th><th scope="col">Media types</th></tr></thead><tbody>${responses}</tbody></table></div>` : ''}
${security !== '' ? `<h4>Security</h4><p>${h(security)}</p>` : ''}</div>`;
}

/** The document as a section of the API's page: info, the gateway URLs as servers, every operation. */
export function definitionHtml(
  doc: OpenApiDocument,
  servers: readonly { readonly name: string; readonly url: string }[],
  download: string,
): string {
  const info = isObj(doc.info) ? doc.info : {};
  const ops: string[] = [];
  for (const [p, raw] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    const item = deref(doc, raw);
    if (!isObj(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const m of OPERATIONS) if (isObj(item[m])) ops.push(operationHtml(doc, p, m, item[m] as Obj, shared, ops.length + 1));
  }
  const serverList = servers.map((s) => `<li>${h(s.name)}: <code>${h(s.url)}</code></li>`).join('');
  return `<section aria-labelledby="openapi">
<h2 id="openapi">OpenAPI document</h2>
<p><a href="${h(download)}" download>Download the OpenAPI document</a> (JSON, with the gateway URLs as servers)</p>
<dl><dt>Title</dt><dd>${h(str(info.title))}</dd><dt>Version</dt><dd>${h(str(info.version))}</dd><dt>OpenAPI</dt><dd>${h(str(doc.openapi))}</dd></dl>
${typeof info.description === 'string' ? `<p>${h(info.description)}</p>` : ''}
<h3>Servers</h3><ul>${serverList}</ul>
<h3>Operations</h3>
<p>${ops.length} operation${ops.length === 1 ? '' : 's'}.</p>
${ops.join('\n')}
</section>`;
}

/**
 * The document with the gateway URLs as its servers: the top-level `servers` replaced, and those of path
 * items and operations removed (they name the backend, which callers never reach directly).
 */
export function forGateway(doc: OpenApiDocument, servers: readonly { readonly name: string; readonly url: string }[]): Obj {
  const paths: Obj = {};
  for (const [p, raw] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    if (!isObj(raw)) {
      paths[p] = raw;
      continue;
    }
    const item: Obj = { ...raw };
    delete item.servers;
    for (const m of OPERATIONS) {
      const op = item[m];
      if (!isObj(op) || op.servers === undefined) continue;
      const copy: Obj = { ...op };
      delete copy.servers;
      item[m] = copy;
    }
    paths[p] = item;
  }
  return { ...doc, servers: servers.map((s) => ({ url: s.url, description: s.name })), ...(doc.paths !== undefined ? { paths } : {}) };
}

/** A file name for the download: `<name>-<version>.openapi.json`, safe characters only. */
export function downloadName(api: Pick<ApiDefinition, 'name' | 'version'>): string {
  return `${`${api.name}-${api.version}`.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 100)}.openapi.json`;
}

/** Sends the document as an attachment (JSON, RFC 8259 §11's media type). */
export function sendDefinition(res: http.ServerResponse, doc: Obj, filename: string): void {
  const body = `${JSON.stringify(doc, null, 2)}\n`;
  res.writeHead(200, {
    ...PAGE_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Content-Disposition': `attachment; filename="${filename}"`,
  });
  res.end(body);
}
