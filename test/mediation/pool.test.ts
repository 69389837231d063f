/**
 * The mediation worker pool: sized from [mediation] engine.*, created on first use, a full finite queue
 * answered at once (103060, 503) instead of hanging, -1 as an unbounded queue, and the spec's
 * "worker threads were blocked during the last minute" alert at most once a minute (fake clock).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { BlockedThreadsAlert, MediationPool, PoolError, mediationSettingsFrom } from '../../lib/mediation';
import type { MediateTask } from '../../lib/mediation/steps';
import { BASE_TOML, apiToml, echoBackend, memoryLogger, request, startGateway } from '../gateway/helpers';

function settingsOf(extra: string): ReturnType<typeof mediationSettingsFrom> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-med-'));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), BASE_TOML + extra);
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  fs.rmSync(dir, { recursive: true, force: true });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return mediationSettingsFrom(loaded.config);
}

t.test('sizes from [mediation] engine.*: -1 is an unbounded queue, core threads at most max', async (t) => {
  const d = settingsOf('');
  const cores = os.availableParallelism();
  t.same(
    { ...d.pool },
    {
      minThreads: Math.min(20, cores),
      maxThreads: Math.min(100, cores),
      maxQueue: 10 + 100 - Math.min(100, cores),
      workerHeapMb: 256,
      idleTimeout: 60000,
    },
    "the spec's defaults, capped at one thread per core; the threads capped off wait in the queue",
  );
  const wide = settingsOf('[throughway.mediation]\nthread_cap = 1000\n');
  t.same([wide.pool.minThreads, wide.pool.maxThreads], [20, 100], "thread_cap lifts the cap: the spec's counts as written");
  const one = settingsOf('[mediation]\nengine.core_threads = 8\nengine.max_threads = 64\n[throughway.mediation]\nthread_cap = 1\n');
  t.same([one.pool.minThreads, one.pool.maxThreads], [1, 1], 'an explicit cap below the counts wins');
  const s = settingsOf(
    '[mediation]\nengine.core_threads = 8\nengine.max_threads = 4\nengine.threads_queue_length = -1\n[throughway.mediation]\nthread_cap = 16\n',
  );
  t.equal(s.pool.minThreads, 4);
  t.equal(s.pool.maxThreads, 4);
  t.equal(s.pool.maxQueue, Infinity, 'piscina rejects -1; Infinity is its unbounded queue');
});

/** A task that keeps its worker busy: a script with a synchronous wait of `ms`. */
function busyTask(file: string): MediateTask {
  return {
    body: new Uint8Array(0),
    format: 'binary',
    validate: undefined,
    script: {
      file,
      hook: 'onRequest',
      timeout: 5000,
      maxResult: 1 << 20,
      message: { method: 'GET', path: '/', headers: {}, api: { name: 'a', version: '1' } },
    },
    convertTo: undefined,
    conversion: { preserveNamespace: false, autoArray: false, autoPrimitive: false },
  };
}

t.test('queue full: with every thread busy and the queue at its length, the next task is refused at once', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-med-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'busy.js');
  fs.writeFileSync(file, 'module.exports.onRequest = () => { const end = Date.now() + 400; while (Date.now() < end) {} };');
  const logger = memoryLogger();
  const pool = new MediationPool({ minThreads: 1, maxThreads: 1, maxQueue: 1, workerHeapMb: 64 }, { logger });
  t.teardown(() => pool.close());
  t.equal(pool.started, false, 'nothing started before the first task');
  const running = pool.run(busyTask(file));
  const queued = pool.run(busyTask(file));
  t.equal(pool.started, true);
  t.equal(pool.pending, 2);
  const refused = await pool.run(busyTask(file)).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(refused instanceof PoolError, 'refused');
  t.equal((refused as PoolError).kind, 'queue_full');
  t.equal(pool.pending, 2, 'the refused task never entered');
  await running;
  await queued;
  t.equal(pool.pending, 0);
});

t.test('queue full through the gateway: 103060 (503) at once while the others are served', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const toml = `${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 1\nengine.threads_queue_length = 0\nengine.script_mediator_pool_size = 10\n`;
  const api = apiToml({
    context: '/q',
    endpoint: `http://127.0.0.1:${be.port}`,
    resources: [['/*', ['GET']]],
    extra: '[mediation]\nscript = "../busy.js"',
  });
  const g = await startGateway(
    toml,
    { q: api },
    { 'busy.js': 'module.exports.onRequest = () => { const end = Date.now() + 500; while (Date.now() < end) {} };' },
  );
  t.teardown(() => g.close());
  const first = request(g.port, '/q/1.0.0/a');
  // Wait until the first call occupies the only thread.
  for (let i = 0; i < 300 && g.gw.mediation.pool.pending === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const second = await request(g.port, '/q/1.0.0/b');
  t.equal(second.status, 503);
  t.equal(second.json().fault.code, 103060);
  t.equal(second.json().fault.message, 'Mediation queue full');
  t.equal((await first).status, 200, 'the call holding the thread completes');
});

t.test('blocked-threads alert: logged once for a minute that saw saturation, never more than once a minute', async (t) => {
  const logger = memoryLogger();
  let now = 1_000_000;
  const alert = new BlockedThreadsAlert(logger, 2, () => now);
  const alerts = (): number => logger.lines.filter((l) => l.event === 'worker_threads_blocked').length;
  alert.submitted(1);
  alert.submitted(2);
  now += 61_000;
  alert.check();
  t.equal(alerts(), 0, 'threads busy up to the maximum but nothing waited: no alert');
  alert.submitted(3); // a third task while two threads are busy: blocked
  alert.submitted(4);
  now += 30_000;
  alert.check();
  t.equal(alerts(), 0, 'not before the minute is over');
  now += 31_000;
  alert.check();
  t.equal(alerts(), 1, 'the minute is over: one alert');
  const line = logger.lines.find((l) => l.event === 'worker_threads_blocked');
  t.equal(line?.level, 'warn');
  t.equal(line?.message, 'worker threads were blocked during the last minute');
  t.equal(line?.blockedTasks, 2);
  t.equal(line?.peakQueued, 2);
  alert.check();
  alert.submitted(3);
  now += 10_000;
  alert.check();
  t.equal(alerts(), 1, 'at most once a minute');
  now += 50_000;
  alert.check();
  t.equal(alerts(), 2, 'the next minute that saw it alerts again');
  now += 120_000;
  alert.check();
  t.equal(alerts(), 2, 'a quiet minute: nothing');
});

t.test('a plain pass-through gateway starts no worker thread and its phase allocates no Promise', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(BASE_TOML, {
    p: apiToml({ context: '/p', endpoint: `http://127.0.0.1:${be.port}`, resources: [['/*', ['POST']]] }),
  });
  t.teardown(() => g.close());
  const res = await request(g.port, '/p/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a":1}' });
  t.equal(res.status, 200);
  t.equal(g.gw.mediation.pool.started, false);
  t.equal(g.gw.mediation.pool.threads, 0);
  const decision = g.gw.route({
    method: 'POST',
    url: '/p/1.0.0/x',
    headers: ['Host', 'h', 'Content-Type', 'application/json'],
    versionMajor: 1,
    versionMinor: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 1,
    secure: false,
    connectionId: 1,
    requestNumber: 1,
    contentLength: 7,
    chunked: false,
  });
  t.notOk(decision instanceof Promise, 'the chain stayed synchronous');
});
