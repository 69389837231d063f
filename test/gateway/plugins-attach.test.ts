/**
 * Plugins attached per API and per resource in API files (`plugins`, [throughway] api_plugins), their
 * refusals with file and line (API_PLUGIN), a throwing attached plugin answered 103142 and counted, and
 * plugins loaded again with the configuration on reload (docs/plugins.md).
 */
import t, { type Test } from 'tap';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { startNode, type RunningNode } from '../../lib/node';
import { PHASES } from '../../lib/gateway/phases';
import { PHASE_ORDER } from '../../lib/gateway/steps';
import { parseApiText } from '../../lib/gateway/apis';
import { apiToml, BASE_TOML, confDir } from './helpers';

/** A backend that answers with the X-Tag fields it was sent. */
async function backend(): Promise<{ port: number; close: () => void }> {
  const srv = http.createServer((req, res) => res.end(`tags=${req.headers['x-tag'] ?? ''}`));
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: (srv.address() as { port: number }).port, close: () => srv.close() };
}

/** A plugin adding `X-Tag: <settings.tag>` toward the backend (after route), throwing when the tag is "boom". */
const TAG_PLUGIN = `exports.phases = (s) => [{ after: 'route', phase: { name: 'tag', run(ctx) {
  if (s.tag === 'boom') throw new Error('attached failure');
  ctx.addRequestHeaders = [...(ctx.addRequestHeaders ?? []), 'X-Tag', String(s.tag ?? 'none')];
} } }];
`;

async function start(t: Test, d: string): Promise<RunningNode> {
  const file = path.join(d, 'deployment.toml');
  const loaded = loadConfig({ file });
  t.ok(loaded.ok, 'configuration valid');
  const node = await startNode(loaded, {
    cwd: d,
    ephemeralPorts: true,
    reload: () => loadConfig({ file }),
    log: () => undefined,
    logSink: { write: () => true },
  });
  t.teardown(async () => {
    await node.close();
    fs.rmSync(d, { recursive: true, force: true });
  });
  return node;
}

const get = async (url: string): Promise<{ status: number; body: string }> => {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
};

t.test('the chain order the plugin points follow is the built-in chain', async (t) => {
  t.same(
    PHASE_ORDER,
    PHASES.map((p) => p.name),
  );
});

t.test('attached per API and per resource: only those calls run the plugin, API first, each with its own settings', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const pets =
    apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] }) +
    '[[plugins]]\nname = "tag"\nsettings = { tag = "api" }\n' +
    '[[resources]]\npath = "/special"\nmethods = ["GET"]\n[[resources.plugins]]\nname = "tag"\nsettings = { tag = "resource" }\n';
  const plain = apiToml({ name: 'Plain', context: '/plain', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] });
  const node = await start(
    t,
    confDir(
      BASE_TOML + '[throughway]\napi_plugins = ["./policies/tag.js"]\n[throughway.plugin.tag]\ntag = "node"\n',
      { pets, plain },
      { 'policies/tag.js': TAG_PLUGIN },
    ),
  );
  const base = `http://127.0.0.1:${node.ports.gateway}`;
  t.same(await get(`${base}/pets/1.0.0/cats`), { status: 200, body: 'tags=api' }, 'the API attachment, its own settings');
  t.same(await get(`${base}/pets/1.0.0/special`), { status: 200, body: 'tags=api, resource' }, 'the API attachment, then the resource one');
  t.same(await get(`${base}/plain/1.0.0/cats`), { status: 200, body: 'tags=' }, 'an API that attaches nothing runs nothing');
  t.same(node.plugins?.names, [], 'nothing runs on every call');
  t.same(node.plugins?.attachable, ['tag']);
});

