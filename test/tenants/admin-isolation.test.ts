/**
 * Tenant isolation of the admin API (docs/tenants.md, "Admins"): every row of ADMIN_ROUTES is called as
 * another tenant's admin (beta.test's) against acme.test's applications, subscriptions and users. A
 * `super` route must answer 403; a `tenant` route must neither show nor change acme.test's rows, checked
 * by the case this file has for it. A route added to the table without a case here fails this test, so
 * no route ships without its tenant check.
 */
import t from 'tap';
import { ADMIN_ROUTES, type AdminRoute } from '../../lib/keymanager/admin';
import { adminAuth, basic, json, reply, startKeyManager, type Harness, type Reply } from '../keymanager/helpers';

interface Acme {
  readonly appId: string;
  readonly appName: string;
  readonly subId: string;
  readonly user: string;
  /** A waiting workflow task of acme.test (its tier change of the subscription). */
  readonly taskId: string;
  /** acme.test's blocking condition (USER jane@acme.test). */
  readonly blockId: string;
}

type Call = (method: string, route: string, body?: unknown) => Promise<Reply>;

/**
 * The API file service's calls that got past the route's tenant check: a stub that would serve any
 * tenant's file (acme.test's `t:acme.test:x.toml`, the super tenant's `top.toml`), so a refusal is the route's.
 */
const fileCalls: string[] = [];
const FILES = [
  { id: 't:acme.test:x.toml', text: 'name = "AcmeX"' },
  { id: 'top.toml', text: 'name = "Top"' },
];

