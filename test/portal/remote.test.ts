/**
 * Console nodes pointing at a remote key manager and control plane (docs/portal.md, "Server roles"):
 * a `default` node (key manager, store, gateway, apis_dir) and, in the same process on other loopback
 * ports, an api-devportal node and an api-publisher node whose deployment.toml writes
 * [apim.key_manager] service_url. Sign-in goes through the remote key manager's code flow without a
 * consent page; applications, keys and subscriptions made on the devportal node exist on the key
 * manager; an API saved and published on the publisher node is a file of the control plane's apis_dir
 * served by its gateway; a wrong or unreachable key manager stops the start with its code, and one that
 * stops answering gives a page error with its code.
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import t from 'tap';
import {
  ADMIN,
  type Answer,
  cookieOf,
  formRequest as req,
  hiddenField as hidden,
  PORTAL_TOML,
  publisherForm,
  startPortalNode,
  until,
} from './helpers';
import { startTestNode } from '../observability/node-helpers';
import { loadConfig } from '../../lib/config/load';
import { scaleSettingsFrom } from '../../lib/scale/settings';

const consoleToml = (role: string, km: string, password = ADMIN.password, retries = 0): string =>
  `[server]\nhostname = "localhost"\nserver_role = "${role}"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[apim.key_manager]\nservice_url = "${km}/services/"\nusername = "admin"\npassword = "${password}"\n[apim.sync_runtime_artifacts.gateway]\ndeployment_retry_duration = 50\nmax_retry_count = ${retries}\nretry_progression_factor = 1\n`;

/** Sign-in on a console node through the remote key manager's pages; the console session cookie and the answers on the way. */
async function signIn(
  base: string,
  user: string,
  password: string,
  back: string,
): Promise<{ cookie: string; authorize: string; posted: Answer }> {
  const login = await req(`${base}/devportal/login?back=${encodeURIComponent(back)}`);
  const page = await req(login.location);
  const km = new URL(login.location).origin;
  const posted = await req(`${km}/oauth2/authorize`, cookieOf(page, 'tw_authz'), {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username: user,
    password,
    action: 'login',
  });
  const cb = await req(posted.location, cookieOf(login, 'tw_signin'));
  return { cookie: cookieOf(cb, 'tw_portal'), authorize: login.location, posted };
}

