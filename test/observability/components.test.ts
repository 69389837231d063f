/**
 * The components' health checkers and metrics on a whole node (lib/observability/components.ts): JWKS
 * reachability per trusted issuer, worker pool saturation, Redis of the shared throttle counters; green
 * and red for each, through GET /health and GET /metrics on the management port.
 */
import t from 'tap';
import type { Gateway } from '../../lib/embed';
import { workerPoolChecker } from '../../lib/observability/components';
import { closedPort } from '../helpers/backend';
import { jwksServer, signingKey } from '../security/helpers';
import { NODE_TOML, get, scrape, startTestNode } from './node-helpers';

const HC = '[server_health_check]\nenable = true\n';

t.test('jwks_health_checker: UP for a reachable JWKS, DOWN naming an unreachable one; throughway_jwks_keys per issuer', async (t) => {
  const k = await signingKey('k1');
  const idp = await jwksServer([k.publicJwk]);
  const dead = await closedPort();
  const issuers = (bad: boolean): string =>
    `[[apim.jwt.issuer]]\nname = "https://good.example.test"\n[apim.jwt.issuer.jwks]\nurl = "${idp.url}"\n` +
    (bad ? `[[apim.jwt.issuer]]\nname = "https://bad.example.test"\n[apim.jwt.issuer.jwks]\nurl = "http://127.0.0.1:${dead}/jwks"\n` : '');
  t.teardown(() => idp.close());

  const green = await startTestNode(`${NODE_TOML}${HC}${issuers(false)}`);
  let r = await get(green.mgmt, '/health');
  t.equal(r.status, 200, r.body);
  let report = JSON.parse(r.body) as {
    failing: string[];
    checks: { name: string; status: string; details?: { issuers?: { issuer: string; keys: number; error?: string }[] } }[];
  };
  const names = report.checks.map((c) => c.name);
  t.ok(names.includes('worker_pool_health_checker') && names.includes('jwks_health_checker'), names.join(','));
  t.notOk(names.includes('redis_health_checker'), 'no Redis checker with counters in memory');
  t.same(
    report.checks.find((c) => c.name === 'jwks_health_checker')?.details?.issuers?.map((i) => [i.issuer, i.keys]),
    [['https://good.example.test', 1]],
    'the probe fetched the set never fetched',
  );
  t.equal(idp.fetches, 1);
  await get(green.mgmt, '/health');
  t.equal(idp.fetches, 1, 'a healthy set is not fetched again by the probe');
  t.equal((await scrape(green.mgmt)).value('throughway_jwks_keys', { issuer: 'https://good.example.test', up: '1' }), 1);
  await green.close();

  const red = await startTestNode(`${NODE_TOML}${HC}${issuers(true)}`);
  t.teardown(() => red.close());
  r = await get(red.mgmt, '/health');
  t.equal(r.status, 503);
  report = JSON.parse(r.body) as typeof report;
  t.same(report.failing, ['jwks_health_checker']);
  const jwks = report.checks.find((c) => c.name === 'jwks_health_checker') as { message?: string };
  t.match(jwks.message, /JWKS not reachable: https:\/\/bad\.example\.test/);
  t.notMatch(jwks.message, /good\.example/);
  const s = await scrape(red.mgmt);
  t.equal(s.value('throughway_jwks_keys', { issuer: 'https://bad.example.test', up: '0' }), 0);
  t.equal(s.value('throughway_jwks_keys', { issuer: 'https://good.example.test', up: '1' }), 1);
});

t.test('redis_health_checker: DOWN while Redis cannot be reached (counts go on locally)', async (t) => {
  const dead = await closedPort();
  const n = await startTestNode(
    `${NODE_TOML}${HC}[throughway.throttling]\ncounter_store = "redis"\nredis_url = "redis://127.0.0.1:${dead}"\n`,
  );
  t.teardown(() => n.close());
  const r = await get(n.mgmt, '/health');
  t.equal(r.status, 503);
  const report = JSON.parse(r.body) as { failing: string[]; checks: { name: string; message?: string }[] };
  t.same(report.failing, ['redis_health_checker']);
  t.match(report.checks.find((c) => c.name === 'redis_health_checker')?.message, /Redis connection is \w+: throttling counts per node/);
  t.notMatch(r.body, new RegExp(String(dead)), 'the URL is not reported');
});

t.test('redis_health_checker: UP with a reachable Redis', async (t) => {
  const url = process.env.THROUGHWAY_TEST_REDIS_URL;
  if (url === undefined || url === '') {
    t.comment('skipped: THROUGHWAY_TEST_REDIS_URL is unset');
    return;
  }
  const n = await startTestNode(`${NODE_TOML}${HC}[throughway.throttling]\ncounter_store = "redis"\nredis_url = "${url}"\n`);
  t.teardown(() => n.close());
  const store = n.node.gateway?.throttle.counters as { ready?: (ms: number) => Promise<boolean> } | undefined;
  if (store?.ready !== undefined && !(await store.ready(3000))) {
    t.comment(`skipped: Redis at ${url} is unreachable`);
    return;
  }
  const r = await get(n.mgmt, '/health');
  t.equal(r.status, 200, r.body);
  t.ok(
    (JSON.parse(r.body) as { checks: { name: string; status: string }[] }).checks.some(
      (c) => c.name === 'redis_health_checker' && c.status === 'UP',
    ),
  );
});

t.test('worker_pool_health_checker: DOWN when every thread is busy and the queue is full', (t) => {
  const pool = { settings: { maxThreads: 2, maxQueue: 3 }, started: true, threads: 2, pending: 5, queued: 3 };
  const gw = { mediation: { pool } } as unknown as Gateway;
  const c = workerPoolChecker(() => gw, { order: 1, queueLimit: 2 });
  let r = c.check() as { healthy: boolean; message?: string };
  t.equal(r.healthy, false);
  t.match(r.message, /all 2 mediation threads are busy and 3 tasks wait/);
  pool.queued = 2;
  pool.pending = 4;
  t.equal((c.check() as { healthy: boolean }).healthy, true, 'room left in the queue');
  pool.settings.maxQueue = Infinity;
  t.equal((c.check() as { healthy: boolean }).healthy, false, 'unbounded queue: DOWN from queueLimit waiting tasks');
  pool.queued = 1;
  r = c.check() as { healthy: boolean };
  t.equal(r.healthy, true);
  t.equal(
    (workerPoolChecker(() => undefined, { order: 1, queueLimit: 2 }).check() as { healthy: boolean }).healthy,
    true,
    'no gateway: UP',
  );
  t.end();
});
