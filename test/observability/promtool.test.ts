/**
 * The exposition passes `promtool check metrics` (Debian's prometheus package; docs/operations.md,
 * "Metrics"): a real scrape of a node after traffic of every kind (calls answered 200, a call that matched
 * no API, a transport fault against a closed backend port, a refused token), so the histograms and the
 * labelled series exist, piped into promtool. It exited 3 on prom-client's `nodejs_active_*_total` gauges.
 * Skips with the reason when promtool is absent.
 */
import * as fs from 'node:fs';
import t from 'tap';
import { apiToml, closedPort, echoBackend, request } from '../gateway/helpers';
import { get, NODE_TOML, parseMetrics, PROMTOOL, promtoolCheck, startTestNode } from './node-helpers';
import { DROPPED_DEFAULT_METRICS } from '../../lib/observability/metrics';

t.test('promtool check metrics passes on a scrape after traffic', async (t) => {
  if (!fs.existsSync(PROMTOOL)) {
    t.skip(`${PROMTOOL} not installed (Debian's prometheus package): the exposition is not linted`, () => undefined);
    return;
  }
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const dead = await closedPort();
  const n = await startTestNode(`${NODE_TOML}[server_health_check]\nenable = true\n`, {
    'open.toml': apiToml({
      name: 'Open',
      context: '/open',
      endpoint: `http://127.0.0.1:${backend.port}`,
      resources: [['/*', ['GET', 'POST']]],
    }),
    'dead.toml': apiToml({ name: 'Dead', context: '/dead', endpoint: `http://127.0.0.1:${dead}`, resources: [['/*', ['GET']]] }),
    'secured.toml': apiToml({
      name: 'Secured',
      context: '/secured',
      endpoint: `http://127.0.0.1:${backend.port}`,
      resources: [['/*', ['GET']]],
    }).replace('auth = "none"', 'auth = "oauth2"'),
  });
  t.teardown(() => n.close());
  for (let i = 0; i < 5; i++) t.equal((await request(n.gw, `/open/1.0.0/x${i}`)).status, 200);
  t.equal((await request(n.gw, '/nothing/here')).status, 404, 'a call that matches no API');
  t.ok((await request(n.gw, '/dead/1.0.0/x')).status >= 500, 'a transport fault');
  t.equal((await request(n.gw, '/secured/1.0.0/x', { headers: { authorization: 'Bearer not-a-token' } })).status, 401, 'a refused token');

  const r = await get(n.mgmt, '/metrics');
  t.equal(r.status, 200);
  const s = parseMetrics(r.body);
  t.ok(
    s.samples.some(
      (x) =>
        x.name === 'throughway_request_duration_seconds_bucket' && x.labels.api === 'Open:1.0.0' && x.labels.le === '+Inf' && x.value === 5,
    ),
    'a histogram with the calls',
  );
  t.ok(
    s.samples.some((x) => x.name === 'throughway_transport_faults_total' && x.value >= 1),
    'a labelled fault series',
  );
  t.ok(
    s.samples.some((x) => x.name === 'nodejs_active_handles'),
    'the labelled handles gauge stays',
  );
  for (const name of DROPPED_DEFAULT_METRICS) t.notOk(s.types.has(name), `${name} is not exposed`);

  const lint = promtoolCheck(r.body);
  t.equal(lint.status, 0, `promtool check metrics:\n${lint.output}`);
  t.equal(lint.output, '', 'nothing to report');
});