t.test('an api-devportal node over a remote key manager', async (t) => {
  const cp = await startPortalNode();
  t.teardown(() => cp.close());
  const km = cp.node.keyManager;
  await km?.manager.addUser(
    { username: 'dev1', password: 'dev1-pw-12', roles: ['Internal/subscriber'] },
    { username: /^.{3,30}$/, password: /^.{5,30}$/ },
  );
  const dp = await startTestNode(consoleToml('api-devportal', cp.base));
  t.teardown(() => dp.close());
  const base = `http://127.0.0.1:${dp.mgmt}`;
  t.equal(dp.node.keyManager, undefined, 'no key manager of its own');
  t.notOk(fs.existsSync(path.join(dp.dir, 'database')), 'and no store');
  t.match(dp.out.join('\n'), new RegExp(`key manager\\s+${cp.base} \\(remote`), 'the start-up lines name the remote key manager');

  const secure =
    new RegExp(`developer portal\\s+(https://127\\.0\\.0\\.1:\\d+)/devportal \\(also ${base}/devportal\\)`).exec(dp.out.join('\n'))?.[1] ??
    '';
  t.not(secure, '', 'the developer portal on the management HTTPS port too');
  const overTls = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    https
      .get(`${secure}/devportal`, { rejectUnauthorized: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
  t.equal(overTls.status, 200);
  t.match(overTls.body, /pizzashack-secured\.toml/, 'the same catalogue over TLS');
  const consoles = (await km?.manager.listApplications('admin'))?.find((a) => a.name === `throughway-consoles ${secure}`);
  t.same(
    consoles?.keys.map((k) => [k.keyType, k.callbackUrl]).sort(),
    [
      ['PRODUCTION', `${secure}/devportal/callback`],
      ['SANDBOX', `${base}/devportal/callback`],
    ],
    'a client for each origin on the key manager',
  );

  const ready = await fetch(`${base}/health/ready`);
  t.equal(ready.status, 200, 'ready once registered with the key manager');
  t.match(await ready.text(), /remote_key_manager/);

  const catalogue = await req(`${base}/devportal`);
  t.equal(catalogue.status, 200, 'the catalogue of the control plane');
  t.match(catalogue.text, /href="\/devportal\/apis\/pizzashack-secured\.toml"/, "lists the control plane's API files");

  const s = await signIn(base, 'dev1', 'dev1-pw-12', '/devportal/applications');
  t.match(s.authorize, new RegExp(`^${cp.base}/oauth2/authorize\\?response_type=code&client_id=`), 'signs in at the remote key manager');
  t.match(s.authorize, /code_challenge_method=S256/, 'with PKCE');
  t.match(s.posted.location, new RegExp(`^${base}/devportal/callback\\?code=`), 'first-party: no consent page, straight back with a code');
  const apps = await req(`${base}/devportal/applications`, s.cookie);
  t.equal(apps.status, 200);
  t.match(apps.text, /Signed in as <strong>dev1<\/strong>/);
  t.notMatch(apps.text, /href="\/publisher"/, 'dev1 has no publisher role on the key manager');

  const csrf = hidden(apps.text, 'csrf');
  const made = await req(`${base}/devportal/applications`, s.cookie, {
    csrf,
    name: 'RemoteApp',
    description: 'made on the devportal node',
  });
  t.equal(made.status, 303, 'application created');
  const app = (await km?.manager.listApplications('dev1'))?.find((a) => a.name === 'RemoteApp');
  t.equal(app?.description, 'made on the devportal node', 'it exists on the key manager, owned by dev1');
  t.equal(made.location, `/devportal/applications/${encodeURIComponent(app?.id ?? '')}`);
  const dup = await req(`${base}/devportal/applications`, s.cookie, { csrf, name: 'RemoteApp' });
  t.equal(dup.status, 400, "the key manager's refusal of a second RemoteApp");
  t.match(dup.text, /RemoteApp/);

  // The tiers are the control plane's, not those of a policies file on the console node.
  fs.writeFileSync(
    path.join(dp.dir, 'policies.toml'),
    '[[subscription]]\nname = "OnlyHere"\nrequest_count = 1\nunit_time = 1\ntime_unit = "min"\n',
  );
  const appPage = await req(`${base}${made.location}?tab=subscriptions`, s.cookie);
  const tier = /<select id="tier" name="tier"[^>]*>\s*<option value="([^"]+)"/.exec(appPage.text)?.[1] ?? '';
  t.equal(tier, 'Gold', "the control plane's first subscription tier offered");
  t.notMatch(appPage.text, /OnlyHere/, "not the console node's own");
  const sub = await req(`${base}/devportal/subscribe`, s.cookie, {
    csrf,
    application: app?.id ?? '',
    api: 'pizzashack-secured.toml',
    tier,
  });
  t.equal(sub.status, 303);
  const subs = await km?.manager.listSubscriptions({ application: app?.id ?? '' });
  t.same(
    subs?.map((x) => [x.apiContext, x.apiVersion, x.tier, x.state]),
    [['/pizzashack-secured', '1.0.0', tier, 'UNBLOCKED']],
    'the subscription exists on the key manager',
  );

  const keys = await req(`${base}${made.location}/keys`, s.cookie, { csrf, keyType: 'PRODUCTION' });
  t.equal(keys.status, 303);
  const shown = await req(`${base}${made.location}`, s.cookie);
  const consumerKey = /Consumer key: <code[^>]*>([^<]+)<\/code>/.exec(shown.text)?.[1] ?? '';
  t.equal((await km?.manager.getApplication(app?.id ?? ''))?.keys[0]?.consumerKey, consumerKey, 'keys generated on the key manager');
  await req(`${base}${made.location}/token`, s.cookie, { csrf, keyType: 'PRODUCTION', scope: '' });
  const withToken = await req(`${base}${made.location}`, s.cookie);
  const token = /id="access-token">([^<]+)</.exec(withToken.text)?.[1] ?? '';
  t.not(token, '', 'a token from the remote token endpoint');
  const called = await fetch(`${cp.gateway}/pizzashack-secured/1.0.0/menu`, { headers: { Authorization: `Bearer ${token}` } });
  t.equal(called.status, 200, "the control plane's gateway accepts it for the subscribed API");

  // Only the super admin makes a console client first-party, and only a consoles application's.
  const anon = await fetch(`${cp.base}/admin/v1/console-clients`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"http":"http://evil.example"}',
  });
  t.equal(anon.status, 401, 'POST /admin/v1/console-clients needs the super admin');
  const adminAuth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
  const other = await fetch(`${cp.base}/admin/v1/console-clients/${encodeURIComponent(consumerKey)}`, {
    method: 'POST',
    headers: { Authorization: adminAuth, 'Content-Type': 'application/json' },
    body: '{}',
  });
  t.equal(other.status, 404, "a developer's client is not made first-party");
  const badOrigin = await fetch(`${cp.base}/admin/v1/console-clients`, {
    method: 'POST',
    headers: { Authorization: adminAuth, 'Content-Type': 'application/json' },
    body: '{"http":"javascript:alert(1)"}',
  });
  t.equal(badOrigin.status, 400, 'an origin that is not http(s) is refused');

  const unsub = await req(`${base}${made.location}/unsubscribe`, s.cookie, { csrf, subscription: subs?.[0]?.id ?? '' });
  t.equal(unsub.status, 303);
  t.same(await km?.manager.listSubscriptions({ application: app?.id ?? '' }), [], 'unsubscribed on the key manager');
  const edited = await req(`${base}${made.location}/edit`, s.cookie, { csrf, tier: '20PerMin', description: 'edited remotely' });
  t.equal(edited.status, 303);
  t.equal((await km?.manager.getApplication(app?.id ?? ''))?.tier, '20PerMin', 'edited on the key manager (PATCH)');
  const adminApp = await km?.manager.createApplication({ name: 'NotDev1s', owner: 'admin' });
  t.equal(
    (await req(`${base}/devportal/applications/${encodeURIComponent(adminApp?.id ?? '')}`, s.cookie)).status,
    404,
    "another user's application is not dev1's",
  );
  t.equal((await req(`${base}/devportal/applications/NotDev1s`, s.cookie)).status, 404, 'nor found by its name');
  const deleted = await req(`${base}${made.location}/delete`, s.cookie, { csrf });
  t.equal(deleted.status, 303);
  t.equal((await km?.manager.listApplications('dev1'))?.length, 0, 'deleted on the key manager');

  // The key manager stops answering: a page error with its code.
  await cp.close();
  const down = await req(`${base}/devportal/applications`, s.cookie);
  t.equal(down.status, 502, 'the remote key manager down: 502');
  t.match(down.text, /PORTAL_REMOTE_UNREACHABLE/);
});

