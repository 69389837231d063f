/**
 * Routing, the reference's rules: match the context (the version is part of it: /<context>/<version>, spec
 * 002 part 4), then the resource: an exact path first, then the longest `/x/*` prefix, then URI templates
 * (`{var}` bound for later phases; most literal segments first). Within that order the first resource that
 * allows the method wins; a path that matches only resources of other methods is 405; nothing matching in a
 * known API is 900906 (403, spec 002 part 7); an unknown context is 103005 (404).
 *
 * Everything is compiled at deploy time. Per request: one slice for the first path segment, one Map
 * lookup, startsWith checks over the few contexts sharing that segment, one Map lookup for exact resources.
 * Template variables allocate only when a template actually matches.
 */
import type { ApiDefinition, ResourceDefinition } from './apis';
import { defaultPath, grpcServicesOf, versionedPath } from './apis';
import type { CorsPolicy } from './cors';
import type { EndpointRuntime } from './endpoints';

export type ResourceKind = 'exact' | 'prefix' | 'template';

export interface CompiledResource {
  readonly def: ResourceDefinition;
  readonly kind: ResourceKind;
}

interface Group {
  readonly path: string;
  readonly byMethod: Map<string, CompiledResource>;
  /** Methods of the group, HEAD included where GET is: the Allow value and the preflight's methods. */
  readonly methods: string[];
}

interface PrefixGroup extends Group {
  /** The part before `/*`: '/menu' for '/menu/*', '' for '/*'. */
  readonly prefix: string;
}

interface TemplateGroup extends Group {
  /** Literal segment text, or null for a variable. */
  readonly segments: readonly (string | null)[];
  readonly names: readonly (string | undefined)[];
  /** Ends with `/*`: matches any further segments (zero or more). */
  readonly open: boolean;
  readonly literals: number;
}

export interface CompiledApi {
  readonly def: ApiDefinition;
  /** The API's tenant (docs/tenants.md); undefined for the super tenant's, which the route phase never checks. */
  readonly tenant: string | undefined;
  /** "name:version", unique on the gateway. */
  readonly id: string;
  readonly path: string;
  /** The default-version path, when this API has default-version routing. */
  readonly defaultPath: string | undefined;
  readonly cors: CorsPolicy;
  readonly production: EndpointRuntime | undefined;
  readonly sandbox: EndpointRuntime | undefined;
  readonly exact: Map<string, Group>;
  readonly prefixes: readonly PrefixGroup[];
  readonly templates: readonly TemplateGroup[];
  /** The last exact-path match, for matchResource's fast path. */
  readonly lastExact: LastExact;
}

/**
 * One exact-path match remembered per API. Exact paths are tried before prefixes and templates, so a path
 * and method that matched exactly once always match the same resource; a busy resource's path repeats, and
 * comparing it costs fewer instructions than hashing the new string for the Map (285 per request on a
 * deployed node under callgrind, docs/performance.md).
 */
interface LastExact {
  path: string;
  method: string;
  resource: CompiledResource | undefined;
}

export interface CompileDeps {
  readonly cors: CorsPolicy;
  readonly production: EndpointRuntime | undefined;
  readonly sandbox: EndpointRuntime | undefined;
  /** Whether this API gets default-version routing (the deployer refuses a second default per context). */
  readonly withDefault: boolean;
}

function newGroup<T extends Group>(extra: Omit<T, keyof Group>, path: string): T {
  return { path, byMethod: new Map(), methods: [], ...extra } as unknown as T;
}

function addMethods(g: Group, r: CompiledResource): void {
  for (const m of r.def.methods) {
    if (!g.byMethod.has(m)) g.byMethod.set(m, r);
    if (!g.methods.includes(m)) g.methods.push(m);
  }
  // HEAD is answered wherever GET is (RFC 9110 §9.3.2), unless a resource defines HEAD itself.
  if (r.def.methods.includes('GET') && !g.byMethod.has('HEAD')) {
    g.byMethod.set('HEAD', r);
    if (!g.methods.includes('HEAD')) g.methods.push('HEAD');
  }
}

