/**
 * Hot deploy of tenants' folders (docs/tenants.md, "Two tenants, step by step": hot deploy watches the
 * tenant folders too): a gateway's ApiDirectory and a control plane's DeploymentSource, both started while
 * apis/ has no t/ folder, see a tenant's API file written afterwards into a new apis/t/<domain>/ (as the
 * publisher writes it), a second file in that folder, a second tenant's folder, and a change of a super
 * tenant's file; the publisher's drafts (apis/t/<domain>/created/) are never deployed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { ApiDirectory } from '../../lib/gateway/deploy';
import { createEventBus, type AnyEvent } from '../../lib/events/bus';
import { createLogger } from '../../lib/log';
import { DeploymentSource } from '../../lib/scale/deployments';
import { DEFAULT_POLICY_OPTIONS } from '../../lib/throttle/policies';
import { until } from '../gateway/helpers';

const api = (name: string, context: string): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\n[endpoints]\nproduction = "http://127.0.0.1:9/x"\n[[resources]]\npath = "/r"\nmethods = ["GET"]\n`;

/** Writes as the publisher does (lib/portal/api-form.ts writeAtomic): the folders made, a temporary file renamed. */
function publish(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

function apisDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-tenant-watch-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const apis = path.join(dir, 'apis');
  fs.mkdirSync(apis);
  fs.writeFileSync(path.join(apis, 'a.toml'), api('A', '/a'));
  return apis;
}

t.test("the gateway's watch sees a tenant folder created after it started", async (t) => {
  const apis = apisDir(t);
  const d = new ApiDirectory(apis, {});
  d.read();
  // What each change event found: the contexts of the definitions read then.
  const seen: string[][] = [];
  t.ok(
    d.watch(() => seen.push(d.read().candidates.map((c) => `${c.api?.context ?? '-'} ${c.api?.name ?? ''}`)), 20),
    'watching',
  );
  t.teardown(() => d.unwatch());
  const has = (entry: string) => (): boolean => seen.some((s) => s.includes(entry));

  publish(path.join(apis, 't', 'acme.test', 'created', 'draft.toml'), api('Draft', '/draft'));
  publish(path.join(apis, 't', 'acme.test', 'x.toml'), api('X', '/x'));
  t.ok(await until(has('/t/acme.test/x X'), 5000), 'the first file of a new tenant folder is deployed');
  publish(path.join(apis, 't', 'acme.test', 'y.toml'), api('Y', '/y'));
  t.ok(await until(has('/t/acme.test/y Y'), 5000), 'a second file in that folder');
  publish(path.join(apis, 't', 'beta.test', 'x.toml'), api('BX', '/x'));
  t.ok(await until(has('/t/beta.test/x BX'), 5000), "a second tenant's new folder");
  publish(path.join(apis, 't', 'acme.test', 'x.toml'), api('X2', '/x'));
  t.ok(await until(has('/t/acme.test/x X2'), 5000), "a tenant's file rewritten");
  publish(path.join(apis, 'a.toml'), api('A2', '/a'));
  t.ok(await until(has('/a A2'), 5000), "a super tenant's file rewritten");
  t.notOk(
    seen.some((s) => s.some((x) => x.includes('/draft'))),
    'a draft is never deployed',
  );
});

t.test("the control plane's deployment source sees a tenant folder created after it started", async (t) => {
  const apis = apisDir(t);
  const policies = path.join(path.dirname(apis), 'policies.toml');
  const bus = createEventBus();
  const events: AnyEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const s = new DeploymentSource({
    apisDir: apis,
    policiesFile: policies,
    policyOptions: DEFAULT_POLICY_OPTIONS,
    bus,
    logger: createLogger('silent'),
    debounceMs: 20,
  });
  t.teardown(() => s.close());
  const deployed = (file: string, name: string) => (): boolean =>
    events.some((e) => e.name === 'api.deployed' && e.payload.file === file && e.payload.text.includes(`"${name}"`));
  publish(path.join(apis, 't', 'acme.test', 'created', 'draft.toml'), api('Draft', '/draft'));
  publish(path.join(apis, 't', 'acme.test', 'x.toml'), api('X', '/x'));
  t.ok(await until(deployed('t/acme.test/x.toml', 'X'), 5000), 'the first file of a new tenant folder is published');
  publish(path.join(apis, 't', 'acme.test', 'y.toml'), api('Y', '/y'));
  t.ok(await until(deployed('t/acme.test/y.toml', 'Y'), 5000), 'a second file in that folder');
  publish(path.join(apis, 't', 'beta.test', 'x.toml'), api('BX', '/x'));
  t.ok(await until(deployed('t/beta.test/x.toml', 'BX'), 5000), "a second tenant's new folder");
  publish(path.join(apis, 'a.toml'), api('A2', '/a'));
  t.ok(await until(deployed('a.toml', 'A2'), 5000), "a super tenant's file rewritten");
  t.notOk(
    events.some((e) => e.name === 'api.deployed' && String(e.payload.file).includes('draft')),
    'a draft is never published',
  );
});
