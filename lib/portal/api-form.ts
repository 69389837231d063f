/**
 * The publisher's API form (docs/portal.md, "Publisher"): form fields to an API file and back. The text
 * written is checked by the gateway's validator (lib/gateway/apis.ts parseApiText) before it is saved,
 * and each error is shown beside the field its path names (`endpoints.production.timeout` beside the
 * production endpoint's timeout). Editing a file changes its text in place (toml-edit.ts): comments and
 * the keys the form does not show (backend security, mediation, GraphQL...) stay as the file has them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseDocument, isTable } from '../config/document';
import { toTomlText } from '../config/print';
import { API_CODES, type ApiVars, parseApiText } from '../gateway/apis';
import { originOf } from '../security/backend-credentials';
import type { PolicyNames } from '../throttle/policies';
import type { ConsoleState } from './catalogue';
import { editToml, type Identity, pairEntries } from './toml-edit';

export const ENDPOINT_KINDS = ['production', 'sandbox'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

/**
 * The endpoint advanced configuration the form edits: every key of an endpoint table (docs/apis.md,
 * "[endpoints]") except `url` (its own field) and `security` (credentials: kept from the file), with
 * how its text is read: a duration (ms, or "30s"), a number, or a list of transport codes.
 */
export const ENDPOINT_KEYS = {
  timeout: { kind: 'duration', label: 'response timeout', hint: 'ms, or "5s"; empty: only the socket inactivity timeout applies' },
  retry_codes: {
    kind: 'codes',
    label: 'retry on transport codes',
    hint: 'comma-separated, e.g. 101503; a call is retried only while resending loses nothing',
  },
  retry_count: { kind: 'number', label: 'retries at most', hint: 'default 1' },
  suspend_codes: {
    kind: 'codes',
    label: 'suspend on transport codes',
    hint: 'comma-separated, e.g. 101503, 101504; empty: never suspended',
  },
  suspend_duration: { kind: 'duration', label: 'first suspension', hint: 'ms, or "30s"; default 30s' },
  suspend_max_duration: { kind: 'duration', label: 'longest suspension', hint: 'ms, or "5m"; default 300s' },
  suspend_factor: { kind: 'number', label: 'suspension factor', hint: 'each further suspension lasts this many times longer; default 2' },
  max_tps: { kind: 'number', label: 'hard limit, requests per second', hint: 'over every caller, 900801 beyond it; empty: none' },
} as const;
export type EndpointKey = keyof typeof ENDPOINT_KEYS;
type EndpointField = `${EndpointKind}_${EndpointKey}`;

/** The CORS override's keys (docs/apis.md, "[cors]"): form field, file key, and whether it is a yes/no. */
export const CORS_KEYS = [
  ['cors_enable', 'enable', 'boolean', 'CORS handling'],
  ['cors_origins', 'allow_origins', 'list', 'CORS allowed origins (optional)'],
  ['cors_methods', 'allow_methods', 'list', 'CORS allowed methods (optional)'],
  ['cors_headers', 'allow_headers', 'list', 'CORS allowed headers (optional)'],
  ['cors_credentials', 'allow_credentials', 'boolean', 'CORS allow credentials'],
] as const;
type CorsField = (typeof CORS_KEYS)[number][0];

/** The keys of a resource written `key=value` after its scopes on a resource line (docs/portal.md). */
export const RESOURCE_OPTIONS = ['policy', 'auth', 'token_type', 'unauthenticated_policy'] as const;

/** The form's fields, as strings. */
export type ApiForm = {
  name: string;
  context: string;
  version: string;
  description: string;
  production: string;
  sandbox: string;
  auth: string;
  /** One resource a line: `GET,POST /path scope1 scope2 policy=Gold`. */
  resources: string;
  /** One scope a line: `name: role1, role2`. */
  scopes: string;
  labels: string;
  policy: string;
  unauthenticated_policy: string;
  /** The API's `type`: "" (HTTP), "GRPC", or the file's other value, kept as it is. */
  type: string;
  /** The backend password (basic, digest) or client secret (oauth), re-entered: never shown, never kept in the form. */
  production_secret: string;
  sandbox_secret: string;
} & Record<EndpointField, string> &
  Record<CorsField, string>;

