/**
 * The cluster primary's operations port speaks for its workers (lib/scale/cluster-ops.ts;
 * docs/operations.md, "Cluster mode"):
 *  - the merge: counters and histograms summed over processes, per-process figures (event-loop lag, a hit
 *    ratio) kept apart under a `process` label;
 *  - a scrape asks every worker and waits at most the timeout: a worker that never answers is left out
 *    and counted silent, a late answer is dropped;
 *  - a real `[throughway.cluster] workers = 2` node: N calls through the gateway port are N in the
 *    primary's throughway_requests_total; a stopped (SIGSTOP) worker does not hang the scrape, which then
 *    shows only the other worker's share (so both served some); a killed worker makes /health DOWN
 *    (cluster_workers, naming its pid) until its replacement is ready.
 */
import * as http from 'node:http';
import t from 'tap';
import { HistogramCounts, Metrics, LATENCY_BUCKETS } from '../../lib/observability/metrics';
import { mergeMetrics, WorkerMetrics, clusterWorkersChecker, type MetricJson, type MetricsAnswer } from '../../lib/scale/cluster-ops';
import { apiToml, echoBackend, until } from '../gateway/helpers';
import { http as call, nodeToml, spawnStarted } from './helpers';

const json = async (m: Metrics): Promise<MetricJson[]> => (await m.registry.getMetricsAsJSON()) as unknown as MetricJson[];

