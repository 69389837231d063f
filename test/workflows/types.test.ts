/**
 * Every workflow type under every executor (docs/workflows.md): what the entity's state is while its task
 * waits, what the gateway answers in that state, and what an approval or a rejection leaves. `simple`
 * applies at once; `approval` waits for the admin API's decision; `external` posts the task to an engine
 * (an HTTP server of this test) that calls back on the callback path.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import t from 'tap';
import { startWorkflow, WORKFLOW_TYPES, type Executor } from '../../lib/workflows';
import { HOST, until } from '../gateway/helpers';
import { basic, json } from '../keymanager/helpers';
import { faultCode, startNode, type WorkflowNode } from './helpers';

interface Engine {
  readonly url: string;
  readonly posts: Record<string, unknown>[];
  close(): Promise<void>;
}

async function engine(): Promise<Engine> {
  const posts: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posts.push({ ...(JSON.parse(body) as Record<string, unknown>), authorization: req.headers.authorization });
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  return {
    url: `http://${HOST}:${(server.address() as { port: number }).port}/bpmn`,
    posts,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

for (const executor of ['simple', 'approval', 'external'] as const satisfies readonly Executor[]) {
  t.test(`every workflow type with the ${executor} executor`, async (t) => {
    const eng = executor === 'external' ? await engine() : undefined;
    t.teardown(async () => eng?.close());
    const toml =
      eng !== undefined
        ? `[apim.workflow]\nenable = true\nservice_url = "${eng.url}"\nusername = "bps"\npassword = "bps-pw"\nwf_engine_user = "engine"\nwf_engine_pass = "engine-pw"\n`
        : '';
    const node: WorkflowNode = await startNode(toml);
    t.teardown(() => node.close());
    for (const type of WORKFLOW_TYPES) {
      const r = await node.admin('PUT', `/workflow-executors/${type}`, { executor });
      t.equal(r.status, 200, `${type} → ${executor}: ${r.text}`);
    }
    const pending = executor !== 'simple';

    /** Approves or rejects a task as this executor does: the admin API, or the engine's callback. */
    const decide = async (taskId: string, status: 'APPROVED' | 'REJECTED', comment = ''): Promise<void> => {
      if (eng === undefined) {
        const r = await node.admin('POST', `/tasks/${taskId}/${status === 'APPROVED' ? 'approve' : 'reject'}`, { comment });
        t.equal(r.status, 200, `decided ${taskId}: ${r.text}`);
        return;
      }
      t.ok(await until(() => eng.posts.some((p) => p.workflowReferenceId === taskId)), `the engine received ${taskId}`);
      const post = eng.posts.find((p) => p.workflowReferenceId === taskId) as Record<string, unknown>;
      t.equal(post.authorization, basic('bps', 'bps-pw'), 'posted with [apim.workflow] username and password');
      const r = await json(
        'POST',
        `${String(post.callbackUrl)}?workflowReferenceId=${taskId}`,
        { status, attributes: {}, description: comment },
        basic('engine', 'engine-pw'),
      );
      t.equal(r.status, 200, `the engine called back: ${r.text}`);
    };
    const taskOf = (r: { body: Record<string, unknown> }): string => {
      const w = r.body.workflow as { status: string; taskId?: string } | undefined;
      if (!pending) {
        t.equal(w, undefined, 'simple: no task');
        return '';
      }
      t.equal(w?.status, 'pending', 'the answer names its waiting task');
      return String(w?.taskId);
    };

    // Application creation: ON_HOLD gets no keys until approved.
    const app = await node.admin('POST', '/applications', { name: 'Shop' });
    t.equal(app.status, 201);
    t.equal(app.body.status, pending ? 'ON_HOLD' : 'APPROVED');
    const appTask = taskOf(app);
    if (pending) {
      const refused = await node.admin('POST', '/applications/Shop/keys', {});
      t.equal(refused.status, 409, 'a pending application gets no keys');
      t.match(refused.body.error_description, /ON_HOLD/);
      await decide(appTask, 'APPROVED');
      t.equal((await node.store.getApplication(String(app.body.id)))?.status, 'APPROVED', 'approved: the application is APPROVED');
    }
    // A rejected application stays REJECTED and gets no keys.
    const bad = await node.admin('POST', '/applications', { name: 'Spam' });
    if (pending) {
      await decide(taskOf(bad), 'REJECTED', 'not a real shop');
      t.equal((await node.store.getApplication(String(bad.body.id)))?.status, 'REJECTED');
      t.equal((await node.admin('POST', '/applications/Spam/keys', {})).status, 409, 'a rejected application gets no keys');
    }

    // Registration, production and sandbox apart: the key is shown at once, gets tokens once approved.
    const prod = await node.admin('POST', '/applications/Shop/keys', { keyType: 'PRODUCTION' });
    t.equal(prod.status, 201, prod.text);
    const prodTask = taskOf(prod);
    const key = String(prod.body.consumerKey);
    const secret = String(prod.body.consumerSecret);
    if (pending) {
      t.equal((await node.token(key, secret)).status, 401, 'pending keys get no token');
      await decide(prodTask, 'APPROVED');
    }
    const tok = await node.token(key, secret);
    t.equal(tok.status, 200, 'approved keys get a token');
    const sandbox = await node.admin('POST', '/applications/Shop/keys', { keyType: 'SANDBOX' });
    if (pending) {
      t.equal(
        sandbox.body.workflow !== undefined && (sandbox.body.workflow as { taskId: string }).taskId !== prodTask,
        true,
        'sandbox keys wait on their own task',
      );
      await decide(taskOf(sandbox), 'REJECTED', 'no sandbox for you');
      t.equal(
        (await node.token(String(sandbox.body.consumerKey), String(sandbox.body.consumerSecret))).status,
        401,
        'rejected keys never get a token',
      );
      const keys = ((await node.admin('GET', '/applications/Shop')).body.keys as { keyType: string }[]).map((k) => k.keyType);
      t.same(keys, ['PRODUCTION'], 'a rejected registration leaves no client');
    }

    // Subscription creation: ON_HOLD is refused with 900909; approved, the same call 200.
    const sub = await node.admin('POST', '/subscriptions', { application: 'Shop', api: '/pizza', version: '1.0.0' });
    t.equal(sub.status, 201, sub.text);
    t.equal(sub.body.state, pending ? 'ON_HOLD' : 'UNBLOCKED');
    const subTask = taskOf(sub);
    if (pending) {
      const held = await node.call('/pizza/1.0.0/menu', tok.token);
      t.same([held.status, faultCode(held)], [401, 900909], "a pending subscription's call: 900909");
      await decide(subTask, 'APPROVED');
    }
    t.ok(
      await until(async () => (await node.call('/pizza/1.0.0/menu', tok.token)).status === 200, 1000),
      'approved: the call answers 200 within a second',
    );

    // Tier change: the old tier stays until approved (Bronze allows one call a minute).
    const tier = await node.admin('PATCH', `/subscriptions/${String(sub.body.id)}`, { tier: 'Bronze' });
    t.equal(tier.status, 200, tier.text);
    const tierTask = taskOf(tier);
    if (pending) {
      t.equal((await node.store.getSubscription(String(sub.body.id)))?.tier, 'Unlimited', 'pending: the old tier stays');
      for (let i = 0; i < 3; i++) t.equal((await node.call('/pizza/1.0.0/menu', tok.token)).status, 200, 'counted on the old tier');
      await decide(tierTask, 'APPROVED');
    }
    t.equal((await node.store.getSubscription(String(sub.body.id)))?.tier, 'Bronze', 'the new tier');
    await node.call('/pizza/1.0.0/menu', tok.token);
    const over = await node.call('/pizza/1.0.0/menu', tok.token);
    t.same([over.status, faultCode(over)], [429, 900804], 'the gateway counts on the new tier');

    // Subscription deletion: kept until approved, then gone (900908).
    const del = await node.admin('DELETE', `/subscriptions/${String(sub.body.id)}`);
    t.equal(del.status, 200, del.text);
    const delTask = taskOf(del);
    if (pending) {
      t.ok((await node.store.getSubscription(String(sub.body.id))) !== undefined, 'pending: the subscription stays');
      await decide(delTask, 'APPROVED');
    }
    t.equal(await node.store.getSubscription(String(sub.body.id)), undefined, 'removed');
    t.ok(await until(async () => faultCode(await node.call('/pizza/1.0.0/menu', tok.token)) === 900908, 1000), 'unsubscribed: 900908');

    // A rejected subscription ends REJECTED (900909) with the approver's comment kept on its task.
    const again = await node.admin('POST', '/subscriptions', { application: 'Shop', api: '/pizza', version: '1.0.0' });
    if (pending) {
      const id = taskOf(again);
      await decide(id, 'REJECTED', 'too many calls last month');
      t.equal((await node.store.getSubscription(String(again.body.id)))?.state, 'REJECTED');
      const task = await node.admin('GET', `/tasks/${id}`);
      t.match(
        task.body,
        { status: 'REJECTED', decision: { comment: 'too many calls last month', by: eng !== undefined ? 'engine' : 'admin' } },
        'the decision with who and the comment',
      );
      t.ok(
        await until(async () => faultCode(await node.call('/pizza/1.0.0/menu', tok.token)) === 900909, 1000),
        "a rejected subscription's call: 900909",
      );
      t.match(
        task.body,
        {
          type: 'AM_SUBSCRIPTION_CREATION',
          tenant: 'carbon.super',
          requester: 'admin',
          entity: String(again.body.id),
          description: /Shop .*\/pizza 1.0.0/,
        },
        'a task records type, tenant, requester, entity, description',
      );
      t.type(task.body.createdAt, 'number');
    }

    // API state change: the API keeps its state until approved; rejected, it stays.
    const file = path.join(node.dir, 'apis', 'pizza.toml');
    const block = await node.admin('POST', '/api-files/pizza.toml/lifecycle', { state: 'DEPRECATED' });
    t.equal(block.status, pending ? 202 : 200, block.text);
    if (pending) {
      t.match(fs.readFileSync(file, 'utf8'), /state = "PUBLISHED"/, 'pending: the API keeps its state');
      await decide(taskOf(block), 'REJECTED', 'not yet');
      t.match(fs.readFileSync(file, 'utf8'), /state = "PUBLISHED"/, 'rejected: the API keeps its state');
      const again2 = await node.admin('POST', '/api-files/pizza.toml/lifecycle', { state: 'DEPRECATED' });
      await decide(taskOf(again2), 'APPROVED');
    }
    t.match(fs.readFileSync(file, 'utf8'), /state = "DEPRECATED"/, 'approved: the API moved');

    // User self sign-up: the engine call a sign-up page makes; its effect is the page's (here, the test's).
    const made: string[] = [];
    node.km.workflows.register('AM_USER_SIGNUP', { approved: async (x) => void made.push(x.entity), rejected: async () => undefined });
    const signup = await startWorkflow(node.km.workflows, 'AM_USER_SIGNUP', 'carbon.super', 'newbie', {
      requester: 'newbie',
      description: 'Sign-up of newbie',
    });
    if (pending) {
      t.equal(signup.status, 'pending');
      t.same(made, [], 'no account before the decision');
      await decide((signup as { taskId: string }).taskId, 'APPROVED');
      t.same(made, ['newbie'], "approved: the sign-up's effect ran");
    } else t.same(signup, { status: 'approved' });

    const tasks = await node.admin('GET', '/tasks?status=CREATED');
    t.same(tasks.body.list, [], 'no task is left waiting');
  });
}
