/**
 * The GraphQL worker module on the mediation pool's threads (lib/graphql/worker.ts, lib/mediation/pool.ts
 * runFile; docs/graphql.md "Large queries"): the answer equals analyse() inline; the schema is built once
 * per thread per SDL hash (a changed SDL is built again); GraphQL tasks count against the pool's bound
 * (queue_full, as mediation tasks).
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { analyse, buildGraphqlSchema, WORKER_FILE, type QueryLimits } from '../../lib/graphql';
import type { AnalyseAnswer, AnalyseTask } from '../../lib/graphql/worker';
import { MediationPool, PoolError } from '../../lib/mediation';
import { memoryLogger } from '../gateway/helpers';
import { SDL } from './backend';

const limits: QueryLimits = { maxDepth: 3, maxComplexity: 50, maxTokens: 10000, introspection: false };
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const task = (sdl: string, query: string): AnalyseTask => ({
  sdl,
  sdlHash: sha(sdl),
  request: { query, operationName: undefined },
  limits,
});

t.test('answers as inline analysis does, building each schema once per thread', async (t) => {
  const pool = new MediationPool({ minThreads: 1, maxThreads: 1, maxQueue: 10, workerHeapMb: 64 }, { logger: memoryLogger() });
  t.teardown(() => pool.close());
  const built = buildGraphqlSchema(SDL, 'test');
  if (!built.ok) throw new Error(built.message);
  for (const query of ['{ hello }', '{ hello(name: }', '{ nope }', '{ user(id: 1) { friends { friends { name } } } }']) {
    const a = await pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task(SDL, query));
    t.same('analysis' in a ? a.analysis : a, analyse(built.schema, { query, operationName: undefined }, limits), query);
    t.equal('builds' in a ? a.builds : -1, 1, 'one build of this SDL on the one thread');
  }
  const changed = SDL.replace('  secret: String\n', '');
  const c = await pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task(changed, '{ secret }'));
  t.equal('analysis' in c && !c.analysis.ok ? c.analysis.kind : 'ok', 'invalid', 'the changed schema is the one used');
  t.equal('builds' in c ? c.builds : -1, 2, 'a new SDL hash is built again');
  t.equal(pool.submitted.get('graphql'), 5);
  const broken = await pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task('type Query {', '{ a }'));
  t.ok('error' in broken, 'an SDL that does not build is an error answer, not a thrown task');
});

t.test('GraphQL tasks count against the pool bound: queue_full when threads and queue are taken', async (t) => {
  const pool = new MediationPool({ minThreads: 1, maxThreads: 1, maxQueue: 1, workerHeapMb: 64 }, { logger: memoryLogger() });
  t.teardown(() => pool.close());
  // A query large enough to keep the thread a little busy; two fill the thread and the queue.
  let q = '{';
  for (let i = 0; i < 300; i++) q += ` a${i}: hello`;
  q += ' }';
  const first = pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task(SDL, q));
  const second = pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task(SDL, q));
  t.equal(pool.pending, 2);
  const refused = await pool.runFile<AnalyseAnswer>('graphql', WORKER_FILE, task(SDL, q)).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(refused instanceof PoolError && refused.kind === 'queue_full', 'refused at once');
  await first;
  await second;
  t.equal(pool.pending, 0);
});
