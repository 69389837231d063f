/**
 * The admin console (/admin, docs/workflows.md "The admin console") over HTTP on a whole node: sign-in,
 * its headers, tasks approved and rejected with a comment (the developer portal then shows "pending
 * approval" and the comment), a blocking condition and a header-condition policy added through their forms
 * and applied by the gateway at once, every form field's error beside it, a forged CSRF token refused, and
 * a tenant admin refused another tenant's task and the super admin's pages, and given its own tenant's
 * blocking conditions.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import {
  cookieOf,
  formRequest as req,
  hiddenField as hidden,
  PORTAL_TOML,
  startPortalNode,
  until,
  type PortalNode,
} from '../portal/helpers';
import { basic, json } from '../keymanager/helpers';

const TOML = `${PORTAL_TOML}[apim.throttling]\nenable_header_based_throttling = true\n`;
const COUNTED = `name = "Counted"\ncontext = "/counted"\nversion = "1.0.0"\npolicy = "GoldHeader"\n[endpoints]\nproduction = "http://127.0.0.1:1/none"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\nauth = "none"\n`;

async function signInAs(base: string, username: string, password: string, back = '/admin'): Promise<string> {
  const login = await req(`${base}/devportal/login?back=${encodeURIComponent(back)}`);
  const page = await req(`${base}${login.location}`);
  const posted = await req(`${base}/oauth2/authorize`, cookieOf(page, 'tw_authz'), {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username,
    password,
    action: 'login',
  });
  return cookieOf(await req(posted.location, cookieOf(login, 'tw_signin')), 'tw_portal');
}

/** The field's error, as rendered beside it. */
const errorOf = (html: string, id: string): string => new RegExp(`id="${id}-error" role="alert">([^<]*)<`).exec(html)?.[1] ?? '';