/** What a `tenant` route must do when beta.test's admin names acme.test's rows; each returns failures. */
const CASES: Record<string, (call: Call, acme: Acme, h: Harness) => Promise<string[]>> = {
  'GET /environments': async (call) => ((await call('GET', '/environments')).status === 200 ? [] : ['not answered']),
  'GET /applications': async (call, a) => {
    const r = await call('GET', '/applications');
    return r.status === 200 && !r.text.includes(a.appId) ? [] : [`lists acme.test's application (${r.status})`];
  },
  'POST /applications': async (call, _a, h) => {
    const r = await call('POST', '/applications', { name: 'Planted', owner: 'jane@acme.test' });
    const planted = (await h.store.listApplications(undefined, 'acme.test')).some((x) => x.name === 'Planted');
    return r.status === 400 && !planted ? [] : [`created an application in acme.test (${r.status})`];
  },
  'GET /applications/{name}': async (call, a) =>
    refusedBoth(call, 'GET', `/applications/${encodeURIComponent(a.appName)}`, `/applications/${a.appId}`),
  'DELETE /applications/{name}': async (call, a, h) => [
    ...(await refusedBoth(call, 'DELETE', `/applications/${encodeURIComponent(a.appName)}`, `/applications/${a.appId}`)),
    ...((await h.store.getApplication(a.appId)) === undefined ? ['deleted it'] : []),
  ],
  'PATCH /applications/{name}': async (call, a, h) => [
    ...(await refusedBoth(call, 'PATCH', `/applications/${a.appId}`, `/applications/${encodeURIComponent(a.appName)}`, { tier: 'Gold' })),
    ...((await h.store.getApplication(a.appId))?.tier === 'Gold' ? ['changed it'] : []),
  ],
  'POST /applications/{name}/keys': async (call, a) =>
    refusedBoth(call, 'POST', `/applications/${a.appId}/keys`, `/applications/${encodeURIComponent(a.appName)}/keys`, {}),
  'GET /subscriptions': async (call, a) => {
    const r = await call('GET', '/subscriptions');
    const named = await call('GET', `/subscriptions?application=${a.appId}`);
    return [
      ...(r.status === 200 && !r.text.includes(a.subId) ? [] : ["lists acme.test's subscription"]),
      ...(named.status === 404 ? [] : [`?application= of acme.test answered ${named.status}`]),
    ];
  },
  'POST /subscriptions': async (call, a) =>
    refused(await call('POST', '/subscriptions', { application: a.appId, api: '/t/beta.test/x', version: '1' })),
  'PATCH /subscriptions': async (call, a, h) => [
    ...refused(await call('PATCH', '/subscriptions', { application: a.appId, api: '/t/acme.test/pizza', state: 'BLOCKED' })),
    ...(await subscriptionKept(h, a)),
  ],
  'DELETE /subscriptions': async (call, a, h) => [
    ...refused(await call('DELETE', '/subscriptions', { application: a.appId, api: '/t/acme.test/pizza' })),
    ...(await subscriptionKept(h, a)),
  ],
  'PATCH /subscriptions/{id}': async (call, a, h) => [
    ...refused(await call('PATCH', `/subscriptions/${a.subId}`, { state: 'BLOCKED' })),
    ...(await subscriptionKept(h, a)),
  ],
  'DELETE /subscriptions/{id}': async (call, a, h) => [
    ...refused(await call('DELETE', `/subscriptions/${a.subId}`)),
    ...(await subscriptionKept(h, a)),
  ],
  'GET /users': async (call, a) => {
    const r = await call('GET', '/users');
    return r.status === 200 && !r.text.includes(a.user) ? [] : [`lists acme.test's user (${r.status})`];
  },
  'POST /users': async (call, _a, h) => {
    const r = await call('POST', '/users', { username: 'mole@acme.test', password: 'mole-pw-1' });
    const made = (await h.store.getUser('mole@acme.test')) !== undefined;
    return r.status === 400 && !made ? [] : [`added a user to acme.test (${r.status})`];
  },
  'GET /users/{name}/claims': async (call, a) => refused(await call('GET', `/users/${encodeURIComponent(a.user)}/claims`)),
  'PUT /users/{name}/roles': async (call, a, h) => [
    ...refused(await call('PUT', `/users/${encodeURIComponent(a.user)}/roles`, { roles: ['admin'] })),
    ...((await h.store.getUser(a.user))?.roles.includes('admin') === false ? [] : ['changed its roles']),
  ],
  'DELETE /users/{name}': async (call, a, h) => [
    ...refused(await call('DELETE', `/users/${encodeURIComponent(a.user)}`)),
    ...((await h.store.getUser(a.user)) !== undefined ? [] : ['removed the user']),
  ],
  'POST /applications/{name}/owner': async (call, a, h) => [
    ...(await refusedBoth(call, 'POST', `/applications/${a.appId}/owner`, `/applications/${encodeURIComponent(a.appName)}/owner`, {
      owner: 'chief',
    })),
    ...((await h.store.getApplication(a.appId))?.owner === a.user ? [] : ['changed its owner']),
  ],
  'GET /tasks': async (call, a) => {
    const r = await call('GET', '/tasks');
    return r.status === 200 && !r.text.includes(a.taskId) ? [] : [`lists acme.test's task (${r.status})`];
  },
  'GET /tasks/{id}': async (call, a) => refused(await call('GET', `/tasks/${a.taskId}`)),
  'POST /tasks/{id}/approve': async (call, a, h) => [
    ...refused(await call('POST', `/tasks/${a.taskId}/approve`, {})),
    ...(await taskWaits(h, a)),
  ],
  'POST /tasks/{id}/reject': async (call, a, h) => [
    ...refused(await call('POST', `/tasks/${a.taskId}/reject`, {})),
    ...(await taskWaits(h, a)),
  ],
  'POST /tasks/{id}/retry': async (call, a, h) => [
    ...refused(await call('POST', `/tasks/${a.taskId}/retry`, {})),
    ...(await taskWaits(h, a)),
  ],
  'GET /blocking-conditions': async (call, a) => {
    const r = await call('GET', '/blocking-conditions');
    return [
      ...(r.status === 200 && !r.text.includes(a.blockId) ? [] : [`lists acme.test's condition (${r.status})`]),
      ...refused(await call('GET', '/blocking-conditions?tenant=acme.test')),
      ...refused(await call('GET', '/blocking-conditions?tenant=*')),
    ];
  },
  'POST /blocking-conditions': async (call, _a, h) => {
    const r = await call('POST', '/blocking-conditions?tenant=acme.test', { type: 'IP', value: '10.6.6.6' });
    const planted = (await h.store.listBlockingConditions()).some((c) => c.value === '10.6.6.6');
    return r.status === 404 && !planted ? [] : [`added a condition to acme.test (${r.status})`];
  },
  'DELETE /blocking-conditions/{id}': async (call, a, h) => [
    ...refused(await call('DELETE', `/blocking-conditions/${a.blockId}`)),
    ...refused(await call('DELETE', `/blocking-conditions/${a.blockId}?tenant=acme.test`)),
    ...((await h.store.listBlockingConditions('acme.test')).some((c) => c.id === a.blockId) ? [] : ['removed it']),
  ],
  'GET /signing-keys': async (call, _a, h) => {
    const r = await call('GET', '/signing-keys');
    const acmeKids = (await h.store.listSigningKeys('acme.test')).map((k) => k.kid);
    return [
      ...(r.status === 200 && r.body.tenant === 'beta.test' && !acmeKids.some((k) => r.text.includes(k))
        ? []
        : [`shows acme.test's keys (${r.status})`]),
      ...refused(await call('GET', '/signing-keys?tenant=acme.test')),
      ...refused(await call('GET', '/signing-keys?tenant=*')),
    ];
  },
  'POST /signing-keys/rotate': async (call, _a, h) => {
    const before = JSON.stringify(await h.store.listSigningKeys('acme.test'));
    const own = await call('POST', '/signing-keys/rotate');
    return [
      ...(own.status === 200 && own.body.tenant === 'beta.test' ? [] : [`did not rotate its own ring (${own.status})`]),
      ...refused(await call('POST', '/signing-keys/rotate?tenant=acme.test')),
      ...(JSON.stringify(await h.store.listSigningKeys('acme.test')) === before ? [] : ["rotated acme.test's ring"]),
    ];
  },
  'GET /api-files': async (call) => {
    const r = await call('GET', '/api-files');
    const asked = await call('GET', '/api-files?tenant=acme.test');
    return [...(r.status === 200 && !r.text.includes('acme.test') ? [] : [`lists acme.test's API file (${r.status})`]), ...refused(asked)];
  },
  'GET /api-files/{id}': async (call) => [
    ...refused(await call('GET', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}`)),
    ...refused(await call('GET', `/api-files/${encodeURIComponent('t:acme.test:../x.toml')}`)),
    ...refused(await call('GET', `/api-files/${encodeURIComponent('t:../..:x')}`)),
    ...refused(await call('GET', '/api-files/top.toml')),
  ],
  'PUT /api-files/{id}': async (call) => [
    ...refused(await call('PUT', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}`, { text: 'name = "Mole"' })),
    ...refused(await call('PUT', '/api-files/top.toml', { text: 'name = "Mole"' })),
    ...(fileCalls.some((x) => x.startsWith('write')) ? [`wrote it: ${fileCalls.join(', ')}`] : []),
  ],
  'GET /api-files/{id}/protos': async (call) => [
    ...refused(await call('GET', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}/protos`)),
    ...refused(await call('GET', '/api-files/top.toml/protos')),
    ...(fileCalls.some((x) => x.startsWith('protos')) ? [`read them: ${fileCalls.join(', ')}`] : []),
  ],
  'PUT /api-files/{id}/protos': async (call) => [
    ...refused(
      await call('PUT', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}/protos`, { files: [{ name: 'm.proto', text: '' }] }),
    ),
    ...refused(await call('PUT', '/api-files/top.toml/protos', { files: [{ name: 'm.proto', text: '' }] })),
    ...(fileCalls.some((x) => x.startsWith('put-protos')) ? [`wrote them: ${fileCalls.join(', ')}`] : []),
  ],
  'DELETE /api-files/{id}/protos/{name}': async (call) => [
    ...refused(await call('DELETE', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}/protos/x.proto`)),
    ...refused(await call('DELETE', '/api-files/top.toml/protos/x.proto')),
    ...(fileCalls.some((x) => x.startsWith('remove-proto')) ? [`removed it: ${fileCalls.join(', ')}`] : []),
  ],
  'POST /api-files/{id}/lifecycle': async (call) => [
    ...refused(await call('POST', `/api-files/${encodeURIComponent('t:acme.test:x.toml')}/lifecycle`, { state: 'BLOCKED' })),
    ...refused(await call('POST', '/api-files/top.toml/lifecycle', { state: 'BLOCKED' })),
    ...(fileCalls.some((x) => x.startsWith('move')) ? [`moved it: ${fileCalls.join(', ')}`] : []),
  ],
  'GET /workflow-executors': async (call) => {
    const r = await call('GET', '/workflow-executors');
    return r.status === 200 &&
      (r.body.executors as Record<string, string>).AM_SUBSCRIPTION_UPDATE === 'simple' &&
      r.body.tenant === 'beta.test'
      ? []
      : [`shows acme.test's executors (${r.text.slice(0, 120)})`];
  },
  'PUT /workflow-executors/{type}': async (call, _a, h) => {
    const r = await call('PUT', '/workflow-executors/AM_SUBSCRIPTION_UPDATE', { executor: 'simple' });
    return r.status === 200 && (await h.km.workflows.executorOf('acme.test', 'AM_SUBSCRIPTION_UPDATE')) === 'approval'
      ? []
      : [`changed acme.test's executor (${r.status})`];
  },
};

