/**
 * The external engine contract (docs/workflows.md, "The external engine"), with the engine as an HTTP
 * server of this test: the post it receives, its callback's refusals (401 without or with wrong
 * credentials, 404 for an unknown reference, 409 for a second decision, 400 for a status that is neither),
 * a bearer token of the registered client accepted, an engine that is down (the task waits with the error
 * visible, posted again with back-off, bounded), and the external executor refused while
 * `[apim.workflow] enable` is off.
 */
import * as http from 'node:http';
import t from 'tap';
import { closedPort, HOST, until } from '../gateway/helpers';
import { basic, json } from '../keymanager/helpers';
import { silentLogger } from '../../lib/log';
import { Workflows } from '../../lib/workflows';
import { startNode } from './helpers';

interface Engine {
  readonly posts: Record<string, unknown>[];
  close(): Promise<void>;
}

async function engineOn(port: number): Promise<Engine> {
  const posts: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posts.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(port, HOST, r));
  return { posts, close: () => new Promise((r) => server.close(() => r())) };
}

const toml = (port: number): string =>
  `[apim.workflow]\nenable = true\nservice_url = "http://${HOST}:${port}/bpmn"\nusername = "bps"\npassword = "bps-pw"\nwf_engine_user = "engine"\nwf_engine_pass = "engine-pw"\n`;

t.test('the engine receives the task and calls back; every refusal of the callback', async (t) => {
  const port = await closedPort();
  const eng = await engineOn(port);
  t.teardown(() => eng.close());
  const node = await startNode(toml(port));
  t.teardown(() => node.close());
  t.equal((await node.admin('PUT', '/workflow-executors/AM_SUBSCRIPTION_CREATION', { executor: 'external' })).status, 200);
  await node.admin('POST', '/applications', { name: 'Shop' });
  const sub = await node.admin('POST', '/subscriptions', { application: 'Shop', api: '/pizza', version: '1.0.0' });
  const id = String((sub.body.workflow as { taskId: string }).taskId);
  t.ok(await until(() => eng.posts.length === 1), 'the engine received the task');
  const post = eng.posts[0] as Record<string, unknown>;
  t.match(post, {
    workflowReferenceId: id,
    workflowType: 'AM_SUBSCRIPTION_CREATION',
    tenantDomain: 'carbon.super',
    requester: 'admin',
    entity: String(sub.body.id),
    description: /Shop/,
    attributes: { api: '/pizza', version: '1.0.0' },
  });
  const callback = String(post.callbackUrl);
  t.match(
    callback,
    /\/api\/am\/publisher\/v4\/workflows\/update-workflow-status$/,
    'the callback path of [apim.workflow] callback_endpoint',
  );
  const at = (ref: string): string => `${callback}?workflowReferenceId=${encodeURIComponent(ref)}`;
  const approve = { status: 'APPROVED', attributes: {}, description: 'fine' };

  const none = await json('POST', at(id), approve);
  t.equal(none.status, 401, 'no credentials: 401');
  t.match(none.headers.get('www-authenticate'), /Bearer/);
  t.equal((await json('POST', at(id), approve, basic('engine', 'wrong'))).status, 401, 'wrong credentials: 401');
  t.equal((await json('POST', at(id), approve, 'Bearer not.a.token')).status, 401, 'a token this key manager did not issue: 401');
  t.equal((await node.store.getSubscription(String(sub.body.id)))?.state, 'ON_HOLD', 'refused callbacks change nothing');
  const unknown = await json('POST', at('no-such-task'), approve, basic('engine', 'engine-pw'));
  t.equal(unknown.status, 404, 'an unknown reference: 404');
  t.match(unknown.body.error_description, /WORKFLOW_TASK_NOT_FOUND/);
  t.equal(
    (await json('POST', at(id), { status: 'MAYBE' }, basic('engine', 'engine-pw'))).status,
    400,
    'a status neither APPROVED nor REJECTED: 400',
  );
  t.equal((await json('GET', at(id), undefined, basic('engine', 'engine-pw'))).status, 405, 'GET: 405');

  // The engine's registered client: a client credentials token of an admin's application.
  const keys = await node.admin('POST', '/applications/Shop/keys', {});
  const token = await node.token(String(keys.body.consumerKey), String(keys.body.consumerSecret));
  const ok = await json('POST', at(id), approve, `Bearer ${token.token}`);
  t.equal(ok.status, 200, ok.text);
  t.match(ok.body, { status: 'APPROVED', decision: { by: 'admin', comment: 'fine' } });
  t.equal((await node.store.getSubscription(String(sub.body.id)))?.state, 'UNBLOCKED', 'approved by the callback');
  const second = await json('POST', at(id), { status: 'REJECTED', description: 'changed my mind' }, basic('engine', 'engine-pw'));
  t.equal(second.status, 409, 'a second decision: 409');
  t.match(second.body.error_description, /WORKFLOW_TASK_DECIDED/);
  t.equal((await node.store.getSubscription(String(sub.body.id)))?.state, 'UNBLOCKED', 'the first decision stands');
  t.equal((await node.admin('POST', `/tasks/${id}/reject`, {})).status, 409, 'the admin API refuses a second decision too');
});

