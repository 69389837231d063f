/**
 * A GraphQL API's large queries, analysed on a mediation worker thread (lib/mediation/pool.ts runFile;
 * docs/graphql.md, "Large queries"): the same analyse() as on the event loop, so the answer (and every
 * fault's message and position) is the same. The schema comes as its SDL with a hash: each thread builds
 * it once per hash, and keeps the last SCHEMAS_KEPT (a redeployed API has a new hash).
 */
import { analyse, buildGraphqlSchema, type Analysis, type GraphqlRequest, type GraphqlSchema, type QueryLimits } from './index';

/** What the gateway sends: the API's schema (SDL and its sha256) and one query. */
export interface AnalyseTask {
  readonly sdl: string;
  readonly sdlHash: string;
  readonly request: GraphqlRequest;
  readonly limits: QueryLimits;
}

/** Schemas built on this thread, by SDL hash; the oldest goes beyond this many (one per API revision). */
const SCHEMAS_KEPT = 32;
const schemas = new Map<string, GraphqlSchema>();
/** Builds per thread since it started (tests read them through the answer). */
let builds = 0;

export type AnalyseAnswer = { readonly analysis: Analysis; readonly builds: number } | { readonly error: string };

export default function task(t: AnalyseTask): AnalyseAnswer {
  let s = schemas.get(t.sdlHash);
  if (s === undefined) {
    // The gateway built this SDL when the API deployed: a failure here is not expected.
    const built = buildGraphqlSchema(t.sdl, 'type = "GRAPHQL" (the worker pool)');
    if (!built.ok) return { error: built.message };
    s = built.schema;
    builds++;
    if (schemas.size >= SCHEMAS_KEPT) schemas.delete(schemas.keys().next().value as string);
    schemas.set(t.sdlHash, s);
  }
  return { analysis: analyse(s, t.request, t.limits), builds };
}
