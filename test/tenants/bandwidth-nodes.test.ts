/**
 * Tenants' bandwidth across real `throughway start` processes (docs/tenants.md, "Billing packages";
 * docs/scale-out.md, "Tenants"), acme.test on the `demo` package of 4 KiB a month and an open API whose
 * echo backend answers about 1.1 KiB:
 *
 * - one node on its embedded store: the calls are refused with 103012 at the limit; stopped (SIGTERM) and
 *   started again, it reads the month's count back (its gauge the same) and refuses the first call;
 * - two nodes on one PostgreSQL database (THROUGHWAY_TEST_PG_URL; a private database made and dropped;
 *   skipped with the reason when unreachable): node B's bytes count on node A, which refuses before its
 *   own bytes reach the limit, and B then refuses without having served the rest itself;
 * - an api-key-manager and a gateway-worker: the worker's bytes reach the control plane's store (its
 *   gauge), the worker restarted refuses at once, and the tenant moved to a package without a bandwidth
 *   limit is served again on the worker.
 *
 * Every wait polls for a state (no timing is asserted).
 */
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { postgresBackend } from '../store/backends';
import { ADMIN, http, nodeToml, restartNode, spawnStarted, started, type Proc } from '../scale/helpers';

const channel = `tw-test-bandwidth-${process.pid}`;
const LIMIT = 4096;
const PACKAGES = `[multi_tenancy.billing.package.demo.bandwidth]\nlimit = "4KB"\n[multi_tenancy.billing.package.smb.users]\nlimit = "unlimited"\n`;
const PATH = `/t/acme.test/a/1.0.0/${'x'.repeat(1000)}`;

const openApi = (port: number): string =>
  `name = "A"\ncontext = "/a"\nversion = "1.0.0"\nauth = "none"\n[endpoints]\nproduction = "http://127.0.0.1:${port}/b"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

/** The status and fault code (or 0) of a call to a gateway port. */
async function call(port: number, p = PATH): Promise<string> {
  const r = await http(`http://127.0.0.1:${port}${p}`);
  return `${r.status} ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? '0'}`;
}

/** Calls until the first refusal (at most 20): how many were served, and the refusal. */
async function callUntilRefused(port: number): Promise<{ served: number; last: string }> {
  let served = 0;
  let last = await call(port);
  while (last === '200 0' && served < 20) {
    served++;
    last = await call(port);
  }
  return { served, last };
}

/** acme.test's bytes this month as a node's management port shows them (throughway_tenant_bandwidth_bytes), or -1. */
async function gauge(mgmtPort: number): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${mgmtPort}/metrics`).catch(() => undefined);
  if (r === undefined || !r.ok) return -1;
  const m = /^throughway_tenant_bandwidth_bytes\{tenant="acme\.test"\} (\d+)$/m.exec(await r.text());
  return m === null ? -1 : Number(m[1]);
}

async function addTenant(mgmtPort: number, pkg: string): Promise<{ status: number; text: string }> {
  return http(`http://127.0.0.1:${mgmtPort}/admin/v1/tenants`, {
    json: { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1', package: pkg },
    auth: ADMIN,
  });
}

t.test('a node restart keeps the month count (embedded store)', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const { node, offset, ok } = await spawnStarted({
    salt: 91,
    toml: (offset) => nodeToml({ offset, role: 'default', channel, extra: PACKAGES }),
    apis: { 't/acme.test/a.toml': openApi(backend.port) },
    marker: /APIs: \d+ deployed/,
  });
  let current: Proc = node;
  t.teardown(() => current.stop('SIGKILL'));
  if (!t.ok(ok, 'the node started')) return t.comment(node.out, node.err);
  const gp = 8280 + offset;
  const mp = 9763 + offset;
  const added = await addTenant(mp, 'demo');
  t.equal(added.status, 201, added.text);
  const first = await callUntilRefused(gp);
  t.ok(first.served >= 2 && first.served < 5, `served ${first.served} calls of about 1.1 KiB before 4 KiB`);
  t.equal(first.last, '429 103012', 'then the bandwidth fault');
  const before = await gauge(mp);
  t.ok(before >= LIMIT, `the gauge shows ${before} bytes`);

  node.child.kill('SIGTERM');
  t.equal(await node.exited, 0, 'stopped gracefully');
  const again = restartNode(node);
  current = again;
  if (!t.ok(await started(again, /APIs: \d+ deployed/), 'started again on the same store')) return t.comment(again.out, again.err);
  t.equal(await gauge(mp), before, "the month's count read back at start, every byte of the last run included");
  const seen = backend.seen.length;
  t.equal(await call(gp), '429 103012', 'the first call after the restart is refused');
  t.equal(backend.seen.length, seen, 'nothing forwarded');
});

