/**
 * The publisher at /publisher (docs/portal.md, "Publisher"), for users with the publisher or creator
 * role: create and edit an API with a form that writes its API file through the gateway's validator,
 * move it through the lifecycle, and list, block and unblock its subscriptions.
 *
 * Lifecycle: a new API is a draft in apis_dir/created/ (CREATED, never deployed); publishing or
 * prototyping moves it into apis_dir with `state` set; later transitions rewrite the `state` line. The
 * gateway of this node hot-deploys the directory (lib/gateway/deploy.ts), and the control plane's
 * deployment source publishes api.deployed / api.undeployed to gateway-workers (lib/scale/deployments.ts):
 * BLOCKED then answers 700700, RETIRED 103008 (404), as docs/apis.md says.
 */
import { notifyNewVersion } from './notify';
import * as path from 'node:path';
import { SUBSCRIPTION_STATES, type SubscriptionState } from '../store/types';
import type { ApiFileRefusal } from '../keymanager/http';
import { tenantOfContext } from '../keymanager/manage';
import {
  type ApiForm,
  checkForm,
  CORS_KEYS,
  emptyForm,
  ENDPOINT_KEYS,
  type EndpointKey,
  type EndpointKind,
  fieldOf,
  formFromPost,
  formFromText,
  TRANSITIONS,
} from './api-form';
import { type ApiCatalogue, type CatalogueEntry, type ConsoleState } from './catalogue';
import { SUPER_TENANT } from '../tenants';
import { type Call, problem, render, takeFlash } from './context';
import { buttonForm, csrfField, escapeHtml as h, field, seeOther, select } from './html';
import { importOpenApi } from './openapi';
import { auditRoute, auditSection } from './audit-page';
import { MAX_API_PROTOS, MAX_UPLOAD_PROTO_BYTES, PROTO_FILES_FIELD, type ProtoUpload, uploadProblem, uploadsOf } from './protos';
import { MAX_PROTO_UPLOAD_BODY } from '../keymanager/http';

const state = (s: string): string => `<span class="state">${h(s)}</span>`;

function listPage(c: Call): void {
  const rows = c.parts.catalogue
    .list()
    .map((e) => {
      const name = e.api !== undefined ? `${e.api.name} ${e.api.version}` : e.id;
      const moves =
        e.api !== undefined
          ? TRANSITIONS[e.state]
              .map((s) =>
                buttonForm(
                  `/publisher/apis/${encodeURIComponent(e.id)}/lifecycle`,
                  lifecycleLabel(s),
                  c.session.csrf,
                  { state: s },
                  `${lifecycleLabel(s)} ${name}`,
                ),
              )
              .join(' ')
          : '<span class="error">invalid file</span>';
      return `<tr><td><a href="/publisher/apis/${encodeURIComponent(e.id)}">${h(name)}</a></td><td><code>${h(e.api?.context ?? '')}</code></td><td>${state(e.state)}</td><td>${moves}</td></tr>`;
    })
    .join('\n');
  const tenant = c.parts.catalogue.tenant;
  render(
    c,
    'publisher',
    tenant === undefined ? 'APIs' : `APIs of ${tenant}`,
    `${takeFlash(c)}
<p><a href="/publisher/new">Create an API</a></p>
<div class="table"><table><thead><tr><th scope="col">API</th><th scope="col">Context</th><th scope="col">State</th><th scope="col">Lifecycle</th></tr></thead><tbody>${rows}</tbody></table></div>`,
  );
}

function lifecycleLabel(s: ConsoleState): string {
  return {
    CREATED: 'Demote to created',
    PROTOTYPED: 'Deploy as a prototype',
    PUBLISHED: 'Publish',
    BLOCKED: 'Block',
    DEPRECATED: 'Deprecate',
    RETIRED: 'Retire',
  }[s];
}

type FormErrors = Partial<Record<keyof ApiForm | 'general' | 'openapi' | 'proto', string>>;

