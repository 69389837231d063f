/**
 * lib/index.ts: the package's public API loads without side effects (no listener, no timer, no file
 * read) and a gateway can be embedded: definitions given in code, sockets handed over by the host's own
 * server.
 */
import * as net from 'node:net';
import t from 'tap';
import { echoBackend, HOST, request } from './helpers';

t.test('importing the package starts nothing', async (t) => {
  const before = (process as unknown as { getActiveResourcesInfo(): string[] }).getActiveResourcesInfo().length;
  const api = await import('../../lib');
  t.equal(typeof api.createGateway, 'function');
  t.equal(typeof api.createTransport, 'function');
  t.equal(typeof api.targetFromUrl, 'function');
  t.equal(typeof api.loadConfig, 'function');
  t.equal((process as unknown as { getActiveResourcesInfo(): string[] }).getActiveResourcesInfo().length, before);
});

t.test("embedded: APIs in code, connections from the host's server", async (t) => {
  const { createGateway, loadConfig } = await import('../../lib');
  const backend = await echoBackend();
  const loaded = loadConfig({ text: '[server]\nhostname = "localhost"\n', file: '/nonexistent/deployment.toml' });
  const gw = createGateway({
    loaded,
    apis: [
      {
        name: 'Embedded',
        context: '/e',
        version: 'v1',
        auth: 'none',
        endpoints: { production: `http://127.0.0.1:${backend.port}/api` },
        resources: [{ path: '/items/{id}', methods: ['GET'] }],
      },
    ],
  });
  const host = net.createServer((socket) => gw.handleConnection(socket));
  await new Promise<void>((r) => host.listen(0, HOST, () => r()));
  t.teardown(async () => {
    host.close();
    await gw.close();
    await backend.close();
  });
  const r = await request((host.address() as net.AddressInfo).port, '/e/v1/items/3');
  t.equal(r.status, 200);
  t.equal(r.json().url, '/api/items/3');
  t.same(
    gw.deployed().map((d) => d.path),
    ['/e/v1'],
  );
});

t.test('a fresh process: require() of the package leaves nothing running', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const path = await import('node:path');
  const entry = path.join(__dirname, '..', '..', 'lib', 'index.js');
  // The script opens standard output and error first: newer Node lines count a stdio pipe as an active
  // resource from its first use (PipeWrap on Node 26), and the logger names stderr as its destination at
  // import. Counting by type before and after then shows only what the import itself opens.
  const script = [
    'const out = process.stdout; process.stderr;',
    'const count = () => process.getActiveResourcesInfo().reduce((m, r) => m.set(r, (m.get(r) || 0) + 1), new Map());',
    'const before = count();',
    `require(${JSON.stringify(entry)});`,
    'const grown = [...count()].filter(([r, n]) => n > (before.get(r) || 0)).map(([r]) => r);',
    'out.write(JSON.stringify(grown));',
  ].join(' ');
  t.same(JSON.parse(execFileSync(process.execPath, ['-e', script]).toString()), [], 'no handle or timer opened by the import');
});
