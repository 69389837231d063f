/**
 * GraphQL APIs (docs/graphql.md): a schema in SDL, and what one query asks of it. Plain inputs and
 * outputs: the gateway's route phase turns a request into a GraphqlRequest (request.ts), asks analyse()
 * about it, and maps the answer to its faults.
 *
 * Parsing and validation are the reference implementation of GraphQL for JavaScript (`graphql` 16,
 * loaded on first use through config/packages.ts, so `require('throughway')` does not load it). A query
 * is parsed inline: its size is bounded by the API's `max_query_bytes` and its tokens by `max_tokens`
 * (graphql's own parse limit); analyses are kept per API (AnalysisCache), since validation has a fixed
 * cost per call (docs/performance.md, "GraphQL").
 */
import * as path from 'node:path';
import { LRUCache } from 'lru-cache';
import { load } from '../config/packages';
import type * as G from 'graphql';

/**
 * Queries longer than this many characters (8 KiB of ASCII) are analysed on a mediation worker thread
 * (worker.ts, docs/graphql.md "Large queries"); shorter ones inline. They are above the AnalysisCache's
 * 4,096-character bound, so every one of them misses the cache. Measured on the shared 2-core VM (load
 * about 5): a 9,015-character query of 355 aliased fields costs the event loop 2.9-3.4 ms inline, and
 * 0.24 ms when pooled (event-loop utilisation per task; the thread does the rest).
 */
export const POOL_QUERY_CHARS = 8192;

/** The worker module of large queries (compiled beside this file). */
export const WORKER_FILE = path.join(__dirname, 'worker.js');