/** The samples of `name` in an exposition: labels text -> value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m !== null && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}
const total = (text: string, name: string): number => [...samples(text, name).values()].reduce((a, b) => a + b, 0);

t.test('merge: counters and histograms summed, per-process series labelled', async (t) => {
  const a = new Metrics();
  const b = new Metrics();
  for (const [m, n] of [
    [a, 3],
    [b, 4],
  ] as const) {
    m.register({ name: 'throughway_calls_total', help: 'h', type: 'counter', collect: () => [{ labels: { api: 'A:1' }, value: n }] });
    m.register({ name: 'throughway_open', help: 'h', type: 'gauge', collect: () => n * 10 });
    m.register({ name: 'throughway_ratio', help: 'h', type: 'gauge', perProcess: true, collect: () => n / 10 });
    const c = new HistogramCounts(LATENCY_BUCKETS);
    for (let i = 0; i < n; i++) c.observe(0.002);
    m.registerHistogram('throughway_latency_seconds', 'h', 'api', () => new Map([['A:1', c]]));
  }
  const text = await mergeMetrics([
    { process: 'worker:1', metrics: await json(a), perProcess: [...a.perProcess] },
    { process: 'worker:2', metrics: await json(b), perProcess: [...b.perProcess] },
  ]).metrics();
  t.same([...samples(text, 'throughway_calls_total')], [['{api="A:1"}', 7]], 'a counter is summed');
  t.same([...samples(text, 'throughway_open')], [['', 70]], 'a gauge of totals is summed');
  t.same(
    new Map([...samples(text, 'throughway_ratio')]),
    new Map([
      ['{process="worker:1"}', 0.3],
      ['{process="worker:2"}', 0.4],
    ]),
    'a per-process gauge keeps one series per process',
  );
  t.equal(samples(text, 'throughway_latency_seconds_count').get('{api="A:1"}'), 7, 'histogram counts summed');
  t.equal(samples(text, 'throughway_latency_seconds_bucket').get('{api="A:1",le="0.0025"}'), 7, `histogram buckets summed:\n${text}`);
  t.equal(samples(text, 'throughway_latency_seconds_bucket').get('{api="A:1",le="0.001"}'), 0);
  const lag = samples(text, 'nodejs_eventloop_lag_seconds');
  t.same([...lag.keys()].sort(), ['{process="worker:1"}', '{process="worker:2"}'], "prom-client's process metrics are per process");
  t.equal(samples(text, 'process_start_time_seconds').size, 2, 'even those prom-client would omit in a merge');
  t.same([...samples(text, 'throughway_calls_total').keys()], ['{api="A:1"}'], 'one # TYPE per family');
  t.equal(text.match(/^# TYPE throughway_calls_total counter$/gm)?.length, 1);
});

t.test('gather: a silent worker is left out after the timeout; a late answer is dropped', async (t) => {
  const w = new WorkerMetrics(200);
  let late: MetricsAnswer | undefined;
  const metric: MetricJson = {
    name: 'throughway_x_total',
    help: 'h',
    type: 'counter',
    aggregator: 'sum',
    values: [{ labels: {}, value: 2 }],
  };
  const peers = [
    {
      pid: 11,
      send: (m: unknown) =>
        void setImmediate(() => w.receive({ tw: 'metrics', id: (m as { id: number }).id, pid: 11, metrics: [metric], perProcess: [] })),
    },
    {
      pid: 12,
      send: (m: unknown) => void (late = { tw: 'metrics', id: (m as { id: number }).id, pid: 12, metrics: [metric], perProcess: [] }),
    },
    {
      pid: 13,
      send: () => {
        throw new Error('channel closed');
      },
    },
  ];
  const g = await Promise.race([w.gather(peers), new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  if (g === undefined) return t.fail('the scrape hung');
  t.same(
    g.answered.map((a) => a.process),
    ['worker:11'],
  );
  t.same([...g.silent].sort(), [12, 13], 'the silent and the unreachable worker');
  t.doesNotThrow(() => w.receive(late as MetricsAnswer), 'the late answer is dropped');
  const text = await mergeMetrics(g.answered).metrics();
  t.equal(total(text, 'throughway_x_total'), 2, 'only the answer in time is counted');
  const none = await w.gather([]);
  t.same(none, { answered: [], silent: [] }, 'no worker: nothing to wait for');
});

t.test('cluster_workers checker', async (t) => {
  const now = Date.now();
  const up = clusterWorkersChecker(
    () => ({
      configured: 2,
      workers: [
        { id: 1, pid: 100, ready: true, startedAt: now },
        { id: 2, pid: 101, ready: true, startedAt: now },
      ],
      exited: [],
    }),
    { order: 99 },
  );
  t.equal((await up.check()).healthy, true);
  const down = await clusterWorkersChecker(
    () => ({
      configured: 2,
      workers: [{ id: 1, pid: 100, ready: true, startedAt: now }],
      exited: [{ id: 2, pid: 101, reason: 'SIGKILL', at: now, restartAt: now + 1000 }],
    }),
    { order: 99 },
  ).check();
  t.equal(down.healthy, false);
  t.equal(down.message, '1 of 2 workers ready: worker pid 101 died (SIGKILL), restarting');
});

/** One GET on a fresh connection (round-robin hands each to the next worker): the status, 0 on failure. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers: { Connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(10_000, () => req.destroy());
    req.end();
  });
}

t.test("a cluster node: the primary shows the workers' metrics and health", async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  // A restart delay long enough to see the checker DOWN between the death and the replacement.
  const toml = (offset: number): string =>
    nodeToml({ offset, role: 'default', channel: 'unused', extra: '[throughway.cluster]\nworkers = "2"\nrestart_delay_min = 1500\n' });
  const apis = {
    'open.toml': apiToml({ name: 'Open', context: '/open', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
  };
  const { node, offset, ok } = await spawnStarted({ salt: 60, toml, apis, marker: /cluster: 2 of 2 workers ready/, ms: 30_000 });
  t.teardown(() => node.stop('SIGKILL'));
  t.ok(ok, `started:\n${node.out}\n${node.err}`);
  const gwPort = 8280 + offset;
  const ops = `http://127.0.0.1:${9763 + offset}`;
  const pids = [...node.out.matchAll(/cluster: worker \d+ \(pid (\d+)\) ready/g)].map((m) => Number(m[1]));
  t.equal(pids.length, 2);
  const [a, b] = pids as [number, number];

  const h0 = await call(`${ops}/health`);
  t.equal(h0.status, 200, h0.text);
  const check = (h: { body: Record<string, unknown> }): Record<string, unknown> | undefined =>
    (h.body.checks as Record<string, unknown>[]).find((c) => c.name === 'cluster_workers');
  const c0 = check(h0);
  t.equal(c0?.status, 'UP');
  t.same(
    (c0?.details as { workers: { pid: number }[] }).workers.map((w) => w.pid).sort(),
    [...pids].sort(),
    'the checker lists both workers by pid',
  );

  const N = 20;
  for (let i = 0; i < N; i++) t.equal(await get(gwPort, `/open/1.0.0/x${i}`), 200);
  const api = (text: string): number =>
    [...samples(text, 'throughway_requests_total')].filter(([l]) => l.includes('api="Open:1.0.0"')).reduce((s, [, v]) => s + v, 0);
  let m = await call(`${ops}/metrics`);
  const counted = await until(async () => api((m = await call(`${ops}/metrics`)).text) === N, 5000);
  t.ok(counted, `the primary's /metrics counts the ${N} calls of both workers${counted ? '' : `:\n${m.text}`}`);
  t.equal(samples(m.text, 'throughway_cluster_workers').get('{state="answered"}'), 2);
  t.equal(samples(m.text, 'throughway_cluster_workers').get('{state="silent"}'), 0);
  t.equal(total(m.text, 'throughway_source_connections_accepted_total'), N, 'transport counters are summed too');
  const lag = [...samples(m.text, 'nodejs_eventloop_lag_seconds').keys()].sort();
  t.same(lag, ['{process="primary"}', `{process="worker:${a}"}`, `{process="worker:${b}"}`].sort(), 'event-loop lag per process');

  // A stopped worker cannot answer: the scrape still answers, with the other worker's share only.
  process.kill(a, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(a, 'SIGCONT');
    } catch {
      // gone already
    }
  });
  const stopped = await call(`${ops}/metrics`);
  process.kill(a, 'SIGCONT');
  t.equal(stopped.status, 200);
  t.equal(samples(stopped.text, 'throughway_cluster_workers').get('{state="answered"}'), 1, 'one worker answered');
  t.equal(samples(stopped.text, 'throughway_cluster_workers').get('{state="silent"}'), 1, 'one was silent');
  const share = api(stopped.text);
  t.ok(share > 0 && share < N, `the answering worker served some but not all of the ${N} calls (${share}): both served`);
  t.match(node.out, new RegExp(`worker\\(s\\) pid ${a} did not answer the metrics scrape`), 'the silent worker is named');
  t.ok(await until(async () => api((await call(`${ops}/metrics`)).text) === N, 5000), 'once it runs again its calls are back in the sum');

  // A killed worker: /health is DOWN and names it until the replacement is ready.
  process.kill(b, 'SIGKILL');
  let h = await call(`${ops}/health`);
  t.ok(await until(async () => (h = await call(`${ops}/health`)).status === 503, 5000), `DOWN after the kill: ${h.text}`);
  t.same(h.body.failing, ['cluster_workers'], h.text);
  t.match(String(check(h)?.message), new RegExp(`^1 of 2 workers ready: worker pid ${b} died \\(SIGKILL\\), restarting`));
  t.equal((check(h)?.details as { exited: { pid: number }[] }).exited[0]?.pid, b, 'details name the dead pid');
  t.ok(await until(async () => (h = await call(`${ops}/health`)).status === 200, 20_000), `UP again after the restart: ${h.text}`);
  const now = (check(h)?.details as { workers: { pid: number }[] }).workers.map((w) => w.pid);
  t.equal(now.length, 2);
  t.notOk(now.includes(b), 'the dead worker is replaced');
  t.notOk('exited' in (check(h)?.details as object), 'and no longer reported');

  node.child.kill('SIGTERM');
  t.equal(await node.exited, 0, 'SIGTERM: exit 0');
});

t.test('a gateway-worker cluster: the primary opens the operations port and shows its workers', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const open = {
    'open.toml': apiToml({ name: 'Open', context: '/open', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
  };
  const k = await spawnStarted({
    salt: 62,
    toml: (offset) => nodeToml({ offset, role: 'api-key-manager', channel: 'unused' }),
    apis: open,
    marker: /Key manager: /,
  });
  t.teardown(() => k.node.stop());
  t.ok(k.ok, `${k.node.out}\n${k.node.err}`);
  const kmPort = 9763 + k.offset;
  const toml = (offset: number): string =>
    nodeToml({ offset, role: 'gateway-worker', channel: 'unused', km: kmPort, extra: '[throughway.cluster]\nworkers = "2"\n' });
  const {
    node: gw,
    offset,
    ok,
  } = await spawnStarted({ salt: 62, index: 1, toml, apis: open, marker: /cluster: 2 of 2 workers ready/, ms: 30_000 });
  t.teardown(() => gw.stop('SIGKILL'));
  t.ok(ok, `${gw.out}\n${gw.err}`);
  const ops = `http://127.0.0.1:${9763 + offset}`;
  t.match(
    gw.out,
    new RegExp(`^  operations\\s+port ${9763 + offset}: /health/live, /health/ready, /health, /metrics`, 'm'),
    'the primary opens the operations port',
  );
  for (let i = 0; i < 4; i++) t.equal(await get(8280 + offset, `/open/1.0.0/${i}`), 200);
  let text = '';
  t.ok(
    await until(async () => total((text = (await call(`${ops}/metrics`)).text), 'throughway_requests_total') === 4, 5000),
    "the workers' calls in the primary's /metrics",
  );
  t.equal(samples(text, 'throughway_cluster_workers').get('{state="answered"}'), 2);
  const h = await call(`${ops}/health`);
  t.equal(h.status, 200, h.text);
  t.match(h.text, /"name":"cluster_workers","order":99,"status":"UP"/);
});
