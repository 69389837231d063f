/**
 * Billing packages (docs/tenants.md, "Billing packages"): `users.limit` refuses a user past it through the
 * admin API (403 TENANT_LIMIT_REACHED naming the package and the limit; `unlimited` accepted),
 * `resource_volume.limit` refuses a tenant's API files past it (API_TENANT_LIMIT; the API answers 103005),
 * `bandwidth.limit` refuses a tenant's calls with 103012 once its bytes this month reach it, and counts the
 * refusals in `throughway_tenant_bandwidth_refused_total`; a limit that is no number refuses the start.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { createKeyManager } from '../../lib/keymanager';
import { keyManagerLink } from '../../lib/security';
import { ensureSuperAdmin, openDatabase, storeOver } from '../../lib/store/open';
import { Metrics } from '../../lib/observability/metrics';
import { tenantMetricSources } from '../../lib/tenants';
import { BandwidthMeter, limitOf, nextMonthAt, PackageLimitError, packageLimits, tenantSamples } from '../../lib/tenants/packages';
import { echoBackend, HOST, memoryLogger, request } from '../gateway/helpers';
import { adminAuth, basic, json, startKeyManager } from '../keymanager/helpers';

const PACKAGES = `[multi_tenancy.billing.package.demo.users]\nlimit = "2"\n[multi_tenancy.billing.package.demo.resource_volume]\nlimit = "1"\n[multi_tenancy.billing.package.demo.bandwidth]\nlimit = "4KB"\n[multi_tenancy.billing.package.smb.users]\nlimit = "unlimited"\n`;

t.test('limits as written: whole numbers, units for bandwidth, unlimited', async (t) => {
  t.equal(limitOf('x', '10', false), 10);
  t.equal(limitOf('x', 'Unlimited', false), Infinity);
  t.equal(limitOf('x', undefined, false), Infinity, 'not written: no limit');
  t.equal(limitOf('x', '500MB', true), 500 * 1024 * 1024);
  t.equal(limitOf('x', '2 gb', true), 2 * 1024 ** 3);
  t.equal(limitOf('x', '123', true), 123, 'a bare bandwidth is bytes');
  for (const bad of ['ten', '-1', '1.5', '5MB'])
    t.throws(() => limitOf('[p.users] limit', bad, false), PackageLimitError, `refused: ${bad}`);
  t.throws(() => limitOf('[p.bandwidth] limit', '5 PB', true), {
    code: 'TENANT_PACKAGE_LIMIT_INVALID',
    message: /\[p.bandwidth\] limit = "5 PB"/,
  });
  const loaded = loadConfig({ text: PACKAGES, env: {} });
  t.ok(loaded.ok);
  t.same(packageLimits(loaded.config).get('demo'), { key: 'demo', users: 2, apis: 1, bandwidth: 4096 });
  t.same(packageLimits(loaded.config).get('smb'), { key: 'smb', users: Infinity, apis: Infinity, bandwidth: Infinity });
  t.throws(() => packageLimits(loadConfig({ text: '[multi_tenancy.billing.package.custom.users]\nlimit = "many"\n', env: {} }).config), {
    code: 'TENANT_PACKAGE_LIMIT_INVALID',
  });
});

t.test('the bandwidth meter: per tenant, a new calendar month starts from zero', async (t) => {
  let now = Date.UTC(2026, 0, 31, 23, 59, 59);
  const m = new BandwidthMeter(
    (d) => (d === 'a.test' ? 100 : Infinity),
    () => now,
  );
  t.equal(nextMonthAt(now), Date.UTC(2026, 1, 1));
  m.add('a.test', 60);
  t.notOk(m.over('a.test'));
  m.add('a.test', 40);
  m.add('b.test', 1000);
  t.ok(m.over('a.test'), 'at the limit');
  t.notOk(m.over('b.test'), 'no limit');
  now = Date.UTC(2026, 1, 1);
  t.notOk(m.over('a.test'), 'February');
  t.equal(m.usedBy('a.test'), 0);
  t.same(
    tenantSamples(
      [
        ['a', 1],
        ['b', 5],
        ['c', 3],
      ],
      2,
    ),
    [
      { labels: { tenant: 'b' }, value: 5 },
      { labels: { tenant: 'c' }, value: 3 },
      { labels: { tenant: 'other' }, value: 1 },
    ],
    'at most cap tenant labels, the rest other',
  );
});

t.test('users.limit: the admin API refuses a user past it, naming package and limit; unlimited takes any', async (t) => {
  const h = await startKeyManager(PACKAGES);
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  t.equal(
    (await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'demo' }, adminAuth()))
      .status,
    201,
  );
  t.equal(
    (await json('POST', `${A}/tenants`, { domain: 'beta.test', admin: 'chief', password: 'beta-pw-1', package: 'smb' }, adminAuth()))
      .status,
    201,
  );
  const boss = basic('bossy@acme.test', 'acme-pw-1');
  t.equal(
    (await json('POST', `${A}/users`, { username: 'janey', password: 'jane-pw-12' }, boss)).status,
    201,
    'the second user (the admin is the first)',
  );
  const past = await json('POST', `${A}/users`, { username: 'joeyy', password: 'joe-pw-123' }, boss);
  t.match(past, {
    status: 403,
    body: {
      error: 'access_denied',
      error_description:
        /^TENANT_LIMIT_REACHED: tenant acme.test has 2 users: package demo allows 2 \(\[multi_tenancy.billing.package.demo.users\] limit\)/,
    },
  });
  t.same(
    (await h.km.manager.forTenant('acme.test').listUsers()).map((u) => u.username).sort(),
    ['bossy@acme.test', 'janey@acme.test'],
    'joe was not added',
  );
  const chief = basic('chief@beta.test', 'beta-pw-1');
  for (const u of ['user1', 'user2', 'user3'])
    t.equal((await json('POST', `${A}/users`, { username: u, password: `${u}-password-1` }, chief)).status, 201, `unlimited: ${u}`);
  t.equal(
    (await json('POST', `${A}/users`, { username: 'many1', password: 'many-pw-12' }, adminAuth())).status,
    201,
    'the super tenant has no package',
  );
});

t.test('resource_volume.limit and bandwidth.limit at the gateway', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-packages-'));
  const backend = await echoBackend();
  t.teardown(async () => {
    await backend.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const file = (name: string, context: string): string =>
    `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\n[endpoints]\nproduction = "http://${HOST}:${backend.port}/b"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
  fs.mkdirSync(path.join(dir, 'apis', 't', 'acme.test'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'apis', 't', 'beta.test'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'apis', 't', 'acme.test', 'a.toml'), file('A', '/a'));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'acme.test', 'b.toml'), file('B', '/b'));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'beta.test', 'a.toml'), file('A', '/a'));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'beta.test', 'b.toml'), file('B', '/b'));
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    `[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n${PACKAGES}`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const store = await storeOver(await openDatabase('apim_db', loaded.config.database.apim_db, dir));
  await ensureSuperAdmin(store, loaded.config);
  const bus = createEventBus();
  const logger = memoryLogger();
  const km = await createKeyManager({ loaded, store, bus, logger });
  await km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: 'demo' });
  await km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1', package: 'smb' });
  const gw = createGateway({ loaded, logger, cwd: dir, keyManager: keyManagerLink(km), events: bus, tenants: km.tenants, watch: false });
  const a = await gw.listen({ port: 0, host: HOST });
  t.teardown(async () => {
    await gw.close();
    await km.close();
    await store.close();
  });

  // resource_volume.limit = 1 for demo: acme.test's second file is refused; smb's beta.test has both.
  const refused = gw.states().find((s) => s.file.endsWith(path.join('acme.test', 'b.toml')));
  t.equal(refused?.status, 'refused');
  t.match(refused?.diagnostics, [
    {
      code: 'API_TENANT_LIMIT',
      message:
        /tenant acme.test has 1 APIs deployed: package demo allows 1 \(\[multi_tenancy.billing.package.demo.resource_volume\] limit\)/,
    },
  ]);
  t.equal((await request(a.port, '/t/acme.test/a/1.0.0/x')).status, 200);
  const b = await request(a.port, '/t/acme.test/b/1.0.0/x');
  t.same([b.status, (b.json() as { fault: { code: number } }).fault.code], [404, 103005], 'the refused API is not served');
  t.equal((await request(a.port, '/t/beta.test/b/1.0.0/x')).status, 200, 'smb: no API limit');

  // bandwidth.limit = 4KB for demo: calls of 1 KiB responses until the month's bytes reach 4096.
  let served = 0;
  let last = await request(a.port, `/t/acme.test/a/1.0.0/${'x'.repeat(1000)}`);
  for (let i = 0; i < 20 && last.status === 200; i++) {
    served++;
    last = await request(a.port, `/t/acme.test/a/1.0.0/${'x'.repeat(1000)}`);
  }
  t.ok(served >= 2 && served < 20, `served ${served} calls before the limit`);
  const used = km.tenants.bandwidth.usedBy('acme.test');
  t.ok(used >= 4096, `counted ${used} bytes`);
  t.same([last.status, (last.json() as { fault: { code: number } }).fault.code], [429, 103012]);
  t.match(last.json(), {
    fault: {
      message: 'Tenant bandwidth used up',
      description:
        /^tenant acme.test used \d+ bytes this month: package demo allows 4096 bytes \(\[multi_tenancy.billing.package.demo.bandwidth\] limit\)/,
    },
  });
  const before = backend.seen.length;
  t.equal((await request(a.port, '/t/acme.test/a/1.0.0/y')).status, 429, 'still refused');
  t.equal(backend.seen.length, before, 'nothing forwarded once refused');
  t.equal((await request(a.port, `/t/beta.test/a/1.0.0/${'x'.repeat(5000)}`)).status, 200, 'another tenant is served');

  const metrics = new Metrics({ processMetrics: false });
  for (const m of tenantMetricSources(km.tenants)) metrics.register(m);
  const text = await metrics.text();
  t.match(text, /throughway_tenant_bandwidth_refused_total\{tenant="acme.test"\} 2\n/);
  t.match(text, new RegExp(`throughway_tenant_bandwidth_bytes\\{tenant="acme.test"\\} ${km.tenants.bandwidth.usedBy('acme.test')}\\n`));
  // smb sets no bandwidth.limit: beta.test's bytes are not counted (nothing could act on them).
  t.notMatch(text, /throughway_tenant_bandwidth_bytes\{tenant="beta.test"\}/);
  t.equal(km.tenants.bandwidth.usedBy('beta.test'), 0);
  t.match(text, new RegExp(`throughway_tenant_requests_total\\{tenant="acme.test"\\} ${served + 4}\\n`));
});

t.test('a package limit that is no number stops the key manager', async (t) => {
  await t.rejects(startKeyManager('[multi_tenancy.billing.package.demo.users]\nlimit = "lots"\n'), {
    code: 'TENANT_PACKAGE_LIMIT_INVALID',
    message: /\[multi_tenancy.billing.package.demo.users\] limit = "lots"/,
  });
});
