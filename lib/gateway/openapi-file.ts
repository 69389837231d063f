/**
 * An API file's OpenAPI document (its `definition` key, docs/apis.md): a file beside the API file, inside
 * its directory after links are resolved (a file dropped into apis/ cannot name the host's files), at
 * most MAX_DEFINITION_BYTES, JSON or YAML (OpenAPI 3.1 §4.3: "An OpenAPI Document ... MAY be represented
 * in either JSON or YAML format"), whose `openapi` field is "3.x.y" (OpenAPI 3.1 §4.8.1). The validator
 * checks it when the API deploys; the developer portal reads it again when it shows it (docs/portal.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as Yaml from 'yaml';
import { load } from '../config/packages';

/** The largest OpenAPI document read (a document is configuration, not traffic). */
export const MAX_DEFINITION_BYTES = 2 * 1024 * 1024;

/** A parsed OpenAPI document: a JSON object (YAML documents read as JSON values). */
export type OpenApiDocument = Readonly<Record<string, unknown>>;

export type DefinitionRead =
  | { readonly ok: true; readonly file: string; readonly doc: OpenApiDocument }
  /** `outside`: the path leaves the API file's directory (API_DEFINITION_PATH); else API_DEFINITION. */
  | { readonly ok: false; readonly outside: boolean; readonly error: string };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The document of a text: JSON when it starts with `{`, else YAML; undefined with why when it is not OpenAPI 3. */
export function parseOpenApiText(text: string): { readonly doc: OpenApiDocument } | { readonly error: string } {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let doc: unknown;
  const json = body.trimStart().startsWith('{');
  try {
    // The yaml package's alias limit (maxAliasCount, 100) bounds what a small file expands to.
    // yaml (72 modules) is required on the first YAML document, not at import (lib/config/packages.ts).
    doc = json ? JSON.parse(body) : load<typeof Yaml>('yaml', 'an OpenAPI document in YAML').parse(body, { maxAliasCount: 100 });
  } catch (err) {
    return { error: `it is not ${json ? 'JSON' : 'JSON or YAML'}: ${(err as Error).message.split('\n')[0] ?? ''}` };
  }
  if (!isObject(doc)) return { error: 'it is not an object (an OpenAPI document is a JSON or YAML object)' };
  if (typeof doc.openapi !== 'string' || !/^3\.\d+(\.\d+)?/.test(doc.openapi))
    return { error: `its "openapi" field is ${JSON.stringify(doc.openapi ?? null)}, not "3.x.y"` };
  if (doc.paths !== undefined && !isObject(doc.paths)) return { error: 'its "paths" field is not an object' };
  return { doc };
}

/**
 * Reads the OpenAPI document `name` of the API file `apiFile` (relative to its directory). `inside`: the
 * real path must stay in the real directory of the API file (an API given in code names any path).
 */
export function readDefinition(apiFile: string, name: string, inside = true): DefinitionRead {
  const dir = apiFile === '' ? process.cwd() : path.dirname(apiFile);
  const file = path.resolve(dir, name);
  let real: string;
  try {
    real = fs.realpathSync(file);
  } catch (err) {
    const outside = inside && escapes(dir, file);
    return { ok: false, outside, error: outside ? "it leaves the API file's directory" : `it cannot be read: ${(err as Error).message}` };
  }
  if (inside) {
    let realDir: string;
    try {
      realDir = fs.realpathSync(dir);
    } catch {
      realDir = dir;
    }
    if (escapes(realDir, real)) return { ok: false, outside: true, error: "it leaves the API file's directory (links resolved)" };
  }
  let text: string;
  try {
    const st = fs.statSync(real);
    if (!st.isFile()) return { ok: false, outside: false, error: 'it is not a file' };
    if (st.size > MAX_DEFINITION_BYTES) return { ok: false, outside: false, error: `it is larger than ${MAX_DEFINITION_BYTES} bytes` };
    text = fs.readFileSync(real, 'utf8');
  } catch (err) {
    return { ok: false, outside: false, error: `it cannot be read: ${(err as Error).message}` };
  }
  const parsed = parseOpenApiText(text);
  if ('error' in parsed) return { ok: false, outside: false, error: parsed.error };
  return { ok: true, file: real, doc: parsed.doc };
}

function escapes(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
}