t.test('an api-publisher node writes API files of the remote control plane', async (t) => {
  const cp = await startPortalNode();
  t.teardown(() => cp.close());
  const pub = await startTestNode(consoleToml('api-publisher', cp.base));
  t.teardown(() => pub.close());
  const base = `http://127.0.0.1:${pub.mgmt}`;
  const s = await signIn(base, ADMIN.username, ADMIN.password, '/publisher');
  const list = await req(`${base}/publisher`, s.cookie);
  t.equal(list.status, 200, 'the admin may publish: roles from the key manager');
  t.match(list.text, /pizzashack-secured\.toml/, "the control plane's API files");
  const csrf = hidden(list.text, 'csrf');
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(cp.dir, 'apis', 'demo.toml'), 'utf8'))?.[1] ?? '';
  const form = publisherForm(csrf, backend, { name: 'Remote', context: '/remote' });

  const invalid = await req(`${base}/publisher/new`, s.cookie, { ...form, context: 'remote' });
  t.equal(invalid.status, 400, 'an invalid form');
  t.match(invalid.text, /id="context-error"/, 'the error beside its field');
  const taken = await req(`${base}/publisher/new`, s.cookie, { ...form, context: '/pizzashack-secured', version: '1.0.0' });
  t.equal(taken.status, 400, 'a context and version the control plane already serves');
  t.match(taken.text, /id="context-error"[^>]*>[^<]*already used by pizzashack-secured\.toml/);

  const created = await req(`${base}/publisher/new`, s.cookie, form);
  t.equal(created.status, 303);
  t.equal(created.location, '/publisher/apis/created%3Aremote-1.toml');
  t.ok(fs.existsSync(path.join(cp.dir, 'apis', 'created', 'remote-1.toml')), "a draft in the control plane's apis_dir");
  const again = await req(`${base}/publisher/new`, s.cookie, form);
  t.equal(again.status, 400, 'the same draft twice');

  const refused = await req(`${base}/publisher/apis/created%3Aremote-1.toml/lifecycle`, s.cookie, { csrf, state: 'RETIRED' });
  t.equal(refused.status, 400);
  t.match(refused.text, /CREATED cannot move to RETIRED/);
  const published = await req(`${base}/publisher/apis/created%3Aremote-1.toml/lifecycle`, s.cookie, { csrf, state: 'PUBLISHED' });
  t.equal(published.location, '/publisher/apis/remote-1.toml');
  t.match(fs.readFileSync(path.join(cp.dir, 'apis', 'remote-1.toml'), 'utf8'), /^state = "PUBLISHED"$/m, 'published on the control plane');
  t.ok(await until(async () => (await fetch(`${cp.gateway}/remote/1/menu`)).status === 200), "served by the control plane's gateway");

  // Subscriptions of an API, approved on the key manager through the publisher node.
  const km = cp.node.keyManager;
  const app = await km?.manager.createApplication({ name: 'Waiting', owner: 'admin' });
  const sub = await km?.manager.addSubscription({
    application: app?.id ?? '',
    apiContext: '/pizzashack-secured',
    apiVersion: '1.0.0',
    state: 'ON_HOLD',
  });
  const apiPage = await req(`${base}/publisher/apis/pizzashack-secured.toml`, s.cookie);
  t.match(apiPage.text, /aria-label="Approve Waiting"/, "the key manager's ON_HOLD subscription listed");
  const approved = await req(`${base}/publisher/apis/pizzashack-secured.toml/subscriptions`, s.cookie, {
    csrf,
    subscription: sub?.id ?? '',
    state: 'UNBLOCKED',
  });
  t.equal(approved.status, 303);
  t.equal((await km?.manager.findSubscription({ id: sub?.id ?? '' }))?.state, 'UNBLOCKED', 'approved on the key manager');
  const other = await req(`${base}/publisher/apis/remote-1.toml/subscriptions`, s.cookie, {
    csrf,
    subscription: sub?.id ?? '',
    state: 'BLOCKED',
  });
  t.equal(other.status, 404, "another API's subscription is not this API's to change");

  // The write route validates too: field paths with the messages.
  const adminAuth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
  const put = await fetch(`${cp.base}/admin/v1/api-files/created%3Abad.toml`, {
    method: 'PUT',
    headers: { Authorization: adminAuth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ text: 'name = "Bad"\ncontext = "/bad"\nversion = "1"\n', create: true }),
  });
  t.equal(put.status, 422);
  const body = (await put.json()) as { error: string; fields: Record<string, string> };
  t.equal(body.error, 'invalid_request');
  t.same(body.fields, { endpoints: 'endpoints is required' }, 'the field path with its message');
  t.notOk(fs.existsSync(path.join(cp.dir, 'apis', 'created', 'bad.toml')), 'nothing written');
  t.equal((await fetch(`${cp.base}/admin/v1/api-files`)).status, 401, 'the API file routes need the super admin');
});

