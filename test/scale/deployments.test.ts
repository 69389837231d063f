/**
 * API deployments and throttling policies from the control plane (docs/scale-out.md: a gateway-worker "gets ...
 * policies and API deployments from the control plane"; "gateway_labels decide which APIs a gateway
 * deploys"), on real processes: one api-key-manager with its apis/ and policies.toml, gateway-workers
 * with an empty apis/.
 *
 *  - the worker deploys only the APIs of its gateway_labels (the other answers 404, 103005);
 *  - a file written, changed, removed in the key manager's apis/ is deployed, followed, undeployed on the
 *    worker (events over Redis);
 *  - the policies file changed on the key manager + SIGHUP: the worker enforces the new policy;
 *  - a worker started after all that gets it from the snapshot;
 *  - without Redis, a worker deploys what it pulled at start.
 *
 * Redis from THROUGHWAY_TEST_REDIS_URL (the event test is skipped with a reason when unset or unreachable).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { DEFAULT_POLICIES_TOML } from '../../lib/throttle/policies';
import { ADMIN, baseOffset, http, nodeToml, redisReachable, spawnNode, started } from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

/** An API without authentication (unauthenticated calls not limited unless `policy` says so). */
function openApi(o: { name: string; context: string; labels: readonly string[]; port: number; policy?: string }): string {
  return `name = "${o.name}"\ncontext = "${o.context}"\nversion = "1.0.0"\nauth = "none"\nunauthenticated_policy = "Unlimited"\nlabels = ${JSON.stringify(o.labels)}\n${o.policy !== undefined ? `policy = "${o.policy}"\n` : ''}[endpoints]\nproduction = "http://127.0.0.1:${o.port}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

const THREE = `${DEFAULT_POLICIES_TOML}\n[[api]]\nname = "ThreePerMin"\nrequest_count = 3\nunit_time = 1\ntime_unit = "min"\n`;

/** `status code` of a GET: "200 -", "404 103005" (no API there), "429 900800" (API-level policy). */
async function outcome(port: number, p: string): Promise<string> {
  const r = await http(`http://127.0.0.1:${port}${p}`);
  return `${r.status} ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? '-'}`;
}

const NO_API = '404 103005';

