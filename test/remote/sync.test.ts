/**
 * The declarative sync against real key managers over HTTP (docs/sync.md): a node's state dumped, applied
 * to an empty node whose dump is then the same file, a second apply that changes nothing, a diff naming
 * each change with its file line, prune, refusals of a file (entry, field, line) and of a node.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { main } from '../../lib/cli';
import { ADMIN, adminAuth, json, startKeyManager, type Harness } from '../keymanager/helpers';

interface Run {
  code: number;
  out: string;
  err: string;
}

async function cli(argv: string[], cwd: string, env: Record<string, string> = {}, stdin = ''): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    out: (s) => (out += s),
    err: (s) => (err += s),
    cwd,
    env: { THROUGHWAY_ADMIN_PASSWORD: ADMIN.password, ...env },
    stdin: () => Promise.resolve(stdin),
  });
  return { code, out, err };
}

const body = (dump: string): string => dump.split('\n').slice(1).join('\n');
const lineOf = (text: string, needle: string): number => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

async function populate(h: Harness): Promise<{ secret: string }> {
  const A = `${h.url}/admin/v1`;
  const ok = async (method: string, route: string, b?: unknown): Promise<Record<string, unknown>> => {
    const r = await json(method, `${A}${route}`, b, adminAuth());
    if (r.status >= 300) throw new Error(`${method} ${route}: ${r.text}`);
    return r.body;
  };
  await ok('POST', '/users', { username: 'alice', password: 'alice-pw-1', roles: ['subscriber', 'creator'] });
  await ok('POST', '/tenants', { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'demo' });
  await ok('POST', '/applications', { name: 'Shop', owner: 'admin', tier: '10PerMin', description: 'the shop front' });
  const keys = await ok('POST', '/applications/Shop/keys', {
    keyType: 'PRODUCTION',
    grantTypes: ['client_credentials', 'password'],
    callbackUrl: 'https://shop.example/cb',
  });
  await ok('POST', '/applications', { name: 'Backoffice', owner: 'alice' });
  await ok('POST', '/subscriptions', {
    application: 'Shop',
    owner: 'admin',
    api: '/pizzashack',
    version: '1.0.0',
    tier: 'Gold',
    state: 'BLOCKED',
  });
  await ok('POST', '/subscriptions', { application: 'Backoffice', owner: 'alice', api: '/pizzashack', version: '1.0.0' });
  await ok('POST', '/blocking-conditions', { type: 'IP', value: '10.1.2.3' });
  await ok('POST', '/blocking-conditions', { type: 'IP_RANGE', value: '192.168.0.0/16', invert: true });
  return { secret: String(keys.consumerSecret) };
}

t.test('dump → apply on an empty node → dump gives the same file; a second apply changes nothing', async (t) => {
  const a = await startKeyManager();
  t.teardown(() => a.close());
  const b = await startKeyManager();
  t.teardown(() => b.close());
  const { secret } = await populate(a);
  const cwd = a.dir;

  const dumped = await cli(['dump', '--url', a.url], cwd);
  t.equal(dumped.code, 0, dumped.err);
  for (const needle of [
    'domain: acme.test',
    'admin: bossy',
    'username: alice',
    'name: Shop',
    'tier: 10PerMin',
    'callbackUrl: https://shop.example/cb',
    'state: BLOCKED',
    'value: 192.168.0.0/16',
    'invert: true',
  ])
    t.match(dumped.out, needle, `the dump holds ${needle}`);
  t.notMatch(dumped.out, secret, 'no client secret in the dump');
  t.notMatch(dumped.out, /alice-pw-1|acme-pw-1|admin-pw-1|password:|secret:/i, 'no password in the dump');
  const file = path.join(cwd, 'state.yaml');
  fs.writeFileSync(file, dumped.out);

  const diff = await cli(['diff', 'state.yaml', '--url', b.url], cwd);
  t.equal(diff.code, 3, 'diff exits 3 when there are changes');
  t.match(diff.out, `+ users alice  (state.yaml:${lineOf(dumped.out, 'username: alice')})`, 'each added entry with its line');
  t.match(diff.out, '+ applications Shop of admin');
  t.match(diff.out, /\+ applications Shop of admin: PRODUCTION key \S+/);
  t.match(diff.out, '+ subscriptions Shop of admin → /pizzashack 1.0.0');
  t.match(diff.out, '+ blockingConditions IP_RANGE 192.168.0.0/16 (inverted)');
  t.match(diff.out, '+ tenants acme.test');
  t.match(diff.out, /\n9 changes\n$/, 'nine changes: a tenant, a user, two applications, a key, two subscriptions, two conditions');

  const dry = await cli(['apply', 'state.yaml', '--url', b.url, '--dry-run'], cwd);
  t.equal(dry.code, 0);
  t.match(dry.out, 'dry run: nothing changed');
  t.equal(
    (await json('GET', `${b.url}/admin/v1/applications`, undefined, adminAuth())).body.list instanceof Array
      ? ((await json('GET', `${b.url}/admin/v1/applications`, undefined, adminAuth())).body.list as unknown[]).length
      : -1,
    0,
    'the dry run made no application',
  );

  const applied = await cli(['apply', 'state.yaml', '--url', b.url], cwd, { THROUGHWAY_SYNC_PASSWORD: 'initial-pw-1' });
  t.equal(applied.code, 0, applied.err);
  t.match(applied.out, '9 changes made');
  t.notMatch(applied.out + applied.err, /initial-pw-1|admin-pw-1/, 'no password printed');

  const again = await cli(['dump', '--url', b.url], cwd);
  t.equal(body(again.out), body(dumped.out), "the empty node's dump is the same file");
  const second = await cli(['apply', 'state.yaml', '--url', b.url], cwd, { THROUGHWAY_SYNC_PASSWORD: 'initial-pw-1' });
  t.equal(second.code, 0);
  t.match(second.out, 'is in sync with state.yaml: nothing to do', 'a second apply changes nothing');
  t.equal((await cli(['diff', 'state.yaml', '--url', b.url], cwd)).code, 0, 'diff exits 0 once in sync');

  // The new user signs in with the initial password; the tenant's admin too (their own tenant).
  t.equal(
    (await json('GET', `${b.url}/admin/v1/users`, undefined, `Basic ${Buffer.from('bossy@acme.test:initial-pw-1').toString('base64')}`))
      .status,
    200,
    'the tenant admin signs in with the initial password',
  );
});

t.test('diff names each field change at its line; prune removes what the file does not hold', async (t) => {
  const a = await startKeyManager();
  t.teardown(() => a.close());
  await populate(a);
  const cwd = a.dir;
  const dumped = (await cli(['dump', '--url', a.url], cwd)).out;
  const edited = dumped
    .replace('- creator\n', '- publisher\n')
    .replace('state: BLOCKED', 'state: UNBLOCKED')
    .replace('description: the shop front', 'description: the new shop front');
  fs.writeFileSync(path.join(cwd, 'state.yaml'), edited);
  // Something the file does not hold: a user and a blocking condition added on the node.
  t.equal((await json('POST', `${a.url}/admin/v1/users`, { username: 'bobby', password: 'bobby-pw-1' }, adminAuth())).status, 201);
  t.equal((await json('POST', `${a.url}/admin/v1/blocking-conditions`, { type: 'USER', value: 'mallory' }, adminAuth())).status, 201);

  const diff = await cli(['diff', 'state.yaml', '--url', a.url], cwd);
  t.equal(diff.code, 3);
  const lines = diff.out.trim().split('\n');
  t.same(
    lines,
    [
      `~ users alice: roles [creator, subscriber] → [publisher, subscriber]  (state.yaml:${lineOf(edited, 'username: alice')})`,
      `~ applications Shop of admin: description "the shop front" → "the new shop front"  (state.yaml:${lineOf(edited, 'name: Shop')})`,
      `~ subscriptions Shop of admin → /pizzashack 1.0.0: state "BLOCKED" → "UNBLOCKED"  (state.yaml:${lineOf(edited, '- application: Shop')})`,
      '3 changes',
    ],
    'one line per change, none for what prune would remove',
  );
  const pruneDiff = await cli(['diff', 'state.yaml', '--url', a.url, '--prune'], cwd);
  t.match(pruneDiff.out, '- users bobby\n');
  t.match(pruneDiff.out, '- blockingConditions USER mallory\n');

  const kept = await cli(['apply', 'state.yaml', '--url', a.url], cwd);
  t.equal(kept.code, 0, kept.err);
  t.match((await cli(['dump', '--url', a.url], cwd)).out, 'username: bobby', 'without --prune bobby stays');
  const pruned = await cli(['apply', 'state.yaml', '--url', a.url, '--prune'], cwd);
  t.equal(pruned.code, 0, pruned.err);
  t.match(pruned.out, '- users bobby');
  t.equal(body((await cli(['dump', '--url', a.url], cwd)).out), body(edited), 'after prune the node is the file');
  t.equal(await a.store.getUser('bobby'), undefined, 'bobby is gone from the store');
  t.ok((await a.store.getUser('admin')) !== undefined, 'the admin stays');

  // A tenant the file drops is deactivated, never deleted.
  fs.writeFileSync(path.join(cwd, 'no-tenant.yaml'), edited.replace(/tenants:\n(?: {2}.*\n)+/, 'tenants: []\n'));
  const tenantPrune = await cli(['apply', 'no-tenant.yaml', '--url', a.url, '--prune'], cwd);
  t.equal(tenantPrune.code, 0, tenantPrune.err);
  t.match(tenantPrune.out, '~ tenants acme.test: active true → false');
  t.equal(a.km.tenants.get('acme.test')?.active, false, 'deactivated');
});

t.test('refusals name the entry, the field and the line; nothing is sent', async (t) => {
  const a = await startKeyManager();
  t.teardown(() => a.close());
  const cwd = a.dir;
  const text = [
    'applications:',
    '  - name: Shop',
    '    owner: admin',
    '    colour: blue',
    '    keys:',
    '      - keyType: STAGING',
    '        consumerKey: k1',
    '        grantTypes: [client_credentials]',
    'subscriptions:',
    '  - application: Ghost',
    '    owner: admin',
    '    api: /x',
    '    version: "1"',
    'blockingConditions:',
    '  - type: IP',
    '    value: not-an-address',
    'widgets: []',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(cwd, 'bad.yaml'), text);
  const r = await cli(['apply', 'bad.yaml', '--url', a.url], cwd);
  t.equal(r.code, 1);
  const errs = r.err.trim().split('\n');
  t.match(errs[0], 'bad.yaml:4: SYNC_UNKNOWN applications[0] field colour: unknown field');
  t.match(r.err, 'bad.yaml:6: SYNC_FIELD applications[0].keys[0] field keyType: must be one of PRODUCTION, SANDBOX');
  t.match(r.err, /bad\.yaml:15: SYNC_FIELD blockingConditions\[0\] \(IP not-an-address\) field value: /);
  t.match(r.err, 'bad.yaml:17: SYNC_UNKNOWN field widgets: unknown kind');
  t.match(
    r.err,
    'bad.yaml:10: SYNC_REFERENCE subscriptions[0] (Ghost of admin → /x 1) field application: no application Ghost of admin in the file',
  );
  t.match(r.err, 'nothing sent to the node');
  t.equal((await a.store.listApplications()).length, 0, 'nothing made');

  fs.writeFileSync(
    path.join(cwd, 'dup.yaml'),
    'users:\n  - username: carol\n    roles: [subscriber]\n  - username: carol\n    roles: []\n',
  );
  const dup = await cli(['diff', 'dup.yaml', '--url', a.url], cwd);
  t.match(dup.err, 'dup.yaml:4: SYNC_DUPLICATE users[1] (carol): the same entry as line 2');

  fs.writeFileSync(path.join(cwd, 'yaml.yaml'), 'users:\n  - username: [\n');
  t.match((await cli(['diff', 'yaml.yaml', '--url', a.url], cwd)).err, /yaml\.yaml:\d+: SYNC_YAML/);

  // The node's refusal: the initial password does not match [user_store.properties] PasswordJavaRegEx.
  fs.writeFileSync(path.join(cwd, 'user.yaml'), 'users:\n  - username: carol\n    roles: [subscriber]\n');
  const refused = await cli(['apply', 'user.yaml', '--url', a.url], cwd, { THROUGHWAY_SYNC_PASSWORD: 'x' });
  t.equal(refused.code, 1);
  t.match(refused.err, '+ users carol  (user.yaml:2): the node refused: 400 invalid_request: password does not match');
  const noPassword = await cli(['apply', 'user.yaml', '--url', a.url], cwd);
  t.match(noPassword.err, 'needs the initial password');

  // A tenant's admin differs from the node's: no route changes it.
  await a.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  fs.writeFileSync(path.join(cwd, 'tenant.yaml'), 'tenants:\n  - domain: acme.test\n    admin: chief\n');
  const fixed = await cli(['apply', 'tenant.yaml', '--url', a.url], cwd);
  t.equal(fixed.code, 1);
  t.match(
    fixed.err,
    'tenant.yaml:2: SYNC_FIELD tenants (acme.test) field admin: the node has "bossy": no admin route changes a tenant\'s admin',
  );
  // Its package is changed to another (PUT /admin/v1/tenants/{domain}/package), never removed.
  fs.writeFileSync(path.join(cwd, 'package.yaml'), 'tenants:\n  - domain: acme.test\n    admin: bossy\n    package: smb\n');
  const moved = await cli(['apply', 'package.yaml', '--url', a.url], cwd);
  t.equal(moved.code, 0, moved.err);
  t.match(moved.out + moved.err, /~ tenants acme\.test: package "" → "smb"/);
  t.equal(a.km.tenants.get('acme.test')?.package, 'smb', 'the node has the package of the file');
  fs.writeFileSync(path.join(cwd, 'nopackage.yaml'), 'tenants:\n  - domain: acme.test\n    admin: bossy\n');
  const removed = await cli(['apply', 'nopackage.yaml', '--url', a.url], cwd);
  t.equal(removed.code, 1);
  t.match(
    removed.err,
    /nopackage\.yaml:2: SYNC_FIELD tenants \(acme\.test\) field package: the node has "smb": a tenant's package is changed to another/,
  );
  t.equal(a.km.tenants.get('acme.test')?.package, 'smb', 'kept');

  // The admin apply signs in as is never pruned.
  fs.writeFileSync(path.join(cwd, 'nobody.yaml'), 'users: []\n');
  const nobody = await cli(['diff', 'nobody.yaml', '--url', a.url, '--prune'], cwd);
  t.equal(nobody.code, 0, 'nothing to remove');
  t.match(nobody.err, 'kept: users admin: the admin apply signs in as');
  // Credentials: never an argument; standard input's first line when the environment has none.
  const arg = await cli(['dump', '--url', a.url, '--admin-password', 'admin-pw-1'], cwd);
  t.equal(arg.code, 2);
  t.match(arg.err, 'never an argument');
  const piped = await cli(['dump', '--url', a.url], cwd, { THROUGHWAY_ADMIN_PASSWORD: '' }, `${ADMIN.password}\n`);
  t.equal(piped.code, 0, 'the password on standard input');
  const none = await cli(['dump', '--url', a.url], cwd, { THROUGHWAY_ADMIN_PASSWORD: '' });
  t.equal(none.code, 1);
  t.match(none.err, 'no admin password: set THROUGHWAY_ADMIN_PASSWORD or give it on standard input');
});