/** A `<details>` group of an endpoint's advanced configuration: open when a value is set or wrong. */
function endpointGroup(f: ApiForm, kind: EndpointKind, err: (k: keyof ApiForm) => { error?: string }): string {
  const title = kind === 'production' ? 'Production' : 'Sandbox';
  const keys = Object.entries(ENDPOINT_KEYS) as [EndpointKey, (typeof ENDPOINT_KEYS)[EndpointKey]][];
  const open = keys.some(([k]) => f[`${kind}_${k}`] !== '' || err(`${kind}_${k}`).error !== undefined);
  const inputs = keys
    .map(([k, d]) =>
      field({ id: `${kind}_${k}`, label: `${title} ${d.label}`, value: f[`${kind}_${k}`], hint: d.hint, ...err(`${kind}_${k}`) }),
    )
    .join('\n');
  return `<details${open ? ' open' : ''}><summary>${title} endpoint: advanced configuration</summary>\n${inputs}\n</details>`;
}

/**
 * The re-entry of an endpoint's backend password or client secret (docs/portal.md, "Backend credentials"):
 * a password input that is never filled in, also not after an error.
 */
function secretField(kind: EndpointKind, err: (k: keyof ApiForm) => { error?: string }): string {
  return field({
    id: `${kind}_secret`,
    label: `${kind === 'production' ? 'Production' : 'Sandbox'} backend secret (optional)`,
    type: 'password',
    value: '',
    hint: 'Only to re-enter the backend password (basic, digest) or client secret (oauth) the API file holds: needed when the URL moves to another host, which the stored credentials never follow',
    ...err(`${kind}_secret`),
  });
}

/** The CORS override's fields in a fieldset; yes/no keys are selects with "as [apim.cors]" first. */
function corsGroup(f: ApiForm, err: (k: keyof ApiForm) => { error?: string }): string {
  const inputs = CORS_KEYS.map(([id, , kind, label]) =>
    kind === 'boolean'
      ? select({
          id,
          label,
          options: [
            ['', 'As [apim.cors]'],
            ['true', 'Yes'],
            ['false', 'No'],
          ],
          value: f[id],
          ...err(id),
        })
      : field({ id, label, value: f[id], hint: 'Comma-separated; empty: [apim.cors] applies', ...err(id) }),
  ).join('\n');
  return `<fieldset><legend>CORS override (empty: [apim.cors] applies)</legend>\n${inputs}\n</fieldset>`;
}

