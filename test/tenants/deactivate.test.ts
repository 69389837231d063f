/**
 * A tenant deactivated by another process on the same store (`throughway tenants deactivate` in its local
 * mode, its own store connection) is refused by the running key manager within a second, without restart
 * and without being told (lib/tenants reads tw_tenant every 500 ms; docs/tenants.md, "Deactivation"): its
 * admin's sign-in to the admin API (401), its clients' tokens (401 invalid_client), and the directory the
 * gateway's route and authentication phases ask (test/tenants/gateway.test.ts shows 103011 and 900901
 * following that state).
 */
import t from 'tap';
import * as path from 'node:path';
import * as fs from 'node:fs';
import { adminAuth, basic, json, postForm, startKeyManager, ADMIN } from '../keymanager/helpers';
import { main } from '../../lib/cli';

t.test('deactivated by the CLI on the same store: refused within a second, no restart', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  t.equal((await json('POST', `${A}/tenants`, { domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }, adminAuth())).status, 201);
  const boss = basic('bossy@acme.test', 'acme-pw-1');
  const m = h.km.manager.forTenant('acme.test');
  const keys = await m.generateKeys((await m.createApplication({ name: 'AcmeApp', owner: 'bossy@acme.test' })).id);
  const client = basic(keys.consumerKey, keys.consumerSecret);
  t.equal((await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, client)).status, 200, 'a token while active');

  const conf = path.join(h.dir, 'deployment.toml');
  fs.writeFileSync(
    conf,
    `[super_admin]\nusername = "${ADMIN.user}"\npassword = "${ADMIN.password}"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(h.dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n`,
  );
  let err = '';
  const code = await main(['tenants', 'deactivate', 'acme.test', '--config', conf], {
    out: () => undefined,
    err: (x) => (err += x),
    cwd: h.dir,
    env: {},
  });
  t.equal(code, 0, err);
  const started = Date.now();
  let signIn = 0;
  let token = 0;
  while (Date.now() - started < 1000) {
    signIn = (await json('GET', `${A}/users`, undefined, boss)).status;
    token = (await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, client)).status;
    if (signIn === 401 && token === 401) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const took = Date.now() - started;
  t.comment(`refused ${took} ms after the CLI returned`);
  t.equal(signIn, 401, 'the tenant admin cannot sign in within a second');
  t.equal(token, 401, 'its client gets no token within a second');
  t.equal(h.km.tenants.state('acme.test'), 'inactive', 'the directory the gateway asks');
  t.equal((await json('GET', `${A}/users`, undefined, adminAuth())).status, 200, 'the super admin is served');
});