t.test('an attachment without settings gets [throughway.plugin.<name>]; a throwing attached plugin is 103142 and counted', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const api =
    apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] }) +
    '[[plugins]]\nname = "tag"\n' +
    '[[resources]]\npath = "/boom"\nmethods = ["GET"]\nplugins = [{ name = "boomer", settings = { tag = "boom" } }]\n';
  const node = await start(
    t,
    confDir(
      BASE_TOML + '[throughway]\napi_plugins = ["./policies/tag.js", "./policies/boomer.js"]\n[throughway.plugin.tag]\ntag = "node"\n',
      { api },
      { 'policies/tag.js': TAG_PLUGIN, 'policies/boomer.js': TAG_PLUGIN },
    ),
  );
  const base = `http://127.0.0.1:${node.ports.gateway}/pets/1.0.0`;
  t.same(await get(`${base}/x`), { status: 200, body: 'tags=node' }, "the node's settings table");
  const boom = await get(`${base}/boom`);
  t.equal(boom.status, 500);
  t.equal((JSON.parse(boom.body) as { fault: { code: number } }).fault.code, 103142);
  t.notMatch(boom.body, /attached failure/, 'the error message is not sent');
  t.equal(node.plugins?.failures.get('boomer'), 1, 'counted for its plugin');
  t.equal(node.plugins?.failures.get('tag'), undefined, 'not for the others');
  t.equal((await get(`${base}/x`)).status, 200, 'the node still serves');
});

t.test('refusals name the file, line and field (API_PLUGIN); the API is not deployed', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const head = apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] });
  const cases: [string, string, RegExp][] = [
    ['unknown', '[[plugins]]\nname = "tga"\n', /"tga" is not a plugin of \[throughway\] api_plugins; did you mean "tag"\?/],
    ['twice', '[[plugins]]\nname = "tag"\n[[plugins]]\nname = "tag"\n', /attached twice/],
    ['global', '[[plugins]]\nname = "everywhere"\n', /"everywhere" is not a plugin of \[throughway\] api_plugins/],
    [
      'early',
      '[[resources]]\npath = "/e"\nmethods = ["GET"]\n[[resources.plugins]]\nname = "early"\n',
      /places its phase "early:first" before route/,
    ],
    [
      'throws',
      '[[plugins]]\nname = "fussy"\nsettings = { level = 3 }\n',
      /cannot be attached: its phases\(settings\) threw: level must be a string/,
    ],
  ];
  const apis: Record<string, string> = {};
  for (const [name, text] of cases) apis[name] = head.replace('name = "Pets"', `name = "${name}"`).replace('/pets', `/${name}`) + text;
  const node = await start(
    t,
    confDir(
      BASE_TOML +
        '[throughway]\nplugins = ["./policies/everywhere.js"]\napi_plugins = ["./policies/tag.js", "./policies/early.js", "./policies/fussy.js"]\n',
      apis,
      {
        'policies/tag.js': TAG_PLUGIN,
        'policies/everywhere.js': "exports.phases = [{ after: 'route', phase: { name: 'n', run() {} } }];\n",
        'policies/early.js': "exports.phases = [{ before: 'route', phase: { name: 'first', run() {} } }];\n",
        'policies/fussy.js':
          "exports.phases = (s) => { if (typeof s.level !== 'string') throw new Error('level must be a string'); return [{ after: 'route', phase: { name: 'n', run() {} } }]; };\n",
      },
    ),
  );
  const states = node.gateway?.states() ?? [];
  for (const [name, text, message] of cases) {
    const s = states.find((x) => path.basename(x.file) === `${name}.toml`);
    t.equal(s?.status, 'invalid', `${name}: refused`);
    const d = s?.diagnostics.find((x) => x.code === 'API_PLUGIN');
    t.match(d?.message, message, `${name}: the reason`);
    // The line of the `name` of the offending entry: the head's lines, then the entry's own.
    const lines = (head + text).split('\n');
    let want = lines.length;
    while (want > 0 && !(lines[want - 1] as string).startsWith('name = ')) want--;
    t.equal(d?.line, want, `${name}: its line`);
    t.match(d?.field, /plugins\[\d+\]\.name$/, `${name}: its field`);
    t.equal((await get(`http://127.0.0.1:${node.ports.gateway}/${name}/1.0.0/x`)).status, 404, `${name}: not deployed`);
  }
});

t.test('a gateway without plugins refuses an API file that attaches one: it is never served without its policy', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const api =
    apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] }) +
    '[[plugins]]\nname = "allow-list"\n';
  const node = await start(t, confDir(BASE_TOML, { api }));
  const s = node.gateway?.states().find((x) => path.basename(x.file) === 'api.toml');
  t.equal(s?.status, 'invalid');
  t.match(s?.diagnostics.find((d) => d.code === 'API_PLUGIN')?.message, /"allow-list" is not a plugin of \[throughway\] api_plugins/);
  t.equal(node.plugins, undefined, 'no plugin loaded');
  t.equal((await get(`http://127.0.0.1:${node.ports.gateway}/pets/1.0.0/x`)).status, 404, 'not deployed');
});