export function compileApi(def: ApiDefinition, deps: CompileDeps): CompiledApi {
  const exact = new Map<string, Group>();
  const prefixes = new Map<string, PrefixGroup>();
  const templates = new Map<string, TemplateGroup>();
  for (const r of def.resources) {
    const p = r.path;
    if (p.includes('{')) {
      const parts = p.split('/').slice(1);
      const open = parts[parts.length - 1] === '*';
      if (open) parts.pop();
      const shape = p.replace(/\{[^/]*\}/g, '{}');
      let g = templates.get(shape);
      if (g === undefined) {
        const segments = parts.map((s) => (s.startsWith('{') ? null : s));
        g = newGroup<TemplateGroup>(
          {
            segments,
            names: parts.map((s) => (s.startsWith('{') ? s.slice(1, -1) : undefined)),
            open,
            literals: segments.filter((s) => s !== null).length,
          },
          p,
        );
        templates.set(shape, g);
      }
      addMethods(g, { def: r, kind: 'template' });
    } else if (p === '/*' || p.endsWith('/*')) {
      const prefix = p.slice(0, -2);
      let g = prefixes.get(prefix);
      if (g === undefined) {
        g = newGroup<PrefixGroup>({ prefix }, p);
        prefixes.set(prefix, g);
      }
      addMethods(g, { def: r, kind: 'prefix' });
    } else {
      let g = exact.get(p);
      if (g === undefined) {
        g = newGroup<Group>({}, p);
        exact.set(p, g);
      }
      addMethods(g, { def: r, kind: 'exact' });
    }
  }
  // Longest prefix first; templates: most literal segments, then closed before open, then longer.
  const prefixList = [...prefixes.values()].sort((a, b) => b.prefix.length - a.prefix.length);
  const templateList = [...templates.values()].sort(
    (a, b) => b.literals - a.literals || Number(a.open) - Number(b.open) || b.segments.length - a.segments.length,
  );
  return {
    def,
    tenant: def.tenant,
    id: `${def.name}:${def.version}`,
    path: versionedPath(def),
    defaultPath: deps.withDefault && def.defaultVersion ? defaultPath(def) : undefined,
    cors: deps.cors,
    production: deps.production,
    sandbox: deps.sandbox,
    exact,
    prefixes: prefixList,
    templates: templateList,
    lastExact: { path: '', method: '', resource: undefined },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Resource matching
// ---------------------------------------------------------------------------------------------------------

export const enum Match {
  OK = 0,
  /** A resource path matched, but none of the matching resources allows the method (405). */
  METHOD = 1,
  /** No resource path matched (900906). */
  NONE = 2,
}

/** Where a match is written: the phase context (no result object per request). */
export interface MatchTarget {
  resource: CompiledResource | undefined;
  params: Record<string, string> | undefined;
}

function prefixMatches(prefix: string, rest: string): boolean {
  if (prefix === '') return true;
  return rest.startsWith(prefix) && (rest.length === prefix.length || rest.charCodeAt(prefix.length) === 47);
}

/** Matches `rest` against a template without splitting it; binds variables only on success. */
function templateMatches(g: TemplateGroup, rest: string, bind: boolean): Record<string, string> | null | undefined {
  const segs = g.segments;
  let pos = 1; // rest starts with '/'
  const ends: number[] | undefined = bind ? [] : undefined;
  for (let i = 0; i < segs.length; i++) {
    if (pos > rest.length) return undefined;
    let end = rest.indexOf('/', pos);
    if (end < 0) end = rest.length;
    const lit = segs[i] as string | null;
    if (lit === null) {
      if (end === pos) return undefined; // a variable binds a non-empty segment
    } else if (end - pos !== lit.length || !rest.startsWith(lit, pos)) {
      return undefined;
    }
    if (ends !== undefined) ends.push(pos, end);
    pos = end + 1;
  }
  // More segments than the template (a single trailing slash is tolerated, as for exact paths).
  if (!g.open && pos < rest.length) return undefined;
  if (ends === undefined) return null;
  let params: Record<string, string> | null = null;
  for (let i = 0; i < segs.length; i++) {
    const name = g.names[i];
    if (name === undefined) continue;
    (params ??= Object.create(null) as Record<string, string>)[name] = rest.slice(ends[2 * i] as number, ends[2 * i + 1] as number);
  }
  return params;
}

/**
 * Finds the resource for `rest` (the path after the context: '' or '/...') and `method`. On OK, writes
 * the resource and the template variables (raw, still percent-encoded) to `out`.
 */
export function matchResource(api: CompiledApi, rest: string, method: string, out: MatchTarget): Match {
  const path = rest === '' ? '/' : rest;
  const last = api.lastExact;
  if (last.resource !== undefined && path === last.path && method === last.method) {
    out.resource = last.resource;
    return Match.OK;
  }
  let sawPath = false;
  let g = api.exact.get(path);
  if (g === undefined && path.length > 1 && path.charCodeAt(path.length - 1) === 47) g = api.exact.get(path.slice(0, -1));
  if (g !== undefined) {
    const r = g.byMethod.get(method);
    if (r !== undefined) {
      last.path = path;
      last.method = method;
      last.resource = r;
      out.resource = r;
      return Match.OK;
    }
    sawPath = true;
  }
  const prefixes = api.prefixes;
  for (let i = 0; i < prefixes.length; i++) {
    const p = prefixes[i] as PrefixGroup;
    if (!prefixMatches(p.prefix, path)) continue;
    const r = p.byMethod.get(method);
    if (r !== undefined) {
      out.resource = r;
      return Match.OK;
    }
    sawPath = true;
  }
  const templates = api.templates;
  for (let i = 0; i < templates.length; i++) {
    const t = templates[i] as TemplateGroup;
    const r = t.byMethod.get(method);
    if (r === undefined) {
      if (!sawPath && templateMatches(t, path, false) !== undefined) sawPath = true;
      continue;
    }
    const params = templateMatches(t, path, true);
    if (params === undefined) continue;
    out.resource = r;
    out.params = params ?? undefined;
    return Match.OK;
  }
  return sawPath ? Match.METHOD : Match.NONE;
}

/** The methods of every resource whose path matches `rest` (the Allow field, preflight methods). */
export function methodsFor(api: CompiledApi, rest: string): string[] {
  const path = rest === '' ? '/' : rest;
  const out: string[] = [];
  const add = (g: Group): void => {
    for (const m of g.methods) if (!out.includes(m)) out.push(m);
  };
  const g = api.exact.get(path) ?? (path.length > 1 && path.endsWith('/') ? api.exact.get(path.slice(0, -1)) : undefined);
  if (g !== undefined) add(g);
  for (const p of api.prefixes) if (prefixMatches(p.prefix, path)) add(p);
  for (const t of api.templates) if (templateMatches(t, path, false) !== undefined) add(t);
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Context matching
// ---------------------------------------------------------------------------------------------------------

export interface ContextEntry {
  readonly path: string;
  readonly api: CompiledApi;
  /** Reached through default-version routing (no version segment in the request). */
  readonly viaDefault: boolean;
}

/**
 * The key of a path's context list: its first segment; for `/t/<domain>/...`, a tenant's (docs/tenants.md),
 * the first two, so a thousand tenants' contexts are not one list. A super tenant context never starts with
 * /t/ (apis.ts refuses it), so its key costs one comparison more.
 */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  if (end === 2 && path.charCodeAt(1) === 116) {
    const second = path.indexOf('/', 3);
    return second < 0 ? path.slice(1) : path.slice(1, second);
  }
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

/** The deployed contexts, by first path segment; each list longest path first. Immutable once built. */
export class RouteTable {
  private readonly byFirst = new Map<string, ContextEntry[]>();
  readonly apis: readonly CompiledApi[];
  /** gRPC APIs by the full name of each of their services ("package.Service", docs/grpc.md). */
  readonly grpcServices: ReadonlyMap<string, CompiledApi>;

  constructor(apis: readonly CompiledApi[]) {
    this.apis = Object.freeze([...apis]);
    const seen = new Set<string>();
    const add = (path: string, api: CompiledApi, viaDefault: boolean): void => {
      // The deployer refuses duplicates; a versioned path wins over another API's default path.
      if (seen.has(path)) return;
      seen.add(path);
      const key = firstSegment(path);
      const list = this.byFirst.get(key) ?? [];
      list.push({ path, api, viaDefault });
      list.sort((a, b) => b.path.length - a.path.length);
      this.byFirst.set(key, list);
    };
    for (const api of apis) add(api.path, api, false);
    const services = new Map<string, CompiledApi>();
    for (const api of apis) for (const sv of grpcServicesOf(api.def)) if (!services.has(sv)) services.set(sv, api);
    this.grpcServices = services;
    for (const api of apis) if (api.defaultPath !== undefined) add(api.defaultPath, api, true);
  }

  /**
   * The last path looked up and what it found (undefined: nothing), taken again for an equal path: the
   * table never changes, and most calls repeat the path before (a client's keep-alive connection sends
   * the same one, which the parser hands over as the same string). Without it, the first segment's slice,
   * its hash and the Map lookup counted 0.9-1.0k instructions more per call of the full gateway under
   * callgrind (docs/performance.md, "Counting instructions").
   */
  private lastPath: string | null = null;
  private lastEntry: ContextEntry | undefined = undefined;

  /** The API whose context is the longest prefix of `path` at a segment boundary. */
  lookup(path: string): ContextEntry | undefined {
    if (path === this.lastPath) return this.lastEntry;
    const e = this.find(path);
    this.lastPath = path;
    this.lastEntry = e;
    return e;
  }

  private find(path: string): ContextEntry | undefined {
    const list = this.byFirst.get(firstSegment(path));
    if (list === undefined) return undefined;
    for (let i = 0; i < list.length; i++) {
      const e = list[i] as ContextEntry;
      const p = e.path;
      if (path.startsWith(p) && (path.length === p.length || path.charCodeAt(p.length) === 47)) return e;
    }
    return undefined;
  }
}
