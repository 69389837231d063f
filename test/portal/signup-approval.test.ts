/**
 * Self sign-up through the workflow engine (docs/self-service.md, "Sign-up under approval") on a whole
 * node with a real SMTP server (test/mail/smtp.ts): under the `approval` executor the account is held
 * (its right password answers "awaits approval" on the sign-in page and the password grant, a wrong one
 * still "Wrong username or password"); approved in /admin it signs in and its owner is mailed; rejected
 * through `throughway tasks reject --url` it is removed and its owner mailed the comment; approved by
 * `throughway tasks approve` on the store (no --url) it signs in. The default `simple` executor makes no
 * task. An unconfirmed account's right password says so (docs/self-service.md, "Sign-in of a held account").
 */
import * as path from 'node:path';
import t from 'tap';
import { runAdminCli } from '../../lib/keymanager/cli';
import { basic, json, postForm } from '../keymanager/helpers';
import { startSmtp } from '../mail/smtp';
import { ADMIN, cookieOf, hidden, req, type PortalNode } from './helpers';
import { signUp, startSelfServiceNode } from './selfservice-helpers';

const PASSWORD = 'Pat-pw-2026';
const admin = basic(ADMIN.username, ADMIN.password);

/** The sign-in page's answer to a password: its status and text (the portal session cookie on success). */
async function signInPage(base: string, username: string, password: string): Promise<{ status: number; text: string; cookie: string }> {
  const login = await req(`${base}/devportal/login?back=%2Fdevportal`);
  const page = await req(`${base}${login.location}`);
  const posted = await req(`${base}/oauth2/authorize`, cookieOf(page, 'tw_authz'), {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username,
    password,
    action: 'login',
  });
  if (posted.status !== 302) return { status: posted.status, text: posted.text, cookie: '' };
  const cb = await req(posted.location, cookieOf(login, 'tw_signin'));
  return { status: cb.status, text: cb.text, cookie: cookieOf(cb, 'tw_portal') };
}

/** The waiting sign-up tasks of the node. */
async function signUpTasks(n: PortalNode): Promise<{ id: string; entity: string; status: string; description: string }[]> {
  return (await json('GET', `${n.base}/admin/v1/tasks?type=AM_USER_SIGNUP`, undefined, admin)).body.list as {
    id: string;
    entity: string;
    status: string;
    description: string;
  }[];
}

/** Runs `throughway <args>` in this process; its exit code and output. */
async function cli(args: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runAdminCli(args, { out: (s) => void (out += s), err: (s) => void (err += s), cwd });
  return { code, out, err };
}

