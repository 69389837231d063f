/**
 * An approval decided on the control plane acts on a gateway-worker process (docs/workflows.md,
 * docs/scale-out.md): an api-key-manager with the approval executor for AM_SUBSCRIPTION_CREATION, an
 * application with keys and a token, a subscription that waits (ON_HOLD); the worker started against the
 * key manager (the event hub over Redis between them) refuses the call with 900909 while the task waits, and serves it (200) once the admin
 * approves the task, without a restart. The time from the approval to the first 200 on the worker is
 * printed (the worker follows the key manager's subscription.changed events).
 */
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { ADMIN, baseOffset, http, nodeToml, redisReachable, securedApi, spawnNode, started } from '../scale/helpers';

const channel = `tw-test-workflow-worker-${process.pid}`;
// The event hub between the nodes (docs/scale-out.md): the shared Redis of the test machine.
const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

t.test('a subscription approved on the control plane is served by a gateway-worker', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'}): the nodes' event hub needs it`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(43);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel, redis }), {
    'shop.toml': securedApi(`http://127.0.0.1:${backend.port}/shop`),
  });
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);

  const exec = await http(`${km}/admin/v1/workflow-executors/AM_SUBSCRIPTION_CREATION`, {
    method: 'PUT',
    json: { executor: 'approval' },
    auth: ADMIN,
  });
  t.equal(exec.status, 200, exec.text);
  t.equal((await http(`${km}/admin/v1/applications`, { json: { name: 'ShopApp' }, auth: ADMIN })).status, 201);
  const keys = await http(`${km}/admin/v1/applications/ShopApp/keys`, { json: {}, auth: ADMIN });
  t.equal(keys.status, 201, keys.text);
  const sub = await http(`${km}/admin/v1/subscriptions`, { json: { application: 'ShopApp', api: '/shop', version: '1.0.0' }, auth: ADMIN });
  t.ok(sub.status === 201 || sub.status === 202, `subscribed: ${sub.status} ${sub.text}`);
  const workflow = sub.body.workflow as { status?: string; taskId?: string } | undefined;
  t.equal(workflow?.status, 'pending', 'the subscription waits for approval');
  const tok = await http(`${km}/oauth2/token`, {
    form: { grant_type: 'client_credentials' },
    auth: { user: String(keys.body.consumerKey), password: String(keys.body.consumerSecret) },
  });
  t.equal(tok.status, 200, tok.text);
  const token = String(tok.body.access_token);

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort, redis }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  const gp = 8280 + base + 1;
  const call = async (): Promise<string> => {
    const r = await http(`http://127.0.0.1:${gp}/shop/1.0.0/items`, { bearer: token });
    return `${r.status} ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? String((r.body as { url?: string }).url ?? '')}`;
  };
  t.match(await call(), / 900909$/, 'while the task waits: the subscription is on hold on the worker (900909)');
  t.equal(backend.seen.length, 0, 'nothing reached the backend');

  const approved = await http(`${km}/admin/v1/tasks/${String(workflow?.taskId)}/approve`, { json: { comment: 'ok' }, auth: ADMIN });
  t.equal(approved.status, 200, approved.text);
  const at = Date.now();
  t.ok(await until(async () => (await call()) === '200 /shop/items', 10_000, 25), `approved: served by the worker\n${gw.err.slice(-1500)}`);
  t.comment(`the worker served the approved subscription ${Date.now() - at} ms after the approval`);
  t.equal(backend.seen.length, 1, 'the approved call reached the backend');
});