const endpointFields = (kind: EndpointKind): EndpointField[] =>
  (Object.keys(ENDPOINT_KEYS) as EndpointKey[]).map((k) => `${kind}_${k}` as const);

export const FORM_FIELDS: readonly (keyof ApiForm)[] = [
  'name',
  'context',
  'version',
  'description',
  'production',
  'production_secret',
  ...endpointFields('production'),
  'sandbox',
  'sandbox_secret',
  ...endpointFields('sandbox'),
  'auth',
  'resources',
  'scopes',
  'labels',
  'policy',
  'unauthenticated_policy',
  'type',
  ...CORS_KEYS.map(([f]) => f),
];

/** Longest value of one form field. */
const MAX_FIELD = 16 * 1024;

export function emptyForm(): ApiForm {
  const out = Object.fromEntries(FORM_FIELDS.map((k) => [k, ''])) as ApiForm;
  return Object.assign(out, { version: '1.0.0', auth: 'oauth2', resources: 'GET /', labels: 'Default' });
}

export function formFromPost(f: URLSearchParams): ApiForm {
  const out = emptyForm();
  for (const k of FORM_FIELDS) out[k] = (f.get(k) ?? '').slice(0, MAX_FIELD);
  return out;
}

const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
/** A value of the file as the form shows it: lists comma-separated, numbers and booleans as written. */
const shown = (v: unknown): string =>
  Array.isArray(v) ? v.map((x) => String(x)).join(', ') : v === undefined || isTable(v) ? '' : String(v);

/** One resource line of a resource table: `METHODS /path scopes options`. */
function resourceLine(r: Record<string, unknown>): string {
  const opts = RESOURCE_OPTIONS.filter((k) => typeof r[k] === 'string').map((k) => `${k}=${r[k] as string}`);
  return [strs(r.methods).join(','), String(r.path ?? ''), ...strs(r.scopes), ...opts].join(' ');
}

/** The form of an API file's text (raw values: `${demo_port}` stays as written). */
export function formFromText(text: string): { form: ApiForm; raw: Record<string, unknown> } | undefined {
  const p = parseDocument(text, '', API_CODES);
  if (!p.ok || !isTable(p.doc)) return undefined;
  const raw = p.doc;
  const e = isTable(raw.endpoints) ? raw.endpoints : {};
  const resources = Array.isArray(raw.resources) ? raw.resources.filter(isTable) : [];
  const scopes = Array.isArray(raw.scopes) ? raw.scopes.filter(isTable) : [];
  const cors = isTable(raw.cors) ? raw.cors : {};
  const form = emptyForm();
  Object.assign(form, {
    name: String(raw.name ?? ''),
    context: String(raw.context ?? ''),
    version: String(raw.version ?? ''),
    description: String(raw.description ?? ''),
    auth: String(raw.auth ?? 'oauth2'),
    resources: resources.map(resourceLine).join('\n'),
    scopes: scopes.map((s) => `${String(s.name ?? '')}: ${strs(s.roles).join(', ')}`).join('\n'),
    labels: strs(raw.labels).join(', ') || 'Default',
    type: typeof raw.type === 'string' ? raw.type : '',
    policy: typeof raw.policy === 'string' ? raw.policy : '',
    unauthenticated_policy: typeof raw.unauthenticated_policy === 'string' ? raw.unauthenticated_policy : '',
  });
  for (const kind of ENDPOINT_KINDS) {
    const ep = e[kind];
    form[kind] = typeof ep === 'string' ? ep : isTable(ep) && typeof ep.url === 'string' ? ep.url : '';
    if (isTable(ep)) for (const k of Object.keys(ENDPOINT_KEYS) as EndpointKey[]) form[`${kind}_${k}`] = shown(ep[k]);
  }
  for (const [f, k] of CORS_KEYS) form[f] = shown(cors[k]);
  return { form, raw };
}

const list = (s: string): string[] =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter((x) => x !== '');
const lines = (s: string): { text: string; line: number }[] =>
  s
    .split('\n')
    .map((l, i) => ({ text: l.trim(), line: i + 1 }))
    .filter((l) => l.text !== '');