t.test('a wrong or unreachable key manager stops the start with its code', async (t) => {
  const cp = await startPortalNode();
  t.teardown(() => cp.close());
  const refused = await startTestNode(consoleToml('api-devportal', cp.base, 'wrong-password')).then(
    () => undefined,
    (err: unknown) => err as { code?: string; message: string },
  );
  t.equal(refused?.code, 'PORTAL_REMOTE_REFUSED', 'wrong credentials');
  t.match(refused?.message, /refused the super admin credentials/);
  const dead = await startTestNode(consoleToml('api-publisher', 'http://127.0.0.1:1', ADMIN.password, 1)).then(
    () => undefined,
    (err: unknown) => err as { code?: string; message: string },
  );
  t.equal(dead?.code, 'PORTAL_REMOTE_UNREACHABLE', 'nothing listening');
});

t.test('the remote way is chosen by [apim.key_manager] service_url written on a console role', async (t) => {
  const backend = (text: string): string => {
    const l = loadConfig({ text, env: {} });
    return scaleSettingsFrom(l.config, l.written).consoleBackend;
  };
  const km = '[apim.key_manager]\nservice_url = "http://km.example:9763/services/"\n';
  t.equal(backend(`[server]\nserver_role = "api-devportal"\n${km}`), 'remote');
  t.equal(backend(`[server]\nserver_role = "api-publisher"\n${km}`), 'remote');
  t.equal(backend('[server]\nserver_role = "api-devportal"\n'), 'local', 'the default service_url is not a remote key manager');
  t.equal(backend(`[server]\nserver_role = "gateway-worker"\n${km}`), 'local', 'other roles: local');
  const l = loadConfig({ text: `[server]\nserver_role = "api-devportal"\n${km}`, env: {} });
  t.equal(scaleSettingsFrom(l.config, l.written).parts.keyManager, false, 'a remote console node runs no key manager');
});

