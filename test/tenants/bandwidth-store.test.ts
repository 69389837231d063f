/**
 * Tenants' bandwidth in the store (migration 10; docs/tenants.md, "Billing packages"), against SQLite always
 * and PostgreSQL / MariaDB when reachable (test/store/backends.ts): two stores on one database adding at
 * once both count, months are apart, a tenant's package is changed in tw_tenant; two Tenants on one store
 * (two gateway processes) refuse on their shared count, a Tenants opened again (a restart) reads the
 * month's count, and the clock moved into the next month starts from zero while the month before keeps
 * its row, the bytes of its last moments included.
 */
import t from 'tap';
import { eachBackend } from '../store/backends';
import { openDatabase, storeOver } from '../../lib/store/open';
import { loadConfig } from '../../lib/config/load';
import { Tenants, tenantSettings } from '../../lib/tenants';
import { monthOf } from '../../lib/tenants/packages';

const PACKAGES = `[multi_tenancy.billing.package.demo.bandwidth]\nlimit = "1000"\n[multi_tenancy.billing.package.smb.bandwidth]\nlimit = "5000"\n`;

eachBackend(async (t, _backend, opened) => {
  const store = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  const other = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  t.teardown(async () => {
    await other.close();
    await store.close();
  });

  // Two connections adding to the same month's row at once, its first bytes included: every byte counts.
  const adds: Promise<void>[] = [];
  for (let i = 0; i < 10; i++) adds.push((i % 2 === 0 ? store : other).addTenantBandwidth('2026-01', new Map([['acme.test', 7]]), i));
  await Promise.all(adds);
  t.same([...(await store.listTenantBandwidth('2026-01'))], [['acme.test', 70]], 'ten adds of 7 from two stores at once');
  await other.addTenantBandwidth(
    '2026-02',
    new Map([
      ['acme.test', 5],
      ['beta.test', 2 ** 40],
      ['zero.test', 0],
    ]),
    1,
  );
  t.same(
    [...(await store.listTenantBandwidth('2026-02'))].sort(),
    [
      ['acme.test', 5],
      ['beta.test', 2 ** 40],
    ],
    'another month apart; a count past 2^32 kept; no row for zero bytes',
  );
  t.same([...(await store.listTenantBandwidth('2026-03'))], [], 'a month with no bytes');

  // The package of a tenant.
  await store.addTenant({ domain: 'acme.test', admin: 'bossy@acme.test', package: 'demo', active: true });
  t.match(await store.setTenantPackage('acme.test', 'smb'), { domain: 'acme.test', package: 'smb', active: true });
  t.equal((await other.getTenant('acme.test'))?.package, 'smb', 'written: another connection reads it');
  t.equal(await store.setTenantPackage('nope.test', 'smb'), undefined, 'no such tenant');
  await store.setTenantPackage('acme.test', 'demo');

  // Two gateway processes on one database (a Tenants each, over a store of its own), with a clock of their own.
  let now = Date.UTC(2026, 4, 31, 23, 59, 0);
  const clock = (): number => now;
  const loaded = loadConfig({ text: PACKAGES, env: {} });
  const settings = tenantSettings(loaded.config);
  const a = await Tenants.open(store, settings, 0, { bandwidthSyncMs: 60_000, now: clock });
  const b = await Tenants.open(other, settings, 0, { bandwidthSyncMs: 60_000, now: clock });
  t.equal(a.bandwidth.currentMonth(), '2026-05');
  a.countBytes('acme.test', 600);
  t.equal(a.overBandwidth('acme.test'), undefined, 'a alone: 600 of 1000');
  b.countBytes('acme.test', 300);
  await a.syncBandwidth();
  await b.syncBandwidth();
  t.equal(b.bandwidth.usedBy('acme.test'), 900, "b reads a's bytes with its own");
  b.countBytes('acme.test', 100);
  t.match(b.overBandwidth('acme.test'), /^tenant acme.test used 1000 bytes this month: package demo allows 1000 bytes/, 'b: at the limit');
  t.equal(a.overBandwidth('acme.test'), undefined, "a has not read b's last bytes yet");
  await b.syncBandwidth();
  await a.syncBandwidth();
  t.ok(a.overBandwidth('acme.test') !== undefined, 'a refuses on the shared count after one sync');
  t.same([...(await store.listTenantBandwidth('2026-05'))], [['acme.test', 1000]]);

  // Another package: the limit changes at once here, within a sync elsewhere; the count stays.
  await a.setPackage('acme.test', 'smb');
  t.equal(a.overBandwidth('acme.test'), undefined, 'smb allows 5000');
  await b.refresh();
  await b.syncBandwidth();
  t.equal(b.overBandwidth('acme.test'), undefined, "b after reading the tenant's package");
  t.equal(b.bandwidth.usedBy('acme.test'), 1000, 'the count stays');
  await a.setPackage('acme.test', 'demo');
  await b.refresh();

  // A restart: a's bytes not yet synced are sent when it closes; a new Tenants reads the month's count.
  a.countBytes('acme.test', 50);
  await a.close();
  t.same([...(await store.listTenantBandwidth('2026-05'))], [['acme.test', 1050]], 'sent at close');
  const again = await Tenants.open(store, settings, 0, { bandwidthSyncMs: 60_000, now: clock });
  t.equal(again.bandwidth.usedBy('acme.test'), 1050, 'read at open: the month is kept across a restart');
  t.ok(again.overBandwidth('acme.test') !== undefined, 'and still refused');

  // The next month: from zero, without a restart; bytes of May's last seconds not yet sent go to May.
  b.countBytes('acme.test', 20);
  now = Date.UTC(2026, 5, 1, 0, 0, 1);
  t.equal(monthOf(now), '2026-06');
  t.equal(b.overBandwidth('acme.test'), undefined, 'June: served again');
  t.equal(b.bandwidth.usedBy('acme.test'), 0);
  b.countBytes('acme.test', 30);
  await b.syncBandwidth();
  t.same([...(await store.listTenantBandwidth('2026-05'))], [['acme.test', 1070]], "May's last 20 bytes counted in May");
  t.same([...(await store.listTenantBandwidth('2026-06'))], [['acme.test', 30]], 'June has its own row');
  await again.syncBandwidth();
  t.equal(again.bandwidth.usedBy('acme.test'), 30, 'the other process reads June');
  t.equal(again.overBandwidth('acme.test'), undefined);
  await again.close();
  await b.close();
});