/**
 * A field's text as the file's value: empty is "not set"; digits are a number; anything else stays a
 * string, so that the validator names what is wrong with it beside the field ("30s" is a duration).
 */
function valueOf(text: string, kind: 'duration' | 'number' | 'codes'): unknown {
  const t = text.trim();
  if (t === '') return undefined;
  const num = (x: string): unknown => (/^-?\d+(\.\d+)?$/.test(x) ? Number(x) : x);
  return kind === 'codes' ? list(t).map(num) : num(t);
}

/** A yes/no select's value: empty is "not set"; anything but true and false stays a string for the validator. */
const boolOf = (text: string): unknown => (text === '' ? undefined : text === 'true' ? true : text === 'false' ? false : text);

/** A resource line's parts: methods, path, scopes and `key=value` options. */
function parseResourceLine(l: string): { methods: string[]; path: string; scopes: string[]; options: Map<string, string> } {
  const [methods = '', p = '', ...rest] = l.split(/\s+/);
  const options = new Map<string, string>();
  const scopes: string[] = [];
  for (const tok of rest) {
    const eq = tok.indexOf('=');
    if (eq > 0) options.set(tok.slice(0, eq), tok.slice(eq + 1));
    else scopes.push(tok);
  }
  return {
    methods: methods
      .split(',')
      .map((m) => m.trim().toUpperCase())
      .filter((m) => m !== ''),
    path: p,
    scopes,
    options,
  };
}

type FieldErrors = Partial<Record<keyof ApiForm, string>>;

/** Field errors found before the validator: lines of the text areas it cannot point into, advanced settings without a URL. */
function lineErrors(f: ApiForm): FieldErrors {
  const errors: FieldErrors = {};
  for (const { text, line } of lines(f.resources)) {
    if (!/^[A-Za-z,]+\s+\/\S*(\s+\S+)*$/.test(text))
      errors.resources ??= `line ${line}: write METHODS /path [scopes] [policy=name], e.g. GET,POST /menu`;
    else {
      const bad = [...parseResourceLine(text).options.keys()].find((k) => !(RESOURCE_OPTIONS as readonly string[]).includes(k));
      if (bad !== undefined)
        errors.resources ??= `line ${line}: ${bad}= is not a resource option (${RESOURCE_OPTIONS.map((k) => `${k}=`).join(', ')})`;
    }
  }
  for (const { text, line } of lines(f.scopes)) if (!/^[^:\s]+\s*:/.test(text)) errors.scopes ??= `line ${line}: write name: role1, role2`;
  for (const kind of ENDPOINT_KINDS) {
    if (f[kind].trim() === '' && endpointFields(kind).some((k) => f[k].trim() !== ''))
      errors[kind] = `the ${kind} endpoint's advanced configuration needs its URL`;
  }
  return errors;
}

/** How entries of the file's arrays of tables are matched when a form edits them: resources by path, scopes by name. */
export const API_IDENTITY: Identity = (p, e) => {
  const key = p.length === 1 ? p[0] : undefined;
  if (key === 'resources' && typeof e.path === 'string') return e.path;
  if (key === 'scopes' && typeof e.name === 'string') return e.name;
  if (key === 'operations') return `${String(e.type)} ${String(e.name)}`;
  return undefined;
};