function formPage(
  c: Call,
  title: string,
  action: string,
  f: ApiForm,
  errors: FormErrors = {},
  extra = '',
  status = 200,
  notice = '',
): void {
  const err = (k: keyof ApiForm | 'openapi' | 'proto'): { error?: string } =>
    errors[k] !== undefined ? { error: errors[k] as string } : {};
  const creating = action === '/publisher/new';
  // The API's type; another value of the file (WS, GRAPHQL, HTTP written out) is offered as it is.
  const types: [string, string][] = [
    ['', 'HTTP (REST)'],
    ['GRPC', 'gRPC'],
  ];
  if (!types.some(([v]) => v === f.type)) types.push([f.type, f.type]);
  // A new gRPC API comes with its .proto files (docs/grpc.md, "The .proto files in the publisher").
  const withProtos = creating && c.parts.catalogue.putProtos !== undefined;
  // The error is shown beside the input that carried the files: a file input cannot be filled in again.
  const filesPosted = (c.files ?? []).some((x) => x.field === PROTO_FILES_FIELD);
  const protoFields = withProtos
    ? `<fieldset><legend>gRPC: the .proto files (type gRPC only)</legend>
${filesInput(filesPosted ? err('proto') : {})}
${field({ id: 'proto_name', label: '.proto file name', value: c.form.get('proto_name') ?? '', hint: 'Or one file pasted: its name, e.g. route_guide.proto (stored beside the API file)', ...(filesPosted ? {} : err('proto')) })}
${field({ id: 'proto_text', label: '.proto file', type: 'textarea', value: c.form.get('proto_text') ?? '', hint: `Its text (at most ${MAX_UPLOAD_PROTO_BYTES / 1024} KiB). Resources: leave empty to serve every method, or one a line: POST /package.Service/Method` })}
</fieldset>`
    : '';
  const general = errors.general !== undefined ? `<p class="error" role="alert">${h(errors.general)}</p>` : '';
  render(
    c,
    'publisher',
    title,
    `${takeFlash(c)}${notice}${extra}${extra !== '' ? '<h2>Definition</h2>' : ''}${general}
<form method="post" action="${h(action)}"${withProtos ? ' enctype="multipart/form-data"' : ''} novalidate>${csrfField(c.session.csrf)}
${field({ id: 'name', label: 'Name', value: f.name, required: true, ...err('name') })}
${field({ id: 'context', label: 'Context', value: f.context, required: true, hint: `e.g. /pizzashack: the API is called at ${c.parts.catalogue.tenant === undefined ? '' : `/t/${c.parts.catalogue.tenant}`}/<context>/<version>/<resource>`, ...err('context') })}
${field({ id: 'version', label: 'Version', value: f.version, required: true, ...err('version') })}
${field({ id: 'description', label: 'Description', value: f.description, ...err('description') })}
${select({ id: 'type', label: 'API type', options: types, value: f.type, ...err('type') })}
${protoFields}
${field({ id: 'production', label: 'Production endpoint URL', value: f.production, hint: 'http://host:port/path', ...err('production') })}
${secretField('production', err)}
${endpointGroup(f, 'production', err)}
${field({ id: 'sandbox', label: 'Sandbox endpoint URL (optional)', value: f.sandbox, ...err('sandbox') })}
${secretField('sandbox', err)}
${endpointGroup(f, 'sandbox', err)}
${select({
  id: 'auth',
  label: 'Authentication',
  options: [
    ['oauth2', 'OAuth 2.0 token and subscription'],
    ['none', 'None (open API)'],
  ],
  value: f.auth,
  ...err('auth'),
})}
${field({ id: 'resources', label: 'Resources', type: 'textarea', value: f.resources, hint: 'One a line: METHODS /path [scopes] [policy=name auth=none token_type=user unauthenticated_policy=name], e.g. GET,POST /menu read policy=10KPerMin', ...err('resources') })}
${field({ id: 'scopes', label: 'Scopes (optional)', type: 'textarea', value: f.scopes, hint: 'One a line: name: role1, role2', ...err('scopes') })}
${field({ id: 'labels', label: 'Gateway labels (tags)', value: f.labels, ...err('labels') })}
${field({ id: 'policy', label: 'API throttling policy (optional)', value: f.policy, hint: 'An [[api]] policy; when set, resource policies are ignored', ...err('policy') })}
${field({ id: 'unauthenticated_policy', label: 'Unauthenticated tier (optional)', value: f.unauthenticated_policy, hint: 'A subscription tier for calls without a token, per client IP; empty: Unauthenticated', ...err('unauthenticated_policy') })}
${corsGroup(f, err)}
<button type="submit" name="action" value="save">Save</button>
${field({ id: 'openapi', label: 'OpenAPI 3 document (JSON or YAML, optional)', type: 'textarea', value: c.form.get('openapi') ?? '', hint: 'Import fills the resources (and empty fields) from its paths, info and servers; nothing is saved until Save', ...err('openapi') })}
<button type="submit" name="action" value="import">Import resources</button>
</form>`,
    status,
  );
}