t.test('sign-up under the approval executor: held, approved in /admin, rejected and approved by the CLI', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const n = await startSelfServiceNode(smtp.port);
  t.teardown(() => n.close());
  const base = n.base;

  // The default executor is simple: the account signs in at once and no task is made.
  const simple = await signUp(base, { username: 'simon', password: PASSWORD, email: 'simon@example.org' });
  t.match(simple.text, /id="signed-up"/);
  t.same(await signUpTasks(n), [], 'simple: no task');
  t.match((await signInPage(base, 'simon', PASSWORD)).cookie, /^tw_portal=/, 'simple: signs in at once');

  t.equal((await json('PUT', `${base}/admin/v1/workflow-executors/AM_USER_SIGNUP`, { executor: 'approval' }, admin)).status, 200);
  const taken = await signUp(base, { username: 'simon', password: PASSWORD, email: 'other@example.org' });
  t.equal(taken.status, 400, 'a name that exists is refused before any task');
  t.match(taken.text, /id="username-error"[^>]*>[^<]*already exists/);
  t.same(await signUpTasks(n), [], 'no task for a refused sign-up');

  const made = await signUp(base, { username: 'patricia', password: PASSWORD, email: 'pat@example.org', organization: 'Acme' });
  t.equal(made.status, 200);
  t.match(made.text, /id="sign-up-pending"[^>]*>[^<]*<strong>patricia<\/strong> created; it awaits approval/);
  const [task] = await signUpTasks(n);
  t.match(
    task,
    { entity: 'patricia', status: 'CREATED', description: 'Self sign-up of patricia <pat@example.org>, organisation Acme' },
    'the task waits in the admin API',
  );

  // Held: the right password says why, a wrong one says what it says for every account.
  const held = await signInPage(base, 'patricia', PASSWORD);
  t.equal(held.status, 403, 'the right password of a held account: 403');
  t.match(held.text, /role="alert">Your account awaits approval/);
  t.notMatch(held.text, /Wrong username or password/);
  const wrong = await signInPage(base, 'patricia', 'Not-her-pw-1');
  t.equal(wrong.status, 401);
  t.match(wrong.text, /Wrong username or password/, 'a wrong password tells nothing of the account');
  t.ok(n.lines.some((l) => l.event === 'sign_in_awaiting_approval' && l.username === 'patricia'));
  // The password grant holds it too.
  const app = await json('POST', `${base}/admin/v1/applications`, { name: 'Grants' }, admin);
  const keys = await json(
    'POST',
    `${base}/admin/v1/applications/${String(app.body.id)}/keys`,
    { keyType: 'PRODUCTION', grantTypes: ['password'] },
    admin,
  );
  t.equal(keys.status, 201, 'keys for the password grant');
  const grant = await postForm(
    `${base}/oauth2/token`,
    { grant_type: 'password', username: 'patricia', password: PASSWORD },
    basic(String(keys.body.consumerKey), String(keys.body.consumerSecret)),
  );
  t.equal(grant.status, 400);
  t.equal(grant.body.error, 'invalid_grant');
  t.match(grant.body.error_description, /^SIGN_IN_AWAITING_APPROVAL: /);

  // Approved in /admin: the account signs in, its owner is mailed.
  const adminCookie = (await signInPage(base, ADMIN.username, ADMIN.password)).cookie;
  const home = await req(`${base}/admin?type=AM_USER_SIGNUP`, adminCookie);
  t.match(home.text, /Self sign-up of patricia/, 'listed in /admin');
  const decided = await req(`${base}/admin/tasks/${task?.id ?? ''}`, adminCookie, {
    csrf: hidden(home.text, 'csrf'),
    comment: 'welcome',
    decision: 'APPROVED',
  });
  t.equal(decided.status, 303, decided.text);
  const approvedMail = await smtp.next((m) => m.subject === 'Your developer portal account is approved');
  t.same(approvedMail.to, ['pat@example.org']);
  t.match(approvedMail.text, /you can sign in at https?:\/\/127\.0\.0\.1:\d+\/devportal\/login/);
  t.match((await signInPage(base, 'patricia', PASSWORD)).cookie, /^tw_portal=/, 'approved: signs in');
  const granted = await postForm(
    `${base}/oauth2/token`,
    { grant_type: 'password', username: 'patricia', password: PASSWORD },
    basic(String(keys.body.consumerKey), String(keys.body.consumerSecret)),
  );
  t.equal(granted.status, 200, 'approved: the password grant issues a token');

  // Rejected through the CLI against the running node: the account is removed, the comment mailed.
  t.equal((await signUp(base, { username: 'rupert', password: PASSWORD, email: 'rupert@example.org' })).status, 200);
  const rupert = (await signUpTasks(n)).find((x) => x.entity === 'rupert' && x.status === 'CREATED');
  t.ok(rupert, 'rupert waits');
  const rejected = await cli(
    [
      'tasks',
      'reject',
      rupert?.id ?? '',
      '--comment',
      'Not one of our partners',
      '--url',
      base,
      '--admin-user',
      ADMIN.username,
      '--admin-password',
      ADMIN.password,
    ],
    n.dir,
  );
  t.equal(rejected.code, 0, rejected.err);
  const rejectedMail = await smtp.next((m) => m.subject === 'Your developer portal sign-up was not approved');
  t.same(rejectedMail.to, ['rupert@example.org']);
  t.match(rejectedMail.text, /The approver's comment: Not one of our partners/);
  const users = (await json('GET', `${base}/admin/v1/users`, undefined, admin)).body.list as { username: string }[];
  t.notOk(
    users.some((u) => u.username === 'rupert'),
    'rejected: the account is removed',
  );
  t.match((await signInPage(base, 'rupert', PASSWORD)).text, /Wrong username or password/, 'rejected: no such account');

  // Approved by the CLI on the store (no --url): the effect is the same.
  t.equal((await signUp(base, { username: 'quentin', password: PASSWORD, email: 'quentin@example.org' })).status, 200);
  const quentin = (await signUpTasks(n)).find((x) => x.entity === 'quentin');
  t.equal((await signInPage(base, 'quentin', PASSWORD)).status, 403, 'quentin is held');
  const approved = await cli(['tasks', 'approve', quentin?.id ?? '', '--config', path.join(n.dir, 'deployment.toml')], n.dir);
  t.equal(approved.code, 0, approved.err);
  t.match((await signInPage(base, 'quentin', PASSWORD)).cookie, /^tw_portal=/, 'approved by the CLI: signs in');
  const cliMail = await smtp.next((m) => m.subject === 'Your developer portal account is approved' && m.to.includes('quentin@example.org'));
  t.ok(cliMail, "the CLI's approval is mailed too");
  t.notOk(n.raw.join('\n').includes(PASSWORD), 'no password in the log');
});

t.test('an unconfirmed account: its right password says so, a wrong one does not', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const n = await startSelfServiceNode(smtp.port, '[multi_tenancy.platform]\nemail_validation_mandatory_for_login = true\n');
  t.teardown(() => n.close());
  t.equal((await signUp(n.base, { username: 'ursula', password: PASSWORD, email: 'ursula@example.org' })).status, 200);
  const right = await signInPage(n.base, 'ursula', PASSWORD);
  t.equal(right.status, 403);
  t.match(right.text, /role="alert">Confirm your e-mail address first/);
  const wrong = await signInPage(n.base, 'ursula', 'Not-her-pw-1');
  t.equal(wrong.status, 401);
  t.match(wrong.text, /Wrong username or password/);
  t.notMatch(wrong.text, /Confirm your e-mail/, 'only the holder of the password learns the account waits for its confirmation');
});