/** The API file object of a form, over the keys of `base` the form does not show. */
export function apiObject(f: ApiForm, base: Record<string, unknown> = {}, state?: ConsoleState): Record<string, unknown> {
  const o: Record<string, unknown> = { ...base };
  const set = (t: Record<string, unknown>, k: string, v: unknown): void => {
    if (v === undefined || v === '') delete t[k];
    else t[k] = v;
  };
  o.name = f.name;
  o.context = f.context;
  o.version = f.version;
  set(o, 'state', state !== undefined && state !== 'CREATED' ? state : undefined);
  set(o, 'description', f.description);
  o.auth = f.auth;
  o.labels = list(f.labels).length > 0 ? list(f.labels) : ['Default'];
  set(o, 'policy', f.policy.trim());
  set(o, 'unauthenticated_policy', f.unauthenticated_policy.trim());
  set(o, 'type', f.type.trim());

  const cors: Record<string, unknown> = isTable(base.cors) ? { ...base.cors } : {};
  for (const [field, key, kind] of CORS_KEYS)
    set(cors, key, kind === 'boolean' ? boolOf(f[field]) : list(f[field]).length > 0 ? list(f[field]) : undefined);
  set(o, 'cors', Object.keys(cors).length > 0 ? cors : undefined);

  const before = isTable(base.endpoints) ? base.endpoints : {};
  const endpoints: Record<string, unknown> = isTable(base.endpoints) ? { ...base.endpoints } : {};
  for (const kind of ENDPOINT_KINDS) {
    const url = f[kind].trim();
    const old = before[kind];
    if (url === '') {
      delete endpoints[kind];
      continue;
    }
    const t: Record<string, unknown> = isTable(old) ? { ...old } : {};
    t.url = url;
    for (const [k, d] of Object.entries(ENDPOINT_KEYS)) set(t, k, valueOf(f[`${kind}_${k as EndpointKey}`], d.kind));
    // A URL alone stays a string, as the file wrote it; advanced settings make it a table.
    endpoints[kind] = !isTable(old) && Object.keys(t).length === 1 ? url : t;
  }
  o.endpoints = endpoints;

  const oldResources = Array.isArray(base.resources) ? base.resources.filter(isTable) : [];
  const parsed = lines(f.resources).map((l) => parseResourceLine(l.text));
  const pairs = pairEntries<{ path?: unknown }>(oldResources, parsed, (r) => (typeof r.path === 'string' ? r.path : undefined));
  o.resources = parsed.map((p, j) => {
    // The other keys of the resource it replaces stay (a key the form does not show).
    const i = pairs[j];
    const r: Record<string, unknown> = { ...(i !== undefined ? oldResources[i] : {}), path: p.path, methods: p.methods };
    set(r, 'scopes', p.scopes.length > 0 ? p.scopes : undefined);
    for (const k of RESOURCE_OPTIONS) set(r, k, p.options.get(k));
    return r;
  });

  const oldScopes = Array.isArray(base.scopes) ? base.scopes.filter(isTable) : [];
  const scopes = lines(f.scopes).map(({ text }) => {
    const i = text.indexOf(':');
    return { name: text.slice(0, i).trim(), roles: list(text.slice(i + 1)) };
  });
  const scopePairs = pairEntries<{ name?: unknown }>(oldScopes, scopes, (s) => (typeof s.name === 'string' ? s.name : undefined));
  // A scope's description (not on the form) stays with its name.
  set(
    o,
    'scopes',
    scopes.length > 0
      ? scopes.map((s, j) => ({ ...(scopePairs[j] !== undefined ? oldScopes[scopePairs[j] as number] : {}), ...s }))
      : undefined,
  );
  return o;
}

const TOKEN = /\$\{([A-Za-z0-9_.]+)\}/g;

/** The origin of an endpoint URL as a file writes it (runtime tokens replaced from `vars`). */
function fileOrigin(url: unknown, vars: ApiVars): string | undefined {
  return typeof url === 'string' ? originOf(url.replace(TOKEN, (m, n: string) => vars[n] ?? m)) : undefined;
}

const endpointUrl = (ep: unknown): unknown => (typeof ep === 'string' ? ep : isTable(ep) ? ep.url : undefined);

/** The fields of a security table that say whose credentials they are: the same values are the same credentials. */
const CREDENTIAL_KEYS = ['type', 'username', 'password', 'client_id', 'client_secret', 'token_url', 'grant_type'] as const;

/** A credentials move: endpoint `name`'s credentials, bound to `bound`, would go to `now`. */
export interface MovedCredentials {
  readonly name: string;
  readonly type: string;
  readonly bound: string;
  readonly now: string;
}

/**
 * The endpoints of `next` whose stored credentials would follow a URL to another origin than the one
 * `before` bound them to (its security.origin, or its URL's): the same credentials (CREDENTIAL_KEYS
 * unchanged) with no `origin` of their own. New or changed credentials are bound to the new URL; an
 * explicit `origin` is checked against the URL by the validator (API_CREDENTIALS_ORIGIN). Used by the
 * publisher's form and by every write of an API file through the consoles and the admin API (catalogue.ts).
 */
