/**
 * `[apim.devportal] login_username_case_insensitive` (docs/user-stores.md, "Letter case of user names")
 * on a whole node over HTTP, with the super tenant, acme.test and beta.test: every sign-in (the password
 * grant, the code flow's sign-in page the consoles use, the admin API's Basic) finds a user typed in
 * another letter case when it is true (the default), as that stored user, within the tenant the name
 * names, and refuses two users that differ in case only; with false only the exact name signs in.
 */
import t, { type Test } from 'tap';
import { basic, decodePayload, json, postForm } from '../keymanager/helpers';
import { formRequest as req, PORTAL_TOML, startPortalNode, type PortalNode } from '../portal/helpers';
import { signInAs as signInPage } from '../portal/selfservice-helpers';

/** The portal session cookie (every console's) after the sign-in page, or '' when the page refused the name and password. */
const signInAs = async (base: string, username: string, password: string): Promise<string> =>
  (await signInPage(base, username, password)).cookie;

const SUPER = basic('admin', 'admin-pw-1');

interface Setup {
  readonly n: PortalNode;
  /** A password grant of acme.test's client, beta.test's client or the super tenant's: "200 <sub>" or "400 <error>". */
  token(client: 'acme' | 'beta' | 'super', username: string, password: string): Promise<string>;
}

