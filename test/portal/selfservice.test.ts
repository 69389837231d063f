/**
 * Self-service accounts end to end, against a real SMTP server (test/mail/smtp.ts) and a whole node:
 * sign-up → the confirmation mail → no sign-in before the link is used → the link → first sign-in;
 * password recovery answers the same for an unknown account, its link works once and then expires;
 * a new version published → the subscribers of the previous version get the notification; the mail
 * server down at sign-up → the sign-up still succeeds and the mail arrives once the server is back; a
 * sign-up to a tenant makes that tenant's user, whose forum is the tenant's.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import t from 'tap';
import { at, linkIn, startSmtp } from '../mail/smtp';
import { ADMIN, hidden, req } from './helpers';
import { postLink, signInAs, signUp, startSelfServiceNode } from './selfservice-helpers';

const PASSWORD = 'Jane-pw-2026';

t.test('sign-up, confirmation link, first sign-in; recovery once, then expired', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const node = await startSelfServiceNode(
    smtp.port,
    '[multi_tenancy.platform]\nemail_validation_mandatory_for_login = true\n[throughway.portal]\nrecovery_link_validity = "2s"\n',
  );
  t.teardown(() => node.close());
  const base = node.base;

  const page = await req(`${base}/devportal/signup`);
  t.equal(page.status, 200);
  t.match(page.text, /<label for="email">E-mail address<\/label>/);
  t.equal(
    (await req(`${base}/devportal/signup`, '', { username: 'x', password: 'y' })).status,
    403,
    'a sign-up without the form token is refused',
  );
  const weak = await signUp(base, { username: 'janedoe', password: 'ab', email: 'jane@example.org' });
  t.equal(weak.status, 400, 'the password rules of every user store');
  t.match(weak.text, /PasswordJavaRegEx/);
  const bad = await signUp(base, { username: 'janedoe', password: PASSWORD, email: 'not-an-address' });
  t.equal(bad.status, 400);
  t.match(bad.text, /id="email-error"/);

  const made = await signUp(base, { username: 'janedoe', password: PASSWORD, email: 'Jane@Example.org', organization: 'Acme' });
  t.equal(made.status, 200);
  t.match(made.text, /We sent a confirmation link/);
  const mail = await smtp.next((m) => m.subject === 'Confirm your e-mail address');
  t.same(mail.to, ['jane@example.org']);
  t.equal(mail.from, 'portal@example.org', '[output_adapter.email] from_address');
  const mailed = linkIn(mail, '/devportal/confirm?token=');
  t.match(
    mailed.origin,
    /^https:\/\/127\.0\.0\.1:\d+$/,
    "links start with the consoles' own origin (HTTPS when it listens), never the request's Host",
  );
  const link = at(base, mailed);

  t.equal(
    (await signInAs(base, 'janedoe', PASSWORD)).status,
    403,
    'no sign-in before the address is confirmed (its right password: 403, saying why)',
  );
  t.ok(node.lines.some((l) => l.event === 'sign_in_unconfirmed' && l.username === 'janedoe'));
  const confirmed = await postLink(link);
  t.equal(confirmed.status, 200);
  t.match(confirmed.text, /id="confirmed"/);
  t.equal((await postLink(link)).status, 400, 'the confirmation link works once');
  const first = await signInAs(base, 'janedoe', PASSWORD);
  t.match(first.cookie, /^tw_portal=/, 'the first sign-in after confirmation');

  // Recovery: the same answer whether an account matches or not.
  const ask = async (account: string): Promise<string> => {
    const f = await req(`${base}/devportal/recover`);
    const a = await req(`${base}/devportal/recover`, (f.cookies[0] ?? '').split(';')[0] ?? '', { csrf: hidden(f.text, 'csrf'), account });
    t.equal(a.status, 200);
    return a.text.replace(/name="csrf" value="[^"]*"/g, '');
  };
  const unknown = await ask('nobody@example.org');
  const known = await ask('jane@example.org');
  t.equal(known, unknown, 'the answer never tells whether an account exists');
  const rec = await smtp.next((m) => m.subject === 'Reset your password');
  t.same(rec.to, ['jane@example.org']);
  t.equal(smtp.messages.filter((m) => m.subject === 'Reset your password').length, 1, 'nothing was sent for the unknown address');
  const reset = at(base, linkIn(rec, '/devportal/reset?token='));
  const weakReset = await postLink(reset, { password: 'ab', password2: 'ab' });
  t.equal(weakReset.status, 400, 'a new password follows the rules');
  const changed = await postLink(reset, { password: 'New-pw-2026', password2: 'New-pw-2026' });
  t.equal(changed.status, 200, 'the refused password did not spend the link');
  t.match(changed.text, /id="password-changed"/);
  t.equal((await postLink(reset, { password: 'Other-pw-2026', password2: 'Other-pw-2026' })).status, 400, 'the link works once');
  t.equal((await signInAs(base, 'janedoe', PASSWORD)).status, 401, 'the old password is gone');
  t.match((await signInAs(base, 'janedoe', 'New-pw-2026')).cookie, /^tw_portal=/, 'the new one signs in');

  await ask('janedoe');
  const late = await smtp.next((m) => m.subject === 'Reset your password' && m !== rec);
  await new Promise((r) => setTimeout(r, 2500));
  const expired = await postLink(at(base, linkIn(late, '/devportal/reset?token=')), {
    password: 'Late-pw-2026',
    password2: 'Late-pw-2026',
  });
  t.equal(expired.status, 400, 'an expired link is refused');
  t.match(expired.text, /expired/);
  const raw = node.raw.join('\n');
  t.notOk(raw.includes(PASSWORD) || raw.includes('New-pw-2026'), 'no password in the log');
  t.notOk(raw.includes(new URL(link).searchParams.get('token') ?? '-'), 'no link token in the log');
});

t.test('a new version published: the subscribers of the previous version are told', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const node = await startSelfServiceNode(smtp.port);
  t.teardown(() => node.close());
  const base = node.base;
  t.equal((await signUp(base, { username: 'samuel', password: PASSWORD, email: 'sam@example.org' })).status, 200);
  t.equal((await signUp(base, { username: 'kimberly', password: PASSWORD, email: 'kim@example.org' })).status, 200);
  const sam = (await signInAs(base, 'samuel', PASSWORD)).cookie;
  const csrf = hidden((await req(`${base}/devportal/applications`, sam)).text, 'csrf');
  const app = await req(`${base}/devportal/applications`, sam, { csrf, name: 'SamApp', description: '' });
  t.equal(app.status, 303);
  const appId = decodeURIComponent(app.location.split('/').pop() ?? '');
  const sub = await req(`${base}/devportal/subscribe`, sam, { csrf, application: appId, api: 'pizzashack-secured.toml', tier: 'Gold' });
  t.equal(sub.status, 303);

  const v2 = fs
    .readFileSync(path.join(node.dir, 'apis', 'pizzashack-secured.toml'), 'utf8')
    .replace('version = "1.0.0"', 'version = "2.0.0"')
    .replace('state = "PUBLISHED"\n', '');
  fs.mkdirSync(path.join(node.dir, 'apis', 'created'), { recursive: true });
  fs.writeFileSync(path.join(node.dir, 'apis', 'created', 'pizzashack-secured-2.toml'), v2);
  const admin = await signInAs(base, ADMIN.username, ADMIN.password);
  const acsrf = hidden((await req(`${base}/publisher`, admin.cookie)).text, 'csrf');
  const published = await req(`${base}/publisher/apis/created%3Apizzashack-secured-2.toml/lifecycle`, admin.cookie, {
    csrf: acsrf,
    state: 'PUBLISHED',
  });
  t.equal(published.status, 303, 'published');
  t.match(
    (await req(`${base}/devportal/applications/${encodeURIComponent(appId)}`, sam)).text,
    /PizzaShackSecured 1\.0\.0/,
    'subscribed to 1.0.0',
  );
  const m = await smtp.next((x) => x.subject === 'PizzaShackSecured 2.0.0 is published');
  t.same(m.to, ['sam@example.org'], 'the subscriber of 1.0.0');
  t.equal(m.from, 'news@example.org', '[apim.notifications] from_address');
  t.match(m.text, /in version 1\.0\.0/);
  t.match(m.text, /-- \r?\nThe API team/, '[apim.notifications] signature');
  await new Promise((r) => setTimeout(r, 500));
  t.notOk(
    smtp.messages.some((x) => x.to.includes('kim@example.org')),
    'a user without a subscription is not told',
  );
});

t.test('the mail server down: the sign-up succeeds, the mail arrives when the server is back', async (t) => {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const node = await startSelfServiceNode(port, '[multi_tenancy.platform]\nemail_validation_mandatory_for_login = true\n');
  t.teardown(() => node.close());
  const made = await signUp(node.base, { username: 'leeroy', password: PASSWORD, email: 'lee@example.org' });
  t.equal(made.status, 200, "the user's request succeeds");
  const until = Date.now() + 10_000;
  while (!node.lines.some((l) => l.event === 'mail_failed') && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  const failed = node.lines.find((l) => l.event === 'mail_failed');
  t.equal(failed?.code, 'ESOCKET', 'the failure is logged with its code');
  const metrics = await (await fetch(`${node.base}/metrics`)).text();
  t.match(metrics, /throughway_mail_failures_total [1-9]/, 'and counted');
  const smtp = await startSmtp({ port });
  t.teardown(() => smtp.close());
  const m = await smtp.next((x) => x.subject === 'Confirm your e-mail address', 20_000);
  t.same(m.to, ['lee@example.org'], 'the mail arrived after the server came back');
  t.match((await postLink(at(node.base, linkIn(m, '/devportal/confirm?token=')))).text, /id="confirmed"/);
});

t.test("sign-up per tenant: the user is the tenant's, signs in with its qualified name, and sees that tenant's forum", async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const node = await startSelfServiceNode(smtp.port);
  t.teardown(() => node.close());
  const base = node.base;
  const basic = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
  const made = await fetch(`${base}/admin/v1/tenants`, {
    method: 'POST',
    headers: { Authorization: basic, 'Content-Type': 'application/json' },
    body: JSON.stringify({ domain: 'acme.test', admin: 'bossy', password: 'Boss-pw-2026' }),
  });
  t.ok(made.ok, `a tenant (${made.status} ${await made.text()})`);
  t.match(
    (await req(`${base}/devportal/signup`)).text,
    /<label for="tenant">Tenant domain<\/label>/,
    'the form asks for the tenant once tenants exist',
  );
  const unknown = await signUp(base, { username: 'dora1', password: PASSWORD, email: 'dora@example.org', tenant: 'nowhere.test' });
  t.equal(unknown.status, 400);
  t.match(unknown.text, /nowhere\.test is not a tenant/);
  const ok = await signUp(base, { username: 'dora1', password: PASSWORD, email: 'dora@example.org', tenant: 'acme.test' });
  t.equal(ok.status, 200);
  t.match(ok.text, /dora1@acme\.test/, "the tenant's user name");
  const dora = await signInAs(base, 'dora1@acme.test', PASSWORD);
  t.match(dora.cookie, /^tw_portal=/, 'signs in with the qualified name');
  const f = await req(`${base}/devportal/forum`, dora.cookie);
  t.match(f.text, /<h1>Forum of acme\.test<\/h1>/, "the forum of the user's tenant");
  const topic = await req(`${base}/devportal/forum`, dora.cookie, {
    csrf: hidden(f.text, 'csrf'),
    title: 'Acme only',
    body: 'inside the tenant',
  });
  t.equal(topic.status, 303);
  t.equal((await signUp(base, { username: 'outsider', password: PASSWORD, email: 'o@example.org' })).status, 200);
  const outsider = await signInAs(base, 'outsider', PASSWORD);
  t.notMatch((await req(`${base}/devportal/forum`, outsider.cookie)).text, /Acme only/, "another tenant's topics are not listed");
  t.equal((await req(`${base}${topic.location}`, outsider.cookie)).status, 404, 'nor found');
});
