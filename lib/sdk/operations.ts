/**
 * What the SDK generators read of an OpenAPI 3 document (OpenAPI 3.1 §4.8.8 Paths, §4.8.10 Operation,
 * §4.8.12 Parameter, §4.8.13 Request Body): its operations with their path and query parameters and
 * whether they take a JSON body, and the object schemas of `components.schemas`. Only the operations the
 * gateway serves are kept (the API file's resources: the gateway routes by them, never by the document).
 * Names are made safe for every target language here, once.
 */

export interface SdkParameter {
  /** The name as sent (`orderId`). */
  readonly name: string;
  /** A name usable as an identifier in JavaScript and Java. */
  readonly ident: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required: boolean;
  /** string, integer, number, boolean (anything else: string). */
  readonly type: 'string' | 'integer' | 'number' | 'boolean';
  /** An example value (the parameter's or its schema's example, else 1 or "1"). */
  readonly example: string;
}

export interface SdkOperation {
  /** Identifier: operationId made safe, else the method and path (`getMenuId`). */
  readonly name: string;
  readonly method: string;
  /** The path template, as the document writes it (`/order/{orderId}`). */
  readonly path: string;
  readonly summary: string;
  readonly parameters: readonly SdkParameter[];
  /** The JSON body's example when the operation takes one (`{}` without an example). */
  readonly body: string | undefined;
}

export interface SdkProperty {
  readonly name: string;
  readonly ident: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object';
}

export interface SdkModel {
  readonly name: string;
  readonly properties: readonly SdkProperty[];
}

export interface SdkApi {
  /** A class-like name (`PizzaShackSecured`). */
  readonly name: string;
  readonly version: string;
  readonly title: string;
  readonly operations: readonly SdkOperation[];
  readonly models: readonly SdkModel[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const RESERVED = new Set(
  'abstract arguments await boolean break byte case catch char class const continue debugger default delete do double else enum eval export extends false final finally float for function goto if implements import in instanceof int interface let long native new null package private protected public return short static super switch synchronized this throw throws transient true try typeof var void volatile while with yield assert strictfp'.split(
    ' ',
  ),
);

/** An identifier from any text: letters and digits, camel-cased on other characters, never a keyword or starting with a digit. */
export function identifier(text: string, upperFirst = false): string {
  const words = text.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  let id = words
    .map((w, i) => (i === 0 && !upperFirst ? w.charAt(0).toLowerCase() + w.slice(1) : w.charAt(0).toUpperCase() + w.slice(1)))
    .join('');
  if (id === '') id = upperFirst ? 'Value' : 'value';
  if (/^[0-9]/.test(id)) id = `${upperFirst ? 'N' : 'n'}${id}`;
  if (RESERVED.has(id)) id = `${id}_`;
  return id.slice(0, 100);
}

function deref(doc: Record<string, unknown>, v: unknown): unknown {
  let cur = v;
  for (let i = 0; i < 10 && isObj(cur) && typeof cur.$ref === 'string' && cur.$ref.startsWith('#/'); i++) {
    let at: unknown = doc;
    for (const raw of cur.$ref.slice(2).split('/')) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      at = isObj(at) && Object.hasOwn(at, key) ? at[key] : undefined;
    }
    if (at === undefined) return cur;
    cur = at;
  }
  return cur;
}

const scalar = (t: unknown): SdkParameter['type'] => (t === 'integer' || t === 'number' || t === 'boolean' ? t : 'string');

function parameter(doc: Record<string, unknown>, raw: unknown): SdkParameter | undefined {
  const p = deref(doc, raw);
  if (!isObj(p) || typeof p.name !== 'string' || (p.in !== 'path' && p.in !== 'query' && p.in !== 'header')) return undefined;
  const schema = deref(doc, p.schema);
  const type = scalar(isObj(schema) ? schema.type : undefined);
  const ex = p.example ?? (isObj(schema) ? schema.example : undefined);
  const example =
    ex !== undefined && (typeof ex === 'string' || typeof ex === 'number' || typeof ex === 'boolean')
      ? String(ex)
      : type === 'boolean'
        ? 'true'
        : '1';
  return { name: p.name, ident: identifier(p.name), in: p.in, required: p.in === 'path' || p.required === true, type, example };
}

function bodyExample(doc: Record<string, unknown>, op: Record<string, unknown>): string | undefined {
  const rb = deref(doc, op.requestBody);
  if (!isObj(rb)) return undefined;
  const content = isObj(rb.content) ? rb.content : {};
  const json = Object.entries(content).find(([type]) => /json/i.test(type))?.[1] ?? Object.values(content)[0];
  if (!isObj(json)) return '{}';
  const ex = json.example ?? schemaExample(doc, json.schema);
  return ex === undefined || ex === null ? '{}' : JSON.stringify(ex);
}

/** A plausible string for a string schema's `format` (OpenAPI 3.1 §4.8.24.2.1 and JSON Schema Validation §7.3). */
const FORMAT_EXAMPLES: Readonly<Record<string, string>> = {
  'date-time': '2026-01-01T12:00:00Z',
  date: '2026-01-01',
  time: '12:00:00Z',
  email: 'user@example.com',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
  uri: 'https://example.com/',
  hostname: 'example.com',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
};

/**
 * An example value of a schema: its `example`, first of `examples`, `default` or first `enum` value, else
 * one built from its type (objects by their properties, arrays of one item), at most 5 levels and 50
 * properties deep; undefined for a schema that says nothing.
 */
export function schemaExample(doc: Record<string, unknown>, raw: unknown, depth = 0): unknown {
  const s = deref(doc, raw);
  if (!isObj(s) || depth > 5) return undefined;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const firstOf = [s.oneOf, s.anyOf, s.allOf].find((x): x is unknown[] => Array.isArray(x) && x.length > 0);
  if (firstOf !== undefined && s.type === undefined && s.properties === undefined) return schemaExample(doc, firstOf[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (type === 'object' || isObj(s.properties)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(isObj(s.properties) ? s.properties : {}).slice(0, 50))
      out[k] = schemaExample(doc, v, depth + 1) ?? null;
    return out;
  }
  if (type === 'array') return [schemaExample(doc, s.items, depth + 1) ?? null];
  if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 1;
  if (type === 'boolean') return true;
  if (type === 'string') return typeof s.format === 'string' ? (FORMAT_EXAMPLES[s.format] ?? 'string') : 'string';
  return undefined;
}

/** A path template split into literal text and path parameters, in order (`/order/{orderId}` → '/order/', orderId). */
export function pathParts(op: SdkOperation): ({ readonly text: string } | { readonly param: SdkParameter })[] {
  const out: ({ text: string } | { param: SdkParameter })[] = [];
  let last = 0;
  for (const m of op.path.matchAll(/\{([^}]+)\}/g)) {
    if ((m.index ?? 0) > last) out.push({ text: op.path.slice(last, m.index) });
    const p = op.parameters.find((x) => x.in === 'path' && x.name === m[1]);
    if (p !== undefined) out.push({ param: p });
    last = (m.index ?? 0) + m[0].length;
  }
  if (last < op.path.length) out.push({ text: op.path.slice(last) });
  return out;
}

/** The entries with identifiers made distinct (`orderId`, `orderId2`): two names may make one identifier. */
function distinct<T extends { readonly ident: string }>(list: readonly T[]): T[] {
  const seen = new Set<string>();
  return list.map((x) => {
    let ident = x.ident;
    while (seen.has(ident)) ident = `${ident}2`;
    seen.add(ident);
    return { ...x, ident };
  });
}

/** Whether `path` with `method` is a resource of the API file (`/menu/{id}` matches a resource `/menu/{id}` or `/menu/*`). */
function served(
  resources: readonly { readonly path: string; readonly methods: readonly string[] }[],
  path: string,
  method: string,
): boolean {
  const norm = (p: string): string => p.replace(/\{[^}]*\}/g, '{}');
  return resources.some(
    (r) =>
      r.methods.includes(method.toUpperCase()) &&
      (norm(r.path) === norm(path) || (r.path.endsWith('/*') && path.startsWith(r.path.slice(0, -1))) || r.path === '/*'),
  );
}

