/**
 * Cluster mode on the embedded default configuration (conf/deployment.toml: the demo backend on, the demo
 * APIs in conf/apis): the primary runs the demo backend once and two workers serve the demo API. Regression:
 * every worker also started the demo backend on the primary's port, failed with EADDRINUSE and never became
 * ready.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { baseOffset, http as call, spawnNode, started } from './helpers';

const CONF = path.resolve(__dirname, '..', '..', '..', 'conf');

t.test('the default configuration with [throughway.cluster] workers = 2: demo backend once, demo API through both workers', async (t) => {
  const offset = baseOffset(71);
  const toml = fs.readFileSync(path.join(CONF, 'deployment.toml'), 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`);
  t.not(toml.indexOf(`offset = ${offset}`), -1, 'the default configuration has server.offset to move');
  const apis: Record<string, string> = {};
  // Every file of conf/apis: the API files and the OpenAPI document demo.toml names beside it.
  for (const f of fs.readdirSync(path.join(CONF, 'apis'))) apis[f] = fs.readFileSync(path.join(CONF, 'apis', f), 'utf8');
  const node = spawnNode(`${toml}\n[throughway.cluster]\nworkers = "2"\n`, apis);
  t.teardown(() => node.stop());
  t.ok(await started(node, /cluster: 2 of 2 workers ready/, 30_000), `started:\n${node.out}\n${node.err}`);
  t.notMatch(node.err, /EADDRINUSE/, "no worker collided with the primary's demo backend");
  t.equal(node.out.match(/demo backend\s+port/g)?.length, 1, "one demo backend: the primary's");
  const port = 8280 + offset;
  for (let i = 0; i < 6; i++) {
    const r = await call(`http://127.0.0.1:${port}/pizzashack/1.0.0/menu`);
    t.equal(r.status, 200, `call ${i + 1}: the demo menu through a worker`);
  }
});
