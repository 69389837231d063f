/**
 * createGateway({ configFile }) and programmatic hot deploy: reload({ apis }) replaces the definitions of
 * a gateway created with `apis` (calls in flight keep the runtime they started with), and is refused for
 * a gateway that reads the apis/ directory. An invalid configuration file fails with its diagnostics.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createGateway } from '../../lib/embed';
import { api, echoBackend, embedded } from './helpers';

t.test('reload({ apis }) deploys new definitions in code', async (t) => {
  const b1 = await echoBackend((_req, res) => (res.end('one'), true));
  const b2 = await echoBackend((_req, res) => (res.end('two'), true));
  const { gw } = embedded([]);
  t.teardown(async () => {
    await gw.close();
    await b1.close();
    await b2.close();
  });
  t.equal((await gw.inject({ url: '/a/v1/x' })).status, 404, 'nothing deployed yet');
  const r1 = gw.reload({ apis: [api('A', '/a', `http://127.0.0.1:${b1.port}`)] });
  t.same(
    r1.deployed.map((d) => d.path),
    ['/a/v1'],
  );
  t.equal((await gw.inject({ url: '/a/v1/x' })).body, 'one');
  gw.reload({ apis: [api('A', '/a', `http://127.0.0.1:${b2.port}`), api('B', '/b', `http://127.0.0.1:${b2.port}`)] });
  t.equal((await gw.inject({ url: '/a/v1/x' })).body, 'two', 'the new endpoint');
  t.equal((await gw.inject({ url: '/b/v1/x' })).body, 'two');
  gw.reload();
  t.same(
    gw
      .deployed()
      .map((d) => d.path)
      .sort(),
    ['/a/v1', '/b/v1'],
    'reload() keeps the last definitions',
  );
  const bad = gw.reload({ apis: [{ name: 'Broken' }] });
  t.ok(
    bad.diagnostics.some((d) => d.level === 'error'),
    'an invalid definition is reported',
  );
  t.same(gw.deployed(), [], 'and not deployed');
});

t.test('configFile: loaded by createGateway; invalid files and directory gateways refused clearly', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-emb-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const good = path.join(dir, 'deployment.toml');
  fs.writeFileSync(good, '[server]\nhostname = "localhost"\n');
  const gw = createGateway({ configFile: good, watch: false });
  t.equal(gw.settings.apisDir, path.join(dir, 'apis'), 'the apis/ directory next to the file');
  t.throws(() => gw.reload({ apis: [] }), { code: 'GATEWAY_OPTIONS', message: /reads its APIs from the apis\/ directory/ });
  await gw.close();

  const bad = path.join(dir, 'bad.toml');
  fs.writeFileSync(bad, '[server]\noffset = "many"\n');
  t.throws(() => createGateway({ configFile: bad }), {
    name: 'GatewayOptionsError',
    code: 'GATEWAY_OPTIONS',
    message: /bad\.toml: invalid configuration:\n.*offset/,
  });
  t.throws(() => createGateway({}), { code: 'GATEWAY_OPTIONS', message: /needs `loaded` \(from loadConfig\), `configFile` or `config`/ });
});
