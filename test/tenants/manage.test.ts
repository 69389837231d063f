/**
 * Managing tenants (docs/tenants.md): the admin API's /admin/v1/tenants routes for the super admin, the
 * domain rules, duplicates, the reserved super tenant, a tenant admin refused tenant management,
 * `[multi_tenancy.platform] tenant_activation_moderated`, and the CLI's `tenants` commands (the password
 * from the environment or standard input, never an argument).
 */
import t from 'tap';
import * as path from 'node:path';
import * as fs from 'node:fs';
import { adminAuth, basic, json, startKeyManager, ADMIN } from '../keymanager/helpers';
import { domainProblem } from '../../lib/tenants';
import { main } from '../../lib/cli';

t.test('domains: lower-case DNS labels, at most 253 characters', async (t) => {
  t.equal(domainProblem('acme.test'), undefined);
  t.equal(domainProblem('a-1.b2.example'), undefined);
  for (const bad of [
    '',
    'acme',
    'Acme.test',
    'acme..test',
    '-acme.test',
    'acme-.test',
    'ac_me.test',
    'acme.test.',
    `${'a'.repeat(64)}.test`,
    `${'a.'.repeat(127)}ab`,
    'acme.test/x',
    'acme test.io',
  ]) {
    t.type(domainProblem(bad), 'string', `refused: ${JSON.stringify(bad.slice(0, 40))}`);
  }
  t.equal(domainProblem(`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`), undefined, '253 characters');
  t.type(domainProblem(`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}`), 'string', '254 characters');
});

t.test('the admin API manages tenants; a tenant admin may not', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const auth = adminAuth();

  const listed = await json('GET', `${A}/tenants`, undefined, auth);
  t.same(
    (listed.body.list as { domain: string }[]).map((x) => x.domain),
    ['carbon.super'],
    'the super tenant always exists',
  );
  const made = await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'smb' }, auth);
  t.equal(made.status, 201, made.text);
  t.match(made.body, { domain: 'acme.test', admin: 'bossy@acme.test', package: 'smb', active: true });
  t.notOk(made.text.includes('acme-pw-1'), 'no password in the answer');
  t.match(await json('GET', `${A}/tenants/acme.test`, undefined, auth), { status: 200, body: { domain: 'acme.test', active: true } });
  t.match(await json('GET', `${A}/tenants/nope.test`, undefined, auth), { status: 404, body: { error: 'not_found' } });

  t.match(
    await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'other', password: 'acme-pw-2' }, auth),
    { status: 409, body: { error: 'conflict', error_description: /TENANT_EXISTS/ } },
    'a duplicate',
  );
  t.match(
    await json('POST', `${A}/tenants`, { domain: 'carbon.super', admin: 'x1234', password: 'acme-pw-2' }, auth),
    { status: 400, body: { error_description: /TENANT_RESERVED/ } },
    'the super tenant',
  );
  t.match(
    await json('POST', `${A}/tenants`, { domain: 'Bad_Domain', admin: 'x1234', password: 'acme-pw-2' }, auth),
    { status: 400, body: { error_description: /TENANT_DOMAIN_INVALID/ } },
    'a malformed domain',
  );
  t.match(
    await json('POST', `${A}/tenants`, { domain: `${'a'.repeat(250)}.test`, admin: 'x1234', password: 'acme-pw-2' }, auth),
    { status: 400, body: { error_description: /TENANT_DOMAIN_INVALID.*253/ } },
    'too long',
  );
  t.match(await json('POST', `${A}/tenants`, { domain: 'beta.test', admin: 'x1234', password: 'acme-pw-2', package: 'gold' }, auth), {
    status: 400,
    body: { error_description: /TENANT_PACKAGE_UNKNOWN/ },
  });
  t.match(
    await json('POST', `${A}/tenants`, { domain: 'beta.test', admin: 'jo@example.org', password: 'acme-pw-2' }, auth),
    { status: 400, body: { error_description: /enable_email_domain/ } },
    'an e-mail admin name needs enable_email_domain',
  );
  t.match(await json('POST', `${A}/tenants`, { domain: 'beta.test', password: 'acme-pw-2' }, auth), {
    status: 400,
    body: { error_description: 'admin is required' },
  });

  // The tenant admin signs in to the admin API as name@domain, and is refused tenant management.
  const boss = basic('bossy@acme.test', 'acme-pw-1');
  t.equal((await json('GET', `${A}/users`, undefined, boss)).status, 200, 'the tenant admin signs in');
  for (const [method, route, body] of [
    ['GET', '/tenants', undefined],
    ['POST', '/tenants', { domain: 'evil.test', admin: 'e1234', password: 'evil-pw-1' }],
    ['GET', '/tenants/acme.test', undefined],
    ['POST', '/tenants/acme.test/deactivate', undefined],
  ] as const) {
    t.match(
      await json(method, `${A}${route}`, body, boss),
      { status: 403, body: { error: 'access_denied' } },
      `${method} ${route} as a tenant admin`,
    );
  }
  t.equal((await json('GET', `${A}/tenants/evil.test`, undefined, auth)).status, 404, 'nothing was created');

  // Deactivated: the tenant admin cannot sign in; activated again: can.
  t.match(await json('POST', `${A}/tenants/acme.test/deactivate`, undefined, auth), { status: 200, body: { active: false } });
  t.equal((await json('GET', `${A}/users`, undefined, boss)).status, 401, "a deactivated tenant's admin is refused");
  t.equal(
    await h.km.users.authenticate('bossy@acme.test', 'acme-pw-1'),
    undefined,
    "the user store the sign-in page and the password grant ask refuses a deactivated tenant's user",
  );
  t.match(await json('POST', `${A}/tenants/acme.test/activate`, undefined, auth), { status: 200, body: { active: true } });
  t.equal((await json('GET', `${A}/users`, undefined, boss)).status, 200);
  t.match(await h.km.users.authenticate('bossy@acme.test', 'acme-pw-1'), { username: 'bossy@acme.test', roles: ['admin'] });
  t.match(await json('POST', `${A}/tenants/nope.test/activate`, undefined, auth), {
    status: 404,
    body: { error_description: /TENANT_NOT_FOUND/ },
  });
  t.match(await json('POST', `${A}/tenants/carbon.super/deactivate`, undefined, auth), {
    status: 400,
    body: { error_description: /TENANT_RESERVED/ },
  });
  t.ok(
    h.logLines.some((l) => l.includes('"tenant_added"') && l.includes('acme.test')),
    'logged',
  );
});