t.test('the admin console', async (t) => {
  const n: PortalNode = await startPortalNode(TOML);
  t.teardown(() => n.close());
  const A = `${n.base}/admin/v1`;
  const admin = basic('admin', 'admin-pw-1');

  const anon = await req(`${n.base}/admin`);
  t.equal(anon.status, 303, 'signed out: to the sign-in');
  t.equal(anon.location, '/devportal/login?back=%2Fadmin');
  t.equal((await json('GET', `${A}/tasks`, undefined, admin)).status, 200, '/admin/v1 is still the JSON API');

  const cookie = await signInAs(n.base, 'admin', 'admin-pw-1');
  t.not(cookie, '', 'signed in');
  const home = await fetch(`${n.base}/admin`, { headers: { Cookie: cookie } });
  t.equal(home.status, 200);
  t.match(home.headers.get('content-security-policy'), /default-src 'none'/, "the consoles' CSP");
  const homeText = await home.text();
  t.match(homeText, /<h1>Workflow tasks<\/h1>/);
  t.notMatch(homeText, /<script/i, 'no script');
  const csrf = hidden(homeText, 'csrf');

  // A forged CSRF token is refused.
  const forged = await req(`${n.base}/admin/blocking`, cookie, { csrf: 'forged', type: 'IP', value: '10.0.0.1', invert: 'false' });
  t.equal(forged.status, 403, 'forged CSRF: 403');
  t.equal((await json('GET', `${A}/blocking-conditions`, undefined, admin)).body.list?.toString(), '', 'nothing added');

  // Tasks: a subscription waits, is approved with a comment in /admin, another rejected; the portal shows both.
  t.equal((await json('PUT', `${A}/workflow-executors/AM_SUBSCRIPTION_CREATION`, { executor: 'approval' }, admin)).status, 200);
  const app = await json('POST', `${A}/applications`, { name: 'Shop' }, admin);
  const s1 = await json('POST', `${A}/subscriptions`, { application: 'Shop', api: '/pizzashack', version: '1.0.0' }, admin);
  t.equal(s1.body.state, 'ON_HOLD', s1.text);
  const portalApp = await req(`${n.base}/devportal/applications/${String(app.body.id)}?tab=subscriptions`, cookie);
  t.match(portalApp.text, /pending approval/, 'the developer portal shows "pending approval"');
  const task1 = String((s1.body.workflow as { taskId: string }).taskId);
  const listed = await req(`${n.base}/admin?type=AM_SUBSCRIPTION_CREATION`, cookie);
  t.match(listed.text, /Subscription of Shop/, 'the task is listed, filtered by type');
  const badType = await req(`${n.base}/admin?type=AM_NOPE`, cookie);
  t.match(errorOf(badType.text, 'type'), /type must be one of/, 'a filter type that is none: its error beside the field');
  const noDecision = await req(`${n.base}/admin/tasks/${task1}`, cookie, { csrf, comment: 'x' });
  t.equal(noDecision.status, 400);
  t.match(errorOf(noDecision.text, `comment-${task1}`), /Approve or Reject/, "no decision: the error beside the task's comment");
  const approved = await req(`${n.base}/admin/tasks/${task1}`, cookie, { csrf, comment: 'welcome', decision: 'APPROVED' });
  t.equal(approved.status, 303, approved.text);
  t.match(
    (await json('GET', `${A}/tasks/${task1}`, undefined, admin)).body,
    { status: 'APPROVED', decision: { by: 'admin', comment: 'welcome' } },
    'the decision kept with who and the comment',
  );
  t.match(
    (await json('GET', `${A}/subscriptions?application=Shop`, undefined, admin)).body.list,
    [{ state: 'UNBLOCKED' }],
    'approved in /admin: UNBLOCKED',
  );
  const again = await req(`${n.base}/admin/tasks/${task1}`, cookie, { csrf, comment: '', decision: 'REJECTED' });
  t.equal(again.status, 409, 'a second decision: 409');
  await json('POST', `${A}/applications`, { name: 'Other' }, admin);
  const s2 = await json('POST', `${A}/subscriptions`, { application: 'Other', api: '/pizzashack', version: '1.0.0' }, admin);
  const task2 = String((s2.body.workflow as { taskId: string }).taskId);
  t.equal(
    (await req(`${n.base}/admin/tasks/${task2}`, cookie, { csrf, comment: 'Use the Gold plan <please>', decision: 'REJECTED' })).status,
    303,
  );
  const other = (await json('GET', `${A}/applications/Other`, undefined, admin)).body;
  const otherPage = await req(`${n.base}/devportal/applications/${String(other.id)}?tab=subscriptions`, cookie);
  t.match(
    otherPage.text,
    /rejected: <q class="comment">Use the Gold plan &#60;please&#62;<\/q>/,
    'the rejected subscription shows the comment, escaped',
  );

  // Blocking conditions: errors beside their fields; a valid one applies at the gateway at once.
  const bad = await req(`${n.base}/admin/blocking`, cookie, { csrf, type: 'IP', value: 'not-an-ip', invert: 'false' });
  t.equal(bad.status, 400);
  t.match(errorOf(bad.text, 'value'), /./, 'a bad IP: its error beside the value');
  const badInvert = await req(`${n.base}/admin/blocking`, cookie, { csrf, type: 'API', value: '/pizzashack', invert: 'true' });
  t.match(errorOf(badInvert.text, 'invert'), /IP and IP_RANGE/, 'invert on an API condition: its error beside invert');
  const badKind = await req(`${n.base}/admin/blocking`, cookie, { csrf, type: 'PLANET', value: 'x', invert: 'false' });
  t.match(errorOf(badKind.text, 'type'), /one of/, 'an unknown type: its error beside the type');
  t.equal((await fetch(`${n.gateway}/pizzashack/1.0.0/menu`)).status, 200, 'served before the condition');
  t.equal((await req(`${n.base}/admin/blocking`, cookie, { csrf, type: 'API', value: '/pizzashack', invert: 'false' })).status, 303);
  const blocked = await fetch(`${n.gateway}/pizzashack/1.0.0/menu`);
  const blockedText = await blocked.text();
  t.equal(blocked.status, 429, `blocked at once: ${blockedText}`);
  t.match(blockedText, /900805/);

  // A header-condition policy added in /admin: an API file naming it deploys (the gateway's validator knows
  // the policy at once) and its calls are counted by it.
  fs.writeFileSync(path.join(n.dir, 'apis', 'counted.toml'), COUNTED);
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await fetch(`${n.gateway}/counted/1.0.0/x`)).status, 404, 'an API naming a policy that does not exist yet is not deployed');
  const p0 = {
    csrf,
    kind: 'api',
    name: 'GoldHeader',
    description: 'gold callers',
    request_count: '1000',
    unit_time: '1',
    time_unit: 'min',
    key_template: '',
    condition_type: 'header',
    condition_name: 'x-plan',
    condition_value: 'gold',
    group_request_count: '2',
  };
  const badPolicy = await req(`${n.base}/admin/policies`, cookie, { ...p0, request_count: 'lots', condition_value: '(' });
  t.equal(badPolicy.status, 400);
  t.match(errorOf(badPolicy.text, 'request_count'), /whole number/, 'a count that is no number: beside its field');
  const badRegex = await req(`${n.base}/admin/policies`, cookie, { ...p0, condition_value: '(' });
  t.match(errorOf(badRegex.text, 'condition_value'), /regular expression/, "the validator's message beside the condition value");
  const noName = await req(`${n.base}/admin/policies`, cookie, { ...p0, name: '' });
  t.match(errorOf(noName.text, 'name'), /name/, 'no name: beside the name');
  const dup = await req(`${n.base}/admin/policies`, cookie, { ...p0, name: 'Unlimited', condition_type: '' });
  t.match(errorOf(dup.text, 'name'), /defined twice/, "a duplicate name: the validator's message beside the name");
  const added = await req(`${n.base}/admin/policies`, cookie, p0);
  t.equal(added.status, 303, added.text.slice(0, 300));
  fs.writeFileSync(path.join(n.dir, 'apis', 'counted.toml'), `${COUNTED}# touched\n`);
  t.ok(
    await until(async () => (await fetch(`${n.gateway}/counted/1.0.0/x`, { headers: { 'x-plan': 'silver' } })).status !== 404),
    'the API deploys once its policy exists',
  );
  const codes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await fetch(`${n.gateway}/counted/1.0.0/x`, { headers: { 'x-plan': 'gold' } });
    codes.push(r.status === 429 ? ((await r.json()) as { fault: { code: number } }).fault.code : r.status);
  }
  t.equal(codes[2], 900800, `the third call within the minute is throttled with 900800 (${codes.join(', ')})`);

  // Tenants: errors beside the fields; a tenant admin sees its own tenant only.
  const badTenant = await req(`${n.base}/admin/tenants`, cookie, { csrf, domain: 'Not A Domain', admin: '', password: '', package: '' });
  t.equal(badTenant.status, 400);
  t.match(errorOf(badTenant.text, 'domain'), /domain/);
  t.match(errorOf(badTenant.text, 'admin'), /required/);
  t.match(errorOf(badTenant.text, 'password'), /required/);
  t.equal(
    (await req(`${n.base}/admin/tenants`, cookie, { csrf, domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: '' }))
      .status,
    303,
  );
  const dupTenant = await req(`${n.base}/admin/tenants`, cookie, {
    csrf,
    domain: 'acme.test',
    admin: 'bossy',
    password: 'acme-pw-1',
    package: '',
  });
  t.equal(dupTenant.status, 409);
  t.match(errorOf(dupTenant.text, 'domain'), /exists/);

  await json('POST', `${A}/applications`, { name: 'Third' }, admin);
  const s3 = await json('POST', `${A}/subscriptions`, { application: 'Third', api: '/pizzashack', version: '1.0.0' }, admin);
  const task3 = String((s3.body.workflow as { taskId: string }).taskId);
  const acme = await signInAs(n.base, 'bossy@acme.test', 'acme-pw-1');
  t.not(acme, '', 'the tenant admin signs in');
  const acmeHome = await req(`${n.base}/admin?status=ALL`, acme);
  t.equal(acmeHome.status, 200);
  t.notMatch(acmeHome.text, new RegExp(task3), "another tenant's task is not listed");
  const touch = await req(`${n.base}/admin/tasks/${task3}`, acme, {
    csrf: hidden(acmeHome.text, 'csrf'),
    comment: 'mine now',
    decision: 'APPROVED',
  });
  t.equal(touch.status, 404, "a tenant admin touching another tenant's task: refused");
  t.equal((await json('GET', `${A}/tasks/${task3}`, undefined, admin)).body.status, 'CREATED', 'the task still waits');
  // Blocking conditions: the tenant admin's own page, without the super tenant's; what it adds is acme.test's.
  const acmeBlocking = await req(`${n.base}/admin/blocking`, acme);
  t.equal(acmeBlocking.status, 200, "a tenant admin's blocking conditions page");
  t.notMatch(acmeBlocking.text, /\/pizzashack/, "the super tenant's condition is not listed");
  t.match(acmeBlocking.text, /Calls to the APIs of acme\.test/);
  const acmeCsrf = hidden(acmeHome.text, 'csrf');
  const acmeAdd = await req(`${n.base}/admin/blocking`, acme, { csrf: acmeCsrf, type: 'IP', value: '10.7.7.7', invert: 'false' });
  t.equal(acmeAdd.status, 303, acmeAdd.text.slice(0, 500));
  t.match((await req(`${n.base}/admin/blocking`, acme)).text, /10\.7\.7\.7/, 'listed on its page');
  const acmeApi = await json('GET', `${A}/blocking-conditions?tenant=acme.test`, undefined, admin);
  t.match(acmeApi.body.list, [{ tenant: 'acme.test', type: 'IP', value: '10.7.7.7' }], "stored as acme.test's");
  t.notMatch((await json('GET', `${A}/blocking-conditions`, undefined, admin)).text, /10\.7\.7\.7/, "not the super tenant's");
  const superBlock = (await json('GET', `${A}/blocking-conditions`, undefined, admin)).body.list as { id: string }[];
  const removeSuper = await req(`${n.base}/admin/blocking/${String(superBlock[0]?.id)}/remove`, acme, { csrf: acmeCsrf });
  t.equal(removeSuper.status, 404, "removing the super tenant's condition from acme.test's console: not found");
  t.equal(((await json('GET', `${A}/blocking-conditions`, undefined, admin)).body.list as unknown[]).length, 1, 'still there');
  t.equal((await req(`${n.base}/admin/tenants`, acme)).status, 403, "tenants are the super admin's");
  const apps = await req(`${n.base}/admin/applications`, acme);
  t.notMatch(apps.text, /Shop/, "another tenant's applications are not listed");
  const steal = await req(`${n.base}/admin/applications/${String(app.body.id)}/owner`, acme, {
    csrf: hidden(acmeHome.text, 'csrf'),
    owner: 'bossy',
  });
  t.equal(steal.status, 404, "another tenant's application: not found");

  // Changing an owner: an unknown tenant's user refused beside the field, a valid one applied.
  const jane = await json('POST', `${A}/users`, { username: 'janet', password: 'jane-pw-12' }, admin);
  t.equal(jane.status, 201, jane.text);
  const wrongOwner = await req(`${n.base}/admin/applications/${String(app.body.id)}/owner`, cookie, { csrf, owner: 'bossy@acme.test' });
  t.equal(wrongOwner.status, 400, wrongOwner.text.slice(0, 2000));
  t.match(errorOf(wrongOwner.text, `owner-${String(app.body.id)}`), /tenant acme.test/);
  const toJane = await req(`${n.base}/admin/applications/${String(app.body.id)}/owner`, cookie, { csrf, owner: 'janet' });
  t.equal(toJane.status, 303, /field-error[^>]*>([^<]*)/.exec(toJane.text)?.[1] ?? toJane.text.slice(0, 300));
  t.equal((await json('GET', `${A}/applications/${String(app.body.id)}`, undefined, admin)).body.owner, 'janet', 'the new owner');
});
