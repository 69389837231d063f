/**
 * Script mediation limits: a script that loops forever is stopped by the time limit (103066), one that
 * allocates without bound has its worker ended by the heap limit (103067), and the gateway goes on
 * serving; engine.script_mediator_pool_size bounds one script's concurrent calls.
 */
import t from 'tap';
import { echoBackend, request, startGateway } from '../gateway/helpers';
import { SCRIPTS, TOML, api } from './script-helpers';

t.test('a script that loops forever is stopped by the time limit (103066); the worker thread survives a sync loop', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(
    TOML,
    { s: api(be, '../scripts/loops.js'), a: api(be, '../scripts/async-loops.js', '/a'), c: api(be, '../scripts/change.js', '/c') },
    SCRIPTS,
  );
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(res.status, 500);
  t.equal(res.json().fault.code, 103066);
  t.match(res.json().fault.description, /longer than 300 ms/);
  const asyncLoop = await request(g.port, '/a/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(asyncLoop.status, 500, 'an endless asynchronous loop: its worker thread is ended');
  t.equal(asyncLoop.json().fault.code, 103066);
  const after = await request(g.port, '/c/1.0.0/x', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"items":[]}',
  });
  t.equal(after.status, 200, 'scripts run again afterwards');
});

t.test('a script that allocates without bound ends its worker (103067); the gateway goes on', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/allocates.js'), c: api(be, '../scripts/change.js', '/c') }, SCRIPTS);
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(res.status, 500);
  // The heap limit (64 MiB) is reached well before the time limit in most runs; either stops it.
  t.ok([103067, 103066].includes(res.json().fault.code), `fault ${res.json().fault.code}`);
  const after = await request(g.port, '/c/1.0.0/x', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"items":[]}',
  });
  t.equal(after.status, 200);
});

t.test('script_mediator_pool_size bounds the calls of one script running at once', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const slow = { 'scripts/slow.js': `module.exports.onRequest = () => { const end = Date.now() + 150; while (Date.now() < end) {} };` };
  // A 150 ms busy loop under the 300 ms limit failed now and then (103066) on a loaded 2-core machine,
  // where a thread can wait for a core longer than that: this test is about the pool size, so its limit
  // is ten seconds.
  const g = await startGateway(
    TOML.replace('engine.max_threads = 2', 'engine.max_threads = 4').replace('script_timeout = "300ms"', 'script_timeout = "10s"'),
    { s: api(be, '../scripts/slow.js') },
    slow,
  );
  t.teardown(() => g.close());
  let peak = 0;
  const pool = g.gw.mediation.pool;
  const timer = setInterval(() => (peak = Math.max(peak, pool.pending)), 5);
  const all = await Promise.all([1, 2, 3, 4, 5].map(() => request(g.port, '/s/1.0.0/x')));
  clearInterval(timer);
  t.same(
    all.map((r) => r.status),
    [200, 200, 200, 200, 200],
  );
  t.ok(peak <= 2, `at most 2 calls of the script in the pool at once (saw ${peak})`);
  t.ok(peak >= 1);
});