t.test('[multi_tenancy.platform] tenant_activation_moderated: a new tenant waits for the super admin', async (t) => {
  const h = await startKeyManager('[multi_tenancy.platform]\ntenant_activation_moderated = true\n');
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const made = await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, adminAuth());
  t.match(made, { status: 201, body: { active: false } });
  t.equal((await json('GET', `${A}/users`, undefined, basic('bossy@acme.test', 'acme-pw-1'))).status, 401, 'its admin cannot sign in yet');
  await json('POST', `${A}/tenants/acme.test/activate`, undefined, adminAuth());
  t.equal((await json('GET', `${A}/users`, undefined, basic('bossy@acme.test', 'acme-pw-1'))).status, 200);
});

t.test('the CLI: tenants add|list|activate|deactivate, locally and with --url', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const conf = path.join(h.dir, 'deployment.toml');
  fs.writeFileSync(
    conf,
    `[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(h.dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n`,
  );
  const run = async (
    argv: string[],
    extra: { env?: Record<string, string>; stdin?: string } = {},
  ): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await main(argv, {
      out: (x) => (out += x),
      err: (x) => (err += x),
      cwd: h.dir,
      env: extra.env ?? {},
      ...(extra.stdin !== undefined ? { stdin: async () => extra.stdin as string } : {}),
    });
    return { code, out, err };
  };
  const added = await run(['tenants', 'add', 'acme.test', '--admin', 'bossy', '--package', 'demo', '--config', conf], {
    env: { THROUGHWAY_TENANT_ADMIN_PASSWORD: 'acme-pw-1' },
  });
  t.equal(added.code, 0, added.err);
  t.match(added.out, /tenant acme.test added, admin bossy@acme.test, package demo: active/);
  const piped = await run(['tenants', 'add', 'beta.test', '--admin', 'chief', '--url', h.url, '--config', conf], { stdin: 'beta-pw-1\n' });
  t.equal(piped.code, 0, piped.err);
  t.equal(
    (await json('GET', `${h.url}/admin/v1/users`, undefined, basic('chief@beta.test', 'beta-pw-1'))).status,
    200,
    'the password from standard input',
  );
  const none = await run(['tenants', 'add', 'gamma.test', '--admin', 'g1234', '--config', conf]);
  t.equal(none.code, 2);
  t.match(none.err, /THROUGHWAY_TENANT_ADMIN_PASSWORD or on standard input/);
  t.equal(
    (await run(['tenants', 'add', 'gamma.test', '--admin', 'g1234', '--password', 'gamma-pw-1', '--config', conf])).code,
    2,
    'no --password option: a password is never an argument',
  );
  const dup = await run(['tenants', 'add', 'acme.test', '--admin', 'bossy', '--config', conf], {
    env: { THROUGHWAY_TENANT_ADMIN_PASSWORD: 'acme-pw-1' },
  });
  t.equal(dup.code, 1);
  t.match(dup.err, /TENANT_EXISTS/);
  const bad = await run(['tenants', 'add', 'NOT A DOMAIN', '--admin', 'bossy', '--url', h.url, '--config', conf], {
    env: { THROUGHWAY_TENANT_ADMIN_PASSWORD: 'acme-pw-1' },
  });
  t.equal(bad.code, 1);
  t.match(bad.err, /TENANT_DOMAIN_INVALID/);
  t.equal((await run(['tenants', 'deactivate', 'beta.test', '--config', conf])).code, 0);
  const list = await run(['tenants', 'list', '--config', conf]);
  t.match(list.out, /DOMAIN\s+ADMIN\s+PACKAGE\s+STATE/);
  t.match(list.out, /acme.test\s+bossy@acme.test\s+demo\s+active/);
  t.match(list.out, /beta.test\s+chief@beta.test\s+inactive/);
  // The running key manager reads the table again within a second (lib/tenants, refreshMs 500).
  await h.km.tenants.refresh();
  t.equal(h.km.tenants.state('beta.test'), 'inactive', "a change by the CLI's local mode reaches the running node");
  t.equal((await run(['tenants', 'activate', 'beta.test', '--url', h.url, '--config', conf])).code, 0);
  t.equal(h.km.tenants.state('beta.test'), 'active');
});