t.test('an engine that is down: the task waits with the error visible, posted again with back-off', async (t) => {
  const port = await closedPort();
  const node = await startNode(toml(port));
  t.teardown(() => node.close());
  await node.admin('PUT', '/workflow-executors/AM_SUBSCRIPTION_CREATION', { executor: 'external' });
  await node.admin('POST', '/applications', { name: 'Shop' });
  const sub = await node.admin('POST', '/subscriptions', { application: 'Shop', api: '/pizza', version: '1.0.0' });
  const id = String((sub.body.workflow as { taskId: string }).taskId);
  t.ok(
    await until(async () => ((await node.admin('GET', `/tasks/${id}`)).body.delivery as { attempts: number }).attempts >= 1),
    'the first post failed',
  );
  const task = await node.admin('GET', `/tasks/${id}`);
  t.match(
    task.body,
    { status: 'CREATED', delivery: { deliveredAt: null, lastError: /could not be reached: ECONNREFUSED/ } },
    'pending, with the error visible',
  );
  t.type((task.body.delivery as { nextAttemptAt: unknown }).nextAttemptAt, 'number', 'the next attempt is scheduled');
  t.equal((await node.store.getSubscription(String(sub.body.id)))?.state, 'ON_HOLD', 'the subscription waits');
  t.ok(
    node.logger.lines.some((l) => l.event === 'workflow_engine_unreachable' && !JSON.stringify(l).includes('bps-pw')),
    'logged, without the engine password',
  );
  // The engine comes up: the back-off's next attempt (1 s after the first) delivers it.
  const eng = await engineOn(port);
  t.teardown(() => eng.close());
  t.ok(await until(() => eng.posts.length === 1, 4000), 'posted again once the engine is up');
  t.ok(
    await until(async () => ((await node.admin('GET', `/tasks/${id}`)).body.delivery as { deliveredAt: unknown }).deliveredAt !== null),
    'delivered',
  );
  const after = (await node.admin('GET', `/tasks/${id}`)).body.delivery as { attempts: number; lastError: string };
  t.ok(after.attempts >= 2, `${after.attempts} attempts`);
  t.equal(after.lastError, '', 'the error is cleared once delivered');
});

t.test('the back-off is bounded, and a task is posted again by hand', async (t) => {
  const port = await closedPort();
  const node = await startNode(toml(port));
  t.teardown(() => node.close());
  const settings = { ...node.km.workflows.settings, retry: { firstMs: 10, maxMs: 20, attempts: 3 } };
  const w = new Workflows(node.store, silentLogger, settings, () => 'http://callback.invalid');
  t.teardown(() => w.close());
  w.register('AM_USER_SIGNUP', { approved: async () => undefined, rejected: async () => undefined });
  const started = await w.start({
    type: 'AM_USER_SIGNUP',
    tenant: 'carbon.super',
    requester: 'x',
    entity: 'x',
    description: 'sign-up of x',
    executor: 'external',
  });
  const id = (started as { taskId: string }).taskId;
  t.ok(await until(async () => (await w.get(id)).delivery?.attempts === 3 && w.scheduled === 0, 3000), 'three attempts, then no more');
  await new Promise((r) => setTimeout(r, 100));
  t.match(
    (await w.get(id)).delivery,
    { attempts: 3, nextAttemptAt: null, lastError: /ECONNREFUSED/ },
    'it gave up: no next attempt, the error kept',
  );
  const eng = await engineOn(port);
  t.teardown(() => eng.close());
  t.match((await w.retry(id)).delivery, { attempts: 4, lastError: '' }, 'posted again by hand');
  t.equal(eng.posts.length, 1);
});

t.test('the external executor needs [apim.workflow] enable', async (t) => {
  const node = await startNode();
  t.teardown(() => node.close());
  const r = await node.admin('PUT', '/workflow-executors/AM_SUBSCRIPTION_CREATION', { executor: 'external' });
  t.equal(r.status, 400);
  t.match(r.body.error_description, /WORKFLOW_ENGINE_DISABLED/);
  t.equal((await node.admin('PUT', '/workflow-executors/AM_NOTHING', { executor: 'approval' })).status, 400, 'an unknown type: 400');
  t.equal(
    (await node.admin('PUT', '/workflow-executors/AM_SUBSCRIPTION_CREATION', { executor: 'sometimes' })).status,
    400,
    'an unknown executor: 400',
  );
  const all = await node.admin('GET', '/workflow-executors');
  t.equal((all.body.executors as Record<string, string>).AM_SUBSCRIPTION_CREATION, 'simple', 'unchanged: simple by default');
});
