/**
 * Draining a worker under keep-alive load (docs/scale-out.md, "Cluster mode"): clients that keep their
 * connections (node's http Agent, keepAlive) send on them back to back across a SIGHUP roll of a real
 * cluster and across a SIGTERM of one worker. The stopping worker marks itself closing, answers every
 * request that arrives with `Connection: close` and closes a connection only after that response (or
 * after it stayed idle through the drain window), so no request meets a closed connection: zero failed.
 */
import * as http from 'node:http';
import t from 'tap';
import { apiToml, echoBackend, until } from '../gateway/helpers';
import { baseOffset, nodeToml, spawnNode, started } from './helpers';

const CONCURRENCY = 8;

interface Load {
  readonly ok: number;
  readonly failed: number;
  readonly errors: readonly string[];
  /** Responses that said Connection: close (the drain telling a client). */
  readonly closes: number;
  stop(): Promise<void>;
}

/** CONCURRENCY callers in a loop, each request on the shared keep-alive agent; every outcome counted. */
function keepAliveLoad(port: number, path: string): Load {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const s = { ok: 0, failed: 0, closes: 0, errors: [] as string[], running: true };
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const fail = (why: string): void => {
        s.failed++;
        if (s.errors.length < 10) s.errors.push(why);
        resolve();
      };
      const req = http.request({ host: '127.0.0.1', port, path, agent }, (res) => {
        if (res.headers.connection === 'close') s.closes++;
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) s.ok++;
          else fail(`status ${res.statusCode ?? 0}`);
          resolve();
        });
        res.on('error', (err) => fail(err.message));
      });
      req.on('error', (err) => fail(`${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`));
      req.setTimeout(15_000, () => req.destroy(new Error('no answer within 15 s')));
      req.end();
    });
  const loops = Array.from({ length: CONCURRENCY }, async () => {
    while (s.running) await one();
  });
  return {
    get ok() {
      return s.ok;
    },
    get failed() {
      return s.failed;
    },
    get errors() {
      return s.errors;
    },
    get closes() {
      return s.closes;
    },
    async stop() {
      s.running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

t.test('keep-alive load across a SIGHUP roll and a SIGTERM of one worker: no request lost', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(61);
  const gwPort = 8280 + base;
  const toml = nodeToml({
    offset: base,
    role: 'default',
    channel: 'unused',
    extra: '[throughway.cluster]\nworkers = "2"\nrestart_delay_min = 50\n',
  });
  const node = spawnNode(toml, {
    'open.toml': apiToml({ name: 'Open', context: '/open', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(() => node.stop('SIGKILL'));
  if (!t.ok(await started(node, /cluster: 2 of 2 workers ready/, 30_000), 'the cluster started')) t.comment(node.out, node.err);

  const roll = keepAliveLoad(gwPort, '/open/1.0.0/x');
  t.ok(await until(() => roll.ok > 200, 20_000), 'keep-alive load running');
  const closesBefore = roll.closes;
  node.child.kill('SIGHUP');
  if (!t.ok(await until(() => /cluster: rolled 2 worker\(s\)/.test(node.out), 60_000), 'rolled')) t.comment(node.out);
  const okAtRoll = roll.ok;
  t.ok(await until(() => roll.ok > okAtRoll + 200, 20_000), 'the load goes on after the roll');
  await roll.stop();
  t.equal(roll.failed, 0, `the roll loses no request (${roll.failed} failed of ${roll.ok + roll.failed}: ${roll.errors.join('; ')})`);
  t.ok(roll.closes > closesBefore, `the stopping workers said Connection: close (${roll.closes - closesBefore} times)`);

  // SIGTERM to one worker: it drains, exits 0, and the primary starts another.
  const pids = [...node.out.matchAll(/cluster: worker \d+ \(pid (\d+)\) ready/g)].map((m) => Number(m[1]));
  const victim = pids[pids.length - 1] as number;
  const term = keepAliveLoad(gwPort, '/open/1.0.0/x');
  t.ok(await until(() => term.ok > 200, 20_000), 'keep-alive load running');
  const readyBefore = (node.out.match(/\(pid \d+\) ready/g) ?? []).length;
  process.kill(victim, 'SIGTERM');
  if (!t.ok(await until(() => /cluster: worker \d+ died \(exit 0\)/.test(node.out), 30_000), 'the worker stopped with exit 0'))
    t.comment(node.out);
  t.ok(await until(() => (node.out.match(/\(pid \d+\) ready/g) ?? []).length > readyBefore, 30_000), 'a new worker replaced it');
  const okAtTerm = term.ok;
  t.ok(await until(() => term.ok > okAtTerm + 200, 20_000), 'the load goes on');
  await term.stop();
  t.equal(
    term.failed,
    0,
    `SIGTERM of one worker loses no request (${term.failed} failed of ${term.ok + term.failed}: ${term.errors.join('; ')})`,
  );

  node.child.kill('SIGTERM');
  t.equal(await node.exited, 0, 'SIGTERM: exit 0');
});