/** Every file under `dir` with its text: what a refused request must leave as it was. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const f = path.join(e.parentPath, e.name);
    out[path.relative(dir, f)] = fs.readFileSync(f, 'utf8');
  }
  return out;
}

const TENANT_API = (name: string, context: string, backend: string): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1"\nstate = "PUBLISHED"\n[endpoints]\nproduction = "${backend}"\n[[resources]]\npath = "/menu"\nmethods = ["GET"]\n`;

t.test("console nodes over a remote control plane serve each tenant its own catalogue, and nothing of another's", async (t) => {
  const cp = await startPortalNode(`${PORTAL_TOML}[multi_tenancy.billing.package.demo.resource_volume]\nlimit = "2"\n`);
  t.teardown(() => cp.close());
  const tenants = cp.node.keyManager?.tenants;
  await tenants?.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-12', package: 'demo' });
  await tenants?.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-12' });
  const apis = path.join(cp.dir, 'apis');
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(apis, 'demo.toml'), 'utf8'))?.[1] ?? '';
  fs.mkdirSync(path.join(apis, 't', 'beta.test'), { recursive: true });
  fs.writeFileSync(path.join(apis, 't', 'beta.test', 'secret-1.toml'), TENANT_API('BetaSecret', '/secret', backend));

  const pub = await startTestNode(consoleToml('api-publisher', cp.base));
  t.teardown(() => pub.close());
  const dp = await startTestNode(consoleToml('api-devportal', cp.base));
  t.teardown(() => dp.close());
  const base = `http://127.0.0.1:${pub.mgmt}`;
  const portal = `http://127.0.0.1:${dp.mgmt}`;

  // acme.test's admin: its tenant's publisher, written through the control plane.
  const s = await signIn(base, 'bossy@acme.test', 'acme-pw-12', '/publisher');
  t.not(s.cookie, '', 'the tenant admin signed in through the remote key manager');
  const list0 = await req(`${base}/publisher`, s.cookie);
  t.equal(list0.status, 200, "a tenant's publisher on the remote node");
  t.match(list0.text, /APIs of acme\.test/);
  t.notMatch(list0.text, /pizzashack-secured|BetaSecret|beta\.test/, "neither the super tenant's nor beta.test's APIs");
  const asked = await req(`${base}/publisher?tenant=beta.test`, s.cookie);
  t.notMatch(asked.text, /BetaSecret/, 'a tenant named in the request is not the one read');
  const csrf = hidden(list0.text, 'csrf');
  const form = (version: string, description = ''): Record<string, string> => publisherForm(csrf, backend, { version, description });
  const created = await req(`${base}/publisher/new`, s.cookie, form('1'));
  t.equal(created.status, 303, created.text.slice(0, 300));
  t.equal(created.location, `/publisher/apis/${encodeURIComponent('t:acme.test:created:stock-1.toml')}`);
  const draft = path.join(apis, 't', 'acme.test', 'created', 'stock-1.toml');
  t.ok(fs.existsSync(draft), "the draft in the tenant's created/ on the control plane");
  t.notOk(fs.existsSync(path.join(apis, 'created', 'stock-1.toml')), "not in the super tenant's");
  const draftPage = await req(`${base}${created.location}`, s.cookie);
  t.equal(draftPage.status, 200, 'the draft opens');
  t.match(draftPage.text, /value="\/stock"/, 'the form has the context as written');
  const edited = await req(`${base}${created.location}`, s.cookie, form('1', 'edited remotely'));
  t.equal(edited.status, 303, edited.text.slice(0, 300));
  t.match(fs.readFileSync(draft, 'utf8'), /edited remotely/, 'edited on the control plane');
  const taken = await req(`${base}/publisher/new`, s.cookie, form('1'));
  t.equal(taken.status, 400, 'the same context and version twice in the tenant');

  const published = await req(`${base}${created.location}/lifecycle`, s.cookie, { csrf, state: 'PUBLISHED' });
  const id = 't:acme.test:stock-1.toml';
  t.equal(published.location, `/publisher/apis/${encodeURIComponent(id)}`, 'published');
  const file = path.join(apis, 't', 'acme.test', 'stock-1.toml');
  t.match(fs.readFileSync(file, 'utf8'), /^state = "PUBLISHED"$/m, 'moved into apis/t/acme.test/ on the control plane');
  t.ok(
    await until(async () => (await fetch(`${cp.gateway}/t/acme.test/stock/1/menu`)).status === 200),
    "served at its tenant URL by the control plane's gateway",
  );
  const mine = await req(`${base}/publisher`, s.cookie);
  t.match(mine.text, /<code>\/t\/acme\.test\/stock<\/code>/, 'listed at its served context');

  // The developer portal node lists each tenant's catalogue.
  const acmePortal = await req(`${portal}/devportal?tenant=acme.test`);
  t.equal(acmePortal.status, 200);
  t.match(acmePortal.text, /APIs of acme\.test/);
  t.match(acmePortal.text, new RegExp(`href="/devportal/apis/${encodeURIComponent(id)}"`), "acme.test's API listed");
  t.notMatch(acmePortal.text, /BetaSecret|pizzashack-secured/, "and no other tenant's");
  const betaPortal = await req(`${portal}/devportal?tenant=beta.test`);
  t.match(betaPortal.text, /BetaSecret/, "beta.test's catalogue is its own");
  t.notMatch(betaPortal.text, /Stock/);
  t.notMatch((await req(`${portal}/devportal`)).text, /Stock|BetaSecret/, "the super tenant's catalogue lists no tenant API");
  const apiPage = await req(`${portal}/devportal/apis/${encodeURIComponent(id)}`);
  t.equal(apiPage.status, 200, "a tenant API's page");
  t.match(apiPage.text, /<dt>Context<\/dt><dd><code>\/t\/acme\.test\/stock<\/code>/, 'at its tenant context');
  t.equal((await req(`${portal}/devportal/apis/${encodeURIComponent('t:acme.test:created:stock-2.toml')}`)).status, 404, 'no draft');
  t.equal((await req(`${portal}/devportal?tenant=nope.test`)).status, 404, 'a domain that is no tenant');
  // Signed in there, acme.test's user sees its tenant's catalogue.
  const dev = await signIn(portal, 'bossy@acme.test', 'acme-pw-12', '/devportal');
  const own = await req(`${portal}/devportal`, dev.cookie);
  t.match(own.text, /APIs of acme\.test/, "a signed-in tenant user's catalogue is its tenant's");
  t.match(own.text, new RegExp(`href="/devportal/apis/${encodeURIComponent(id)}"`));
  // Its application is acme.test's on the key manager, and subscribes to acme.test's API.
  const devCsrf = hidden(own.text, 'csrf');
  const madeApp = await req(`${portal}/devportal/applications`, dev.cookie, { csrf: devCsrf, name: 'AcmeShop', description: '' });
  t.equal(madeApp.status, 303, madeApp.text.slice(0, 300));
  const appId = decodeURIComponent(madeApp.location.split('/').pop() ?? '');
  const km = cp.node.keyManager;
  t.match(await km?.manager.getApplication(appId), { tenant: 'acme.test', owner: 'bossy@acme.test' }, "the application is acme.test's");
  const appPage = await req(`${portal}${madeApp.location}?tab=subscriptions`, dev.cookie);
  t.match(appPage.text, /<option value="t:acme\.test:stock-1\.toml"/, "the tenant's API offered to subscribe");
  const tier = /<select id="tier" name="tier"[^>]*>\s*<option value="([^"]+)"/.exec(appPage.text)?.[1] ?? '';
  const subscribed = await req(`${portal}/devportal/subscribe`, dev.cookie, { csrf: devCsrf, application: appId, api: id, tier });
  t.equal(subscribed.status, 303);
  t.same(
    (await km?.manager.listSubscriptions({ application: appId }))?.map((x) => [x.apiContext, x.apiVersion, x.state]),
    [['/t/acme.test/stock', '1', 'UNBLOCKED']],
    "subscribed to the tenant's API on the key manager",
  );
  const apps = await req(`${portal}/devportal/applications`, dev.cookie);
  t.match(apps.text, /AcmeShop/, 'listed among its applications');
  const subsPage = await req(`${base}/publisher/apis/${encodeURIComponent(id)}`, s.cookie);
  t.match(subsPage.text, /AcmeShop/, "acme.test's publisher lists its API's subscription from the key manager");
  // The header the node acts within a tenant with: the super admin's only, on applications and subscriptions only.
  const asTenant = (auth: string, route: string, tenant: string): Promise<Response> =>
    fetch(`${cp.base}/admin/v1${route}`, { headers: { Authorization: auth, 'Throughway-Tenant': tenant } });
  const superAuth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
  const superApps = (await (await asTenant(superAuth, '/applications', 'acme.test')).json()) as { list: { id: string }[] };
  t.same(
    superApps.list.map((x) => x.id),
    [appId],
    "the super admin acting within acme.test lists acme.test's applications",
  );
  t.equal((await asTenant(superAuth, '/applications', 'nope.test')).status, 404, 'a tenant that does not exist');
  t.equal((await asTenant(superAuth, '/tasks', 'acme.test')).status, 400, 'not on the tasks routes');
  const chiefAuth = `Basic ${Buffer.from('chief@beta.test:beta-pw-12').toString('base64')}`;
  t.equal((await asTenant(chiefAuth, '/applications', 'acme.test')).status, 404, "beta.test's admin does not act within acme.test");

  // Another tenant's ids, guessed ids and ids naming a path: 404, nothing changed on the control plane.
  const before = tree(apis);
  const guesses = [
    't:beta.test:secret-1.toml',
    't:beta.test:created:secret-1.toml',
    'pizzashack-secured.toml',
    'created:stock-1.toml',
    't:acme.test:nope.toml',
    't:acme.test:../x.toml',
    't:acme.test:created:../../beta.test/secret-1.toml',
    't:acme.test:..%2Fx.toml',
    't:../..:x',
    't:acme.test/..:stock-1.toml',
  ];
  for (const g of guesses) {
    const at = `${base}/publisher/apis/${encodeURIComponent(g)}`;
    t.equal((await req(at, s.cookie)).status, 404, `GET ${g}: 404`);
    t.equal((await req(at, s.cookie, form('1', 'mole'))).status, 404, `edit ${g}: 404`);
    t.equal((await req(`${at}/lifecycle`, s.cookie, { csrf, state: 'BLOCKED' })).status, 404, `lifecycle ${g}: 404`);
  }
  t.same(tree(apis), before, "the control plane's apis_dir unchanged");

  // beta.test's admin on the same node: its own tenant's only.
  const chief = await signIn(base, 'chief@beta.test', 'beta-pw-12', '/publisher');
  const betaList = await req(`${base}/publisher`, chief.cookie);
  t.match(betaList.text, /BetaSecret/, "beta.test's admin lists beta.test's API");
  t.notMatch(betaList.text, /Stock/, "and none of acme.test's");
  const betaCsrf = hidden(betaList.text, 'csrf');
  for (const g of [id, 't:acme.test:created:stock-2.toml']) {
    const at = `${base}/publisher/apis/${encodeURIComponent(g)}`;
    t.equal((await req(at, chief.cookie)).status, 404, `beta.test's admin: GET ${g}: 404`);
    t.equal(
      (await req(`${at}/lifecycle`, chief.cookie, { csrf: betaCsrf, state: 'BLOCKED' })).status,
      404,
      `beta.test's admin: move ${g}: 404`,
    );
  }
  t.match(fs.readFileSync(file, 'utf8'), /^state = "PUBLISHED"$/m, "acme.test's API is still published");

  // The super admin's publisher on the node: the super tenant's APIs only.
  const sup = await signIn(base, ADMIN.username, ADMIN.password, '/publisher');
  const supList = await req(`${base}/publisher`, sup.cookie);
  t.match(supList.text, /pizzashack-secured\.toml/);
  t.notMatch(supList.text, /Stock|BetaSecret/, "the super admin's publisher lists no tenant API");
  t.equal((await req(`${base}/publisher/apis/${encodeURIComponent(id)}`, sup.cookie)).status, 404, 'nor opens one');

  // The package limit (demo: 2 APIs) holds through the control plane.
  t.equal((await req(`${base}/publisher/new`, s.cookie, form('2'))).status, 303, 'a second API');
  const third = await req(`${base}/publisher/new`, s.cookie, form('3'));
  t.equal(third.status, 403, 'a third API is past the package limit');
  t.match(third.text, /TENANT_LIMIT_REACHED: tenant acme\.test has 2 APIs: package demo allows 2/);
  t.notOk(fs.existsSync(path.join(apis, 't', 'acme.test', 'created', 'stock-3.toml')), 'nothing written');

  // acme.test's API state workflow on the control plane: the node's move waits for acme.test's admin there.
  const acmeAuth = `Basic ${Buffer.from('bossy@acme.test:acme-pw-12').toString('base64')}`;
  const cpJson = async (method: string, route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const r = await fetch(`${cp.base}/admin/v1${route}`, {
      method,
      headers: { Authorization: acmeAuth, 'Content-Type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  t.equal((await cpJson('PUT', '/workflow-executors/AM_API_STATE', { executor: 'approval' })).status, 200);
  const second = `/publisher/apis/${encodeURIComponent('t:acme.test:created:stock-2.toml')}`;
  const held = await req(`${base}${second}/lifecycle`, s.cookie, { csrf, state: 'PUBLISHED' });
  t.equal(held.location, second, 'back to the draft: nothing moved');
  t.match((await req(`${base}${second}`, s.cookie)).text, /CREATED → PUBLISHED pending approval/, 'the remote publisher says it waits');
  t.ok(fs.existsSync(path.join(apis, 't', 'acme.test', 'created', 'stock-2.toml')), 'still a draft on the control plane');
  const waiting = (await cpJson('GET', '/tasks')).body.list as { id: string; tenant: string; entity: string }[];
  t.match(waiting, [{ tenant: 'acme.test', entity: 't:acme.test:created:stock-2.toml' }], "acme.test's task on the control plane");
  t.equal((await cpJson('POST', `/tasks/${waiting[0]?.id ?? ''}/approve`, {})).status, 200, "approved by acme.test's admin");
  t.match(fs.readFileSync(path.join(apis, 't', 'acme.test', 'stock-2.toml'), 'utf8'), /^state = "PUBLISHED"$/m, 'then published');
});
