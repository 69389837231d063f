/**
 * Private redis-server processes for the counting-mode tests: one Redis, or a 3-node Redis Cluster, on
 * free loopback ports below 32768 (the shared Redis on 6379 is left alone), each with its own temporary
 * directory, stopped and removed by stop().
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { sleep, until } from '../gateway/helpers';

/** Why redis-server cannot run here, or undefined. */
export function redisServerMissing(): string | undefined {
  for (const bin of ['redis-server', 'redis-cli']) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (r.error !== undefined || r.status !== 0) return `${bin} is not installed (${r.error?.message ?? r.stderr})`;
  }
  return undefined;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** `count` consecutive free loopback ports in 20000-32767 (a cluster bus port is the port + 10000: kept below 65536). */
export async function freePorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20000 + Math.floor(Math.random() * (32767 - 20000 - count));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    let ok = true;
    for (const p of ports) if (!(await portFree(p)) || !(await portFree(p + 10000))) ok = false;
    if (ok) return ports;
  }
  throw new Error('no free loopback ports below 32768');
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** SIGKILL: no shutdown, no save (the append-only file, fsynced at every write, keeps what was acknowledged). */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (it reloads its append-only file). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function pingable(port: number, ms: number): Promise<boolean> {
  return until(
    async () => {
      const c = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        retryStrategy: () => null,
      });
      c.on('error', () => undefined);
      try {
        await c.connect();
        return (await c.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        c.disconnect();
      }
    },
    ms,
    50,
  );
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));
}

/** One redis-server on `port` with `args`, in its own directory. */
export async function startRedis(port: number, args: readonly string[] = []): Promise<RedisServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-redis-'));
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--protected-mode',
        'no',
        ...args,
      ],
      { stdio: 'ignore' },
    );
    if (!(await pingable(port, 10_000))) throw new Error(`redis-server on ${port} did not start`);
  };
  await launch();
  const kill = async (): Promise<void> => {
    if (child === undefined) return;
    const c = child;
    child = undefined;
    c.kill('SIGKILL');
    await exited(c);
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill,
    restart: launch,
    async stop() {
      await kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisCluster {
  readonly nodes: readonly string[];
  readonly servers: readonly RedisServer[];
  stop(): Promise<void>;
}

/** Three cluster-enabled redis-servers joined by `redis-cli --cluster create` (no replicas), slots covered. */
export async function startCluster(): Promise<RedisCluster> {
  const ports = await freePorts(3);
  const servers: RedisServer[] = [];
  const stop = async (): Promise<void> => {
    for (const s of servers) await s.stop();
  };
  try {
    for (const p of ports)
      servers.push(
        await startRedis(p, ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000']),
      );
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    const made = spawnSync('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (made.status !== 0) throw new Error(`redis-cli --cluster create failed: ${made.stdout}${made.stderr}`);
    const ok = await until(
      () =>
        ports.every((p) =>
          /cluster_state:ok/.test(spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'], { encoding: 'utf8' }).stdout),
        ),
      20_000,
      100,
    );
    if (!ok) throw new Error('the cluster did not reach cluster_state:ok');
    await sleep(200);
    return { nodes, servers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A private redis-server for one test, stopped at its end; undefined after a skip with the reason printed. */
export async function privateRedis(t: Test): Promise<RedisServer | undefined> {
  const missing = redisServerMissing();
  if (missing !== undefined) {
    t.skip(missing, () => undefined);
    return undefined;
  }
  const [port] = await freePorts(1);
  const server = await startRedis(port as number);
  t.teardown(() => server.stop());
  return server;
}
