/**
 * Probes on every role (docs/operations.md, "Probes"): GET /health/live and GET /health/ready answer on
 * the management port of default, api-key-manager, gateway-worker, traffic-manager nodes and of a cluster
 * primary, whatever [server_health_check] enable says; readiness is what the role needs (listeners up,
 * store open, snapshot and deployments pulled, the decision service's Redis, the cluster's workers), and
 * GET /health without the detailed checkers is the readiness report (it answered 404 on gateway-workers).
 * Real `throughway start` processes, as the scale tests run them; opsRoutes as an embedder calls it.
 */
import * as fs from 'node:fs';
import * as nodeHttp from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Health } from '../../lib/observability/health';
import { opsRoutes } from '../../lib/observability/routes';
import { until } from '../gateway/helpers';
import { get, NODE_TOML, PROMTOOL, promtoolCheck, startTestNode } from './node-helpers';
import { baseOffset, http, nodeToml, ownRedisOrSkip, securedApi, spawnNode, started } from '../scale/helpers';

/** nodeToml turns the detailed checkers on: the probes must not depend on them. */
const withoutCheckers = (toml: string): string => toml.replace('[server_health_check]\nenable = true\n', '');
const channel = `probes-${process.pid}`;

interface Report {
  readonly status: string;
  readonly failing: readonly string[];
  readonly checks: readonly { readonly name: string; readonly status: string; readonly message?: string }[];
}

async function ready(port: number, p = '/health/ready'): Promise<{ status: number; report: Report }> {
  const r = await http(`http://127.0.0.1:${port}${p}`);
  return { status: r.status, report: r.body as unknown as Report };
}

