/**
 * A GraphQL API deployed from the control plane (docs/scale-out.md, docs/graphql.md): the SDL schema file
 * beside the API file is served with it, and the gateway-worker builds the API from the served texts.
 *
 *  - DeploymentSource: the schema text is served with its API, the revision covers both, a schema outside
 *    the API file's directory is not served (the API is, and a worker refuses it naming the schema);
 *  - real processes: an api-key-manager with a GraphQL API and its schema, a gateway-worker with an empty
 *    apis/ answers a query through to a real GraphQL backend; the schema file changed on the key manager
 *    is followed on the worker (a field removed: 103180 there).
 *
 * Redis from THROUGHWAY_TEST_REDIS_URL (the process test is skipped with a reason when unset or unreachable).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { createEventBus, type AnyEvent } from '../../lib/events/bus';
import { createLogger } from '../../lib/log';
import { ApiTexts } from '../../lib/gateway/deploy';
import { DeploymentSource, revisionOf } from '../../lib/scale/deployments';
import { DEFAULT_POLICIES_TOML, DEFAULT_POLICY_OPTIONS } from '../../lib/throttle/policies';
import { until } from '../gateway/helpers';
import { graphqlBackend, SDL } from '../graphql/backend';
import { ADMIN, baseOffset, http, nodeToml, redisReachable, spawnNode, started } from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

function graphqlApi(port: number, schema = 'orders.graphql'): string {
  return `name = "Orders"\ncontext = "/orders"\nversion = "1.0.0"\ntype = "GRAPHQL"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://127.0.0.1:${port}/graphql"\n[graphql]\nschema = "${schema}"\n`;
}

t.test('DeploymentSource serves a GraphQL API with its schema text; the revision covers both', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gqldeploy-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const apis = path.join(dir, 'apis');
  fs.mkdirSync(apis);
  const bus = createEventBus();
  const events: AnyEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (l: string) => lines.push(l) });
  const apiText = graphqlApi(9);
  fs.writeFileSync(path.join(apis, 'orders.toml'), apiText);
  fs.writeFileSync(path.join(apis, 'orders.graphql'), SDL);
  fs.writeFileSync(path.join(dir, 'outside.graphql'), SDL);
  fs.writeFileSync(path.join(apis, 'out.toml'), graphqlApi(9, '../outside.graphql').replace('/orders', '/out'));
  const s = new DeploymentSource({ apisDir: apis, policiesFile: path.join(dir, 'policies.toml'), policyOptions: DEFAULT_POLICY_OPTIONS, bus, logger, watch: false });
  t.teardown(() => s.close());
  const served = s.snapshot().apis;
  const orders = served.find((a) => a.file === 'orders.toml');
  t.same(orders?.schema, { file: 'orders.graphql', text: SDL }, 'the schema text is served with its API');
  t.not(orders?.revision, revisionOf(apiText), 'the revision is not the API text alone');
  const out = served.find((a) => a.file === 'out.toml');
  t.ok(out !== undefined && out.schema === undefined, 'a schema outside the API file directory is not served');
  t.match(lines.join(''), /out\.toml.*leaves the API file's directory.*deployment_file_unparsed/);

  // The schema file alone changes: a new revision, published.
  const changed = SDL.replace('  secret: String\n', '');
  fs.writeFileSync(path.join(apis, 'orders.graphql'), changed);
  s.refresh();
  const deployed = events.filter((e) => e.name === 'api.deployed');
  t.equal(deployed.length, 1, 'one api.deployed, for the API whose schema changed');
  const p = deployed[0]?.name === 'api.deployed' ? deployed[0].payload : undefined;
  t.equal(p?.file, 'orders.toml');
  t.equal(p?.schema?.text, changed);
  t.not(p?.revision, orders?.revision);

  // A worker's gateway builds the API from the served texts only (no file on its disk).
  const texts = new ApiTexts('cp', [{ file: 'http://cp/apis/orders.toml', text: apiText, ...(p?.schema !== undefined ? { schema: p.schema } : {}) }, { file: 'http://cp/apis/out.toml', text: out?.text ?? '' }], {});
  const read = texts.read();
  const ok = read.candidates.find((c) => c.file === 'http://cp/apis/orders.toml');
  t.ok(ok?.api?.graphql?.schema.rootFields.QUERY.has('hello'), 'built from the served schema');
  t.notOk(ok?.api?.graphql?.schema.rootFields.QUERY.has('secret'), 'the changed schema');
  const refused = read.candidates.find((c) => c.file === 'http://cp/apis/out.toml');
  t.equal(refused?.api, undefined);
  t.match(refused?.diagnostics.map((d) => `${d.code} ${d.message}`).join('\n'), /API_VALUE schema \.\.\/outside\.graphql was not served with the API file/);
});

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
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel, redis }), { 'orders.toml': graphqlApi(backend.port), 'orders.graphql': SDL }, [], { 'policies.toml': DEFAULT_POLICIES_TOML });
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const all = await http(`http://127.0.0.1:${kmPort}/admin/v1/deployments`, { auth: ADMIN });
  t.same((all.body.apis as { schema?: { file: string } }[]).map((a) => a.schema?.file), ['orders.graphql'], all.text);

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
  t.ok(await until(async () => (await query(gp, '{ secret }')) === '400 103180', 15_000, 100), 'the field removed from the schema is refused on the worker');
  t.equal(await query(gp, '{ hello }'), '200 -', 'the rest of the schema still answers');
});
