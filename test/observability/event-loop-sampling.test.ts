/**
 * The node's metrics sample the event loop's delay every 100 ms, not every 10 ms (prom-client's default):
 * that libuv timer woke every node, idle or not, 100 times a second (docs/performance.md, "The deployed
 * node"). perf_hooks.monitorEventLoopDelay is wrapped before the metrics are made, so the resolution asked
 * for is seen; the lag gauges are still served.
 */
import t from 'tap';
import perfHooks = require('node:perf_hooks');

t.test('one event-loop delay monitor per Metrics, at 100 ms; the lag metrics still there', async (t) => {
  const asked: (number | undefined)[] = [];
  const real = perfHooks.monitorEventLoopDelay;
  // prom-client reads the function from the module object on each call (require('perf_hooks').monitorEventLoopDelay).
  (perfHooks as { monitorEventLoopDelay: typeof real }).monitorEventLoopDelay = (o) => {
    asked.push(o?.resolution);
    return real(o);
  };
  t.teardown(() => {
    (perfHooks as { monitorEventLoopDelay: typeof real }).monitorEventLoopDelay = real;
  });
  const { Metrics, EVENT_LOOP_SAMPLE_MS } = await import('../../lib/observability/metrics');
  const m = new Metrics();
  t.equal(EVENT_LOOP_SAMPLE_MS, 100);
  t.same(asked, [100], 'the monitor asked for 100 ms samples');
  const text = await m.registry.metrics();
  t.match(text, /^nodejs_eventloop_lag_p99_seconds /m);
  t.match(text, /^nodejs_eventloop_lag_seconds /m);
  t.same(asked.length, 1, 'scraping makes no new monitor');
  new Metrics({ processMetrics: false });
  t.same(asked.length, 1, 'without process metrics: no monitor');
});
