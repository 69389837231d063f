/**
 * A GraphQL API deployed from the control plane (docs/scale-out.md, docs/graphql.md): the SDL schema file
 * beside the API file is served with it, and the gateway-worker builds the API from the served texts.
 *
 *  - the source's side in one process is in test/scale/deployment-source.test.ts;
 *  - real processes: an api-key-manager with a GraphQL API and its schema, a gateway-worker with an empty
 *    apis/ answers a query through to a real GraphQL backend; the schema file changed on the key manager
 *    is followed on the worker (a field removed: 103180 there).
 *
 * Redis from THROUGHWAY_TEST_REDIS_URL (the process test is skipped with a reason when unset or unreachable).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { DEFAULT_POLICIES_TOML } from '../../lib/throttle/policies';
import { until } from '../gateway/helpers';
import { graphqlBackend, SDL } from '../graphql/backend';
import { ADMIN, baseOffset, graphqlApi, http, nodeToml, redisReachable, spawnNode, started } from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

/** `status code` of a GraphQL POST: "200 -", "400 103180". */
async function query(port: number, q: string): Promise<string> {
  const r = await http(`http://127.0.0.1:${port}/orders/1.0.0`, { method: 'POST', json: { query: q } });
  return `${r.status} ${/"code":\s*"?(\d+)/.exec(r.text)?.[1] ?? '-'}`;
}

t.test('a GraphQL API of the control plane answers through a gateway-worker, and its schema is followed', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const channel = `tw-test-gqldeploy-${process.pid}-${Date.now()}`;
  const backend = await graphqlBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(32);
  const kmPort = 9763 + base;
  const kmp = spawnNode(
    nodeToml({ offset: base, role: 'api-key-manager', channel, redis }),
    { 'orders.toml': graphqlApi(backend.port), 'orders.graphql': SDL },
    [],
    { 'policies.toml': DEFAULT_POLICIES_TOML },
  );
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const all = await http(`http://127.0.0.1:${kmPort}/admin/v1/deployments`, { auth: ADMIN });
  t.same(
    (all.body.apis as { schema?: { file: string } }[]).map((a) => a.schema?.file),
    ['orders.graphql'],
    all.text,
  );

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, redis, km: kmPort }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, /APIs: 1 deployed from the control plane/, `${gw.out}\n${gw.err}`);
  const gp = 8280 + base + 1;
  const r = await http(`http://127.0.0.1:${gp}/orders/1.0.0`, { method: 'POST', json: { query: '{ hello(name: "w") }' } });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { data: { hello: String } }, 'the backend answered the query');
  t.equal(await query(gp, '{ secret }'), '200 -', 'secret is in the schema');
  t.equal(await query(gp, '{ nope }'), '400 103180', 'the worker validates against the served schema');

  // The schema changes on the key manager (its apis/ is watched): the worker follows.
  fs.writeFileSync(path.join(kmp.dir, 'apis', 'orders.graphql'), SDL.replace('  secret: String\n', ''));
  t.ok(
    await until(async () => (await query(gp, '{ secret }')) === '400 103180', 15_000, 100),
    'the field removed from the schema is refused on the worker',
  );
  t.equal(await query(gp, '{ hello }'), '200 -', 'the rest of the schema still answers');
});
