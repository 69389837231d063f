/**
 * A tenant's API state workflow (docs/workflows.md, docs/tenants.md "The publisher") on a started node:
 * acme.test's admin chooses the approval executor for AM_API_STATE, publishes an acme.test API in the
 * publisher and gets a waiting task of acme.test: the draft stays a draft, unserved. The task is decided
 * within its tenant (the reference keeps the authority to approve a tenant's workflows in the tenant's
 * space): beta.test's admin and the super tenant's admin neither list it nor open, approve or reject it,
 * in the admin console and the admin API (404), and it still waits. acme.test's admin sees it in /admin and
 * approves it there; the file then moves into apis/t/acme.test/ and the API is served at
 * /t/acme.test/<context>.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { basic, json } from '../keymanager/helpers';
import { ADMIN, hidden, PORTAL_TOML, publisherForm, req, signInAs, startPortalNode, until } from '../portal/helpers';

t.test("a tenant's API state task is its own tenant's to see and approve", async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const base = node.base;
  const A = `${base}/admin/v1`;
  const apis = path.join(node.dir, 'apis');
  const admin = basic(ADMIN.username, ADMIN.password);
  for (const [domain, who, pw] of [
    ['acme.test', 'bossy', 'acme-pw-1'],
    ['beta.test', 'chief', 'beta-pw-1'],
  ] as const)
    t.equal((await json('POST', `${A}/tenants`, { domain, admin: who, password: pw }, admin)).status, 201);
  const acmeBasic = basic('bossy@acme.test', 'acme-pw-1');
  const betaBasic = basic('chief@beta.test', 'beta-pw-1');
  t.equal(
    (await json('PUT', `${A}/workflow-executors/AM_API_STATE`, { executor: 'approval' }, acmeBasic)).status,
    200,
    "acme.test's admin chooses its tenant's executor",
  );
  t.match(
    (await json('GET', `${A}/workflow-executors`, undefined, admin)).body,
    { tenant: 'carbon.super', executors: { AM_API_STATE: 'simple' } },
    "the super tenant's stays simple",
  );

  // acme.test's admin publishes a draft: a task, and the draft stays one.
  const bossy = await signInAs(base, 'bossy@acme.test', 'acme-pw-1');
  const list = await req(`${base}/publisher`, bossy);
  const csrf = hidden(list.text, 'csrf');
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(apis, 'demo.toml'), 'utf8'))?.[1] ?? '';
  const created = await req(`${base}/publisher/new`, bossy, publisherForm(csrf, backend));
  t.equal(created.location, `/publisher/apis/${encodeURIComponent('t:acme.test:created:stock-1.toml')}`, created.text.slice(0, 300));
  const asked = await req(`${base}${created.location}/lifecycle`, bossy, { csrf, state: 'PUBLISHED' });
  t.equal(asked.status, 303);
  t.equal(asked.location, created.location, 'back to the draft');
  const draftPage = await req(`${base}${asked.location}`, bossy);
  t.match(draftPage.text, /CREATED → PUBLISHED pending approval/, 'the publisher says it waits');
  const draft = path.join(apis, 't', 'acme.test', 'created', 'stock-1.toml');
  const published = path.join(apis, 't', 'acme.test', 'stock-1.toml');
  t.ok(fs.existsSync(draft), 'the draft stays a draft');
  t.notOk(fs.existsSync(published));
  t.equal((await fetch(`${node.gateway}/t/acme.test/stock/1/menu`)).status, 404, 'not served');

  const acmeTasks = await json('GET', `${A}/tasks`, undefined, acmeBasic);
  const tasks = acmeTasks.body.list as { id: string; type: string; tenant: string; requester: string; entity: string }[];
  t.equal(tasks.length, 1, "acme.test's admin lists its task");
  const task = tasks[0];
  t.match(task, { type: 'AM_API_STATE', tenant: 'acme.test', requester: 'bossy@acme.test', entity: 't:acme.test:created:stock-1.toml' });
  const id = task?.id ?? '';
  const acmeConsole = await req(`${base}/admin`, bossy);
  t.equal(acmeConsole.status, 200);
  t.match(acmeConsole.text, new RegExp(`action="/admin/tasks/${id}"`), "in acme.test's admin console");
  t.match(acmeConsole.text, /Stock 1: CREATED → PUBLISHED/);

  // beta.test's admin and the super admin: not listed, not opened, not decided.
  const chief = await signInAs(base, 'chief@beta.test', 'beta-pw-1');
  const sup = await signInAs(base, ADMIN.username, ADMIN.password);
  for (const [who, auth, cookie] of [
    ["beta.test's admin", betaBasic, chief],
    ['the super admin', admin, sup],
  ] as const) {
    const listed = await json('GET', `${A}/tasks`, undefined, auth);
    t.equal(listed.status, 200);
    t.notOk(
      (listed.body.list as { id: string }[]).some((x) => x.id === id),
      `${who}: not in GET /admin/v1/tasks`,
    );
    t.equal((await json('GET', `${A}/tasks/${id}`, undefined, auth)).status, 404, `${who}: GET /tasks/{id} 404`);
    t.equal((await json('POST', `${A}/tasks/${id}/approve`, {}, auth)).status, 404, `${who}: approve 404`);
    t.equal((await json('POST', `${A}/tasks/${id}/reject`, {}, auth)).status, 404, `${who}: reject 404`);
    const page = await req(`${base}/admin?status=ALL`, cookie);
    t.equal(page.status, 200);
    t.notMatch(page.text, /Stock 1: CREATED/, `${who}: not in the admin console`);
    const decided = await req(`${base}/admin/tasks/${id}`, cookie, { csrf: hidden(page.text, 'csrf'), comment: '', decision: 'APPROVED' });
    t.equal(decided.status, 404, `${who}: approving in the admin console 404`);
  }
  t.match((await json('GET', `${A}/tasks/${id}`, undefined, acmeBasic)).body, { status: 'CREATED' }, 'the task still waits');
  t.ok(fs.existsSync(draft), 'and the draft is a draft');

  // acme.test's admin approves in its admin console: the move is made and the API served at its tenant URL.
  const approved = await req(`${base}/admin/tasks/${id}`, bossy, {
    csrf: hidden(acmeConsole.text, 'csrf'),
    comment: 'ship it',
    decision: 'APPROVED',
  });
  t.equal(approved.status, 303, approved.text.slice(0, 300));
  t.match(
    (await json('GET', `${A}/tasks/${id}`, undefined, acmeBasic)).body,
    { status: 'APPROVED', decision: { by: 'bossy@acme.test', comment: 'ship it' } },
    "decided by acme.test's admin",
  );
  t.notOk(fs.existsSync(draft), 'the draft moved');
  t.match(fs.readFileSync(published, 'utf8'), /^state = "PUBLISHED"$/m, 'into apis/t/acme.test/, published');
  t.ok(await until(async () => (await fetch(`${node.gateway}/t/acme.test/stock/1/menu`)).status === 200), 'served at /t/acme.test/stock');
  t.not((await fetch(`${node.gateway}/stock/1/menu`)).status, 200, "not at the super tenant's URL");
});
