/**
 * Hot deploy under load: adding, changing, breaking and removing API files while keep-alive clients call
 * an API without pause. Every change takes effect within a second; no call fails; an idle keep-alive
 * connection opened before the changes still works after them.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import t from 'tap';
import { BASE_TOML, HOST, apiToml, echoBackend, request, startGateway, until } from './helpers';

t.test('files change under load: no failed call, each change live within a second', async (t) => {
  const backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  const a = (extra: readonly (readonly [string, readonly string[]])[] = []) =>
    apiToml({ name: 'A', context: '/a', endpoint: ep, resources: [['/r', ['GET']], ...extra] });
  const g = await startGateway(BASE_TOML, { a: a() });
  const apis = path.join(g.dir, 'apis');
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });

  // An idle keep-alive connection, opened before any change.
  const idle = net.connect(g.port, HOST);
  await new Promise<void>((r) => idle.once('connect', () => r()));
  const idleGet = (): Promise<string> =>
    new Promise((resolve) => {
      let buf = '';
      const onData = (c: Buffer): void => {
        buf += c.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        const len = /content-length: (\d+)/i.exec(buf);
        if (end >= 0 && len !== null && buf.length >= end + 4 + Number(len[1])) {
          idle.off('data', onData);
          resolve(buf.split('\r\n')[0] ?? '');
        }
      };
      idle.on('data', onData);
      idle.write(`GET /a/1.0.0/r HTTP/1.1\r\nHost: x\r\n\r\n`);
    });
  t.equal(await idleGet(), 'HTTP/1.1 200 OK');

  // Load: 8 keep-alive clients calling /a/1.0.0/r back to back.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let running = true;
  let calls = 0;
  const failures: string[] = [];
  const loop = async (): Promise<void> => {
    while (running) {
      try {
        const r = await request(g.port, '/a/1.0.0/r', { agent });
        calls++;
        if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
      } catch (err) {
        failures.push(String(err));
      }
    }
  };
  const loops = Array.from({ length: 8 }, loop);

  const live = async (what: string, cond: () => Promise<boolean>): Promise<void> => {
    const start = Date.now();
    const ok = await until(cond, 1000, 5);
    t.ok(ok, `${what} within a second (${Date.now() - start} ms)`);
  };
  const status = async (p: string): Promise<number> => (await request(g.port, p)).status;

  fs.writeFileSync(path.join(apis, 'b.toml'), apiToml({ name: 'B', context: '/b', endpoint: ep, resources: [['/r', ['GET']]] }));
  await live('a new file is deployed', async () => (await status('/b/1.0.0/r')) === 200);

  fs.writeFileSync(path.join(apis, 'a.toml'), a([['/new', ['GET']]]));
  await live('a changed file is redeployed', async () => (await status('/a/1.0.0/new')) === 200);

  // A half-written save: the previous version stays deployed.
  fs.writeFileSync(path.join(apis, 'a.toml'), a([['/new', ['GET']]]).slice(0, 60));
  await live('an invalid change keeps the previous version', async () => g.gw.states().some((s) => s.status === 'kept-previous'));
  t.equal(await status('/a/1.0.0/new'), 200);
  t.ok(g.logger.lines.some((l) => l.event === 'api_definition' && l.code === 'API_KEPT_PREVIOUS'));

  fs.writeFileSync(path.join(apis, 'a.toml'), a());
  await live('the fixed file is deployed', async () => (await status('/a/1.0.0/new')) === 403);

  fs.unlinkSync(path.join(apis, 'b.toml'));
  await live('a removed file is undeployed', async () => (await status('/b/1.0.0/r')) === 404);

  // Editors save by writing a temporary file and renaming it over the old one.
  fs.writeFileSync(path.join(apis, '.c.toml.tmp'), apiToml({ name: 'C', context: '/c', endpoint: ep, resources: [['/r', ['GET']]] }));
  fs.renameSync(path.join(apis, '.c.toml.tmp'), path.join(apis, 'c.toml'));
  await live('a file renamed into place is deployed', async () => (await status('/c/1.0.0/r')) === 200);

  running = false;
  await Promise.all(loops);
  agent.destroy();
  t.same(failures, [], 'no call failed while files changed');
  t.ok(calls > 50, `${calls} calls under load`);
  t.equal(await idleGet(), 'HTTP/1.1 200 OK', 'the idle keep-alive connection survived every deploy');
  idle.destroy();
  t.ok(g.logger.lines.some((l) => l.event === 'api_deployed' && l.name === 'B'));
  t.ok(g.logger.lines.some((l) => l.event === 'api_undeployed' && String(l.path) === '/b/1.0.0'));
});

t.test('reload() without a watcher, and a missing directory', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(BASE_TOML, {}, {}, { watch: false });
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  fs.writeFileSync(
    path.join(g.dir, 'apis', 'a.toml'),
    apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
  );
  t.equal((await request(g.port, '/test/1.0.0/r')).status, 404, 'not watched');
  const report = g.gw.reload();
  t.same(
    report.deployed.map((d) => d.path),
    ['/test/1.0.0'],
  );
  t.equal((await request(g.port, '/test/1.0.0/r')).status, 200);
  fs.rmSync(path.join(g.dir, 'apis'), { recursive: true });
  t.same(g.gw.reload().deployed, []);
  t.ok(g.logger.lines.some((l) => l.event === 'apis_dir_missing'));
});

t.test('a directory created after start: reload() deploys it and starts watching it', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(BASE_TOML);
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  fs.rmSync(path.join(g.dir, 'apis'), { recursive: true });
  g.gw.reload();
  fs.mkdirSync(path.join(g.dir, 'apis'));
  fs.writeFileSync(
    path.join(g.dir, 'apis', 'a.toml'),
    apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
  );
  t.same(
    g.gw.reload().deployed.map((d) => d.path),
    ['/test/1.0.0'],
  );
  fs.writeFileSync(
    path.join(g.dir, 'apis', 'b.toml'),
    apiToml({ name: 'B', context: '/b', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
  );
  t.ok(await until(async () => (await request(g.port, '/b/1.0.0/r')).status === 200, 1000), 'watched from then on');
});