async function taskWaits(h: Harness, a: Acme): Promise<string[]> {
  const task = await h.store.getWorkflowTask(a.taskId);
  return task !== undefined && task.decision === null ? [] : ["acme.test's task was decided"];
}

function refused(r: Reply): string[] {
  return r.status === 404 ? [] : [`answered ${r.status}: ${r.text.slice(0, 120)}`];
}

async function refusedBoth(call: Call, method: string, first: string, second: string, body?: unknown): Promise<string[]> {
  return [...refused(await call(method, first, body)), ...refused(await call(method, second, body))];
}

async function subscriptionKept(h: Harness, a: Acme): Promise<string[]> {
  const s = await h.store.getSubscription(a.subId);
  return s !== undefined && s.state === 'UNBLOCKED' ? [] : ["acme.test's subscription was changed"];
}

/** A path of the route with each `{...}` segment filled. */
const filled = (r: AdminRoute): string => r.path.replace(/\{[^}]+\}/g, 'acme.test');

t.test("every admin route, called as another tenant's admin, refuses", async (t) => {
  const h = await startKeyManager('', {
    deployments: () => ({ apis: [], policies: null }),
    apiFiles: {
      listFiles: (tenant) => FILES.filter((f) => (tenant === 'acme.test') === f.id.startsWith('t:acme.test:')),
      readFile: (id) => FILES.find((f) => f.id === id) ?? { id, text: '' },
      writeFile: async (id) => (fileCalls.push(`write ${id}`), { id }),
      transitionFile: async (id) => (fileCalls.push(`move ${id}`), { id, from: 'PUBLISHED' }),
      readProtos: (id) => (fileCalls.push(`protos ${id}`), { id, grpc: true, protos: [], methods: [] }),
      writeProtos: async (id) => (fileCalls.push(`put-protos ${id}`), { id, grpc: true, protos: [], methods: [] }),
      removeProto: async (id) => (fileCalls.push(`remove-proto ${id}`), { id, grpc: true, protos: [], methods: [] }),
    },
  });
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await h.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const acmeAdmin = basic('bossy@acme.test', 'acme-pw-1');
  // acme.test's signing key (made on first need for a tenant added without the admin route).
  t.equal((await h.km.keys.tenantJwks('acme.test')).length, 1);
  t.equal((await json('POST', `${A}/users`, { username: 'janey', password: 'jane-pw-1' }, acmeAdmin)).status, 201);
  const app = await json('POST', `${A}/applications`, { name: 'AcmeApp', owner: 'janey' }, acmeAdmin);
  t.match(app.body, { owner: 'janey@acme.test', tenant: 'acme.test' });
  const sub = await json('POST', `${A}/subscriptions`, { application: 'AcmeApp', api: '/t/acme.test/pizza', version: '1.0.0' }, acmeAdmin);
  t.equal(sub.status, 201, sub.text);
  t.equal((await json('PUT', `${A}/workflow-executors/AM_SUBSCRIPTION_UPDATE`, { executor: 'approval' }, acmeAdmin)).status, 200);
  const tier = await json('PATCH', `${A}/subscriptions/${String(sub.body.id)}`, { tier: 'Gold' }, acmeAdmin);
  const taskId = String((tier.body.workflow as { taskId?: string } | undefined)?.taskId);
  t.equal((await json('GET', `${A}/tasks/${taskId}`, undefined, acmeAdmin)).status, 200, 'its own admin finds its task');
  const block = await json('POST', `${A}/blocking-conditions`, { type: 'USER', value: 'janey@acme.test' }, acmeAdmin);
  t.match(block, { status: 201, body: { tenant: 'acme.test' } }, block.text);
  const acme: Acme = {
    appId: String(app.body.id),
    appName: 'AcmeApp',
    subId: String(sub.body.id),
    user: 'janey@acme.test',
    taskId,
    blockId: String(block.body.id),
  };
  t.equal((await json('GET', `${A}/applications/AcmeApp`, undefined, acmeAdmin)).status, 200, 'its own admin finds it');

  const beta = basic('chief@beta.test', 'beta-pw-1');
  const call: Call = (method, route, body) => json(method, `${A}${route}`, body, beta);
  let tenantRoutes = 0;
  for (const route of ADMIN_ROUTES) {
    const name = `${route.method} ${route.path}`;
    if (route.tenancy === 'super') {
      const r = await call(route.method, filled(route), route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      t.match(r, { status: 403, body: { error: 'access_denied' } }, `${name}: super tenant admins only`);
      continue;
    }
    tenantRoutes++;
    const check = CASES[name];
    if (check === undefined) {
      t.fail(`${name}: a tenant route with no isolation case in this file`);
      continue;
    }
    t.same(await check(call, acme, h), [], `${name}: acme.test's rows neither shown nor changed`);
  }
  t.equal(tenantRoutes, Object.keys(CASES).length, 'every case is a route of the table');
  // acme.test's own admin reaches its files (the stub answers), and only its own tenant's.
  const own = await json('GET', `${A}/api-files`, undefined, acmeAdmin);
  t.match(own, { status: 200, body: { list: [{ id: 't:acme.test:x.toml' }] } }, "acme.test's admin lists its tenant's files");
  t.equal((await json('GET', `${A}/api-files/t%3Aacme.test%3Ax.toml`, undefined, acmeAdmin)).status, 200);
  t.equal((await json('GET', `${A}/api-files/top.toml`, undefined, acmeAdmin)).status, 404, "not the super tenant's");
  t.equal((await json('GET', `${A}/api-files?tenant=acme.test`, undefined, adminAuth())).status, 200, "the super admin reads a tenant's");
  t.equal((await json('GET', `${A}/api-files?tenant=nope.test`, undefined, adminAuth())).status, 404, 'not a tenant that does not exist');
  // The super admin's own calls still work.
  t.equal((await json('GET', `${A}/snapshot`, undefined, adminAuth())).status, 200);
});

t.test('the Throughway-Tenant header: the super admin acts within a tenant on applications and subscriptions only', async (t) => {
  const h = await startKeyManager('');
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await h.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const acmeAdmin = basic('bossy@acme.test', 'acme-pw-1');
  t.equal((await json('POST', `${A}/users`, { username: 'janey', password: 'jane-pw-1' }, acmeAdmin)).status, 201);
  const as = async (auth: string, tenant: string, method: string, route: string, body?: unknown) =>
    reply(
      await fetch(`${A}${route}`, {
        method,
        headers: {
          Authorization: auth,
          'Throughway-Tenant': tenant,
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    );
  const made = await as(adminAuth(), 'acme.test', 'POST', '/applications', { name: 'Acting', owner: 'janey@acme.test' });
  t.match(made, { status: 201, body: { tenant: 'acme.test' } }, "the super admin's application within acme.test is acme.test's");
  t.ok(
    (await h.store.listApplications(undefined, 'acme.test')).some((a) => a.name === 'Acting'),
    "stored as acme.test's",
  );
  const unknown = await as(adminAuth(), 'nope.test', 'GET', '/applications');
  t.equal(unknown.status, 404, 'a tenant that does not exist: 404');
  const beta = basic('chief@beta.test', 'beta-pw-1');
  const across = await as(beta, 'acme.test', 'GET', '/applications');
  t.equal(across.status, 404, "beta.test's admin naming acme.test: 404");
  t.notOk(across.text.includes('Acting'), "and none of acme.test's applications shown");
  const planted = await as(beta, 'acme.test', 'POST', '/applications', { name: 'Planted', owner: 'janey@acme.test' });
  t.equal(planted.status, 404);
  t.notOk(
    (await h.store.listApplications(undefined, 'acme.test')).some((a) => a.name === 'Planted'),
    'nothing planted in acme.test',
  );
  const elsewhere = await as(adminAuth(), 'acme.test', 'GET', '/users');
  t.equal(elsewhere.status, 400, 'the header on another route: 400');
  t.match(elsewhere.body, { error: 'invalid_request' });
});
