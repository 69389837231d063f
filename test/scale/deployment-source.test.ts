/**
 * The control plane's deployments in one process (lib/scale/deployments.ts; docs/scale-out.md: a
 * gateway-worker gets policies and API deployments from the control plane):
 *
 *  - DeploymentSource: what it serves (labels parsed, revision = sha256), the `?labels=` filter, a file
 *    it cannot parse logged and not served (its last parsed text kept), the events of a re-read, a
 *    policies file with errors not served;
 *  - GET /admin/v1/deployments: super admin only (401), `?labels=A,B`, absent where not wired (404);
 *  - DeploymentFollower + a gateway created with `apiTexts`: events deploy, change and undeploy, a policies
 *    text applies, other labels are not deployed, diagnostics name the pulled file and line;
 *  - a GraphQL API served with its schema text (revision over both; a schema outside the directory not
 *    served, and refused by a worker's ApiTexts naming it);
 *  - RedisEventHub.resync: the pulled deployments' differences become events (policies first).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createEventBus, type AnyEvent } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { createLogger } from '../../lib/log';
import { DeploymentFollower, DeploymentSource, apiLabels, revisionOf } from '../../lib/scale/deployments';
import { ApiTexts } from '../../lib/gateway/deploy';
import { SDL } from '../graphql/backend';
import { graphqlApi } from './helpers';
import { DEFAULT_POLICIES_TOML, DEFAULT_POLICY_OPTIONS } from '../../lib/throttle/policies';
import { adminAuth, basic, json, startKeyManager } from '../keymanager/helpers';
import { echoBackend, until } from '../gateway/helpers';

const api = (
  name: string,
  context: string,
  labels: readonly string[] | undefined,
  endpoint = 'http://127.0.0.1:9',
  policy?: string,
): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n${labels !== undefined ? `labels = ${JSON.stringify(labels)}\n` : ''}${policy !== undefined ? `policy = "${policy}"\n` : ''}[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

function rig(t: Test): {
  dir: string;
  apis: string;
  policies: string;
  events: AnyEvent[];
  lines: string[];
  source: () => DeploymentSource;
} {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-deploy-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const apis = path.join(dir, 'apis');
  fs.mkdirSync(apis);
  const bus = createEventBus();
  const events: AnyEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (l: string) => lines.push(l) });
  const policies = path.join(dir, 'policies.toml');
  let s: DeploymentSource | undefined;
  t.teardown(() => s?.close());
  return {
    dir,
    apis,
    policies,
    events,
    lines,
    source: () =>
      (s ??= new DeploymentSource({
        apisDir: apis,
        policiesFile: policies,
        policyOptions: DEFAULT_POLICY_OPTIONS,
        bus,
        logger,
        watch: false,
      })),
  };
}

t.test('apiLabels: the labels of a text, the default, or why it cannot be read', async (t) => {
  t.same(apiLabels(api('A', '/a', ['Edge', 'X'])), { labels: ['Edge', 'X'] });
  t.same(apiLabels(api('A', '/a', undefined)), { labels: ['Default'] }, 'the field default');
  t.match(apiLabels('name = "A\n'), { error: /^line 1: not valid TOML: / });
  t.same(apiLabels('labels = "Edge"\n'), { error: 'labels must be an array of strings' });
});

t.test('DeploymentSource: served files, labels filter, re-read events, unparsable files', async (t) => {
  const r = rig(t);
  const a = api('A', '/a', ['Default']);
  fs.writeFileSync(path.join(r.apis, 'a.toml'), a);
  fs.writeFileSync(path.join(r.apis, 'b.toml'), api('B', '/b', ['Edge']));
  fs.writeFileSync(path.join(r.apis, 'bad.toml'), 'name = "Bad\n');
  fs.writeFileSync(path.join(r.apis, 'notes.txt'), 'not an API file');
  const s = r.source();
  const all = s.snapshot();
  t.same(
    all.apis.map((x) => [x.file, x.labels]),
    [
      ['a.toml', ['Default']],
      ['b.toml', ['Edge']],
    ],
    'TOML files that parse, by name',
  );
  t.equal(all.apis[0]?.text, a);
  t.equal(all.apis[0]?.revision, sha(a), 'revision: sha256 of the text');
  t.same(
    all.policies,
    { file: '', text: DEFAULT_POLICIES_TOML, revision: sha(DEFAULT_POLICIES_TOML) },
    'no policies file: the default tiers',
  );
  t.same(
    s.snapshot(['Edge', 'Other']).apis.map((x) => x.file),
    ['b.toml'],
    'labels: those sharing one',
  );
  t.same(s.snapshot([]).apis, [], 'an empty list: none');
  t.equal(
    r.lines.filter((l) => l.includes('"event":"deployment_file_unparsed"') && l.includes('bad.toml')).length,
    1,
    'the unparsable file is logged',
  );
  t.same(r.events, [], 'nothing published at start');

  // Re-read (the watch or SIGHUP): one event per change.
  fs.writeFileSync(path.join(r.apis, 'a.toml'), api('A', '/a2', ['Default']));
  fs.rmSync(path.join(r.apis, 'b.toml'));
  fs.writeFileSync(path.join(r.apis, 'c.toml'), api('C', '/c', undefined));
  fs.writeFileSync(r.policies, DEFAULT_POLICIES_TOML.replace('request_count = 5000', 'request_count = 5001'));
  s.refresh();
  t.same(
    r.events.map((e) => [e.name, 'file' in e.payload ? e.payload.file : '']),
    [
      ['policies.updated', ''],
      ['api.undeployed', 'b.toml'],
      ['api.deployed', 'a.toml'],
      ['api.deployed', 'c.toml'],
    ],
  );
  t.same(r.events[1]?.payload, { file: 'b.toml', labels: ['Edge'] }, 'undeployed with its labels');
  t.equal(r.lines.filter((l) => l.includes('"event":"deployment_file_unparsed"')).length, 1, 'an unparsable text is logged once');
  r.events.length = 0;
  s.refresh();
  t.same(r.events, [], 'nothing changed: nothing published');

  // A served file turning unparsable keeps its last parsed text served.
  const before = s.snapshot().apis.find((x) => x.file === 'c.toml');
  fs.writeFileSync(path.join(r.apis, 'c.toml'), 'name = "C\n');
  s.refresh();
  t.same(r.events, [], 'no event for a text that does not parse');
  t.same(
    s.snapshot().apis.find((x) => x.file === 'c.toml'),
    before,
    'the last parsed text stays served',
  );
  t.match(
    r.lines.at(-1),
    /"file":"[^"]*c\.toml","message":"line 1: not valid TOML: .*: not served to gateway-workers; its last parsed text stays served","event":"deployment_file_unparsed"/,
  );
  // The policies file with errors: logged, the last valid text stays served, no event.
  const served = s.snapshot().policies;
  fs.writeFileSync(r.policies, '[[subscription]]\nname = "Gold"\nrequest_count = -1\n');
  s.refresh();
  t.same(r.events, []);
  t.same(s.snapshot().policies, served);
  t.ok(
    r.lines.some((l) => l.includes('"event":"deployment_policies_invalid"')),
    'the invalid policies file is logged',
  );
});

t.test('DeploymentSource watches the apis/ directory (debounced)', async (t) => {
  const r = rig(t);
  const bus = createEventBus();
  const seen: AnyEvent[] = [];
  bus.subscribe((e) => seen.push(e));
  const s = new DeploymentSource({
    apisDir: r.apis,
    policiesFile: r.policies,
    policyOptions: DEFAULT_POLICY_OPTIONS,
    bus,
    logger: createLogger('silent'),
    debounceMs: 20,
  });
  t.teardown(() => s.close());
  fs.writeFileSync(path.join(r.apis, 'w.toml'), api('W', '/w', ['Default']));
  t.ok(
    await until(
      () => seen.some((e) => e.name === 'api.deployed' && e.payload.file === 'w.toml' && e.payload.text.includes('"/w"')),
      5000,
      20,
    ),
    'a written file is published',
  );
});

t.test('GET /admin/v1/deployments: super admin, ?labels=', async (t) => {
  const r = rig(t);
  fs.writeFileSync(path.join(r.apis, 'a.toml'), api('A', '/a', ['Default']));
  fs.writeFileSync(path.join(r.apis, 'b.toml'), api('B', '/b', ['Edge', 'Z']));
  const s = r.source();
  const h = await startKeyManager('', { deployments: (labels) => s.snapshot(labels) });
  t.teardown(() => h.close());
  const none = await json('GET', `${h.url}/admin/v1/deployments`);
  t.equal(none.status, 401, 'no credentials');
  t.match(none.headers.get('www-authenticate'), /^Basic/);
  t.equal((await json('GET', `${h.url}/admin/v1/deployments`, undefined, basic('admin', 'wrong-pw-1'))).status, 401, 'a wrong password');
  const all = await json('GET', `${h.url}/admin/v1/deployments`, undefined, adminAuth());
  t.equal(all.status, 200, all.text);
  t.same(
    (all.body.apis as { file: string }[]).map((x) => x.file),
    ['a.toml', 'b.toml'],
  );
  t.same(Object.keys((all.body.apis as object[])[0] as object).sort(), ['file', 'labels', 'revision', 'text']);
  t.same(Object.keys(all.body.policies as object).sort(), ['file', 'revision', 'text']);
  const z = await json('GET', `${h.url}/admin/v1/deployments?labels=Nope,%20Z`, undefined, adminAuth());
  t.same(
    (z.body.apis as { file: string }[]).map((x) => x.file),
    ['b.toml'],
    'labels=A,B: the APIs sharing one',
  );
  const empty = await json('GET', `${h.url}/admin/v1/deployments?labels=`, undefined, adminAuth());
  t.same(empty.body.apis, [], 'an empty list selects none');

  const plain = await startKeyManager();
  t.teardown(() => plain.close());
  t.equal(
    (await json('GET', `${plain.url}/admin/v1/deployments`, undefined, adminAuth())).status,
    404,
    'not served where no source is wired',
  );
});

t.test('DeploymentFollower: events deploy, change and undeploy on a gateway created with apiTexts', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const ep = `http://127.0.0.1:${backend.port}`;
  const loaded = loadConfig({ text: '[apim.sync_runtime_artifacts.gateway]\ngateway_labels = ["Edge"]\n', env: {} });
  const bus = createEventBus();
  const lines: string[] = [];
  const logger = createLogger('info', { write: (l: string) => lines.push(l) });
  const rev = (text: string): string => sha(text);
  const e1 = api('E', '/e', ['Edge'], ep);
  const d1 = api('D', '/d', ['Default'], ep);
  const f = new DeploymentFollower(
    'http://cp:9763',
    ['Edge'],
    {
      apis: [
        { file: 'e.toml', text: e1, labels: ['Edge'], revision: rev(e1) },
        { file: 'd.toml', text: d1, labels: ['Default'], revision: rev(d1) },
      ],
      policies: null,
    },
    bus,
    logger,
  );
  t.teardown(() => f.close());
  t.same(
    f.entries().map((x) => x.file),
    ['http://cp:9763/apis/e.toml'],
    'only the APIs of its labels are kept',
  );
  const gw = createGateway({
    loaded,
    logger,
    watch: false,
    events: bus,
    apiTexts: { origin: 'the control plane http://cp:9763', entries: f.entries() },
  });
  t.teardown(() => gw.close());
  f.attach(gw);
  t.equal(gw.apiSource, 'the control plane http://cp:9763');
  const status = async (p: string): Promise<number> => (await gw.inject({ url: p })).status;
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  t.equal(await status('/e/1.0.0/x'), 200);
  t.equal(await status('/d/1.0.0/x'), 404);

  const n1 = api('N', '/n', ['Edge'], ep);
  bus.publish('api.deployed', { file: 'n.toml', text: n1, labels: ['Edge'], revision: rev(n1) });
  await settle();
  t.equal(await status('/n/1.0.0/x'), 200, 'api.deployed: deployed');
  const n2 = api('N', '/n2', ['Edge'], ep);
  bus.publish('api.deployed', { file: 'n.toml', text: n2, labels: ['Edge'], revision: rev(n2) });
  await settle();
  t.same([await status('/n/1.0.0/x'), await status('/n2/1.0.0/x')], [404, 200], 'changed');
  bus.publish('api.deployed', { file: 'n.toml', text: api('N', '/n2', ['Default'], ep), labels: ['Default'], revision: 'x' });
  await settle();
  t.equal(await status('/n2/1.0.0/x'), 404, 'relabelled to another label: undeployed');
  bus.publish('api.deployed', { file: 'e.toml', text: e1, labels: ['Edge'], revision: rev(e1) });
  bus.publish('api.undeployed', { file: 'e.toml', labels: ['Edge'] });
  await settle();
  t.equal(await status('/e/1.0.0/x'), 404, 'api.undeployed');

  // A broken text: not deployed, and its diagnostics name the pulled file and line.
  const broken = api('B', 'no-slash', ['Edge'], ep);
  bus.publish('api.deployed', { file: 'b.toml', text: broken, labels: ['Edge'], revision: rev(broken) });
  await settle();
  const st = gw.states().find((s) => s.file === 'http://cp:9763/apis/b.toml');
  t.equal(st?.status, 'invalid');
  t.match(
    st?.diagnostics.find((d) => d.level === 'error'),
    { file: 'http://cp:9763/apis/b.toml', line: 2, field: 'context' },
  );

  // Policies: an API naming a policy the new text defines validates once the text is applied.
  const three = `${DEFAULT_POLICIES_TOML}\n[[api]]\nname = "Three"\nrequest_count = 3\n`;
  const p1 = api('P', '/p', ['Edge'], ep, 'Three');
  bus.publish('api.deployed', { file: 'p.toml', text: p1, labels: ['Edge'], revision: rev(p1) });
  await settle();
  t.equal(await status('/p/1.0.0/x'), 404, 'an unknown policy: not deployed');
  bus.publish('policies.updated', { text: 'not = [toml', revision: 'bad' });
  await settle();
  t.ok(
    lines.some((l) => l.includes('"event":"throttle_policies_reload_refused"')),
    'a broken text is refused, logged',
  );
  bus.publish('policies.updated', { text: three, revision: rev(three) });
  await settle();
  t.equal(gw.throttle.source, 'http://cp:9763/policies (default tiers)');
  t.same(
    [await status('/p/1.0.0/x'), await status('/p/1.0.0/x'), await status('/p/1.0.0/x'), await status('/p/1.0.0/x')],
    [200, 200, 200, 429],
    'the new policy is enforced',
  );
});

t.test('the hub resync turns differences of the pulled deployments into events', async (t) => {
  const { RedisEventHub } = await import('../../lib/scale/event-hub');
  const bus = createEventBus();
  const seen: AnyEvent[] = [];
  bus.subscribe((e) => seen.push(e));
  const a = { file: 'a.toml', text: 'A', labels: ['Edge'], revision: 'ra' };
  const b = { file: 'b.toml', text: 'B', labels: ['Edge'], revision: 'rb' };
  const b2 = { ...b, text: 'B2', revision: 'rb2' };
  const c = { file: 'c.toml', text: 'C', labels: ['Edge'], revision: 'rc' };
  const base = { applications: [], subscriptions: [], revoked: [], blocking: [] };
  let next = { ...base, deployments: { apis: [b2, c], policies: { file: 'p.toml', text: 'P2', revision: 'rp2' } } };
  // Neither publishing nor subscribing: no Redis connection, only the difference logic.
  const hub = new RedisEventHub({
    url: 'redis://127.0.0.1:1',
    channel: 'x',
    bus,
    publish: false,
    subscribe: false,
    waitingTime: 0,
    reconnectMin: 10,
    reconnectMax: 10,
    logger: createLogger('silent'),
    resync: async () => next,
  });
  t.teardown(() => hub.close());
  hub.remember({ ...base, deployments: { apis: [a, b], policies: { file: 'p.toml', text: 'P', revision: 'rp' } } });
  await hub.resync();
  const names = (): string[] =>
    seen.flatMap((e) =>
      e.name === 'api.deployed' || e.name === 'api.undeployed'
        ? [`${e.name} ${e.payload.file}`]
        : e.name === 'policies.updated'
          ? [`${e.name} ${e.payload.revision}`]
          : [],
    );
  t.same(
    names(),
    ['policies.updated rp2', 'api.undeployed a.toml', 'api.deployed b.toml', 'api.deployed c.toml'],
    'policies first, then what went, then what differs',
  );
  seen.length = 0;
  await hub.resync();
  t.same(names(), [], 'the same snapshot again: nothing');
  // Events followed in between are the new base.
  bus.publish('api.undeployed', { file: 'c.toml', labels: ['Edge'] });
  seen.length = 0;
  next = { ...base, deployments: { apis: [b2], policies: { file: 'p.toml', text: 'P2', revision: 'rp2' } } };
  await hub.resync();
  t.same(names(), [], 'an undeploy already followed is not repeated');
});

t.test('DeploymentSource serves a GraphQL API with its schema text; the revision covers both', async (t) => {
  const r = rig(t);
  const apis = r.apis;
  const dir = r.dir;
  const apiText = graphqlApi(9);
  fs.writeFileSync(path.join(apis, 'orders.toml'), apiText);
  fs.writeFileSync(path.join(apis, 'orders.graphql'), SDL);
  fs.writeFileSync(path.join(dir, 'outside.graphql'), SDL);
  fs.writeFileSync(path.join(apis, 'out.toml'), graphqlApi(9, '../outside.graphql').replace('/orders', '/out'));
  const s = r.source();
  const served = s.snapshot().apis;
  const orders = served.find((a) => a.file === 'orders.toml');
  t.same(orders?.schema, { file: 'orders.graphql', text: SDL }, 'the schema text is served with its API');
  t.not(orders?.revision, revisionOf(apiText), 'the revision is not the API text alone');
  const out = served.find((a) => a.file === 'out.toml');
  t.ok(out !== undefined && out.schema === undefined, 'a schema outside the API file directory is not served');
  t.match(r.lines.join(''), /out\.toml.*leaves the API file's directory.*deployment_file_unparsed/);

  // The schema file alone changes: a new revision, published.
  const changed = SDL.replace('  secret: String\n', '');
  fs.writeFileSync(path.join(apis, 'orders.graphql'), changed);
  s.refresh();
  const deployed = r.events.filter((e) => e.name === 'api.deployed');
  t.equal(deployed.length, 1, 'one api.deployed, for the API whose schema changed');
  const p = deployed[0]?.name === 'api.deployed' ? deployed[0].payload : undefined;
  t.equal(p?.file, 'orders.toml');
  t.equal(p?.schema?.text, changed);
  t.not(p?.revision, orders?.revision);

  // A worker's gateway builds the API from the served texts only (no file on its disk).
  const texts = new ApiTexts(
    'cp',
    [
      { file: 'http://cp/apis/orders.toml', text: apiText, ...(p?.schema !== undefined ? { schema: p.schema } : {}) },
      { file: 'http://cp/apis/out.toml', text: out?.text ?? '' },
    ],
    {},
  );
  const read = texts.read();
  const ok = read.candidates.find((c) => c.file === 'http://cp/apis/orders.toml');
  t.ok(ok?.api?.graphql?.schema.rootFields.QUERY.has('hello'), 'built from the served schema');
  t.notOk(ok?.api?.graphql?.schema.rootFields.QUERY.has('secret'), 'the changed schema');
  const refused = read.candidates.find((c) => c.file === 'http://cp/apis/out.toml');
  t.equal(refused?.api, undefined);
  t.match(
    refused?.diagnostics.map((d) => `${d.code} ${d.message}`).join('\n'),
    /API_VALUE schema \.\.\/outside\.graphql was not served with the API file/,
  );
});

t.test('DeploymentSource serves a gRPC API with its .proto files and imports; bounded, inside its directory', async (t) => {
  const r = rig(t);
  const grpcApi = (context: string, protos: readonly string[]): string =>
    `name = "G${context.slice(1)}"\ncontext = "${context}"\nversion = "1.0.0"\ntype = "GRPC"\nauth = "none"\n[grpc]\nproto = ${JSON.stringify(protos)}\n[endpoints]\nproduction = "http://127.0.0.1:9"\n`;
  const types = 'syntax = "proto3";\npackage shared;\nmessage P { int32 x = 1; }\n';
  const svc = (pkg: string, imp: string): string =>
    `syntax = "proto3";\nimport "${imp}";\npackage ${pkg};\nservice S { rpc M(shared.P) returns (shared.P); }\n`;
  fs.mkdirSync(path.join(r.apis, 'common'));
  fs.writeFileSync(path.join(r.apis, 'common', 'types.proto'), types);
  fs.writeFileSync(path.join(r.apis, 'g.proto'), svc('g', 'common/types.proto'));
  fs.writeFileSync(path.join(r.apis, 'g.toml'), grpcApi('/g', ['g.proto']));
  // An import that leaves apis/: the named file is served as it is, the outside one never; the worker refuses the API as the gateway would.
  fs.writeFileSync(path.join(r.dir, 'outside.proto'), types);
  fs.writeFileSync(path.join(r.apis, 'up.proto'), svc('up', '../outside.proto'));
  fs.writeFileSync(path.join(r.apis, 'up.toml'), grpcApi('/up', ['up.proto']));
  // More files than one API may send.
  const many = Array.from({ length: 65 }, (_, i) => `m${i}.proto`);
  for (const m of many) fs.writeFileSync(path.join(r.apis, m), `syntax = "proto3";\npackage ${m.replace('.proto', '')};\n`);
  fs.writeFileSync(path.join(r.apis, 'many.toml'), grpcApi('/many', many));
  const s = r.source();
  const served = s.snapshot().apis;
  const g = served.find((a) => a.file === 'g.toml');
  t.same(
    g?.protos,
    [
      { file: 'g.proto', text: svc('g', 'common/types.proto') },
      { file: 'common/types.proto', text: types },
    ],
    'the named file and its import, by name relative to the API file',
  );
  t.same(
    served.find((a) => a.file === 'up.toml')?.protos?.map((x) => x.file),
    ['up.proto'],
    'an import outside the directory: only the named file is served',
  );
  t.equal(served.find((a) => a.file === 'many.toml')?.protos, undefined, 'more than 64 files: nothing served');
  t.match(r.lines.join(''), /many\.toml.*its \.proto files cannot be served: 65 files, more than 64/);

  // The imported file alone changes: a new revision, published with the new text.
  fs.writeFileSync(path.join(r.apis, 'common', 'types.proto'), types.replace('int32 x = 1;', 'int32 x = 1; int32 y = 2;'));
  s.refresh();
  const deployed = r.events.filter((e) => e.name === 'api.deployed');
  t.same(
    deployed.map((e) => (e.name === 'api.deployed' ? e.payload.file : '')),
    ['g.toml'],
    'one api.deployed, for the API whose import changed',
  );
  const p = deployed[0]?.name === 'api.deployed' ? deployed[0].payload : undefined;
  t.not(p?.revision, g?.revision);
  t.match(p?.protos?.[1]?.text, /int32 y = 2/);

  // A worker's ApiTexts builds it from the served texts; the one without them is refused naming the file.
  const texts = new ApiTexts(
    'cp',
    [
      { file: 'http://cp/apis/g.toml', text: p?.text ?? '', ...(p?.protos !== undefined ? { protos: p.protos } : {}) },
      {
        file: 'http://cp/apis/up.toml',
        text: served.find((a) => a.file === 'up.toml')?.text ?? '',
        protos: served.find((a) => a.file === 'up.toml')?.protos ?? [],
      },
      { file: 'http://cp/apis/many.toml', text: served.find((a) => a.file === 'many.toml')?.text ?? '' },
    ],
    {},
  );
  const read = texts.read();
  t.same([...(read.candidates.find((c) => c.file === 'http://cp/apis/g.toml')?.api?.grpc?.methods.keys() ?? [])], ['/g.S/M']);
  t.match(
    read.candidates
      .find((c) => c.file === 'http://cp/apis/up.toml')
      ?.diagnostics.map((d) => `${d.code} ${d.message}`)
      .join('\n'),
    /API_PROTO http:\/\/cp\/apis\/\.\.\/outside\.proto: it leaves the API file's directory/,
  );
  t.match(
    read.candidates
      .find((c) => c.file === 'http://cp/apis/many.toml')
      ?.diagnostics.map((d) => `${d.code} ${d.message}`)
      .join('\n'),
    /API_PROTO http:\/\/cp\/apis\/m0\.proto: it was not served with the API file/,
  );
});