t.test('a gateway-worker deploys the control plane API files of its labels and follows them over Redis', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const channel = `tw-test-deploy-${process.pid}-${Date.now()}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const port = backend.port;
  const base = baseOffset(30);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const kmp = spawnNode(
    nodeToml({ offset: base, role: 'api-key-manager', channel, redis }),
    {
      'default.toml': openApi({ name: 'Def', context: '/def', labels: ['Default'], port }),
      'edge.toml': openApi({ name: 'Edge', context: '/edge', labels: ['Edge'], port }),
    },
    [],
    { 'policies.toml': DEFAULT_POLICIES_TOML },
  );
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const kmApis = path.join(kmp.dir, 'apis');

  // What the control plane serves: by labels.
  const all = await http(`${km}/admin/v1/deployments`, { auth: ADMIN });
  t.same((all.body.apis as { file: string }[]).map((a) => a.file).sort(), ['default.toml', 'edge.toml'], all.text);
  const edgeOnly = await http(`${km}/admin/v1/deployments?labels=Edge`, { auth: ADMIN });
  t.same(
    (edgeOnly.body.apis as { file: string; labels: string[] }[]).map((a) => [a.file, a.labels]),
    [['edge.toml', ['Edge']]],
  );

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, redis, km: kmPort, labels: ['Edge'] }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, new RegExp(`APIs: 1 deployed from the control plane ${km.replace(/[/.]/g, '\\$&')}`));
  t.match(
    gw.out,
    /deployments\s+1 API file\(s\) with gateway_labels \["Edge"\], throttling policies http:\/\/127\.0\.0\.1:\d+\/policies\.toml/,
  );
  const gp = 8280 + base + 1;
  t.equal(await outcome(gp, '/edge/1.0.0/x'), '200 -', 'the Edge API is deployed');
  t.equal(await outcome(gp, '/def/1.0.0/x'), NO_API, 'the Default API is not (the no-match fault)');

  // A new file on the key manager: deployed on the worker.
  const newFile = path.join(kmApis, 'new.toml');
  fs.writeFileSync(newFile, openApi({ name: 'New', context: '/new', labels: ['Edge', 'Other'], port }));
  t.ok(
    await until(async () => (await outcome(gp, '/new/1.0.0/x')) === '200 -', 10_000, 50),
    `a file written in the key manager's apis/ is deployed\n${gw.err.slice(-1500)}`,
  );
  // Changed: another context.
  fs.writeFileSync(newFile, openApi({ name: 'New', context: '/newer', labels: ['Edge'], port }));
  t.ok(await until(async () => (await outcome(gp, '/newer/1.0.0/x')) === '200 -', 10_000, 50), 'a changed file is followed');
  t.equal(await outcome(gp, '/new/1.0.0/x'), NO_API, 'its old context is gone');
  // A file of another label: not deployed here.
  fs.writeFileSync(path.join(kmApis, 'other.toml'), openApi({ name: 'Other', context: '/other', labels: ['Default'], port }));
  // Removed.
  fs.rmSync(newFile);
  t.ok(await until(async () => (await outcome(gp, '/newer/1.0.0/x')) === NO_API, 10_000, 50), 'a removed file is undeployed');
  t.ok(
    await until(async () => (await http(`${km}/admin/v1/deployments`, { auth: ADMIN })).text.includes('other.toml'), 5000, 50),
    'the control plane serves the Default file',
  );
  t.equal(await outcome(gp, '/other/1.0.0/x'), NO_API, 'a file of another label is not deployed');
  t.equal(await outcome(gp, '/edge/1.0.0/x'), '200 -', 'the Edge API still serves');

  // Policies: the file changed on the key manager, then SIGHUP. The worker validates and takes them.
  fs.writeFileSync(path.join(kmp.dir, 'policies.toml'), THREE);
  process.kill(kmp.child.pid as number, 'SIGHUP');
  t.ok(
    await until(() => gw.err.includes('ThreePerMin') || /"event":"throttle_policies_reloaded"/.test(gw.err), 10_000, 50),
    `the worker reloads the policies\n${gw.err.slice(-1500)}`,
  );
  fs.writeFileSync(
    path.join(kmApis, 'three.toml'),
    openApi({ name: 'Three', context: '/three', labels: ['Edge'], port, policy: 'ThreePerMin' }),
  );
  t.ok(
    await until(async () => (await outcome(gp, '/three/1.0.0/x')) === '200 -', 10_000, 50),
    `an API naming the new policy is deployed\n${gw.err.slice(-1500)}`,
  );
  t.same(
    [await outcome(gp, '/three/1.0.0/x'), await outcome(gp, '/three/1.0.0/x'), await outcome(gp, '/three/1.0.0/x')],
    ['200 -', '200 -', '429 900800'],
    'the new limit: 3 per minute, the 4th call refused',
  );

  // A worker started after all that: the snapshot gives it the same.
  const late = spawnNode(nodeToml({ offset: base + 2, role: 'gateway-worker', channel, redis, km: kmPort, labels: ['Edge'] }));
  t.teardown(() => late.stop());
  t.ok(await started(late, /APIs: \d+ deployed/), `${late.out}\n${late.err}`);
  t.match(late.out, /APIs: 2 deployed from the control plane/);
  const lp = 8280 + base + 2;
  t.equal(await outcome(lp, '/edge/1.0.0/x'), '200 -');
  t.equal(await outcome(lp, '/newer/1.0.0/x'), NO_API, 'the removed file is not deployed');
  t.equal(await outcome(lp, '/def/1.0.0/x'), NO_API);
  t.equal(await outcome(lp, '/other/1.0.0/x'), NO_API);
  t.same(
    [
      await outcome(lp, '/three/1.0.0/x'),
      await outcome(lp, '/three/1.0.0/x'),
      await outcome(lp, '/three/1.0.0/x'),
      await outcome(lp, '/three/1.0.0/x'),
    ],
    ['200 -', '200 -', '200 -', '429 900800'],
    'with the policies of the snapshot',
  );
  // A file the control plane cannot parse is logged there and not served.
  fs.writeFileSync(path.join(kmApis, 'broken.toml'), 'name = "Broken\nlabels = ["Edge"]\n');
  t.ok(
    await until(() => /broken\.toml.*"event":"deployment_file_unparsed"/.test(kmp.err), 10_000, 50),
    `an unparsable file is logged on the control plane\n${kmp.err.slice(-1500)}`,
  );
  t.notMatch((await http(`${km}/admin/v1/deployments`, { auth: ADMIN })).text, /broken\.toml/, 'and not served');
});

t.test('without Redis a gateway-worker deploys the APIs it pulled at start', async (t) => {
  const channel = `tw-test-deploy-nohub-${process.pid}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(31);
  const kmPort = 9763 + base;
  const apis = {
    'edge.toml': openApi({ name: 'Edge', context: '/edge', labels: ['Edge'], port: backend.port }),
    'both.toml': openApi({ name: 'Both', context: '/both', labels: ['Default', 'Edge'], port: backend.port }),
  };
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel }), apis);
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  // Default labels; a local apis/ with a file of its own, which is not used.
  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort }), {
    'local.toml': openApi({ name: 'Local', context: '/local', labels: ['Default'], port: backend.port }),
  });
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, /APIs: 1 deployed from the control plane/);
  t.match(gw.out, /note: 1 API file\(s\) in \S+ are not used: a gateway-worker deploys the APIs of its control plane/);
  t.match(gw.err, /"event":"apis_dir_not_used"/);
  const gp = 8280 + base + 1;
  t.equal(
    await outcome(gp, '/both/1.0.0/x'),
    '200 -',
    'the API labelled Default and Edge is deployed (gateway_labels default ["Default"])',
  );
  t.equal(await outcome(gp, '/edge/1.0.0/x'), NO_API);
  t.equal(await outcome(gp, '/local/1.0.0/x'), NO_API, 'the local file is not deployed');
});