/** The SDK's view of a document, restricted to the resources the gateway serves. Bounded: at most 500 operations and 500 models. */
export function sdkApi(
  doc: Record<string, unknown>,
  api: {
    readonly name: string;
    readonly version: string;
    readonly resources: readonly { readonly path: string; readonly methods: readonly string[] }[];
  },
): SdkApi {
  const info = isObj(doc.info) ? doc.info : {};
  const operations: SdkOperation[] = [];
  const names = new Set<string>();
  const paths = isObj(doc.paths) ? doc.paths : {};
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = deref(doc, rawItem);
    if (!isObj(item) || !path.startsWith('/')) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op) || !served(api.resources, path, method) || operations.length >= 500) continue;
      const params = new Map<string, SdkParameter>();
      for (const raw of [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])]) {
        const p = parameter(doc, raw);
        if (p !== undefined) params.set(`${p.in}:${p.name}`, p);
      }
      // A path template's name without a declared parameter is still a parameter.
      for (const m of path.matchAll(/\{([^}]+)\}/g)) {
        const n = m[1] as string;
        if (!params.has(`path:${n}`))
          params.set(`path:${n}`, { name: n, ident: identifier(n), in: 'path', required: true, type: 'string', example: '1' });
      }
      let name = identifier(typeof op.operationId === 'string' ? op.operationId : `${method} ${path.replace(/[{}]/g, '')}`);
      while (names.has(name)) name = `${name}2`;
      names.add(name);
      operations.push({
        name,
        method: method.toUpperCase(),
        path,
        summary: typeof op.summary === 'string' ? op.summary.replace(/[\u0000-\u001f*/]+/g, ' ').slice(0, 200) : '',
        parameters: distinct([...params.values()]),
        body: bodyExample(doc, op),
      });
    }
  }
  const models: SdkModel[] = [];
  const schemas = isObj(doc.components) && isObj(doc.components.schemas) ? doc.components.schemas : {};
  for (const [name, raw] of Object.entries(schemas)) {
    const s = deref(doc, raw);
    if (!isObj(s) || models.length >= 500) continue;
    const props = isObj(s.properties) ? s.properties : {};
    const properties = Object.entries(props).map(([p, v]) => {
      const t = isObj(v) ? (typeof v.$ref === 'string' ? 'object' : v.type) : undefined;
      const type: SdkProperty['type'] = t === 'array' || t === 'object' ? t : scalar(t);
      return { name: p, ident: identifier(p), type };
    });
    let model = identifier(name, true);
    while (names.has(`model:${model}`)) model = `${model}2`;
    names.add(`model:${model}`);
    models.push({ name: model, properties: distinct(properties) });
  }
  return {
    name: identifier(api.name, true),
    version: api.version,
    title: typeof info.title === 'string' ? info.title : api.name,
    operations,
    models,
  };
}
