/**
 * Cluster mode on a real process ([throughway.cluster] workers = 2; docs/scale-out.md): the primary runs
 * the key manager, two workers share the gateway port. Under a steady load of fresh connections:
 *  - a worker killed (SIGKILL) loses at most the calls in flight on it, every other call succeeds, and it
 *    is restarted;
 *  - SIGHUP rolls the workers one by one without losing any call;
 *  - a token issued by the primary's key manager is accepted by the workers (they are its gateway-workers);
 *  - SIGTERM stops everything and exits 0.
 */
import * as http from 'node:http';
import t from 'tap';
import { apiToml, echoBackend, until } from '../gateway/helpers';
import { ADMIN, baseOffset, http as call, nodeToml, securedApi, spawnNode, started } from './helpers';

const CONCURRENCY = 6;

/** One GET on a fresh connection: the status, or 0 when the connection failed. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers: { Connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(10_000, () => req.destroy());
    req.end();
  });
}

/** Keeps CONCURRENCY callers busy until stopped; counts outcomes. */
function load(port: number, path: string): { ok: number; failed: number; other: number; stop(): Promise<void> } {
  const s = { ok: 0, failed: 0, other: 0, running: true };
  const loops = Array.from({ length: CONCURRENCY }, async () => {
    while (s.running) {
      const status = await get(port, path);
      if (status === 200) s.ok++;
      else if (status === 0) s.failed++;
      else s.other++;
    }
  });
  return {
    get ok() {
      return s.ok;
    },
    get failed() {
      return s.failed;
    },
    get other() {
      return s.other;
    },
    async stop() {
      s.running = false;
      await Promise.all(loops);
    },
  };
}

t.test('two workers share the gateway port; a killed worker loses only its in-flight calls; SIGHUP rolls; SIGTERM stops', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(30);
  const gwPort = 8280 + base;
  const kmPort = 9763 + base;
  const toml = nodeToml({
    offset: base,
    role: 'default',
    channel: 'unused',
    extra: '[throughway.cluster]\nworkers = "2"\nrestart_delay_min = 50\n',
  });
  const node = spawnNode(toml, {
    'open.toml': apiToml({ name: 'Open', context: '/open', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
    'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`),
  });
  t.teardown(() => node.stop('SIGKILL'));
  t.ok(await started(node, /cluster: 2 of 2 workers ready/, 30_000), `started:\n${node.out}\n${node.err}`);
  t.match(node.out, /the gateway does not run for role default/, 'the primary runs no gateway');
  t.match(node.out, new RegExp(`management HTTP\\s+port ${kmPort}`), 'the primary runs the key manager');
  const pids = [...node.out.matchAll(/cluster: worker \d+ \(pid (\d+)\) ready/g)].map((m) => Number(m[1]));
  t.equal(pids.length, 2, 'two workers');
  t.equal(await get(gwPort, '/open/1.0.0/x'), 200);

  // The workers follow the primary's key manager: keys, snapshot and events (IPC).
  t.equal((await call(`http://127.0.0.1:${kmPort}/admin/v1/applications`, { json: { name: 'C' }, auth: ADMIN })).status, 201);
  const keys = await call(`http://127.0.0.1:${kmPort}/admin/v1/applications/C/keys`, { json: {}, auth: ADMIN });
  t.equal(
    (
      await call(`http://127.0.0.1:${kmPort}/admin/v1/subscriptions`, {
        json: { application: 'C', api: '/shop', version: '1.0.0' },
        auth: ADMIN,
      })
    ).status,
    201,
  );
  const tok = await call(`http://127.0.0.1:${kmPort}/oauth2/token`, {
    form: { grant_type: 'client_credentials' },
    auth: { user: String(keys.body.consumerKey), password: String(keys.body.consumerSecret) },
  });
  const token = String(tok.body.access_token);
  // Fresh connections land on both workers: each must know the subscription added after it started.
  for (let i = 0; i < 6; i++)
    t.ok(
      await until(async () => (await call(`http://127.0.0.1:${gwPort}/shop/1.0.0/x`, { bearer: token })).status === 200, 2000, 20),
      `secured call ${i} accepted`,
    );

  // Kill one worker under load.
  const l = load(gwPort, '/open/1.0.0/x');
  t.ok(await until(() => l.ok > 50, 10_000), 'load running');
  const before = l.failed;
  process.kill(pids[0] as number, 'SIGKILL');
  t.ok(await until(() => /cluster: worker \d+ died \(SIGKILL\); restarting in 50 ms/.test(node.out), 5000), 'the death is seen');
  t.ok(await until(() => (node.out.match(/\(pid \d+\) ready/g) ?? []).length === 3, 15_000), `the worker is restarted\n${node.out}`);
  const okAtRestart = l.ok;
  t.ok(await until(() => l.ok > okAtRestart + 50, 10_000), 'load goes on');
  await l.stop();
  t.ok(
    l.failed - before <= CONCURRENCY,
    `no more calls lost than were in flight (${l.failed - before} of at most ${CONCURRENCY} concurrent)`,
  );
  t.equal(l.other, 0, 'no call got an error status');

  // SIGHUP rolls the workers under load: nothing lost.
  const r = load(gwPort, '/open/1.0.0/x');
  t.ok(await until(() => r.ok > 30, 10_000));
  node.child.kill('SIGHUP');
  t.ok(await until(() => /cluster: rolled 2 worker\(s\)/.test(node.out), 60_000), `rolled\n${node.out}`);
  const okAtRoll = r.ok;
  t.ok(await until(() => r.ok > okAtRoll + 30, 10_000));
  await r.stop();
  t.equal(r.failed, 0, `the roll loses no call (${r.failed} lost of ${r.ok + r.failed})`);
  t.equal(r.other, 0);

  node.child.kill('SIGTERM');
  t.equal(await node.exited, 0, 'SIGTERM: exit 0');
});