async function setup(t: Test, toml: string): Promise<Setup> {
  const n = await startPortalNode(toml);
  t.teardown(() => n.close());
  const A = `${n.base}/admin/v1`;
  const ok = async (method: string, route: string, body: unknown, auth: string): Promise<Record<string, unknown>> => {
    const r = await json(method, `${A}${route}`, body, auth);
    if (r.status >= 300) throw new Error(`${method} ${route}: ${r.text}`);
    return r.body;
  };
  await ok('POST', '/tenants', { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, SUPER);
  await ok('POST', '/tenants', { domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' }, SUPER);
  const admins = { acme: basic('bossy@acme.test', 'acme-pw-1'), beta: basic('chief@beta.test', 'beta-pw-1'), super: SUPER };
  await ok('POST', '/users', { username: 'janey', password: 'janey-pw-1', roles: ['subscriber'] }, admins.acme);
  await ok('POST', '/users', { username: 'MaryAnn', password: 'mary-pw-1', roles: ['subscriber'] }, SUPER);
  // Two super tenant users whose names differ in letter case only.
  await ok('POST', '/users', { username: 'Dupes', password: 'dupes-pw-1', roles: ['subscriber'] }, SUPER);
  await ok('POST', '/users', { username: 'dupes', password: 'dupes-pw-1', roles: ['subscriber'] }, SUPER);
  const clients: Record<string, string> = {};
  for (const k of ['acme', 'beta', 'super'] as const) {
    await ok('POST', '/applications', { name: 'CaseApp' }, admins[k]);
    const keys = await ok('POST', '/applications/CaseApp/keys', { grantTypes: ['password'] }, admins[k]);
    clients[k] = basic(String(keys.consumerKey), String(keys.consumerSecret));
  }
  return {
    n,
    async token(client, username, password) {
      const r = await postForm(`${n.base}/oauth2/token`, { grant_type: 'password', username, password }, clients[client]);
      return r.status === 200 ? `200 ${String(decodePayload(String(r.body.access_token)).sub)}` : `${r.status} ${String(r.body.error)}`;
    },
  };
}

t.test(
  'login_username_case_insensitive = true (the default): any letter case signs in as the stored user, within its tenant',
  async (t) => {
    const { n, token } = await setup(t, PORTAL_TOML);
    // The password grant.
    t.equal(await token('acme', 'janey@acme.test', 'janey-pw-1'), '200 janey@acme.test', 'the exact name');
    t.equal(
      await token('acme', 'JANEY@ACME.TEST', 'janey-pw-1'),
      '200 janey@acme.test',
      'another case, the domain too: the stored name is the subject',
    );
    t.equal(await token('acme', 'Janey@acme.test', 'wrong-pw-1'), '400 invalid_grant', 'the password still counts');
    t.equal(await token('super', 'maryann', 'mary-pw-1'), '200 MaryAnn', "a super tenant's user");
    t.equal(
      await token('beta', 'JANEY@beta.test', 'janey-pw-1'),
      '400 invalid_grant',
      "beta.test has no janey: acme.test's is not found for it",
    );
    t.equal(
      await token('beta', 'JANEY@ACME.TEST', 'janey-pw-1'),
      '400 invalid_grant',
      "acme.test's user on beta.test's client: refused as before",
    );
    t.equal(await token('super', 'DUPES', 'dupes-pw-1'), '400 invalid_grant', 'two users differ in case only: the name is ambiguous');
    t.equal(await token('super', 'Dupes', 'dupes-pw-1'), '200 Dupes', 'each signs in by its exact name');
    t.equal(await token('super', 'dupes', 'dupes-pw-1'), '200 dupes');

    // The code flow's sign-in page (the consoles sign in through it): the session is the stored user's.
    const cookie = await signInAs(n.base, 'Janey@Acme.Test', 'janey-pw-1');
    t.not(cookie, '', 'signed in with another letter case');
    const portal = await req(`${n.base}/devportal`, cookie);
    t.match(portal.text, /janey@acme\.test/, 'as janey@acme.test');
    t.notMatch(portal.text, /Janey@Acme\.Test/);
    const console = await signInAs(n.base, 'BOSSY@acme.test', 'acme-pw-1');
    t.equal((await req(`${n.base}/admin/blocking`, console)).status, 200, "the tenant's admin in the admin console");
    t.match((await req(`${n.base}/admin/blocking`, console)).text, /APIs of acme\.test/, "as acme.test's admin");

    // The admin API's Basic: the caller is the stored admin, of its own tenant.
    const users = await json('GET', `${n.base}/admin/v1/users`, undefined, basic('BOSSY@ACME.TEST', 'acme-pw-1'));
    t.equal(users.status, 200, users.text);
    t.same((users.body.list as { username: string }[]).map((u) => u.username).sort(), ['bossy@acme.test', 'janey@acme.test']);
    t.equal((await json('GET', `${n.base}/admin/v1/tenants`, undefined, basic('ADMIN', 'admin-pw-1'))).status, 200, 'the super admin');
    t.equal(
      (await json('GET', `${n.base}/admin/v1/users`, undefined, basic('BOSSY@beta.test', 'acme-pw-1'))).status,
      401,
      'not in another tenant',
    );
  },
);

t.test('login_username_case_insensitive = false: only the exact name signs in', async (t) => {
  const { n, token } = await setup(t, `${PORTAL_TOML}[apim.devportal]\nlogin_username_case_insensitive = false\n`);
  t.equal(await token('acme', 'janey@acme.test', 'janey-pw-1'), '200 janey@acme.test');
  t.equal(await token('acme', 'JANEY@ACME.TEST', 'janey-pw-1'), '400 invalid_grant', 'another letter case: no such user');
  t.equal(await token('super', 'maryann', 'mary-pw-1'), '400 invalid_grant');
  t.equal(await token('super', 'MaryAnn', 'mary-pw-1'), '200 MaryAnn');
  t.equal(await signInAs(n.base, 'Janey@Acme.Test', 'janey-pw-1'), '', 'the sign-in page refuses it');
  t.not(await signInAs(n.base, 'janey@acme.test', 'janey-pw-1'), '', 'and takes the exact name');
  t.equal(
    (await json('GET', `${n.base}/admin/v1/users`, undefined, basic('BOSSY@ACME.TEST', 'acme-pw-1'))).status,
    401,
    'the admin API refuses it',
  );
  t.equal((await json('GET', `${n.base}/admin/v1/users`, undefined, basic('bossy@acme.test', 'acme-pw-1'))).status, 200);
});
