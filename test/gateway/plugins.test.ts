/**
 * Policy plugins of `throughway start` (docs/plugins.md): loaded from a path and from a package of the
 * configuration directory's node_modules, with their settings tables; placed before/after built-in
 * phases in the order configured; a throwing plugin answered with fault 103142 and counted; a plugin that
 * does not load a start-up error naming it. The two worked examples of docs/plugins.md are the files run here.
 */
import t, { type Test } from 'tap';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { startNode, type RunningNode } from '../../lib/node';
import { apiToml, BASE_TOML, confDir } from './helpers';

const root = path.join(__dirname, '..', '..', '..');
const examples = path.join(root, 'docs', 'examples', 'plugins');

async function backend(): Promise<{ port: number; close: () => void }> {
  const srv = http.createServer((req, res) => {
    res.setHeader('X-Powered-By', 'Express');
    res.end(`seen ${req.headers['x-order'] ?? ''}\n`);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: (srv.address() as { port: number }).port, close: () => srv.close() };
}

/** A configuration directory with the examples as ./policies/*.js and `throughway` resolvable from it. */
function dir(toml: string, port: number, extra: Record<string, string> = {}): string {
  const d = confDir(
    BASE_TOML + toml,
    { pets: apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${port}`, resources: [['/*', ['GET']]] }) },
    {
      'policies/allow-list.js': fs.readFileSync(path.join(examples, 'allow-list.js'), 'utf8'),
      'policies/response-headers.js': fs.readFileSync(path.join(examples, 'response-headers.js'), 'utf8'),
      ...extra,
    },
  );
  fs.mkdirSync(path.join(d, 'node_modules'), { recursive: true });
  fs.symlinkSync(root, path.join(d, 'node_modules', 'throughway'), 'dir');
  return d;
}

async function start(t: Test, d: string): Promise<RunningNode> {
  const loaded = loadConfig({ file: path.join(d, 'deployment.toml') });
  t.ok(loaded.ok, 'configuration valid');
  const node = await startNode(loaded, { cwd: d, ephemeralPorts: true, log: () => undefined, logSink: { write: () => true } });
  t.teardown(async () => {
    await node.close();
    fs.rmSync(d, { recursive: true, force: true });
  });
  return node;
}

const EXAMPLES_TOML = `[throughway]
plugins = ["./policies/allow-list.js", "./policies/response-headers.js"]
[throughway.plugin.allow-list]
ids = ["web", "batch"]
[throughway.plugin.response-headers]
remove = ["X-Powered-By"]
add = { "X-Frame-Options" = "DENY" }
`;

t.test('the two examples of docs/plugins.md: a header allow list and a response-header rewriter, loaded from paths', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const node = await start(t, dir(EXAMPLES_TOML, b.port));
  const url = `http://127.0.0.1:${node.ports.gateway}/pets/1.0.0/cats`;
  const ok = await fetch(url, { headers: { 'X-Client-Id': 'web' } });
  t.equal(ok.status, 200);
  t.equal(await ok.text(), 'seen \n');
  t.equal(ok.headers.get('x-powered-by'), null, 'the backend field removed');
  t.equal(ok.headers.get('x-frame-options'), 'DENY', 'the configured field added');
  const no = await fetch(url, { headers: { 'X-Client-Id': 'mallory' } });
  t.equal(no.status, 403);
  t.equal(((await no.json()) as { fault: { code: number } }).fault.code, 990403);
  const none = await fetch(url);
  t.equal(none.status, 403, 'no field: refused');
  await none.text();
});

t.test(
  'a plugin from a package of node_modules, placed by name, in configured order; a throwing plugin is 103142 and counted',
  async (t) => {
    const b = await backend();
    t.teardown(b.close);
    const pkg = (name: string, where: string, tag: string) =>
      `exports.phases = [{ ${where}, phase: { name: 'mark', run(ctx) { const prev = ctx.locals?.order ?? ''; ctx.locals = { order: prev + '${tag}' }; ctx.addRequestHeaders = ['X-Order', ctx.locals.order]; } } }];\n`;
    const d = dir(
      `[throughway]\nplugins = ["order-a", "./policies/order-b.js", "./policies/boom.js"]\n[throughway.plugin.boom]\nthrow = true\n`,
      b.port,
      {
        'node_modules/order-a/package.json': '{"name":"order-a","main":"index.js"}',
        'node_modules/order-a/index.js': pkg('order-a', "before: 'transport-headers'", 'a'),
        'policies/order-b.js': pkg('order-b', "after: 'route'", 'b'),
        'policies/boom.js':
          "exports.phases = (s) => [{ before: 'send', phase: { name: 'maybe', run(ctx) { if (s.throw && ctx.rest === '/boom') throw new Error('secret detail'); } } }];\n",
      },
    );
    const node = await start(t, d);
    const base = `http://127.0.0.1:${node.ports.gateway}/pets/1.0.0`;
    const r = await fetch(`${base}/x`);
    t.equal(await r.text(), 'seen ba\n', 'b (after route) ran before a (before transport-headers), the package loaded');
    const boom = await fetch(`${base}/boom`);
    t.equal(boom.status, 500);
    const body = await boom.text();
    t.equal((JSON.parse(body) as { fault: { code: number } }).fault.code, 103142);
    t.notMatch(body, /secret detail/, 'the error message is not sent');
    t.equal(node.plugins?.failures.get('boom'), 1, 'counted for its plugin');
    t.equal((await fetch(`${base}/x`)).status, 200, 'the node still serves');
  },
);

t.test('a plugin that does not load stops the start with PLUGIN_LOAD naming it', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  for (const [spec, files] of [
    ['./policies/missing.js', {}],
    ['no-such-package', {}],
    ['./policies/empty.js', { 'policies/empty.js': 'exports.x = 1;\n' }],
    ['./policies/bad-place.js', { 'policies/bad-place.js': "exports.phases = [{ before: 'nowhere', phase: { name: 'n', run() {} } }];\n" }],
  ] as const) {
    const d = dir(`[throughway]\nplugins = ["${spec}"]\n`, b.port, files);
    const loaded = loadConfig({ file: path.join(d, 'deployment.toml') });
    let err: unknown;
    try {
      const node = await startNode(loaded, { cwd: d, ephemeralPorts: true, log: () => undefined, logSink: { write: () => true } });
      await node.close();
    } catch (e) {
      err = e;
    }
    fs.rmSync(d, { recursive: true, force: true });
    t.ok(err instanceof Error, `${spec}: the start fails`);
    t.match((err as Error).message, spec, `${spec}: named`);
    t.equal((err as { code?: string }).code, 'PLUGIN_LOAD', `${spec}: coded`);
  }
});

t.test('docs/plugins.md quotes each example file exactly', async (t) => {
  const page = fs.readFileSync(path.join(root, 'docs', 'plugins.md'), 'utf8');
  for (const f of ['allow-list.js', 'response-headers.js'])
    t.ok(page.includes('```js\n' + fs.readFileSync(path.join(examples, f), 'utf8') + '```'), f);
});