export function movedCredentials(before: Record<string, unknown>, next: Record<string, unknown>, vars: ApiVars): MovedCredentials[] {
  const out: MovedCredentials[] = [];
  const was = isTable(before.endpoints) ? before.endpoints : {};
  const now = isTable(next.endpoints) ? next.endpoints : {};
  for (const [name, ep] of Object.entries(now)) {
    const old = was[name];
    if (!isTable(ep) || !isTable(ep.security) || !isTable(old) || !isTable(old.security)) continue;
    const sec = ep.security;
    const oldSec = old.security;
    if (typeof sec.origin === 'string') continue;
    if (CREDENTIAL_KEYS.some((k) => sec[k] !== oldSec[k])) continue;
    const target = fileOrigin(ep.url, vars);
    const bound = typeof oldSec.origin === 'string' ? originOf(oldSec.origin) : fileOrigin(endpointUrl(old), vars);
    if (target !== undefined && bound !== undefined && target !== bound) out.push({ name, type: String(sec.type), bound, now: target });
  }
  return out;
}

/**
 * A secret re-entered on the form (`<kind>_secret`): it replaces the endpoint's password (basic, digest)
 * or client secret (oauth) in `next`, and binds the credentials to the URL's origin (security.origin).
 * Field errors for a secret given to an endpoint whose file holds no credentials.
 */
function reenterSecrets(f: ApiForm, base: Record<string, unknown>, next: Record<string, unknown>, vars: ApiVars): FieldErrors {
  const errors: FieldErrors = {};
  const endpoints = isTable(next.endpoints) ? next.endpoints : {};
  for (const kind of ENDPOINT_KINDS) {
    const secret = f[`${kind}_secret`];
    if (secret === '') continue;
    const ep = endpoints[kind];
    const old = isTable(base.endpoints) ? base.endpoints[kind] : undefined;
    if (!isTable(ep) || !isTable(ep.security) || !isTable(old) || !isTable(old.security)) {
      errors[`${kind}_secret`] =
        `the ${kind} endpoint has no backend credentials to re-enter: add an [endpoints.${kind}.security] table to the API file (docs/apis.md, "Backend security")`;
      continue;
    }
    const sec: Record<string, unknown> = { ...ep.security, [ep.security.type === 'oauth' ? 'client_secret' : 'password']: secret };
    const origin = fileOrigin(ep.url, vars);
    if (origin !== undefined) sec.origin = origin;
    ep.security = sec;
  }
  return errors;
}

