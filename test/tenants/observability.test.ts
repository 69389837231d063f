/**
 * The tenant in the access log, analytics events and traces (docs/tenants.md, "Observability"): calls to
 * the super tenant's API, to two tenants' APIs at /t/<domain>/..., to a tenant URL without an API, to an
 * unknown tenant and to no API at all; each access-log line (its last field), analytics event
 * (`apiCreatorTenantDomain`) and SERVER span (`throughway.tenant`) names the call's tenant.
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
import type { AnalyticsEvent } from '../../lib/observability/analytics';
import { echoBackend, HOST, memoryLogger, request } from '../gateway/helpers';
import { sqliteBackend } from '../store/backends';

function apiFile(context: string, endpoint: string): string {
  return `name = "Pizza"\ncontext = "${context}"\nversion = "1.0.0"\nauth = "none"\n[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

t.test('access log lines, analytics events and spans carry the tenant', async (t) => {
  const opened = await sqliteBackend.open();
  if ('reason' in opened) throw new Error(opened.reason);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tenant-obs-'));
  const backend = await echoBackend();
  const endpoint = `http://${HOST}:${backend.port}/b`;
  fs.mkdirSync(path.join(dir, 'apis', 't', 'acme.test'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'apis', 't', 'beta.test'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'apis', 'pizza.toml'), apiFile('/pizza', endpoint));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'acme.test', 'pizza.toml'), apiFile('/pizza', endpoint));
  fs.writeFileSync(path.join(dir, 'apis', 't', 'beta.test', 'pizza.toml'), apiFile('/pizza', endpoint));
  fs.writeFileSync(
    path.join(dir, 'deployment.toml'),
    '[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n' +
      '[http_access_log]\nenabled = true\nuseLogger = true\n' +
      '[apim.open_tracer]\nlog_tracer.enable = true\n' +
      '[apim.analytics]\nenable = true\n[throughway.analytics]\nfile = "events.jsonl"\nflush_interval = "60s"\n',
  );
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const logger = memoryLogger('info');
  const store = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  await ensureSuperAdmin(store, loaded.config);
  const bus = createEventBus();
  const km = await createKeyManager({ loaded, store, bus, logger });
  await km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const gw = createGateway({ loaded, logger, cwd: dir, keyManager: keyManagerLink(km), events: bus, tenants: km.tenants, watch: false });
  const { port } = await gw.listen({ port: 0, host: HOST });
  t.teardown(async () => {
    await gw.close();
    await km.close();
    await store.close();
    await backend.close();
    await opened.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // [path, status, the tenant each record names (undefined: none)]
  const calls: [string, number, string | undefined][] = [
    ['/pizza/1.0.0/menu', 200, 'carbon.super'],
    ['/t/acme.test/pizza/1.0.0/menu', 200, 'acme.test'],
    ['/t/beta.test/pizza/1.0.0/menu', 200, 'beta.test'],
    ['/t/acme.test/none/1.0.0/x', 404, 'acme.test'],
    ['/t/nope.test/pizza/1.0.0/menu', 404, undefined],
    ['/nowhere', 404, 'carbon.super'],
  ];
  for (const [p, status] of calls) t.equal((await request(port, p)).status, status, p);
  await gw.close();
  // No billing package limits bandwidth: calls to tenants' URLs are counted, their bytes are not.
  t.equal(km.tenants.metersBandwidth, false);
  t.same(
    [...km.tenants.bandwidth.requests],
    [
      ['acme.test', 2],
      ['beta.test', 1],
    ],
    'calls by tenant (the unknown one not)',
  );
  t.equal(km.tenants.bandwidth.usedBy('acme.test'), 0, 'no bytes kept without a bandwidth.limit');

  const access = logger.lines.filter((l) => l.event === 'http_access').map((l) => String(l.line));
  t.equal(access.length, calls.length, 'one access log line per call');
  calls.forEach(([p, , tenant], i) => {
    const line = access[i] ?? '';
    t.ok(line.includes(`"GET ${p} HTTP/1.1"`), `line ${i} is the call to ${p}`);
    t.equal(line.split(' ').at(-1), tenant ?? '-', `access log: ${p}`);
  });

  const events = fs
    .readFileSync(path.join(dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AnalyticsEvent);
  t.equal(events.length, calls.length, 'one analytics event per call');
  const spans = logger.lines.filter((l) => l.event === 'span' && l.kind === 'SERVER');
  t.equal(spans.length, calls.length, 'one SERVER span per call');
  calls.forEach(([p, status, tenant], i) => {
    const e = events[i];
    t.equal(e?.proxyResponseCode, status);
    t.equal(e?.apiCreatorTenantDomain, tenant ?? null, `analytics: ${p}`);
    const span = spans.find((s) => s.traceId === e?.correlationId);
    const tags = span?.tags as Record<string, string> | undefined;
    t.equal(tags?.['http.path'], p, `the span of the call to ${p}`);
    t.equal(tags?.['throughway.tenant'], tenant, `span: ${p}`);
  });
});