/** The three operation types of a schema (GraphQL spec §2.3). */
export const OPERATION_TYPES = ['QUERY', 'MUTATION', 'SUBSCRIPTION'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

type GraphqlModule = typeof G;

let loaded: GraphqlModule | undefined;

/** graphql, required once (a require() resolves its name again on every call: ~15 µs measured). */
function graphql(key: string): GraphqlModule {
  return (loaded ??= load<GraphqlModule>('graphql', key));
}

/** A built schema and the names of its root fields, per operation type. */
export interface GraphqlSchema {
  /** graphql's GraphQLSchema (opaque outside this module). */
  readonly schema: unknown;
  readonly rootFields: Readonly<Record<OperationType, ReadonlySet<string>>>;
}

export type SchemaResult = { readonly ok: true; readonly schema: GraphqlSchema } | { readonly ok: false; readonly message: string };

/** Builds a schema from SDL; the message of a syntax or schema error names its line and column. */
export function buildGraphqlSchema(sdl: string, key: string): SchemaResult {
  const g = graphql(key);
  let schema: G.GraphQLSchema;
  try {
    schema = g.buildSchema(sdl);
  } catch (err) {
    return { ok: false, message: describe(err as G.GraphQLError) };
  }
  const errors = g.validateSchema(schema);
  if (errors.length > 0) return { ok: false, message: errors.map(describe).join('; ') };
  const names = (t: G.GraphQLObjectType | null | undefined): ReadonlySet<string> =>
    new Set(t === null || t === undefined ? [] : Object.keys(t.getFields()));
  return {
    ok: true,
    schema: {
      schema,
      rootFields: Object.freeze({
        QUERY: names(schema.getQueryType()),
        MUTATION: names(schema.getMutationType()),
        SUBSCRIPTION: names(schema.getSubscriptionType()),
      }),
    },
  };
}

/** What one query may cost (the API's `[graphql]` table, docs/apis.md). 0: no limit. */
export interface QueryLimits {
  readonly maxDepth: number;
  readonly maxComplexity: number;
  readonly maxTokens: number;
  readonly introspection: boolean;
}

/** The parts of a GraphQL-over-HTTP request the gateway reads. */
export interface GraphqlRequest {
  readonly query: string;
  readonly operationName: string | undefined;
}

/** The operation a query runs, as the gateway's resources see it. */
export interface Operation {
  readonly type: OperationType;
  /** The operation's name, '' for an anonymous one. */
  readonly name: string;
  /** Top-level fields selected (fragments at the top level expanded), without __typename; in order. */
  readonly fields: readonly string[];
  readonly depth: number;
  readonly complexity: number;
}

/** Why a query is refused; the gateway maps each kind to its fault (docs/graphql.md). */
export type AnalysisFailure =
  | { readonly kind: 'syntax'; readonly message: string }
  | { readonly kind: 'invalid'; readonly message: string; readonly errors: readonly string[] }
  | { readonly kind: 'operation'; readonly message: string }
  | { readonly kind: 'introspection'; readonly message: string }
  | { readonly kind: 'depth'; readonly message: string; readonly depth: number }
  | { readonly kind: 'complexity'; readonly message: string; readonly complexity: number };

export type Analysis = { readonly ok: true; readonly operation: Operation } | ({ readonly ok: false } & AnalysisFailure);

/** At most this many validation errors are listed (graphql's validate stops there too). */
export const MAX_LISTED_ERRORS = 10;

/** "message (line:column)" for a GraphQL error, every location listed. */
function describe(e: G.GraphQLError): string {
  const at = (e.locations ?? []).map((l) => `${l.line}:${l.column}`).join(', ');
  return at === '' ? e.message : `${e.message} (${at})`;
}

/**
 * Parses, validates against the schema, picks the operation (operationName, or the only one), and
 * measures it: depth, complexity, introspection. The first failure in that order is the answer.
 */
export function analyse(s: GraphqlSchema, req: GraphqlRequest, limits: QueryLimits, key = 'type = "GRAPHQL"'): Analysis {
  const g = graphql(key);
  let doc: G.DocumentNode;
  try {
    doc = g.parse(req.query, { noLocation: false, ...(limits.maxTokens > 0 ? { maxTokens: limits.maxTokens } : {}) });
  } catch (err) {
    return { ok: false, kind: 'syntax', message: describe(err as G.GraphQLError) };
  }
  const schema = s.schema as G.GraphQLSchema;
  const errors = g.validate(schema, doc, undefined, { maxErrors: MAX_LISTED_ERRORS });
  if (errors.length > 0) {
    const listed = errors.map(describe);
    return { ok: false, kind: 'invalid', message: listed.join('; '), errors: listed };
  }
  const op = g.getOperationAST(doc, req.operationName);
  if (op === null || op === undefined) {
    const message =
      req.operationName !== undefined
        ? `no operation named ${JSON.stringify(req.operationName)} in the query`
        : 'the query holds several operations: operationName must name one';
    return { ok: false, kind: 'operation', message };
  }
  const fragments = new Map<string, G.FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === g.Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const type = op.operation.toUpperCase() as OperationType;
  const fields: string[] = [];
  const m = { complexity: 0, introspection: false };
  const depth = measure(g, op.selectionSet, fragments, 1, m, fields, new Set());
  if (m.introspection && !limits.introspection)
    return { ok: false, kind: 'introspection', message: 'introspection queries (__schema, __type) are not allowed on this API' };
  if (limits.maxDepth > 0 && depth > limits.maxDepth)
    return { ok: false, kind: 'depth', depth, message: `the query is ${depth} levels deep; this API allows ${limits.maxDepth}` };
  if (limits.maxComplexity > 0 && m.complexity > limits.maxComplexity)
    return {
      ok: false,
      kind: 'complexity',
      complexity: m.complexity,
      message: `the query's complexity is ${m.complexity}; this API allows ${limits.maxComplexity}`,
    };
  return { ok: true, operation: { type, name: op.name?.value ?? '', fields, depth, complexity: m.complexity } };
}

/**
 * The depth of a selection set (a field is one level; fragments and inline fragments add none) and its
 * complexity (one per field selected, at every level, the reference's default field cost). `top` collects
 * the top-level field names. `path` guards fragment cycles (validation refuses them; this keeps the walk
 * bounded anyway).
 */
function measure(
  g: GraphqlModule,
  set: G.SelectionSetNode,
  fragments: ReadonlyMap<string, G.FragmentDefinitionNode>,
  level: number,
  m: { complexity: number; introspection: boolean },
  top: string[] | undefined,
  path: Set<string>,
): number {
  let deepest = 0;
  for (const sel of set.selections) {
    let d = 0;
    if (sel.kind === g.Kind.FIELD) {
      const name = sel.name.value;
      if (name === '__schema' || name === '__type') m.introspection = true;
      if (name === '__typename') continue;
      m.complexity++;
      if (top !== undefined && !top.includes(name)) top.push(name);
      d = sel.selectionSet === undefined ? level : measure(g, sel.selectionSet, fragments, level + 1, m, undefined, path);
    } else if (sel.kind === g.Kind.INLINE_FRAGMENT) {
      d = measure(g, sel.selectionSet, fragments, level, m, top, path);
    } else {
      const f = fragments.get(sel.name.value);
      if (f === undefined || path.has(f.name.value)) continue;
      path.add(f.name.value);
      d = measure(g, f.selectionSet, fragments, level, m, top, path);
      path.delete(f.name.value);
    }
    if (d > deepest) deepest = d;
  }
  return deepest;
}

/**
 * Analyses kept per API: the answer for one (query, operationName) never changes while the API's schema
 * and limits stay (a redeployed API gets a new cache). graphql's validate() sets up its 30-odd rules'
 * visitors on every call, a fixed cost that dwarfs the parse of a small query (bench/graphql.ts; one
 * validation of a 5-field query measured 0.75 ms on the loaded 2-core VM of docs/performance.md), and
 * clients send the same few queries again and again. Bounded: queries up to `maxChars` characters,
 * `max` entries (refusals included, so a repeated bad query is cheap too).
 */
export class AnalysisCache {
  private readonly lru: LRUCache<string, Analysis>;
  constructor(
    max = 512,
    private readonly maxChars = 4096,
  ) {
    this.lru = new LRUCache<string, Analysis>({ max });
  }

  /** analyse(), answered from the cache when this query and operationName were analysed before. */
  analyse(s: GraphqlSchema, req: GraphqlRequest, limits: QueryLimits): Analysis {
    if (req.query.length > this.maxChars) return analyse(s, req, limits);
    const op = req.operationName ?? '';
    const key = `${op.length}:${op}${req.query}`;
    const hit = this.lru.get(key);
    if (hit !== undefined) return hit;
    const a = analyse(s, req, limits);
    this.lru.set(key, a);
    return a;
  }

  get size(): number {
    return this.lru.size;
  }
}

/** Per top-level field: the scopes it needs and its throttling policy (the API's [[operations]]). */
export interface OperationRule {
  readonly type: OperationType;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly policy: string | undefined;
}

/** The rules of an operation's fields, in field order (fields without a rule have none). */
export function rulesOf(op: Operation, rules: ReadonlyMap<string, OperationRule>): OperationRule[] {
  const out: OperationRule[] = [];
  for (const f of op.fields) {
    const r = rules.get(`${op.type} ${f}`);
    if (r !== undefined) out.push(r);
  }
  return out;
}

/**
 * The first rule whose scopes the token lacks: a query touching several fields needs a scope of every
 * field that lists some (each field's list is "any of", as an HTTP resource's).
 */
export function missingScope(rules: readonly OperationRule[], tokenScopes: readonly string[]): OperationRule | undefined {
  for (const r of rules) {
    if (r.scopes.length === 0) continue;
    if (!r.scopes.some((s) => tokenScopes.includes(s))) return r;
  }
  return undefined;
}

/** A subscription tier's GraphQL limits (the policies file's graphql_max_depth, graphql_max_complexity; docs/graphql.md). */
export interface TierLimits {
  readonly graphqlMaxDepth?: number;
  readonly graphqlMaxComplexity?: number;
}

/**
 * An operation over its subscription tier's depth or complexity (docs/graphql.md): the failure, mapped by
 * the gateway as the API's own limits are; undefined when the tier allows it (or has no limits).
 */
export function tierExcess(
  op: Operation,
  tier: string,
  limits: TierLimits | undefined,
): Extract<AnalysisFailure, { kind: 'depth' | 'complexity' }> | undefined {
  if (limits === undefined) return undefined;
  if (limits.graphqlMaxDepth !== undefined && op.depth > limits.graphqlMaxDepth)
    return {
      kind: 'depth',
      depth: op.depth,
      message: `the query is ${op.depth} levels deep; the subscription tier ${tier} allows ${limits.graphqlMaxDepth}`,
    };
  if (limits.graphqlMaxComplexity !== undefined && op.complexity > limits.graphqlMaxComplexity)
    return {
      kind: 'complexity',
      complexity: op.complexity,
      message: `the query's complexity is ${op.complexity}; the subscription tier ${tier} allows ${limits.graphqlMaxComplexity}`,
    };
  return undefined;
}

/** The throttling policies of an operation's fields, keyed "QUERY name" (docs/graphql.md); undefined: none has one. */
export function fieldPolicies(type: OperationType, rules: readonly OperationRule[]): (readonly [string, string])[] | undefined {
  let out: (readonly [string, string])[] | undefined;
  for (const r of rules) if (r.policy !== undefined) (out ??= []).push([`${type} ${r.name}`, r.policy]);
  return out;
}
