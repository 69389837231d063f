/**
 * Tenants on a gateway-worker process (docs/scale-out.md, "Tenants"): an api-key-manager whose apis/ holds
 * the super tenant's /shop and acme.test's apis/t/acme.test/shop.toml (the same context), a tenant with an
 * application subscribed and its token; a gateway-worker started against it serves
 * /t/acme.test/shop/1.0.0/... from the tenant's backend (200) and /shop/1.0.0/... from the super tenant's;
 * an unknown tenant answers 103010; the tenant deactivated on the control plane is refused on the worker
 * (103011), and served again once activated.
 */
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { ADMIN, baseOffset, http, nodeToml, securedApi, spawnNode, started } from '../scale/helpers';

const channel = `tw-test-tenants-${process.pid}`;

t.test('a gateway-worker serves a tenant API deployed on its control plane, and refuses the tenant once deactivated', async (t) => {
  const superBackend = await echoBackend();
  const acmeBackend = await echoBackend();
  t.teardown(async () => {
    await superBackend.close();
    await acmeBackend.close();
  });
  const base = baseOffset(41);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel }), {
    'shop.toml': securedApi(`http://127.0.0.1:${superBackend.port}/super`),
    't/acme.test/shop.toml': securedApi(`http://127.0.0.1:${acmeBackend.port}/acme`),
  });
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const served = await http(`${km}/admin/v1/deployments`, { auth: ADMIN });
  t.same((served.body.apis as { file: string }[]).map((a) => a.file).sort(), ['shop.toml', 't/acme.test/shop.toml'], served.text);

  const added = await http(`${km}/admin/v1/tenants`, { json: { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, auth: ADMIN });
  t.equal(added.status, 201, added.text);
  const bossy = { user: 'bossy@acme.test', password: 'acme-pw-1' };
  t.equal((await http(`${km}/admin/v1/applications`, { json: { name: 'AcmeApp' }, auth: bossy })).status, 201);
  const keys = await http(`${km}/admin/v1/applications/AcmeApp/keys`, { json: {}, auth: bossy });
  t.equal(keys.status, 201, keys.text);
  const sub = await http(`${km}/admin/v1/subscriptions`, {
    json: { application: 'AcmeApp', api: '/t/acme.test/shop', version: '1.0.0' },
    auth: bossy,
  });
  t.equal(sub.status, 201, sub.text);
  const tok = await http(`${km}/oauth2/token`, {
    form: { grant_type: 'client_credentials' },
    auth: { user: String(keys.body.consumerKey), password: String(keys.body.consumerSecret) },
  });
  t.equal(tok.status, 200, tok.text);
  const token = String(tok.body.access_token);

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, /APIs: 2 deployed from the control plane/);
  const gp = 8280 + base + 1;
  const call = async (p: string): Promise<string> => {
    const r = await http(`http://127.0.0.1:${gp}${p}`, { bearer: token });
    return `${r.status} ${/"code":\s*(\d+)/.exec(r.text)?.[1] ?? String((r.body as { url?: string }).url ?? '')}`;
  };
  t.equal(await call('/t/acme.test/shop/1.0.0/items'), '200 /acme/items', "the tenant's API, from its backend");
  t.equal(await call('/shop/1.0.0/items'), '403 900908', "the tenant's token on the super tenant's /shop: refused");
  t.equal(await call('/t/nope.test/shop/1.0.0/items'), '404 103010', 'an unknown tenant');
  t.equal(superBackend.seen.length, 0);

  t.equal((await http(`${km}/admin/v1/tenants/acme.test/deactivate`, { method: 'POST', auth: ADMIN })).status, 200);
  t.ok(
    await until(async () => (await call('/t/acme.test/shop/1.0.0/items')) === '503 103011', 10_000, 50),
    `the deactivated tenant refused on the worker\n${gw.err.slice(-1500)}`,
  );
  const seen = acmeBackend.seen.length;
  t.equal(await call('/t/acme.test/shop/1.0.0/items'), '503 103011');
  t.equal(acmeBackend.seen.length, seen, 'nothing reaches the tenant backend');
  t.equal((await http(`${km}/admin/v1/tenants/acme.test/activate`, { method: 'POST', auth: ADMIN })).status, 200);
  t.ok(
    await until(async () => (await call('/t/acme.test/shop/1.0.0/items')) === '200 /acme/items', 10_000, 50),
    'served again once activated',
  );
});
