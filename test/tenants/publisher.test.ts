/**
 * The publisher per tenant (docs/tenants.md, "The publisher"), over HTTP on a started node: acme.test's
 * admin creates an API (a draft in apis/t/acme.test/created/) and publishes it; it is served at
 * /t/acme.test/<context>/<version>/... (apis/t/ did not exist at start: hot deploy follows the new folder)
 * and listed in /devportal?tenant=acme.test, not in the super tenant's catalogue. beta.test's admin can
 * neither see, read, edit nor move it (also by a guessed id and ids with path traversal), nor can the super
 * admin's publisher, which lists the super tenant's APIs only. The package's resource_volume.limit refuses a
 * third API (TENANT_LIMIT_REACHED).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { basic, json } from '../keymanager/helpers';
import { ADMIN, cookieOf, hidden, PORTAL_TOML, publisherForm, req, signIn, startPortalNode, until } from '../portal/helpers';

const PACKAGE = `[multi_tenancy.billing.package.demo.resource_volume]\nlimit = "2"\n`;

/** Signs a user in through the key manager's sign-in page; the portal session cookie. */
async function signInAs(base: string, username: string, password: string): Promise<string> {
  const login = await req(`${base}/devportal/login?back=%2Fpublisher`);
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

t.test("a tenant's admin publishes its tenant's APIs only; no other tenant reaches them", async (t) => {
  // The publisher's local audit on: its JSON route must hold the tenant boundary as the API's page does.
  const node = await startPortalNode(`${PORTAL_TOML}${PACKAGE}[security_audit]\n`);
  t.teardown(() => node.close());
  const base = node.base;
  const apis = path.join(node.dir, 'apis');
  t.notOk(fs.existsSync(path.join(apis, 't')), 'no tenant folder at start');
  const admin = basic(ADMIN.username, ADMIN.password);
  for (const [domain, who, pw, pkg] of [
    ['acme.test', 'bossy', 'acme-pw-1', 'demo'],
    ['beta.test', 'chief', 'beta-pw-1', undefined],
  ] as const)
    t.equal(
      (await json('POST', `${base}/admin/v1/tenants`, { domain, admin: who, password: pw, ...(pkg ? { package: pkg } : {}) }, admin))
        .status,
      201,
    );

  const bossy = await signInAs(base, 'bossy@acme.test', 'acme-pw-1');
  t.not(bossy, '', 'acme.test admin signed in');
  const list0 = await req(`${base}/publisher`, bossy);
  t.equal(list0.status, 200);
  t.match(list0.text, /APIs of acme\.test/);
  t.notMatch(list0.text, /PizzaShack/, "the super tenant's APIs are not in a tenant's publisher");
  const csrf = hidden(list0.text, 'csrf');
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(apis, 'demo.toml'), 'utf8'))?.[1] ?? '';
  const form = (version: string): Record<string, string> => publisherForm(csrf, backend, { version });

  const created = await req(`${base}/publisher/new`, bossy, form('1'));
  t.equal(created.status, 303, created.text.slice(0, 300));
  t.equal(created.location, `/publisher/apis/${encodeURIComponent('t:acme.test:created:stock-1.toml')}`);
  t.ok(fs.existsSync(path.join(apis, 't', 'acme.test', 'created', 'stock-1.toml')), "the draft is in the tenant's created/");
  t.notOk(fs.existsSync(path.join(apis, 'created', 'stock-1.toml')), "not in the super tenant's");
  const draftPage = await req(`${base}${created.location}`, bossy);
  t.equal(draftPage.status, 200);

  const published = await req(`${base}${created.location}/lifecycle`, bossy, { csrf, state: 'PUBLISHED' });
  t.equal(published.status, 303, published.text.slice(0, 300));
  const id = 't:acme.test:stock-1.toml';
  const page = `/publisher/apis/${encodeURIComponent(id)}`;
  t.equal(published.location, page);
  const file = path.join(apis, 't', 'acme.test', 'stock-1.toml');
  t.match(fs.readFileSync(file, 'utf8'), /^state = "PUBLISHED"$/m);
  t.ok(await until(async () => (await fetch(`${node.gateway}/t/acme.test/stock/1/menu`)).status === 200), 'served at its tenant URL');
  t.not((await fetch(`${node.gateway}/stock/1/menu`)).status, 200, "not at the super tenant's URL");
  const mine = await req(`${base}/publisher`, bossy);
  t.match(mine.text, /\/t\/acme\.test\/stock/, 'listed with its served context');

  const portal = await req(`${base}/devportal?tenant=acme.test`);
  t.match(portal.text, /Stock/, "in the tenant's developer portal");
  t.notMatch((await req(`${base}/devportal`)).text, /\/t\/acme\.test\/stock/, "not in the super tenant's");

  // beta.test's admin: nothing of acme.test's, whatever the id.
  const chief = await signInAs(base, 'chief@beta.test', 'beta-pw-1');
  t.not(chief, '');
  const betaList = await req(`${base}/publisher`, chief);
  t.equal(betaList.status, 200);
  t.notMatch(betaList.text, /Stock|acme\.test/, "beta.test's publisher lists none of acme.test's");
  const betaCsrf = hidden(betaList.text, 'csrf');
  const guesses = [
    id,
    't:acme.test:created:stock-1.toml',
    't:acme.test:../stock-1.toml',
    't:../..:x',
    't:acme.test/..:stock-1.toml',
    'stock-1.toml',
  ];
  const ownAudit = await req(`${base}/publisher/apis/${encodeURIComponent(id)}/audit`, bossy);
  t.equal(ownAudit.status, 200, "acme.test's admin audits its own API");
  t.match(ownAudit.text, /"score": \d+/);
  for (const g of guesses) {
    const at = `/publisher/apis/${encodeURIComponent(g)}`;
    const audit = await req(`${base}${at}/audit`, chief);
    t.equal(audit.status, 404, `audit ${g}: 404`);
    t.notMatch(audit.text, /"score":/, `audit ${g}: no report`);
    t.equal((await req(`${base}${at}`, chief)).status, 404, `GET ${g}: 404`);
    t.equal((await req(`${base}${at}`, chief, { ...form('1'), csrf: betaCsrf, description: 'mole' })).status, 404, `edit ${g}: 404`);
    t.equal((await req(`${base}${at}/lifecycle`, chief, { csrf: betaCsrf, state: 'BLOCKED' })).status, 404, `publish/block ${g}: 404`);
  }
  t.match(fs.readFileSync(file, 'utf8'), /^state = "PUBLISHED"$/m, 'the file is unchanged');
  t.notMatch(fs.readFileSync(file, 'utf8'), /mole/);
  // beta.test's own API of the same context is its own.
  const betaNew = await req(`${base}/publisher/new`, chief, { ...form('1'), csrf: betaCsrf });
  t.equal(betaNew.location, `/publisher/apis/${encodeURIComponent('t:beta.test:created:stock-1.toml')}`, 'the same context in beta.test');
  // The admin API: beta.test's admin does not reach acme.test's files; acme.test's admin does.
  const betaBasic = basic('chief@beta.test', 'beta-pw-1');
  t.equal((await json('GET', `${base}/admin/v1/api-files/${encodeURIComponent(id)}`, undefined, betaBasic)).status, 404);
  t.equal((await json('PUT', `${base}/admin/v1/api-files/${encodeURIComponent(id)}`, { text: 'x' }, betaBasic)).status, 404);
  const acmeBasic = basic('bossy@acme.test', 'acme-pw-1');
  const read = await json('GET', `${base}/admin/v1/api-files/${encodeURIComponent(id)}`, undefined, acmeBasic);
  t.match(read, { status: 200, body: { id } });
  const acmeFiles = await json('GET', `${base}/admin/v1/api-files`, undefined, acmeBasic);
  t.same(
    (acmeFiles.body.list as { id: string }[]).map((x) => x.id),
    [id],
    "acme.test's admin lists its own files only",
  );

  // The super admin's publisher: the super tenant's APIs only, and no tenant id reached.
  const sup = await signIn(base);
  const supList = await req(`${base}/publisher`, sup);
  t.match(supList.text, /PizzaShack/);
  t.notMatch(supList.text, /Stock|t%3Aacme/, "the super admin's publisher lists no tenant API");
  t.equal((await req(`${base}${page}`, sup)).status, 404, "the super admin's publisher does not open a tenant's API");

  // resource_volume.limit = 2 (package demo): the published API and a second draft, then refused.
  t.equal((await req(`${base}/publisher/new`, bossy, form('2'))).status, 303, 'a second API');
  const third = await req(`${base}/publisher/new`, bossy, form('3'));
  t.equal(third.status, 403, 'a third API is past the package limit');
  t.match(third.text, /TENANT_LIMIT_REACHED: tenant acme\.test has 2 APIs: package demo allows 2/);
  t.notOk(fs.existsSync(path.join(apis, 't', 'acme.test', 'created', 'stock-3.toml')), 'nothing written');
  const viaApi = await json(
    'PUT',
    `${base}/admin/v1/api-files/${encodeURIComponent('t:acme.test:created:other-1.toml')}`,
    { text: fs.readFileSync(file, 'utf8').replace('"Stock"', '"Other"').replace('"1"', '"9"'), create: true },
    acmeBasic,
  );
  t.match(
    viaApi,
    { status: 403, body: { error: 'access_denied', error_description: /TENANT_LIMIT_REACHED/ } },
    'and through the admin API',
  );
});
