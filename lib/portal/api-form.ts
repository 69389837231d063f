/**
 * The publisher's API form (docs/portal.md, "Publisher"): form fields to an API file and back. The text
 * written is checked by the gateway's validator (lib/gateway/apis.ts parseApiText) before it is saved,
 * and each error is shown beside the field its path names (`endpoints.production` beside the production
 * endpoint). Keys the form does not show (endpoint advanced configuration, CORS, mediation...) are kept
 * from the file being edited.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseDocument, isTable } from '../config/document';
import { toTomlText } from '../config/print';
import { API_CODES, type ApiVars, parseApiText } from '../gateway/apis';
import type { ConsoleState } from './catalogue';

/** The form's fields, as strings. */
export interface ApiForm {
  name: string;
  context: string;
  version: string;
  description: string;
  production: string;
  sandbox: string;
  auth: string;
  /** One resource a line: `GET,POST /path scope1 scope2`. */
  resources: string;
  /** One scope a line: `name: role1, role2`. */
  scopes: string;
  labels: string;
  policy: string;
  /** CORS override's allowed origins, comma-separated; empty: [apim.cors] applies. */
  cors_origins: string;
}

export const FORM_FIELDS: readonly (keyof ApiForm)[] = ['name', 'context', 'version', 'description', 'production', 'sandbox', 'auth', 'resources', 'scopes', 'labels', 'policy', 'cors_origins'];

/** Longest value of one form field. */
const MAX_FIELD = 16 * 1024;

export function emptyForm(): ApiForm {
  return { name: '', context: '', version: '1.0.0', description: '', production: '', sandbox: '', auth: 'oauth2', resources: 'GET /', scopes: '', labels: 'Default', policy: '', cors_origins: '' };
}

export function formFromPost(f: URLSearchParams): ApiForm {
  const out = emptyForm();
  for (const k of FORM_FIELDS) out[k] = (f.get(k) ?? '').slice(0, MAX_FIELD);
  return out;
}

const endpointUrl = (v: unknown): string => (typeof v === 'string' ? v : isTable(v) && typeof v.url === 'string' ? v.url : '');

/** The form of an API file's text (raw values: `${demo_port}` stays as written). */
export function formFromText(text: string): { form: ApiForm; raw: Record<string, unknown> } | undefined {
  const p = parseDocument(text, '', API_CODES);
  if (!p.ok || !isTable(p.doc)) return undefined;
  const raw = p.doc;
  const e = isTable(raw.endpoints) ? raw.endpoints : {};
  const resources = Array.isArray(raw.resources) ? raw.resources.filter(isTable) : [];
  const scopes = Array.isArray(raw.scopes) ? raw.scopes.filter(isTable) : [];
  const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const form: ApiForm = {
    name: String(raw.name ?? ''),
    context: String(raw.context ?? ''),
    version: String(raw.version ?? ''),
    description: String(raw.description ?? ''),
    production: endpointUrl(e.production),
    sandbox: endpointUrl(e.sandbox),
    auth: String(raw.auth ?? 'oauth2'),
    resources: resources.map((r) => `${strs(r.methods).join(',')} ${String(r.path ?? '')}${strs(r.scopes).length > 0 ? ` ${strs(r.scopes).join(' ')}` : ''}`).join('\n'),
    scopes: scopes.map((s) => `${String(s.name ?? '')}: ${strs(s.roles).join(', ')}`).join('\n'),
    labels: strs(raw.labels).join(', ') || 'Default',
    policy: typeof raw.policy === 'string' ? raw.policy : '',
    cors_origins: isTable(raw.cors) ? strs(raw.cors.allow_origins).join(', ') : '',
  };
  return { form, raw };
}

const list = (s: string): string[] => s.split(/[\s,]+/).map((x) => x.trim()).filter((x) => x !== '');

/** Field errors found before the validator: lines of the two text areas it cannot point into. */
function lineErrors(f: ApiForm): Partial<Record<keyof ApiForm, string>> {
  const errors: Partial<Record<keyof ApiForm, string>> = {};
  f.resources.split('\n').forEach((line, i) => {
    if (line.trim() !== '' && !/^\s*[A-Za-z,]+\s+\/\S*(\s+\S+)*\s*$/.test(line)) errors.resources ??= `line ${i + 1}: write METHODS /path [scopes], e.g. GET,POST /menu`;
  });
  f.scopes.split('\n').forEach((line, i) => {
    if (line.trim() !== '' && !/^\s*[^:\s]+\s*:/.test(line)) errors.scopes ??= `line ${i + 1}: write name: role1, role2`;
  });
  return errors;
}

