/**
 * OpenAPI 3 import for the publisher's form (docs/portal.md, "OpenAPI import"): an OpenAPI 3.x document
 * in JSON or YAML (OpenAPI 3.1 §4.3: "An OpenAPI document ... MAY be represented either in JSON or YAML
 * format") gives the API's resources, one line per path and set of scopes, with the methods of its
 * operations and the scopes of their security requirements (the operation's, else the document's); and,
 * where the form is empty, the name, version and description of `info` and the production endpoint of
 * the first server with an absolute http(s) URL. Nothing is written: the form is shown again to be
 * checked and saved. YAML is read by the `yaml` package with the core schema (no custom tags), keys
 * unique, and at most MAX_ALIASES alias expansions, so that a few lines of anchors cannot expand into
 * gigabytes (the "billion laughs" document).
 */
import { parseDocument as parseYaml } from 'yaml';
import type { ApiForm } from './api-form';

export const MAX_OPENAPI = 256 * 1024;
/** Most alias nodes (`*name`) a YAML document may resolve (yaml's maxAliasCount). */
export const MAX_ALIASES = 100;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function scopesOf(security: unknown): string[] | undefined {
  if (!Array.isArray(security)) return undefined;
  const out = new Set<string>();
  for (const req of security)
    if (isObj(req))
      for (const v of Object.values(req)) if (Array.isArray(v)) for (const s of v) if (typeof s === 'string' && /^\S+$/.test(s)) out.add(s);
  return [...out];
}

/** The document's value: JSON when it starts with `{`, YAML otherwise (YAML 1.2 reads JSON too, with worse messages). */
function readDocument(text: string): { doc: unknown } | { error: string } {
  if (text.trimStart().startsWith('{')) {
    try {
      return { doc: JSON.parse(text) };
    } catch (err) {
      return { error: `not JSON (${(err as Error).message})` };
    }
  }
  const d = parseYaml(text, { schema: 'core', uniqueKeys: true, prettyErrors: true });
  const first = d.errors[0];
  if (first !== undefined) return { error: `not YAML (${first.message.split('\n')[0] ?? ''})` };
  try {
    return { doc: d.toJS({ maxAliasCount: MAX_ALIASES }) };
  } catch (err) {
    return { error: `not usable YAML (${(err as Error).message}; at most ${MAX_ALIASES} aliases)` };
  }
}

/** The form with the document's resources (and info, servers where empty), or why the document is refused. */
export function importOpenApi(text: string, form: ApiForm): { form: ApiForm; resources: number } | { error: string } {
  if (text.length > MAX_OPENAPI) return { error: `the document is larger than ${MAX_OPENAPI / 1024} KiB` };
  const read = readDocument(text);
  if ('error' in read) return read;
  const doc = read.doc;
  if (!isObj(doc) || typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.'))
    return { error: 'not an OpenAPI 3 document: the "openapi" field must be "3.x.y"' };
  if (!isObj(doc.paths) || Object.keys(doc.paths).length === 0) return { error: 'the document has no paths' };
  const global = scopesOf(doc.security) ?? [];
  const lines: string[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    if (!p.startsWith('/') || /\s/.test(p) || !isObj(item)) continue;
    const byScopes = new Map<string, string[]>();
    for (const m of METHODS) {
      const op = item[m];
      if (!isObj(op)) continue;
      const key = (scopesOf(op.security) ?? global).join(' ');
      byScopes.set(key, [...(byScopes.get(key) ?? []), m.toUpperCase()]);
    }
    for (const [scopes, methods] of byScopes) lines.push(`${methods.join(',')} ${p}${scopes !== '' ? ` ${scopes}` : ''}`);
  }
  if (lines.length === 0) return { error: 'no operation under paths' };
  const info = isObj(doc.info) ? doc.info : {};
  const server = Array.isArray(doc.servers)
    ? doc.servers.find((s): s is { url: string } => isObj(s) && typeof s.url === 'string' && /^https?:\/\//.test(s.url))
    : undefined;
  const out: ApiForm = { ...form, resources: lines.join('\n') };
  if (out.name === '' && typeof info.title === 'string') out.name = info.title.slice(0, 200);
  if ((out.version === '' || out.version === '1.0.0') && typeof info.version === 'string' && /^[^/\s?#{}%]+$/.test(info.version))
    out.version = info.version;
  if (out.description === '' && typeof info.description === 'string') out.description = info.description.slice(0, 1000);
  if (out.production === '' && server !== undefined) out.production = server.url;
  return { form: out, resources: lines.length };
}
