/**
 * Blocking conditions per tenant (docs/tenants.md, "Blocking conditions"): a key manager with the super
 * tenant, acme.test and beta.test, each with a user janey, an application App of theirs subscribed to its
 * own /pizza, and a gateway on the key manager's bus serving /pizza, /t/acme.test/pizza and
 * /t/beta.test/pizza, all over real sockets. Each tenant's admin adds, lists and removes its own conditions
 * through the admin API; a condition of acme.test blocks acme.test's calls only (900805, the spec's fault),
 * by API, application, user and IP; the super tenant's apply to the super tenant's calls only; another
 * tenant's condition id answers 404 and changes nothing.
 */
import t from 'tap';
import { keyManagerLink } from '../../lib/security';
import { BASE_TOML, echoBackend, request, startGateway } from '../gateway/helpers';
import { adminAuth, basic, json, postForm, startKeyManager, type Reply } from '../keymanager/helpers';

const POLICIES = `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[application]]\nname = "Unlimited"\nunlimited = true\n`;

function pizza(endpoint: string): string {
  return `name = "Pizza"\ncontext = "/pizza"\nversion = "1.0.0"\n[endpoints]\nproduction = "${endpoint}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

type Tenant = 'super' | 'acme' | 'beta';
const DOMAIN: Record<Tenant, string> = { super: 'carbon.super', acme: 'acme.test', beta: 'beta.test' };
const PATH: Record<Tenant, string> = {
  super: '/pizza/1.0.0/menu',
  acme: '/t/acme.test/pizza/1.0.0/menu',
  beta: '/t/beta.test/pizza/1.0.0/menu',
};

t.test("each tenant's blocking conditions: its own to manage, applied to its own calls only", async (t) => {
  const h = await startKeyManager();
  const backend = await echoBackend();
  t.teardown(async () => {
    await backend.close();
    await h.close();
  });
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await h.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const end = `http://127.0.0.1:${backend.port}`;
  const g = await startGateway(
    BASE_TOML,
    { pizza: pizza(`${end}/super`) },
    { 'apis/t/acme.test/pizza.toml': pizza(`${end}/acme`), 'apis/t/beta.test/pizza.toml': pizza(`${end}/beta`), 'policies.toml': POLICIES },
    { events: h.bus, keyManager: keyManagerLink(h.km), tenants: h.km.tenants, watch: false },
  );
  t.teardown(() => g.close());
  await g.gw.security.ready;

  const A = `${h.url}/admin/v1`;
  const auth: Record<Tenant, string> = {
    super: adminAuth(),
    acme: basic('bossy@acme.test', 'acme-pw-1'),
    beta: basic('chief@beta.test', 'beta-pw-1'),
  };
  const ok = async (r: Promise<Reply>): Promise<Reply> => {
    const x = await r;
    if (x.status >= 300) throw new Error(`${x.status}: ${x.text}`);
    return x;
  };
  // Each tenant: janey, their App, its keys, a subscription to the tenant's own /pizza, and a token.
  const token: Record<Tenant, string> = { super: '', acme: '', beta: '' };
  for (const k of ['super', 'acme', 'beta'] as const) {
    const a = auth[k];
    await ok(json('POST', `${A}/users`, { username: 'janey', password: 'jane-pw-12', roles: ['subscriber'] }, a));
    const janey = k === 'super' ? 'janey' : `janey@${DOMAIN[k]}`;
    await ok(json('POST', `${A}/applications`, { name: 'App', owner: janey }, a));
    const keys = await ok(json('POST', `${A}/applications/App/keys`, { grantTypes: ['password'] }, a));
    const api = k === 'super' ? '/pizza' : `/t/${DOMAIN[k]}/pizza`;
    await ok(json('POST', `${A}/subscriptions`, { application: 'App', api, version: '1.0.0' }, a));
    const tok = await postForm(
      `${h.url}/oauth2/token`,
      { grant_type: 'password', username: janey, password: 'jane-pw-12' },
      basic(String(keys.body.consumerKey), String(keys.body.consumerSecret)),
    );
    t.equal(tok.status, 200, tok.text);
    token[k] = String(tok.body.access_token);
  }
  /** Each tenant's call with its own token: "200" or the fault code. */
  const calls = async (): Promise<Record<Tenant, string>> => {
    const out = { super: '', acme: '', beta: '' };
    for (const k of ['super', 'acme', 'beta'] as const) {
      const r = await request(g.port, PATH[k], { headers: { Authorization: `Bearer ${token[k]}` } });
      out[k] = r.status === 200 ? '200' : `${r.status} ${String((r.json() as { fault?: { code?: unknown } }).fault?.code)}`;
    }
    return out;
  };
  const open = { super: '200', acme: '200', beta: '200' };
  t.same(await calls(), open, 'every tenant served before any condition');

  const add = (k: Tenant, type: string, value: string, query = ''): Promise<Reply> =>
    json('POST', `${A}/blocking-conditions${query}`, { type, value }, auth[k]);
  const remove = (k: Tenant, id: string, query = ''): Promise<Reply> =>
    json('DELETE', `${A}/blocking-conditions/${id}${query}`, undefined, auth[k]);
  const list = async (k: Tenant, query = ''): Promise<string[]> => {
    const r = await json('GET', `${A}/blocking-conditions${query}`, undefined, auth[k]);
    if (r.status !== 200) return [`${r.status}`];
    return (r.body.list as { tenant: string; type: string; value: string }[]).map((c) => `${c.tenant} ${c.type} ${c.value}`);
  };

  // One condition of each type in acme.test: acme.test's calls refused (the spec's 900805), nobody else's.
  const blocked = { super: '200', acme: '429 900805', beta: '200' };
  for (const [type, value] of [
    ['IP', '127.0.0.1'],
    ['API', '/pizza'],
    ['API', '/t/acme.test/pizza/1.0.0'],
    ['APPLICATION', 'App'],
    ['APPLICATION', 'janey@acme.test:App'],
    ['USER', 'janey@acme.test'],
  ] as const) {
    const r = await add('acme', type, value);
    t.equal(r.status, 201, r.text);
    t.match(r.body, { tenant: 'acme.test', type, value });
    t.same(await calls(), blocked, `acme.test's ${type} ${value}: acme.test's call blocked, the others served`);
    t.equal((await remove('acme', String(r.body.id))).status, 200);
    t.same(await calls(), open, `acme.test's ${type} ${value} removed: served again`);
  }

  // The super tenant's conditions apply to the super tenant's calls only (as the reference's).
  const superIp = await add('super', 'IP', '127.0.0.1');
  t.equal(superIp.status, 201, superIp.text);
  t.match(superIp.body, { tenant: 'carbon.super' });
  t.same(await calls(), { super: '429 900805', acme: '200', beta: '200' }, "the super tenant's IP condition: the super tenant's call only");
  const refusedFault = await request(g.port, PATH.super, { headers: { Authorization: `Bearer ${token.super}` } });
  t.match(refusedFault.json(), { fault: { code: 900805, message: 'Message blocked' } }, "the spec's blocked fault");
  // beta.test's admin blocks the same IP and acme.test's user: beta.test's call only; acme.test's janey is still served on acme.test.
  const betaIp = await add('beta', 'IP', '127.0.0.1');
  t.equal(betaIp.status, 201, 'the same condition in another tenant');
  t.equal((await add('beta', 'IP', '127.0.0.1')).status, 409, 'the same condition twice in one tenant');
  const betaUser = await add('beta', 'USER', 'janey@acme.test');
  t.equal(betaUser.status, 201, betaUser.text);
  t.same(await calls(), { super: '429 900805', acme: '200', beta: '429 900805' });

  // Each admin lists its own; another tenant's id is not found and nothing changes.
  t.same(await list('acme'), [], "acme.test's admin sees none of the others'");
  t.same(await list('beta'), ['beta.test IP 127.0.0.1', 'beta.test USER janey@acme.test']);
  t.same(await list('super'), ['carbon.super IP 127.0.0.1'], "the super admin's list is the super tenant's");
  t.same(await list('super', '?tenant=beta.test'), ['beta.test IP 127.0.0.1', 'beta.test USER janey@acme.test'], "?tenant=: a tenant's");
  t.same((await list('super', '?tenant=*')).sort(), [
    'beta.test IP 127.0.0.1',
    'beta.test USER janey@acme.test',
    'carbon.super IP 127.0.0.1',
  ]);
  t.same(await list('super', '?tenant=nope.test'), ['404'], 'a domain that is no tenant');
  t.same(await list('acme', '?tenant=beta.test'), ['404'], "a tenant admin asking for another tenant's");
  t.same(await list('acme', '?tenant=*'), ['404']);
  for (const [who, id, query] of [
    ['acme', String(betaIp.body.id), ''],
    ['acme', String(superIp.body.id), ''],
    ['acme', String(betaIp.body.id), '?tenant=beta.test'],
    ['beta', String(superIp.body.id), ''],
    ['super', String(betaIp.body.id), ''],
  ] as const) {
    const r = await remove(who, id, query);
    t.equal(r.status, 404, `${who} removing ${id}${query}: ${r.text}`);
  }
  t.equal((await add('acme', 'IP', '10.1.1.1', '?tenant=beta.test')).status, 404, "a tenant admin adding to another tenant's");
  t.same(
    (await h.store.listBlockingConditions()).map((c) => `${c.tenant} ${c.value}`).sort(),
    ['beta.test 127.0.0.1', 'beta.test janey@acme.test', 'carbon.super 127.0.0.1'],
    'nothing changed by the refused calls',
  );
  t.same(await calls(), { super: '429 900805', acme: '200', beta: '429 900805' });

  // Contexts are checked against the tenant's URL space.
  t.match(await add('acme', 'API', '/t/beta.test/pizza'), {
    status: 400,
    body: { error_description: /not an API context of tenant acme\.test/ },
  });
  t.match(await add('super', 'API', '/t/acme.test/pizza'), { status: 400, body: { error_description: /a tenant's API context/ } });

  // The super admin reaches a tenant's with ?tenant=: adds to it and removes from it.
  const forAcme = await add('super', 'API', '/pizza', '?tenant=acme.test');
  t.match(forAcme, { status: 201, body: { tenant: 'acme.test' } });
  t.equal((await calls()).acme, '429 900805', "the super admin's condition for acme.test blocks acme.test's call");
  t.equal((await remove('super', String(forAcme.body.id), '?tenant=acme.test')).status, 200);
  t.equal((await remove('super', String(betaUser.body.id), '?tenant=*')).status, 200);
  t.equal((await remove('beta', String(betaIp.body.id))).status, 200, "beta.test's admin removes its own");
  t.equal((await remove('super', String(superIp.body.id))).status, 200);
  t.same(await calls(), open, 'every tenant served again');

  // The events carry each condition's tenant (what gateway-workers receive).
  const tenants = h.events
    .filter((e) => e.name === 'blocking.added')
    .map((e) => (e.payload as { condition: { tenant?: string } }).condition.tenant);
  t.same([...new Set(tenants)].sort(), ['acme.test', 'beta.test', 'carbon.super']);
});
