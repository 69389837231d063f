/**
 * GET /metrics on the management port: the Prometheus text format, parsed line by line; the values
 * change as expected after requests and faults (requests by API, status and fault code; transport
 * faults by base and state; latency histograms; connections by state; pools); the registration
 * interface for other parts.
 */
import * as net from 'node:net';
import t from 'tap';
import { apiToml, closedPort, echoBackend, request } from '../gateway/helpers';
import { Metrics, HistogramCounts } from '../../lib/observability/metrics';
import { NODE_TOML, parseMetrics, scrape, startTestNode, get } from './node-helpers';

t.test('requests, faults, latencies, connections and pools, as scraped', async (t) => {
  const backend = await echoBackend();
  const dead = await closedPort();
  const n = await startTestNode(NODE_TOML, {
    a: apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
    d: apiToml({ name: 'D', context: '/d', endpoint: `http://127.0.0.1:${dead}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(async () => {
    await n.close();
    await backend.close();
  });

  const raw = await get(n.mgmt, '/metrics');
  t.equal(raw.status, 200);
  t.equal(raw.type, 'text/plain; version=0.0.4; charset=utf-8', 'the Prometheus text format content type');
  const before = parseMetrics(raw.body);
  t.equal(before.types.get('throughway_requests_total'), 'counter');
  t.equal(before.types.get('throughway_request_duration_seconds'), 'histogram');
  t.equal(before.types.get('throughway_backend_duration_seconds'), 'histogram');
  t.equal(before.types.get('throughway_connections'), 'gauge');
  t.ok(before.types.has('nodejs_eventloop_lag_seconds'), 'event-loop lag (prom-client default metrics)');
  t.equal(before.sum('throughway_requests_total'), 0, 'no request yet');
  t.equal(before.sum('throughway_transport_faults_total'), 0);

  for (let i = 0; i < 3; i++) t.equal((await request(n.gw, '/a/1.0.0/x')).status, 200);
  t.equal((await request(n.gw, '/a/1.0.0/status/503')).status, 503, 'a backend 503 is passed through');
  t.equal((await request(n.gw, '/nope/1.0.0/x')).status, 404);
  const refused = await request(n.gw, '/d/1.0.0/x');
  t.equal(refused.status, 502);
  t.equal(refused.json().fault.code, 101503, 'connection refused before a byte was sent: 101503 + 0');

  const after = await scrape(n.mgmt);
  t.equal(after.value('throughway_requests_total', { api: 'A:1.0.0', status: '200', fault_code: '' }), 3, 'three 200s of API A');
  t.equal(
    after.value('throughway_requests_total', { api: 'A:1.0.0', status: '503', fault_code: '' }),
    1,
    "the backend's 503 carries no fault code",
  );
  t.equal(
    after.value('throughway_requests_total', { api: '', status: '404', fault_code: '103005' }),
    1,
    'no API: 404, 103005, no API label',
  );
  t.equal(after.value('throughway_requests_total', { api: 'D:1.0.0', status: '502', fault_code: '101503' }), 1);
  t.equal(after.sum('throughway_requests_total'), 6);
  t.equal(
    after.value('throughway_transport_faults_total', { side: 'target', base: '101503', state: 'REQUEST_READY', code: '101503' }),
    1,
    'connection refused: base 101503 in REQUEST_READY (0), by base and state',
  );
  t.equal(after.sum('throughway_transport_faults_total'), 1);

  // Histograms: cumulative buckets, +Inf = count, one observation per request (backend ones per forward).
  t.equal(after.value('throughway_request_duration_seconds_count', { api: 'A:1.0.0' }), 4);
  t.equal(after.value('throughway_request_duration_seconds_bucket', { api: 'A:1.0.0', le: '+Inf' }), 4);
  t.equal(after.value('throughway_request_duration_seconds_count', { api: '' }), 1);
  t.equal(after.value('throughway_backend_duration_seconds_count', { api: 'A:1.0.0' }), 4);
  t.equal(
    after.value('throughway_backend_duration_seconds_count', { api: '' }),
    undefined,
    'a call answered by the gateway has no backend time',
  );
  const buckets = after.samples
    .filter((s) => s.name === 'throughway_request_duration_seconds_bucket' && s.labels.api === 'A:1.0.0')
    .map((s) => s.value);
  t.ok(
    buckets.every((v, i) => i === 0 || v >= (buckets[i - 1] as number)),
    'buckets are cumulative',
  );
  t.ok((after.value('throughway_request_duration_seconds_sum', { api: 'A:1.0.0' }) ?? -1) > 0);

  // Pools: the backend's keep-alive connection is idle in its pool after the calls.
  const key = `127.0.0.1:${backend.port}`;
  t.equal(after.value('throughway_pool_connections', { target: key, kind: 'open' }), 1, 'one pooled connection to the backend');
  t.equal(after.value('throughway_pool_connections', { target: key, kind: 'idle' }), 1);
  t.equal(after.value('throughway_pool_connections', { target: key, kind: 'waiting' }), 0);
  t.equal(after.value('throughway_target_connections_created_total'), 2, 'one to A, one attempt to D');
  t.equal(after.value('throughway_target_connections_reused_total'), 3);
  t.equal(after.value('throughway_connections', { side: 'target', state: 'REQUEST_READY' }), 1, 'the idle backend socket');

  // Connections by state: a client that sent half a head is in REQUEST_HEAD.
  const c = net.connect(n.gw, '127.0.0.1');
  await new Promise<void>((resolve) => c.once('connect', () => resolve()));
  c.write('GET /a/1.0.0/x HTTP/1.1\r\nHost: x\r\n');
  let open = await scrape(n.mgmt);
  for (let i = 0; i < 100 && open.value('throughway_connections', { side: 'source', state: 'REQUEST_HEAD' }) !== 1; i++) {
    await new Promise((r) => setTimeout(r, 20));
    open = await scrape(n.mgmt);
  }
  t.equal(
    open.value('throughway_connections', { side: 'source', state: 'REQUEST_HEAD' }),
    1,
    'a half-sent head: one source in REQUEST_HEAD',
  );
  t.equal(open.value('throughway_source_connections_accepted_total'), 7);
  c.destroy();
});

t.test('registration interface: collectors read at scrape time', async (t) => {
  const m = new Metrics({ processMetrics: false });
  let cacheHits = 0;
  m.register({ name: 'throughway_token_cache_hits_total', help: 'Token cache hits.', type: 'counter', collect: () => cacheHits });
  m.register({
    name: 'throughway_throttled_requests_total',
    help: 'Throttled requests by level.',
    type: 'counter',
    collect: () => [
      { labels: { level: 'application' }, value: 2 },
      { labels: { level: 'api "quoted"' }, value: 1 },
    ],
  });
  m.register({ name: 'throughway_worker_pool_queue', help: 'Queued tasks.', type: 'gauge', collect: async () => 4 });
  let s = parseMetrics(await m.text());
  t.equal(s.value('throughway_token_cache_hits_total'), 0);
  cacheHits = 5;
  s = parseMetrics(await m.text());
  t.equal(s.value('throughway_token_cache_hits_total'), 5, 'the value is read when scraped');
  t.equal(s.value('throughway_throttled_requests_total', { level: 'application' }), 2);
  t.equal(s.value('throughway_throttled_requests_total', { level: 'api "quoted"' }), 1, 'label values escaped and parsed back');
  t.equal(s.value('throughway_worker_pool_queue'), 4, 'an async collector');
  t.equal(s.types.get('throughway_worker_pool_queue'), 'gauge');
  t.equal(s.value('throughway_requests_total'), undefined, 'no gateway attached: no request samples');
  t.throws(
    () => m.register({ name: 'throughway_token_cache_hits_total', help: 'x', type: 'counter', collect: () => 0 }),
    /already been registered/,
  );
  t.throws(() => m.register({ name: 'bad name', help: 'x', type: 'gauge', collect: () => 0 }), /invalid metric name/);
});

t.test('histogram counts: bucket edges are inclusive (le), values above the last bucket only in +Inf', async (t) => {
  const h = new HistogramCounts([0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 1, 7]) h.observe(v);
  const s = h.samples('x', {});
  t.same(
    s.map((v) => [v.metricName, v.labels.le, v.value]),
    [
      ['x_bucket', 0.1, 2],
      ['x_bucket', 1, 4],
      ['x_bucket', '+Inf', 5],
      ['x_sum', undefined, 8.65],
      ['x_count', undefined, 5],
    ],
  );
});

t.test('[throughway.operations] metrics = false: no /metrics', async (t) => {
  const n = await startTestNode(`${NODE_TOML}[throughway.operations]\nmetrics = false\n`);
  t.teardown(() => n.close());
  t.equal((await get(n.mgmt, '/metrics')).status, 404);
  t.equal(n.node.metrics, undefined);
});

t.test("docs/operations.md's embedding example: the routes on an embedder's own server", async (t) => {
  const {
    createGateway,
    createLogger,
    gatewayObserver,
    loadConfig,
    Metrics: M,
    Health,
    opsRoutes,
    registerComponentMetrics,
    workerPoolChecker,
  } = await import('../../lib');
  const http = await import('node:http');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { confDir } = await import('../gateway/helpers');
  const backend = await echoBackend();
  const dir = confDir(NODE_TOML, {
    a: apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
  });
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  const logger = createLogger('silent');
  const metrics = new M();
  const gateway = createGateway({ loaded, logger, observe: gatewayObserver({ logger, metrics }), cwd: dir });
  metrics.attach({ transport: gateway.transport, apiOf: (url) => gateway.apiOf(url) });
  registerComponentMetrics(metrics, () => gateway);
  const health = new Health();
  health.register(workerPoolChecker(() => gateway, { order: 99, queueLimit: 4 }));
  const ops = opsRoutes({ metrics, health, logger });
  const server = http.createServer((req, res) => {
    void ops(req, res, new URL(req.url ?? '/', 'http://x').pathname).then((done) => {
      if (!done) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const a = await gateway.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => {
    await gateway.close();
    server.close();
    await backend.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const port = (server.address() as net.AddressInfo).port;
  t.equal((await request(a.port, '/a/1.0.0/x')).status, 200);
  const s = await scrape(port);
  t.equal(s.value('throughway_requests_total', { api: 'A:1.0.0', status: '200', fault_code: '' }), 1);
  t.equal(s.value('throughway_worker_pool_queue'), 0, 'the component metrics too');
  const h = await get(port, '/health');
  t.equal(h.status, 200);
  t.match(h.body, /worker_pool_health_checker/);
  t.equal((await get(port, '/other')).status, 404);
});

t.test('docs/operations.md names every throughway metric a scrape shows, and only those', async (t) => {
  const fs = await import('node:fs');
  const path = await import('node:path');
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'operations.md'), 'utf8');
  const table = doc.slice(doc.indexOf('| metric | type | labels | meaning |'), doc.indexOf('### Adding metrics'));
  const documented = new Map<string, string>();
  for (const m of table.matchAll(/^\| `(throughway_[a-z_]+)` \| (\w+) \|/gm)) documented.set(m[1] ?? '', m[2] ?? '');
  const n = await startTestNode(NODE_TOML);
  t.teardown(() => n.close());
  const s = await scrape(n.mgmt);
  const shown = new Map([...s.types].filter(([name]) => name.startsWith('throughway_')));
  t.same([...documented].sort(), [...shown].sort(), 'same names and types');
  t.ok(documented.size >= 13);
});

t.test('HistogramCounts: each value in the first bucket whose bound it does not exceed, cumulative samples', async (t) => {
  const h = new HistogramCounts([0.005, 0.01, 0.1]);
  for (const v of [0.001, 0.005, 0.006, 0.01, 0.05, 0.2]) h.observe(v);
  t.same([...h.counts], [2, 2, 1, 1], 'le 0.005: 0.001 and 0.005; le 0.01: 0.006, 0.01; le 0.1: 0.05; above: 0.2');
  t.same(
    h.samples('x', {}).map((s) => Math.round(s.value * 1000) / 1000),
    [2, 4, 5, 6, 0.272, 6],
  );
});