async function editPage(c: Call, e: CatalogueEntry): Promise<void> {
  const parsed = formFromText(e.text);
  if (parsed === undefined)
    return problem(
      c,
      'publisher',
      422,
      'Cannot edit',
      `${e.file} is not readable TOML: fix it in an editor (throughway apis list shows why).`,
    );
  const moves = TRANSITIONS[e.state]
    .map((s) => buttonForm(`/publisher/apis/${encodeURIComponent(e.id)}/lifecycle`, lifecycleLabel(s), c.session.csrf, { state: s }))
    .join(' ');
  let subs = '';
  if (e.api !== undefined) {
    const api = e.api;
    const list = (await c.parts.keys.listSubscriptions({ apiContext: api.context })).filter((s) => s.apiVersion === api.version);
    const rows = list
      .map((s) => {
        const next: SubscriptionState[] = s.state === 'UNBLOCKED' ? ['BLOCKED', 'PROD_ONLY_BLOCKED'] : ['UNBLOCKED'];
        const label = (n: SubscriptionState): string =>
          n === 'UNBLOCKED' ? (s.state === 'ON_HOLD' ? 'Approve' : 'Unblock') : n === 'BLOCKED' ? 'Block' : 'Block production only';
        return `<tr><td>${h(s.application)}</td><td>${h(s.tier)}</td><td>${state(s.state)}</td><td>${next.map((n) => buttonForm(`/publisher/apis/${encodeURIComponent(e.id)}/subscriptions`, label(n), c.session.csrf, { subscription: s.id, state: n }, `${label(n)} ${s.application}`)).join(' ')}</td></tr>`;
      })
      .join('\n');
    subs = `<h2>Subscriptions</h2><div class="table"><table><thead><tr><th scope="col">Application</th><th scope="col">Tier</th><th scope="col">State</th><th scope="col">Action</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  }
  const warn =
    e.api === undefined
      ? `<p class="error" role="alert">The file does not validate: ${h(
          e.diagnostics
            .filter((d) => d.level === 'error')
            .map((d) => `${d.field}: ${d.message}`)
            .join('; '),
        )}</p>`
      : '';
  formPage(
    c,
    `${e.api?.name ?? e.id} ${e.api?.version ?? ''}`.trim(),
    `/publisher/apis/${encodeURIComponent(e.id)}`,
    parsed.form,
    {},
    `${warn}${await protoSection(c, e)}<h2>Lifecycle</h2><p>State: ${state(e.state)}</p><p>${moves === '' ? 'No transition: RETIRED is final.' : moves}</p>${subs}${await auditSection(c, e)}`,
  );
}

const KIND_TEXT: Readonly<Record<string, string>> = {
  unary: 'unary',
  server_streaming: 'server streaming',
  client_streaming: 'client streaming',
  bidi_streaming: 'bidirectional streaming',
};

/**
 * The file input taking several .proto files at once (the form is posted as multipart/form-data): all are
 * checked together, so one may import another by its name.
 */
function filesInput(error: { error?: string }): string {
  return field({
    id: PROTO_FILES_FIELD,
    label: '.proto files',
    type: 'file',
    hint: `One or more (an import names another by its file name); at most ${MAX_API_PROTOS} files for an API, ${MAX_UPLOAD_PROTO_BYTES / 1024} KiB each, ${MAX_PROTO_UPLOAD_BODY / 1024 / 1024} MiB for the whole form. After an error, choose them again.`,
    ...error,
  }).replace('type="file"', 'type="file" multiple accept=".proto"');
}

/** "2 services, 9 methods: routeguide.RouteGuide (8), routeguide.Admin (1)" of `/package.Service/Method` paths. */
function servicesText(methods: readonly { readonly path: string }[]): string {
  const by = new Map<string, number>();
  for (const m of methods) {
    const s = m.path.split('/')[1] ?? '';
    by.set(s, (by.get(s) ?? 0) + 1);
  }
  const n = (k: number, w: string): string => `${k} ${w}${k === 1 ? '' : 's'}`;
  return `${n(by.size, 'service')}, ${n(methods.length, 'method')}: ${[...by].map(([s, k]) => `${s} (${k})`).join(', ')}`;
}

/**
 * A gRPC API's .proto files (docs/grpc.md, "The .proto files in the publisher"): each with a Delete
 * button, its services and the methods they declare (those the resources do not list shown as not
 * served), and a form that adds or replaces several. Empty for other APIs, and where the catalogue cannot
 * write them; a remote control plane's are read through its admin API (remote-catalogue.ts).
 */
async function protoSection(c: Call, e: CatalogueEntry): Promise<string> {
  const p = await c.parts.catalogue.protos?.(e.id);
  if (p === undefined || !p.grpc) return '';
  const action = `/publisher/apis/${encodeURIComponent(e.id)}/protos`;
  const files = p.protos
    .map(
      (x) =>
        `<tr><td><code>${h(x.name)}</code></td><td>${Buffer.byteLength(x.text)} bytes</td><td>${buttonForm(action, 'Delete', c.session.csrf, { op: 'delete', name: x.name }, `Delete ${x.name}`)}</td></tr>`,
    )
    .join('\n');
  const served = new Set(e.api?.resources.map((r) => r.path) ?? []);
  const methods = p.methods
    .map(
      (m) =>
        `<tr><td><code>${h(m.path)}</code></td><td>${h(KIND_TEXT[m.kind] ?? m.kind)}</td><td>${served.has(m.path) ? 'served' : 'not served (UNIMPLEMENTED)'}</td></tr>`,
    )
    .join('\n');
  return `<section aria-labelledby="protos"><h2 id="protos">.proto files</h2>
<div class="table"><table class="proto-files"><thead><tr><th scope="col">File</th><th scope="col">Size</th><th scope="col">Action</th></tr></thead><tbody>${files}</tbody></table></div>
<h3>Methods</h3>
${p.methods.length === 0 ? '<p>No method: the file does not validate.</p>' : `<p class="grpc-services">${h(servicesText(p.methods))}</p><div class="table"><table class="grpc-methods"><thead><tr><th scope="col">Method</th><th scope="col">Call kind</th><th scope="col">Gateway</th></tr></thead><tbody>${methods}</tbody></table></div>`}
<form method="post" action="${h(action)}" enctype="multipart/form-data" novalidate>${csrfField(c.session.csrf)}<input type="hidden" name="op" value="upload">
${filesInput({})}
${field({ id: 'proto_name', label: '.proto file name', value: '', hint: 'Or one file pasted: a name in the list replaces that file; another adds it. Letters, digits, ., _ and -, ending .proto' })}
${field({ id: 'proto_text', label: '.proto file', type: 'textarea', value: '', hint: `At most ${MAX_UPLOAD_PROTO_BYTES / 1024} KiB; checked with the API file and the other files before anything is stored` })}
<button type="submit">Upload .proto file</button>
</form></section>`;
}

/** A text area's value as a file's text: browsers post its line breaks as CRLF (HTML, "constructing the entry list"). */
const textareaText = (v: string): string => v.replace(/\r\n?/g, '\n');

/**
 * The .proto files a form carries: those of its file input, then the pasted one (proto_name, proto_text)
 * when its text is not empty (on the API's page with no file chosen, a name alone too, so the refusal
 * says what is wrong with it); `pastedDefault`: the pasted file's name when none is given. A string: the
 * refusal of a file that is no UTF-8 text.
 */
function postedProtos(c: Call, pastedDefault: string | undefined): ProtoUpload[] | string {
  const files = uploadsOf(c.files ?? []);
  if (typeof files === 'string') return files;
  const text = textareaText(c.form.get('proto_text') ?? '');
  const name = (c.form.get('proto_name') ?? '').trim() || pastedDefault;
  if (text.trim() !== '' || (files.length === 0 && name !== undefined && pastedDefault === undefined))
    return [...files, { name: name ?? '', text }];
  return files;
}

/** POST /publisher/apis/{id}/protos: upload (add or replace) several .proto files or delete one, then back to the API's page. */
async function protoAction(c: Call, e: CatalogueEntry): Promise<void> {
  const cat = c.parts.catalogue;
  if (cat.putProtos === undefined || cat.deleteProto === undefined)
    return problem(c, 'publisher', 404, 'Not found', 'This publisher does not store .proto files.');
  const posted = c.form.get('op') === 'delete' ? [] : postedProtos(c, undefined);
  const name =
    c.form.get('op') === 'delete' ? (c.form.get('name') ?? '') : typeof posted === 'string' ? '' : posted.map((p) => p.name).join(', ');
  const r =
    c.form.get('op') === 'delete'
      ? await cat.deleteProto(e.id, name)
      : typeof posted === 'string'
        ? { status: 400, message: posted, fields: {} }
        : await cat.putProtos(e.id, posted);
  if ('status' in r) {
    const why = Object.values(r.fields)[0] ?? r.message;
    c.session.flash = `<p class="error" role="alert">${h(name === '' ? '.proto files' : name)}: not stored: ${h(why)}</p>`;
  } else {
    c.parts.logger.log('info', 'publisher_protos_changed', { file: e.id, user: c.session.user?.username, op: c.form.get('op'), name });
    c.session.flash = `<p class="notice" role="status">${h(c.form.get('op') === 'delete' ? `Deleted ${name}` : `Stored ${name}`)}: ${r.methods.length} method${r.methods.length === 1 ? '' : 's'}.</p>`;
  }
  return seeOther(c.res, `/publisher/apis/${encodeURIComponent(e.id)}#protos`);
}

/** Refuses a second API on the same context and version (the gateway would refuse to deploy it). */
function duplicate(c: Call, f: ApiForm, self: string | undefined): string | undefined {
  // A tenant's entries show the context served (/t/<domain><context>); the form has it as written.
  const t = c.parts.catalogue.tenant;
  const context = t === undefined ? f.context : `/t/${t}${f.context}`;
  const other = c.parts.catalogue
    .list()
    .find((e) => e.id !== self && e.api !== undefined && e.api.context === context && e.api.version === f.version);
  return other === undefined ? undefined : `context ${f.context} version ${f.version} is already used by ${other.id}`;
}

async function save(c: Call, e: CatalogueEntry | undefined): Promise<void> {
  const f = formFromPost(c.form);
  if (c.form.get('action') === 'import') {
    const action = e === undefined ? '/publisher/new' : `/publisher/apis/${encodeURIComponent(e.id)}`;
    const r = importOpenApi(c.form.get('openapi') ?? '', f);
    if ('error' in r) return formPage(c, e === undefined ? 'Create an API' : `Edit ${f.name}`, action, f, { openapi: r.error }, '', 400);
    return formPage(
      c,
      e === undefined ? 'Create an API' : `Edit ${f.name}`,
      action,
      r.form,
      {},
      '',
      200,
      `<p class="notice" role="status">Imported ${r.resources} resource line${r.resources === 1 ? '' : 's'} from the OpenAPI document: check the form, then Save.</p>`,
    );
  }
  const raw = e !== undefined ? formFromText(e.text)?.raw : undefined;
  const draft = c.parts.catalogue.draftFor(f.name, f.version);
  const file = e?.file ?? draft.file;
  const st: ConsoleState = e?.state ?? 'CREATED';
  // A new gRPC API's .proto files, checked together and written with its API file.
  const posted = e === undefined && f.type === 'GRPC' ? postedProtos(c, 'service.proto') : [];
  const protos = typeof posted === 'string' ? [] : posted;
  const upload = typeof posted === 'string' ? posted : protos.length > 0 ? uploadProblem(protos, []) : undefined;
  const r = checkForm(
    f,
    file,
    c.parts.catalogue.vars,
    e !== undefined && raw !== undefined ? { text: e.text, raw } : undefined,
    st,
    c.parts.policyNames?.(),
    upload === undefined ? protos : [],
  );
  const errors: FormErrors = { ...r.errors };
  if (upload !== undefined) errors.proto = upload;
  const dup = duplicate(c, f, e?.id);
  if (dup !== undefined) errors.context ??= dup;
  const action = e === undefined ? '/publisher/new' : `/publisher/apis/${encodeURIComponent(e.id)}`;
  if (Object.keys(errors).length > 0) return formPage(c, e === undefined ? 'Create an API' : `Edit ${f.name}`, action, f, errors, '', 400);
  // Through the catalogue: this node's apis_dir, or the control plane's, which validates again (catalogue.ts).
  const w = await c.parts.catalogue.write(e?.id ?? draft.id, r.text, e === undefined, { put: protos });
  if ('status' in w)
    return formPage(
      c,
      e === undefined ? 'Create an API' : `Edit ${f.name}`,
      action,
      f,
      refusalErrors(w),
      '',
      w.status === 409 || w.status === 403 ? w.status : 400,
    );
  c.parts.logger.log('info', 'publisher_api_saved', { file, user: c.session.user?.username, state: st, written: r.written });
  const how =
    r.written === 'edited'
      ? ' Its comments and the keys the form does not show are kept.'
      : r.written === 'rewritten'
        ? ' The file was written afresh: its comments could not be kept (docs/portal.md, "What a save keeps").'
        : '';
  const id = w.id;
  // The services the uploaded files declare, as the validator read them with the API file.
  const p = protos.length > 0 ? await c.parts.catalogue.protos?.(id) : undefined;
  const found = p !== undefined && p.methods.length > 0 ? ` ${protos.map((x) => x.name).join(', ')}: ${servicesText(p.methods)}.` : '';
  c.session.flash = `<p class="notice" role="status">Saved ${h(path.basename(file))} (${st}).${how}${h(found)}</p>`;
  return seeOther(c.res, `/publisher/apis/${encodeURIComponent(id)}`);
}

/** A refused write as form errors: the validator's fields placed beside the form's fields. */
function refusalErrors(w: ApiFileRefusal): FormErrors {
  const errors: FormErrors = {};
  for (const [k, msg] of Object.entries(w.fields)) {
    const at = k === 'name' || k === 'context' ? k : (fieldOf(k) ?? 'general');
    const text = at === 'general' || k === at ? msg : `${k}: ${msg}`;
    errors[at] = errors[at] === undefined ? text : `${errors[at] as string}; ${text}`;
  }
  if (Object.keys(errors).length === 0) errors.general = w.message;
  return errors;
}

async function lifecycle(c: Call, e: CatalogueEntry): Promise<void> {
  const to = c.form.get('state') as ConsoleState;
  // The API state workflow (docs/workflows.md): with an approval or external executor the API keeps its state until approved.
  const w = c.parts.admin?.workflows;
  if (w !== undefined && e.api !== undefined && TRANSITIONS[e.state].includes(to)) {
    const tenant = tenantOfContext(e.api.context);
    const executor = await w.executorOf(tenant, 'AM_API_STATE');
    if (executor !== 'simple') {
      await w.start({
        type: 'AM_API_STATE',
        tenant,
        requester: c.session.user?.username ?? '',
        entity: e.id,
        description: `${e.api.name} ${e.api.version}: ${e.state} → ${to}`,
        attributes: { from: e.state, to },
        executor,
      });
      c.session.flash = `<p class="notice" role="status">${h(e.api.name)} ${h(e.api.version)}: ${e.state} → ${to} pending approval; the API stays ${e.state} until then.</p>`;
      return seeOther(c.res, `/publisher/apis/${encodeURIComponent(e.id)}`);
    }
  }
  const r = await c.parts.catalogue.transition(e.id, to);
  if ('status' in r) return problem(c, 'publisher', r.status, 'Not allowed', `${r.message.charAt(0).toUpperCase()}${r.message.slice(1)}.`);
  // A remote control plane's API state workflow holds the move (remote-catalogue.ts): the API keeps its state.
  if (r.pending !== undefined) {
    c.parts.logger.log('info', 'publisher_lifecycle_pending', {
      file: e.id,
      user: c.session.user?.username,
      from: e.state,
      to,
      task: r.pending.taskId,
    });
    c.session.flash = `<p class="notice" role="status">${h(e.api?.name ?? e.id)} ${h(e.api?.version ?? '')}: ${e.state} → ${to} pending approval; the API stays ${e.state} until then.</p>`;
    return seeOther(c.res, `/publisher/apis/${encodeURIComponent(e.id)}`);
  }
  c.parts.logger.log('info', 'publisher_lifecycle', { file: r.id, user: c.session.user?.username, from: e.state, to });
  // The subscribers of the previous version hear of a newly published one (notify.ts); the mail goes from the outbox.
  const ss = c.parts.selfService;
  const api = to === 'PUBLISHED' && ss !== undefined ? (c.parts.catalogue.get(r.id)?.api ?? e.api) : undefined;
  if (api !== undefined && ss !== undefined) {
    void notifyNewVersion({ selfService: ss, keys: c.parts.keys, catalogue: c.parts.catalogue, logger: c.parts.logger }, api).catch(
      (err: unknown) => c.parts.logger.log('error', 'portal_notify_failed', { api: api.name, message: (err as Error).message }),
    );
  }
  c.session.flash = `<p class="notice" role="status">${h(e.api?.name ?? e.id)} ${h(e.api?.version ?? '')}: ${e.state} → ${to}.</p>`;
  return seeOther(c.res, `/publisher/apis/${encodeURIComponent(r.id)}`);
}

async function subscriptionState(c: Call, e: CatalogueEntry): Promise<void> {
  const wanted = c.form.get('subscription') ?? '';
  const s =
    e.api === undefined ? undefined : (await c.parts.keys.listSubscriptions({ apiContext: e.api.context })).find((x) => x.id === wanted);
  const to = c.form.get('state') as SubscriptionState;
  if (s === undefined || e.api === undefined || s.apiContext !== e.api.context || s.apiVersion !== e.api.version)
    return problem(c, 'publisher', 404, 'No such subscription', 'This API has no such subscription.');
  if (!SUBSCRIPTION_STATES.includes(to))
    return problem(c, 'publisher', 400, 'Not allowed', `state must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
  await c.parts.keys.setSubscriptionState(s.id, to);
  c.session.flash = `<p class="notice" role="status">Subscription ${h(s.id)}: ${s.state} → ${to}.</p>`;
  return seeOther(c.res, `/publisher/apis/${encodeURIComponent(e.id)}`);
}

/**
 * The catalogue the signed-in user publishes in (docs/tenants.md, "The publisher"): a tenant's user sees,
 * creates and moves its tenant's API files only (apis/t/<domain>/, ids `t:<domain>:...`), the super
 * tenant's users the super tenant's (on a remote console node too: the tenant is the session's, never the
 * request's; remote-catalogue.ts); undefined when the tenant is not active.
 */
function catalogueOf(c: Call): ApiCatalogue | undefined {
  const tenants = c.parts.tenants;
  const tenant = tenants === undefined ? SUPER_TENANT : tenants.tenantOf(c.session.user?.username ?? '');
  if (tenant === SUPER_TENANT) return c.parts.catalogue;
  if (tenants?.state(tenant) !== 'active') return undefined;
  return c.parts.catalogue.forTenant(tenant);
}

/** Routes under /publisher (`segs` after it) for a user allowed to publish. */
export async function publisher(call: Call): Promise<void> {
  const catalogue = catalogueOf(call);
  if (catalogue === undefined)
    return problem(
      call,
      'publisher',
      403,
      'Not allowed',
      `The APIs of ${call.parts.tenants?.tenantOf(call.session.user?.username ?? '') ?? 'your tenant'} are not served: the tenant is not active.`,
    );
  // Every page below reads and writes through the user's tenant's catalogue only.
  if (catalogue !== call.parts.catalogue) await catalogue.refresh();
  const c: Call = { ...call, parts: { ...call.parts, catalogue } };
  const [a, id, action] = c.segs;
  if (a === undefined && c.method === 'GET') return listPage(c);
  if (a === 'new' && id === undefined)
    return c.method === 'POST' ? save(c, undefined) : formPage(c, 'Create an API', '/publisher/new', emptyForm());
  if (a === 'apis' && id !== undefined) {
    const e = c.parts.catalogue.get(id);
    if (e === undefined) return problem(c, 'publisher', 404, 'No such API', `No API file ${id}.`);
    if (action === undefined) return c.method === 'POST' ? save(c, e) : editPage(c, e);
    if (c.method === 'POST' && action === 'lifecycle') return lifecycle(c, e);
    if (c.method === 'POST' && action === 'subscriptions') return subscriptionState(c, e);
    if (c.method === 'POST' && action === 'protos') return protoAction(c, e);
    if (c.method === 'GET' && action === 'audit') return auditRoute(c, e);
  }
  return problem(c, 'publisher', 404, 'Not found', 'No such page in the publisher.');
}