t.test('two nodes on one PostgreSQL database share one count', async (t) => {
  const opened = await postgresBackend.open();
  if ('reason' in opened) {
    t.comment(`skipped: ${opened.reason}`);
    t.pass(`skipped: ${opened.reason}`);
    return;
  }
  t.teardown(opened.drop);
  const { Client } = await import('pg');
  const url = (opened.table.url ?? '').replace(/^jdbc:postgresql:/, 'postgres:');
  const stored = async (): Promise<number> => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      const r = await c.query<{ bytes: string }>(`SELECT bytes FROM tw_tenant_bandwidth WHERE tenant = 'acme.test'`);
      return r.rows.reduce((s, x) => s + Number(x.bytes), 0);
    } finally {
      await c.end();
    }
  };
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const toml = (offset: number): string =>
    nodeToml({ offset, role: 'default', channel, extra: PACKAGES }).replace(
      /\[database\.apim_db\]\n[^[]*/,
      `[database.apim_db]\ntype = "postgre"\nurl = "${opened.table.url ?? ''}"\n`,
    );
  const apis = { 't/acme.test/a.toml': openApi(backend.port) };
  const a = await spawnStarted({ salt: 92, index: 0, toml, apis, marker: /APIs: \d+ deployed/ });
  t.teardown(() => a.node.stop('SIGKILL'));
  if (!t.ok(a.ok, 'node A started')) return t.comment(a.node.out, a.node.err);
  // B after A: the migrations ran once.
  const b = await spawnStarted({ salt: 92, index: 1, toml, apis, marker: /APIs: \d+ deployed/ });
  t.teardown(() => b.node.stop('SIGKILL'));
  if (!t.ok(b.ok, 'node B started')) return t.comment(b.node.out, b.node.err);
  const [ga, gb, ma, mb] = [8280 + a.offset, 8280 + b.offset, 9763 + a.offset, 9763 + b.offset];
  const added = await addTenant(ma, 'demo');
  t.equal(added.status, 201, added.text);
  // B reads the tenants table every 500 ms.
  t.ok(await until(async () => (await call(gb)) === '200 0', 10_000, 50), 'B serves the tenant made on A');
  t.equal(await call(gb), '200 0', "B's second call");
  // B's bytes reach the database (its sync, every second), then A's count (A's sync).
  t.ok(await until(async () => (await stored()) >= 2000, 10_000, 50), 'B sent its bytes to the database');
  const fromB = await stored();
  t.ok(await until(async () => (await gauge(ma)) >= fromB, 10_000, 50), "A read B's bytes");

  const onA = await callUntilRefused(ga);
  t.equal(onA.last, '429 103012', 'A refuses');
  // Alone, A would serve at least 4 calls of 1.1 KiB before 4 KiB: it stopped short on B's bytes.
  t.ok(onA.served <= 2, `A served ${onA.served} calls on top of B's ${fromB} bytes`);
  t.ok(await until(async () => (await stored()) >= LIMIT, 10_000, 50), "A's bytes reached the database");
  t.ok(await until(async () => (await gauge(mb)) >= LIMIT, 10_000, 50), 'B read the total');
  const seen = backend.seen.length;
  t.equal(await call(gb), '429 103012', 'B refuses too, having served only its own two calls');
  t.equal(await call(ga), '429 103012');
  t.equal(backend.seen.length, seen, 'neither forwards');
  t.match(await call(gb, '/t/acme.test/a/1.0.0/y'), '429 103012');
});

t.test('a gateway-worker counts through its control plane, across its restart and a package change', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const cp = await spawnStarted({
    salt: 93,
    index: 0,
    toml: (offset) => nodeToml({ offset, role: 'api-key-manager', channel, extra: PACKAGES }),
    apis: { 't/acme.test/a.toml': openApi(backend.port) },
    marker: /Key manager: /,
  });
  t.teardown(() => cp.node.stop('SIGKILL'));
  if (!t.ok(cp.ok, 'the control plane started')) return t.comment(cp.node.out, cp.node.err);
  const kmPort = 9763 + cp.offset;
  const added = await addTenant(kmPort, 'demo');
  t.equal(added.status, 201, added.text);
  const w = await spawnStarted({
    salt: 93,
    index: 1,
    toml: (offset) => nodeToml({ offset, role: 'gateway-worker', channel, km: kmPort }),
    marker: /APIs: \d+ deployed/,
  });
  let worker: Proc = w.node;
  t.teardown(() => worker.stop('SIGKILL'));
  if (!t.ok(w.ok, 'the worker started')) return t.comment(w.node.out, w.node.err);
  const gp = 8280 + w.offset;
  t.ok(await until(async () => (await call(gp, '/t/acme.test/a/1.0.0/y')) === '200 0', 10_000, 50), 'the worker serves the tenant');
  const first = await callUntilRefused(gp);
  t.ok(first.served >= 2 && first.served < 5, `served ${first.served} calls before 4 KiB`);
  t.equal(first.last, '429 103012', 'the worker refuses at the limit');
  t.ok(await until(async () => (await gauge(kmPort)) >= LIMIT, 10_000, 50), "the worker's bytes are in the control plane's store");

  w.node.child.kill('SIGTERM');
  t.equal(await w.node.exited, 0);
  const bytesThen = await gauge(kmPort);
  worker = restartNode(w.node);
  if (!t.ok(await started(worker, /APIs: \d+ deployed/), 'the worker started again')) return t.comment(worker.out, worker.err);
  const seen = backend.seen.length;
  t.equal(await call(gp), '429 103012', 'refused at once: the count is the control plane’s');
  t.equal(backend.seen.length, seen);
  t.ok(await until(async () => (await gauge(kmPort)) > bytesThen, 10_000, 50), 'the refusal after the restart is counted too');

  const moved = await http(`http://127.0.0.1:${kmPort}/admin/v1/tenants/acme.test/package`, {
    method: 'PUT',
    json: { package: 'smb' },
    auth: ADMIN,
  });
  t.match(moved, { status: 200, body: { package: 'smb' } }, moved.text);
  t.ok(await until(async () => (await call(gp)) === '200 0', 10_000, 50), 'smb limits no bandwidth: the worker serves again');
});