t.test('reload: the plugins are loaded again with the configuration; one that no longer loads keeps the running ones', async (t) => {
  const b = await backend();
  t.teardown(b.close);
  const api =
    apiToml({ name: 'Pets', context: '/pets', endpoint: `http://127.0.0.1:${b.port}`, resources: [['/*', ['GET']]] }) +
    '[[plugins]]\nname = "attached"\n';
  const toml = (tag: string) =>
    BASE_TOML +
    `[throughway]\nplugins = ["./policies/tag.js"]\napi_plugins = ["./policies/attached.js"]\n[throughway.plugin.tag]\ntag = "${tag}"\n[throughway.plugin.attached]\ntag = "a1"\n`;
  const d = confDir(toml('g1'), { api }, { 'policies/tag.js': TAG_PLUGIN, 'policies/attached.js': TAG_PLUGIN });
  const node = await start(t, d);
  const url = `http://127.0.0.1:${node.ports.gateway}/pets/1.0.0/x`;
  t.same(await get(url), { status: 200, body: 'tags=g1, a1' }, "the node's plugin, then the attached one");
  // A changed settings table and a changed attached module, applied by reload.
  fs.writeFileSync(path.join(d, 'deployment.toml'), toml('g2'));
  fs.writeFileSync(path.join(d, 'policies', 'attached.js'), TAG_PLUGIN.replace("String(s.tag ?? 'none')", "'edited-' + s.tag"));
  const r = node.reload();
  t.ok(r?.ok, 'the configuration reloaded');
  t.same(
    r?.restartNeeded.filter((k) => k.startsWith('throughway.plugin')),
    [],
    'no restart needed for plugins',
  );
  t.same(await get(url), { status: 200, body: 'tags=g2, edited-a1' }, 'the new settings and the edited module');
  // A module that throws while it loads: the running plugins stay.
  fs.writeFileSync(path.join(d, 'policies', 'tag.js'), 'throw new Error("broken on purpose");\n');
  fs.writeFileSync(path.join(d, 'deployment.toml'), toml('g3'));
  node.reload();
  t.same(await get(url), { status: 200, body: 'tags=g2, edited-a1' }, 'the running plugins stay');
  // Taken out of the list: the node's plugin no longer runs.
  fs.writeFileSync(path.join(d, 'deployment.toml'), toml('g3').replace('plugins = ["./policies/tag.js"]\n', ''));
  node.reload();
  t.same(await get(url), { status: 200, body: 'tags=edited-a1' }, 'only the attached plugin');
});

t.test('docs/plugins.md: its API file attaching a plugin is valid, and its deployment.toml too', async (t) => {
  const page = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'plugins.md'), 'utf8');
  const api = /```toml\n(# apis\/orders\.toml\n[\s\S]*?)```/.exec(page)?.[1];
  t.ok(api !== undefined, 'the page shows the API file');
  const catalogue = {
    generation: 0,
    names: ['allow-list'],
    stepsOf: () => [{ gap: 1, step: { name: 'allow-list:check', run: () => undefined } }],
  };
  const r = parseApiText(api ?? '', 'apis/orders.toml', {}, undefined, undefined, undefined, catalogue);
  t.same(
    r.diagnostics.filter((d) => d.level !== 'info'),
    [],
    'no diagnostic',
  );
  t.ok(
    r.api?.plugins?.[1] !== undefined && r.api.resources[1]?.plugins?.[1] !== undefined,
    'attached to the API and to its second resource',
  );
  const toml = /```toml\n(\[throughway\]\napi_plugins[\s\S]*?)```/.exec(page)?.[1];
  const loaded = loadConfig({ text: BASE_TOML + (toml ?? ''), env: {} });
  t.ok(loaded.ok && loaded.diagnostics.length === 0, 'the deployment.toml part loads without a diagnostic');
  t.same(loaded.config.throughway.api_plugins, ['./policies/allow-list.js']);
});