t.test('opsRoutes for embedders: /health/ready answers the health report when no readiness is given', async (t) => {
  const health = new Health(200);
  health.register({ name: 'db', order: 1, check: () => ({ healthy: false, message: 'db down' }) });
  const readiness = new Health(200);
  readiness.register({ name: 'warm', order: 1, check: () => ({ healthy: true }) });
  const serve = async (o: Parameters<typeof opsRoutes>[0]): Promise<number> => {
    const ops = opsRoutes(o);
    const srv = nodeHttp.createServer((req, res) => {
      void ops(req, res, req.url ?? '/').then((done) => {
        if (!done) res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    t.teardown(() => srv.close());
    return (srv.address() as AddressInfo).port;
  };
  const onlyHealth = await serve({ health });
  t.equal((await ready(onlyHealth)).status, 503, 'the health report');
  t.same((await ready(onlyHealth)).report.failing, ['db']);
  const both = await serve({ health, readiness });
  t.equal((await ready(both)).status, 200, 'readiness apart from the detailed checkers');
  t.equal((await ready(both, '/health')).status, 503, '/health stays the detailed report');
  const neither = await serve({});
  t.equal((await ready(neither)).status, 404, 'nothing to answer with: not handled');
  t.equal((await ready(neither, '/health/live')).status, 200);
});

t.test('default role in process: live, ready (listeners, store), /health without the checkers is readiness', async (t) => {
  const n = await startTestNode(NODE_TOML);
  t.teardown(() => n.close());
  t.match(
    n.out.join('\n'),
    new RegExp(`operations\\s+port ${n.mgmt}: /health/live, /health/ready, /health, /metrics`),
    'the start-up line names the probes',
  );
  const live = await get(n.mgmt, '/health/live');
  t.equal(live.status, 200);
  t.equal(live.body, '{"status":"UP"}');
  const r = await ready(n.mgmt);
  t.equal(r.status, 200, JSON.stringify(r.report));
  t.same(
    r.report.checks.map((c) => [c.name, c.status]),
    [
      ['listeners', 'UP'],
      ['store', 'UP'],
    ],
  );
  const h = await ready(n.mgmt, '/health');
  t.equal(h.status, 200, '/health answers without [server_health_check] enable');
  t.same(
    h.report.checks.map((c) => c.name),
    ['listeners', 'store'],
    'and it is the readiness report',
  );
  t.equal((await get(n.mgmt, '/health/ready', {})).type, 'application/json; charset=utf-8');
});

t.test(
  'gateway-worker: live while its control plane is away, ready once keys and APIs are pulled; api-key-manager ready with its store',
  async (t) => {
    const base = baseOffset(80);
    const kmPort = 9763 + base;
    const gwOps = 9763 + base + 1;
    const api = { 'shop.toml': securedApi('http://127.0.0.1:9') };
    // The gateway-worker first: nothing listens on its control plane's port yet, it retries.
    const gw = spawnNode(
      withoutCheckers(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort }))
        .replace('max_retry_count = 20', 'max_retry_count = 200')
        .replace('retry_progression_factor = 1.5', 'retry_progression_factor = 1.0'),
      api,
    );
    t.teardown(() => gw.stop());
    t.ok(
      await started(gw, /operations\s+port \d+: \/health\/live, \/health\/ready, \/health, \/metrics/),
      `the operations port opens before the control plane is reached:\n${gw.out}\n${gw.err}`,
    );
    t.ok(await until(() => /"event":"control_plane_retry"/.test(gw.err), 10_000), `it retries its control plane:\n${gw.err}`);
    t.equal((await http(`http://127.0.0.1:${gwOps}/health/live`)).status, 200, 'alive while it retries');
    const waiting = await ready(gwOps);
    t.equal(waiting.status, 503, 'not ready without a snapshot');
    t.same(waiting.report.failing, ['listeners', 'control_plane']);
    t.match(
      waiting.report.checks.find((c) => c.name === 'control_plane')?.message,
      /no snapshot pulled yet from the control plane http:\/\/127\.0\.0\.1:\d+ \(keys, APIs and policies\)/,
    );
    t.equal((await ready(gwOps, '/health')).status, 503, '/health (no detailed checkers) says the same, instead of 404');

    const km = spawnNode(withoutCheckers(nodeToml({ offset: base, role: 'api-key-manager', channel })), api);
    t.teardown(() => km.stop());
    t.ok(await started(km, /Key manager: /), `key manager started:\n${km.out}\n${km.err}`);
    t.match(km.out, new RegExp(`operations\\s+port ${kmPort}: /health/live, /health/ready, /health, /metrics`));
    const kmReady = await ready(kmPort);
    t.equal(kmReady.status, 200, JSON.stringify(kmReady.report));
    t.same(
      kmReady.report.checks.map((c) => [c.name, c.status]),
      [
        ['listeners', 'UP'],
        ['store', 'UP'],
      ],
    );

    t.ok(await started(gw, /APIs: 1 deployed/, 30_000), `gateway-worker started:\n${gw.out}\n${gw.err}`);
    const r = await ready(gwOps);
    t.equal(r.status, 200, JSON.stringify(r.report));
    t.same(
      r.report.checks.map((c) => [c.name, c.status]),
      [
        ['listeners', 'UP'],
        ['control_plane', 'UP'],
      ],
    );
    t.equal((await ready(gwOps, '/health')).status, 200);
  },
);

t.test('traffic-manager: not ready while the Redis of its decisions is down', async (t) => {
  const own = await ownRedisOrSkip(t);
  if (own === undefined) return;
  const base = baseOffset(81);
  const port = 9763 + base;
  const tm = spawnNode(withoutCheckers(nodeToml({ offset: base, role: 'traffic-manager', channel, redis: own.url })));
  t.teardown(() => tm.stop());
  t.ok(await started(tm, /the gateway does not run for role traffic-manager/), `${tm.out}\n${tm.err}`);
  t.match(tm.out, /throttle decisions\s+redis:\/\/127\.0\.0\.1:\d+: data from/);
  const up = await ready(port);
  t.equal(up.status, 200, JSON.stringify(up.report));
  t.same(
    up.report.checks.map((c) => c.name),
    ['listeners', 'store', 'traffic_manager'],
  );
  await own.stop();
  t.ok(await until(async () => (await ready(port)).status === 503, 10_000, 100), 'not ready once Redis is gone');
  const down = await ready(port);
  t.same(down.report.failing, ['traffic_manager']);
  t.equal((await http(`http://127.0.0.1:${port}/health/live`)).status, 200, 'still alive');
  await own.start();
  t.ok(await until(async () => (await ready(port)).status === 200, 15_000, 100), 'ready again once Redis is back');
});

t.test('cluster primary: ready when its workers are; one line per worker', async (t) => {
  const base = baseOffset(82);
  const port = 9763 + base;
  const extra = '[throughway.cluster]\nworkers = "2"\nrestart_delay_min = 60000\nrestart_delay_max = 60000\n';
  const node = spawnNode(withoutCheckers(nodeToml({ offset: base, role: 'default', channel, extra })));
  t.teardown(() => node.stop('SIGKILL'));
  t.ok(await started(node, /cluster: 2 of 2 workers ready/, 40_000), `started:\n${node.out}\n${node.err}`);
  const up = await ready(port);
  t.equal(up.status, 200, JSON.stringify(up.report));
  t.same(
    up.report.checks.map((c) => c.name),
    ['listeners', 'store', 'cluster_workers'],
  );
  // Each worker prints its one line, not the start banner again.
  t.equal((node.out.match(/throughway node: role default/g) ?? []).length, 1, `one banner:\n${node.out}`);
  const workerLines = node.out.split('\n').filter((l) => l.startsWith('[worker '));
  t.equal(workerLines.length, 2, `one line per worker:\n${node.out}`);
  for (const l of workerLines) t.match(l, /^\[worker \d+\] gateway HTTP port \d+, \d+ API\(s\) deployed/);
  // The primary's scrape merges its workers' (lib/scale/cluster-ops.ts): it lints clean too.
  if (fs.existsSync(PROMTOOL)) {
    const m = await http(`http://127.0.0.1:${port}/metrics`);
    t.match(m.text, /throughway_cluster_workers\{state="answered"\} 2/);
    const lint = promtoolCheck(m.text);
    t.equal(lint.status, 0, `promtool check metrics on the merged scrape:\n${lint.output}`);
  } else t.comment(`${PROMTOOL} not installed: the merged scrape is not linted`);
  const pid = Number(/cluster: worker \d+ \(pid (\d+)\) ready/.exec(node.out)?.[1]);
  process.kill(pid, 'SIGKILL');
  t.ok(await until(async () => (await ready(port)).status === 503, 10_000, 100), 'not ready with a worker down');
  const down = await ready(port);
  t.same(down.report.failing, ['cluster_workers']);
  t.match(
    down.report.checks.find((c) => c.name === 'cluster_workers')?.message,
    new RegExp(`1 of 2 workers ready: worker pid ${pid} died \\(SIGKILL\\)`),
  );
  t.equal((await http(`http://127.0.0.1:${port}/health/live`)).status, 200, 'the primary is alive');
});