/** Which form field a diagnostic's path (`endpoints.production.timeout`, `resources[0].path`) belongs to. */
export function fieldOf(diagnosticField: string): keyof ApiForm | undefined {
  const ep = /^endpoints\.(production|sandbox)(?:\.([a-z_]+))?/.exec(diagnosticField);
  if (ep !== null) {
    const kind = ep[1] as EndpointKind;
    return ep[2] !== undefined && ep[2] in ENDPOINT_KEYS ? `${kind}_${ep[2] as EndpointKey}` : kind;
  }
  if (diagnosticField.startsWith('endpoints')) return 'production';
  const cors = /^cors\.([a-z_]+)/.exec(diagnosticField);
  if (cors !== null) return CORS_KEYS.find(([, k]) => k === cors[1])?.[0] ?? 'cors_origins';
  if (diagnosticField === 'cors') return 'cors_origins';
  const top = diagnosticField.split(/[.[]/)[0] ?? '';
  if (top === 'default_version') return undefined;
  return (FORM_FIELDS as readonly string[]).includes(top) ? (top as keyof ApiForm) : undefined;
}

/** Names of the file's keys as the form's labels say them (docs/apis.md keys). */
const KEY_WORDS: Readonly<Record<string, string>> = {
  name: 'name',
  context: 'context',
  version: 'version',
  description: 'description',
  auth: 'authentication',
  labels: 'gateway labels',
  policy: 'throttling policy',
  unauthenticated_policy: 'unauthenticated tier',
  default_version: 'default version',
  token_type: 'token type',
  methods: 'methods',
  path: 'path',
  scopes: 'scopes',
  roles: 'roles',
  type: 'type',
  state: 'state',
  definition: 'OpenAPI document',
  mutual_ssl: 'mutual TLS',
  security: 'backend credentials',
  username: 'user name',
  password: 'password',
  client_id: 'client id',
  client_secret: 'client secret',
  token_url: 'token URL',
  grant_type: 'grant type',
  origin: 'origin',
  url: 'URL',
};

/** One key of a path in words (`retry_codes[1]` → `retry on transport codes, item 2`). */
function keyWords(key: string): string {
  return key
    .split('.')
    .map((part) => {
      const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
      const name = m?.[1] ?? part;
      const items = [...(m?.[2] ?? '').matchAll(/\[(\d+)\]/g)].map((x) => `, item ${Number(x[1]) + 1}`).join('');
      const endpointKey = (ENDPOINT_KEYS as Record<string, { label: string }>)[name];
      return `${KEY_WORDS[name] ?? endpointKey?.label ?? name.replace(/_/g, ' ')}${items}`;
    })
    .join(', ');
}

/**
 * A validator's field path as the publisher's form names the field: `endpoints.production.timeout` →
 * `Production response timeout`, `cors.allow_origins` → `CORS allowed origins`, `policy` → `Throttling
 * policy`; the messages beside the fields never show the file's internal paths.
 */
export function fieldWords(path: string): string {
  const up = (t: string): string => t.charAt(0).toUpperCase() + t.slice(1);
  const ep = /^endpoints\.(production|sandbox)(?:\.(.+))?$/.exec(path);
  if (ep !== null)
    return `${up(ep[1] as string)} endpoint${ep[2] === undefined || ep[2] === 'url' ? ' URL' : ep[2].startsWith('security') ? `'s ${keyWords(ep[2])}` : ` ${keyWords(ep[2])}`}`;
  if (path === 'endpoints') return 'Endpoints';
  const cors = /^cors\.([a-z_]+)(.*)$/.exec(path);
  if (cors !== null) {
    const label = CORS_KEYS.find(([, k]) => k === cors[1])?.[3].replace(/ \(optional\)$/, '');
    const rest = cors[2] ?? '';
    if (label !== undefined) return `${label}${rest !== '' ? `, ${keyWords(rest.replace(/^\./, ''))}` : ''}`;
  }
  return up(keyWords(path));
}

/** How a save wrote the file: a new file, the file's text edited in place, or written afresh (comments lost). */
export type Written = 'new' | 'edited' | 'rewritten';

export interface Checked {
  readonly text: string;
  readonly written: Written;
  /** By form field; `general` for what no field shows, `proto` for a gRPC API's .proto files. */
  readonly errors: Partial<Record<keyof ApiForm | 'general' | 'proto', string>>;
}

/** What checkForm is given of the file being edited: its text and what it reads as. */
export interface Original {
  readonly text: string;
  readonly raw: Record<string, unknown>;
}

/**
 * The file text of a form, and the validator's errors by field (none: the text may be saved). With the
 * file being edited, its text is changed in place; `policies`: the [[api]] and [[subscription]] names
 * the policy fields are checked against.
 */
export function checkForm(
  f: ApiForm,
  file: string,
  vars: ApiVars,
  original?: Original,
  state?: ConsoleState,
  policies?: PolicyNames,
  protos: readonly { readonly name: string; readonly text: string }[] = [],
): Checked {
  const next = apiObject(f, original?.raw ?? {}, state);
  // A new gRPC API's .proto files (docs/grpc.md, "The .proto files in the publisher"): named in [grpc] proto.
  if (protos.length > 0) {
    const g = isTable(next.grpc) ? next.grpc : {};
    const listed = Array.isArray(g.proto) ? g.proto.filter((x): x is string => typeof x === 'string') : [];
    next.grpc = { ...g, proto: [...listed, ...protos.map((p) => p.name).filter((n) => !listed.includes(n))] };
  }
  const pre: FieldErrors = { ...lineErrors(f), ...reenterSecrets(f, original?.raw ?? {}, next, vars) };
  for (const m of movedCredentials(original?.raw ?? {}, next, vars)) {
    const kind = m.name as EndpointKind;
    if ((ENDPOINT_KINDS as readonly string[]).includes(kind))
      pre[kind] ??=
        `The ${kind} endpoint's backend credentials (${m.type}) are bound to ${m.bound}, and the new URL is at ${m.now}: they are never sent to another host. Enter the backend ${m.type === 'oauth' ? 'client secret' : 'password'} again in "${kind} backend secret" to use them at ${m.now}, or remove the credentials from the API file.`;
  }
  const edited = original !== undefined ? editToml(original.text, original.raw, next, API_IDENTITY) : undefined;
  const text = edited ?? `# Written by the throughway publisher (docs/portal.md).\n${toTomlText(next)}`;
  const written: Written = original === undefined ? 'new' : edited !== undefined ? 'edited' : 'rewritten';
  const errors: Partial<Record<keyof ApiForm | 'general' | 'proto', string>> = { ...pre };
  const served = protos.length === 0 ? undefined : { protos: protos.map((p) => ({ file: p.name, text: p.text })), disk: true };
  const r = parseApiText(text, file, vars, policies, undefined, served);
  // Entry n of resources and scopes is the n-th non-empty line of its text area.
  const lineOf = { resources: lines(f.resources).map((l) => l.line), scopes: lines(f.scopes).map((l) => l.line) };
  for (const d of r.diagnostics) {
    if (d.level !== 'error') continue;
    const k = d.field === 'grpc' || d.field.startsWith('grpc.') ? 'proto' : (fieldOf(d.field) ?? 'general');
    const entry = /^(resources|scopes)\[(\d+)\]\.?(.*)$/.exec(d.field);
    const where =
      entry !== null
        ? `line ${lineOf[entry[1] as 'resources' | 'scopes'][Number(entry[2])] ?? Number(entry[2]) + 1}${(entry[3] ?? '') !== '' ? `, ${keyWords(entry[3] ?? '')}` : ''}: `
        : d.field !== ''
          ? `${fieldWords(d.field)}: `
          : '';
    // A .proto file is named as the form named it, not by this node's path.
    const message = file === '' ? d.message : d.message.split(`${path.dirname(file)}${path.sep}`).join('');
    const msg = `${where}${message}${d.expected !== undefined ? ` (expected ${d.expected})` : ''}`;
    errors[k] = errors[k] === undefined ? msg : `${errors[k] as string}; ${msg}`;
  }
  return { text, written, errors };
}

/**
 * The reference's lifecycle transitions (its default lifecycle): CREATED and PROTOTYPED publish;
 * PUBLISHED blocks or deprecates; BLOCKED re-publishes or deprecates; DEPRECATED retires; RETIRED is final.
 */
export const TRANSITIONS: Readonly<Record<ConsoleState, readonly ConsoleState[]>> = {
  CREATED: ['PUBLISHED', 'PROTOTYPED'],
  PROTOTYPED: ['PUBLISHED', 'CREATED'],
  PUBLISHED: ['BLOCKED', 'DEPRECATED', 'PROTOTYPED'],
  BLOCKED: ['PUBLISHED', 'DEPRECATED'],
  DEPRECATED: ['RETIRED', 'PUBLISHED'],
  RETIRED: [],
};

/**
 * The file text with its top-level `state` set (or removed, for CREATED), comments and layout kept: the
 * line is replaced where it is, or added before the first table.
 */
export function withState(text: string, state: ConsoleState): string {
  const lines = text.split('\n');
  const firstTable = lines.findIndex((l) => /^\s*\[/.test(l));
  const end = firstTable < 0 ? lines.length : firstTable;
  const at = lines.slice(0, end).findIndex((l) => /^\s*state\s*=/.test(l));
  const line = `state = "${state}"`;
  if (state === 'CREATED') {
    if (at >= 0) lines.splice(at, 1);
  } else if (at >= 0) lines[at] = line;
  else {
    // After the last top-level key, before the blank lines and comments that lead into the first table.
    let i = end;
    while (i > 0 && /^\s*(#.*)?$/.test(lines[i - 1] as string)) i--;
    lines.splice(i, 0, line);
  }
  return lines.join('\n');
}

/** Writes a file through a hidden temporary name and a rename: the gateway's watch never reads half a file. */
export function writeAtomic(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, text, { mode: 0o644 });
  fs.renameSync(tmp, file);
}