/** The API file object of a form, over the keys of `base` the form does not show. */
export function apiObject(f: ApiForm, base: Record<string, unknown> = {}, state?: ConsoleState): Record<string, unknown> {
  const o: Record<string, unknown> = { ...base };
  o.name = f.name;
  o.context = f.context;
  o.version = f.version;
  if (state !== undefined && state !== 'CREATED') o.state = state;
  else delete o.state;
  if (f.description !== '') o.description = f.description;
  else delete o.description;
  o.auth = f.auth;
  o.labels = list(f.labels).length > 0 ? list(f.labels) : ['Default'];
  if (f.policy !== '') o.policy = f.policy;
  else delete o.policy;
  // The CORS override's other keys (enable, methods, headers, credentials) stay as the file has them.
  const cors: Record<string, unknown> = isTable(base.cors) ? { ...base.cors } : {};
  if (f.cors_origins.trim() !== '') cors.allow_origins = list(f.cors_origins);
  else delete cors.allow_origins;
  if (Object.keys(cors).length > 0) o.cors = cors;
  else delete o.cors;
  const before = isTable(base.endpoints) ? base.endpoints : {};
  const endpoint = (url: string, old: unknown): unknown => (isTable(old) ? { ...old, url } : url);
  const endpoints: Record<string, unknown> = {};
  if (f.production !== '') endpoints.production = endpoint(f.production, before.production);
  if (f.sandbox !== '') endpoints.sandbox = endpoint(f.sandbox, before.sandbox);
  o.endpoints = endpoints;
  const oldResources = Array.isArray(base.resources) ? base.resources.filter(isTable) : [];
  o.resources = f.resources
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const [methods = '', p = '', ...scopes] = l.split(/\s+/);
      const ms = methods.split(',').map((m) => m.trim().toUpperCase()).filter((m) => m !== '');
      // The other keys of a resource with the same path stay (auth, token_type, policy...).
      const old = oldResources.find((r) => r.path === p) ?? {};
      const r: Record<string, unknown> = { ...old, path: p, methods: ms };
      if (scopes.length > 0) r.scopes = scopes;
      else delete r.scopes;
      return r;
    });
  const scopes = f.scopes
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const i = l.indexOf(':');
      return { name: l.slice(0, i).trim(), roles: list(l.slice(i + 1)) };
    });
  if (scopes.length > 0) o.scopes = scopes;
  else delete o.scopes;
  return o;
}

/** Which form field a diagnostic's path (`endpoints.production.url`, `resources[0].path`) belongs to. */
export function fieldOf(diagnosticField: string): keyof ApiForm | undefined {
  if (diagnosticField.startsWith('endpoints.sandbox')) return 'sandbox';
  if (diagnosticField.startsWith('endpoints')) return 'production';
  if (diagnosticField.startsWith('cors')) return 'cors_origins';
  const top = diagnosticField.split(/[.[]/)[0] ?? '';
  if (top === 'default_version' || top === 'unauthenticated_policy') return undefined;
  return (FORM_FIELDS as readonly string[]).includes(top) ? (top as keyof ApiForm) : undefined;
}

export interface Checked {
  readonly text: string;
  /** By form field; `general` for what no field shows. */
  readonly errors: Partial<Record<keyof ApiForm | 'general', string>>;
}

/** The file text of a form, and the validator's errors by field (none: the text may be saved). */
export function checkForm(f: ApiForm, file: string, vars: ApiVars, base: Record<string, unknown> = {}, state?: ConsoleState): Checked {
  const pre = lineErrors(f);
  const text = `# Written by the throughway publisher (docs/portal.md).\n${toTomlText(apiObject(f, base, state))}`;
  const errors: Partial<Record<keyof ApiForm | 'general', string>> = { ...pre };
  const r = parseApiText(text, file, vars);
  for (const d of r.diagnostics) {
    if (d.level !== 'error') continue;
    const k = fieldOf(d.field) ?? 'general';
    const msg = `${d.field !== '' ? `${d.field}: ` : ''}${d.message}${d.expected !== undefined ? ` (expected ${d.expected})` : ''}`;
    errors[k] = errors[k] === undefined ? msg : `${errors[k] as string}; ${msg}`;
  }
  return { text, errors };
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
