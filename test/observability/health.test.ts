/**
 * Health: GET /health runs the checkers of [server_health_check] in their `order` and answers 200 / 503
 * naming the failing ones; GET /health/live touches nothing. Green and red per checker: data source
 * (pool usage against pool_usage_limit_percentage, a real connection), user store, backend pools; a
 * checker that throws or hangs; shutdown.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { Health, dataSourceChecker, userStoreChecker, type HealthReport } from '../../lib/observability/health';
import { openStore } from '../../lib/store/open';
import { pooledDriver } from '../../lib/store/pool';
import type { Store } from '../../lib/store/types';
import { apiToml, echoBackend, request, until } from '../gateway/helpers';
import { NODE_TOML, get, startTestNode } from './node-helpers';

t.test('checkers run in their order; the report names the failing ones', async (t) => {
  const h = new Health(200);
  h.register({ name: 'c', order: 5, check: () => ({ healthy: true }) });
  h.register({ name: 'a', order: 1, check: async () => ({ healthy: false, message: 'a is down', details: { x: 1 } }) });
  h.register({ name: 'b', order: 5, check: () => ({ healthy: true }) });
  h.register({
    name: 'throws',
    order: 7,
    check: () => {
      throw new Error('boom');
    },
  });
  h.register({ name: 'hangs', order: 9, check: () => new Promise(() => undefined) });
  const r = await h.run();
  t.same(
    r.checks.map((c) => c.name),
    ['a', 'c', 'b', 'throws', 'hangs'],
    'by order; equal orders keep registration order',
  );
  t.equal(r.status, 'DOWN');
  t.same(r.failing, ['a', 'throws', 'hangs']);
  t.same(r.checks[0], { name: 'a', order: 1, status: 'DOWN', message: 'a is down', details: { x: 1 } });
  t.equal(r.checks[3]?.message, 'boom', 'a checker that throws is DOWN with its message');
  t.equal(r.checks[4]?.message, 'no answer within 200 ms', 'a checker that never answers is DOWN at the timeout');
  t.throws(() => h.register({ name: 'a', order: 2, check: () => ({ healthy: true }) }), { code: 'HEALTH_CHECKER_DUPLICATE' });

  const green = new Health();
  green.register({ name: 'only', order: 1, check: () => ({ healthy: true }) });
  t.same(await green.run(), { status: 'UP', failing: [], checks: [{ name: 'only', order: 1, status: 'UP' }] });
  green.shuttingDown();
  const down = await green.run();
  t.equal(down.status, 'DOWN', 'a node shutting down is not healthy');
  t.same(down.failing, ['shutdown']);
});

t.test('data source and user store checkers on a real store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-health-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), NODE_TOML);
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  const store = await openStore(loaded.config, dir);
  const ds = dataSourceChecker(store, { order: 98, limitPercentage: 80 });
  const users = userStoreChecker(store, { order: 98, username: 'admin' });
  const up = await ds.check();
  t.equal(up.healthy, true, 'a connection was obtained');
  t.equal(up.details?.database, 'sqlite');
  t.ok(Number(up.details?.schemaVersion) >= 1, 'by a query on the store');
  t.equal(up.details?.poolActive, undefined, 'SQLite has no pool: no usage figures');
  t.same(await users.check(), { healthy: true, details: { userStore: 'PRIMARY', superAdminPresent: true } });

  // A pooled database: usage above the limit is DOWN, at the limit is not ("above" in spec 001).
  const pooled = (active: number, max: number): Store =>
    Object.assign(Object.create(store) as Store, { poolUsage: () => ({ active, max }) });
  const over = await dataSourceChecker(pooled(9, 10), { order: 98, limitPercentage: 80 }).check();
  t.equal(over.healthy, false);
  t.equal(over.message, 'pool usage 90% is above pool_usage_limit_percentage 80%');
  t.equal(over.details?.poolActive, 9);
  const at = await dataSourceChecker(pooled(8, 10), { order: 98, limitPercentage: 80 }).check();
  t.equal(at.healthy, true, '80% of 80% is not above it');
  t.equal(at.details?.poolUsagePercentage, 80);

  await store.close();
  const closed = await ds.check();
  t.equal(closed.healthy, false, 'no connection can be obtained from a closed store');
  t.match(closed.message, /^no connection obtained: /);
  const u = await users.check();
  t.equal(u.healthy, false);
  t.match(u.message, /^the user store cannot be read/);
});

t.test('GET /health on a node: checkers ordered per [server_health_check]; /health/live', async (t) => {
  const toml = `${NODE_TOML}[server_health_check]\nenable = true\n[server_health_check.health_checker.data_source_health_checker]\norder = 5\n[server_health_check.health_checker.super_tenant_health_checker]\norder = 1\n[throughway.operations]\nbackend_pool_checker_order = 3\n`;
  const n = await startTestNode(toml);
  t.teardown(() => n.close());
  const r = await get(n.mgmt, '/health');
  t.equal(r.status, 200, r.body);
  t.equal(r.type, 'application/json; charset=utf-8');
  const report = JSON.parse(r.body) as HealthReport;
  t.equal(report.status, 'UP');
  t.same(
    report.checks.map((c) => [c.name, c.order, c.status]),
    [
      ['super_tenant_health_checker', 1, 'UP'],
      ['backend_pool_health_checker', 3, 'UP'],
      ['worker_pool_health_checker', 3, 'UP'],
      ['data_source_health_checker', 5, 'UP'],
    ],
  );
  const live = await get(n.mgmt, '/health/live');
  t.equal(live.status, 200);
  t.same(JSON.parse(live.body), { status: 'UP' });
});

t.test('[server_health_check] enable = false: /health is the readiness report (store included), /health/live answers', async (t) => {
  const n = await startTestNode(NODE_TOML);
  t.teardown(() => n.close());
  t.equal(n.node.health, undefined);
  const r = await get(n.mgmt, '/health');
  t.equal(r.status, 200);
  const report = JSON.parse(r.body) as { status: string; failing: string[]; checks: { name: string; status: string }[] };
  t.equal(report.status, 'UP');
  t.same(report.failing, []);
  t.same(
    report.checks.map((c) => [c.name, c.status]),
    [
      ['listeners', 'UP'],
      ['store', 'UP'],
    ],
    'the store check of old is the readiness check `store`',
  );
  t.equal((await get(n.mgmt, '/health/live')).status, 200);
});

t.test('backend pool checker: red while calls wait for a connection to a full route, green after', async (t) => {
  const held: http.ServerResponse[] = [];
  const backend = await echoBackend((req, res) => {
    if (!(req.url ?? '').includes('hold')) return false;
    held.push(res);
    return true;
  });
  const toml = `${NODE_TOML}[passthru_http]\n'http.max.connection.per.host.port' = 1\n[server_health_check]\nenable = true\n`;
  const n = await startTestNode(toml, {
    a: apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(async () => {
    for (const res of held) if (!res.writableEnded) res.end();
    await n.close();
    await backend.close();
  });
  t.equal((await get(n.mgmt, '/health')).status, 200, 'green before');
  const first = request(n.gw, '/a/1.0.0/hold');
  const second = request(n.gw, '/a/1.0.0/after');
  t.ok(await until(() => held.length === 1), 'the first call holds the only connection');
  let r = await get(n.mgmt, '/health');
  for (let i = 0; i < 50 && r.status === 200; i++) r = await get(n.mgmt, '/health');
  t.equal(r.status, 503, 'red: a call waits for a connection');
  const report = JSON.parse(r.body) as HealthReport;
  t.same(report.failing, ['backend_pool_health_checker']);
  const check = report.checks.find((c) => c.name === 'backend_pool_health_checker');
  t.equal(check?.message, `calls wait for a backend connection: 127.0.0.1:${backend.port}`);
  t.same((check?.details as { pools: unknown[] }).pools, [
    { target: `127.0.0.1:${backend.port}`, open: 1, idle: 0, waiting: 1, max: 1, usagePercentage: 100 },
  ]);
  t.ok(
    n.lines.some((l) => l.event === 'health_down' && JSON.stringify(l.failing) === '["backend_pool_health_checker"]'),
    'logged',
  );
  (held[0] as http.ServerResponse).end('done');
  t.equal((await first).status, 200);
  t.equal((await second).status, 200);
  t.equal((await get(n.mgmt, '/health')).status, 200, 'green again');
});

t.test('a pooled database reports its usage: borrowers counted while their query runs', async (t) => {
  // A driver over a fake pool whose queries finish when the test says (no database server needed).
  const pending: (() => void)[] = [];
  let hold = false;
  const driver = await pooledDriver(
    {
      kind: 'postgres',
      description: 'fake pool',
      acquire: async () => ({}),
      validate: async () => undefined,
      release: () => undefined,
      discard: () => undefined,
      query: (_c, sql) =>
        sql.startsWith('SELECT MAX(version)') && pending.length === 0 && !hold
          ? Promise.resolve({ rows: [{ v: 2 }], count: 0 })
          : new Promise((resolve) => pending.push(() => resolve({ rows: [{ v: 2 }], count: 0 }))),
      end: async () => undefined,
    },
    { maxActive: 4, maxWait: 1000, testOnBorrow: false, validationQuery: 'SELECT 1', validationInterval: 0 },
  );
  t.same(driver.poolUsage?.(), { active: 0, max: 4 });
  const store = Object.assign(Object.create(null) as Store, {
    kind: 'postgres',
    poolUsage: () => driver.poolUsage?.(),
    schemaVersion: async () => Number((await driver.all('SELECT MAX(version) AS v FROM tw_schema_version'))[0]?.v),
  });
  const ds = dataSourceChecker(store, { order: 98, limitPercentage: 50 });
  t.equal((await ds.check()).healthy, true, 'idle pool: UP');
  hold = true;
  const q = [driver.all('SELECT 1'), driver.all('SELECT 2'), driver.all('SELECT 3')];
  t.same(driver.poolUsage?.(), { active: 3, max: 4 }, 'three queries running');
  const red = await ds.check();
  t.equal(red.healthy, false);
  t.equal(red.message, 'pool usage 75% is above pool_usage_limit_percentage 50%');
  t.ok(await until(() => pending.length === 3), 'the three queries reached the pool');
  for (const p of pending.splice(0)) p();
  await Promise.all(q);
  hold = false;
  t.same(driver.poolUsage?.(), { active: 0, max: 4 }, 'released');
  t.equal((await ds.check()).healthy, true, 'UP again');
});
