/**
 * server.server_role on real processes (spec 000, part 1.1; docs/scale-out.md):
 * api-devportal and api-publisher run the management server with their console only; api-key-manager runs
 * the management server and store and no gateway listener; gateway-worker runs the gateway only, with
 * no store, and gets the key manager's keys and snapshot over HTTP: a token issued by the key manager
 * process is accepted, an unsubscribed application refused; traffic-manager runs no gateway.
 */
import * as net from 'node:net';
import t from 'tap';
import { echoBackend } from '../gateway/helpers';
import { ADMIN, baseOffset, http, nodeToml, securedApi, spawnNode, started } from './helpers';

const channel = `tw-test-roles-${process.pid}`;

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', () => resolve(true));
  });
}

t.test('api-devportal and api-publisher run the management server with their console, and no gateway', async (t) => {
  for (const [i, role, served, absent] of [
    [0, 'api-devportal', '/devportal', '/publisher'],
    [1, 'api-publisher', '/publisher', '/devportal/applications'],
  ] as const) {
    const base = baseOffset(1) + i;
    const port = 9763 + base;
    const p = spawnNode(nodeToml({ offset: base, role, channel }));
    t.teardown(() => p.stop());
    t.ok(await started(p, /Key manager: /), `${role} started:\n${p.out}\n${p.err}`);
    t.match(p.out, new RegExp(`role ${role}`));
    t.match(
      p.out,
      new RegExp(
        `${role === 'api-devportal' ? 'developer portal' : 'publisher'}\\s+https://localhost:${9443 + base}${served} \\(also http://localhost:${port}${served}\\)`,
      ),
      'the start-up lines name the console',
    );
    // The console lines ("publisher   https://…"), not a migration's description that names the portal.
    t.notMatch(p.out, new RegExp(`${role === 'api-devportal' ? 'publisher' : 'developer portal'}\\s+https://`), 'and only that console');
    t.ok(await refused(8280 + base), 'no gateway listener');
    const page = await fetch(`http://127.0.0.1:${port}${served}`, { redirect: 'manual' });
    t.equal(page.status, role === 'api-devportal' ? 200 : 303, `${served} is served`);
    if (role === 'api-publisher') t.equal(page.headers.get('location'), '/devportal/login?back=%2Fpublisher', 'through the sign-in');
    t.equal((await http(`http://127.0.0.1:${port}${absent}`)).status, 404, `${absent} is not`);
    await p.stop();
  }
});

t.test('api-key-manager runs the management server only; a gateway-worker gets keys and snapshot from it', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(2);
  const kmPort = 9763 + base;
  const km = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel }), {
    'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`),
  });
  t.teardown(() => km.stop());
  t.ok(await started(km, /Key manager: /), `key manager started:\n${km.out}\n${km.err}`);
  t.match(km.out, /role api-key-manager/);
  t.match(km.out, new RegExp(`management HTTP\\s+port ${kmPort}`));
  t.match(km.out, /the gateway does not run for role api-key-manager/);
  t.ok(await refused(8280 + base), 'no gateway listener on the HTTP port');
  t.equal((await http(`http://127.0.0.1:${kmPort}/health/live`)).status, 200, 'operations on the management port');

  // Application, keys, subscription, token: all on the key manager process.
  const app = await http(`http://127.0.0.1:${kmPort}/admin/v1/applications`, { json: { name: 'App1' }, auth: ADMIN });
  t.equal(app.status, 201, app.text);
  const keys = await http(`http://127.0.0.1:${kmPort}/admin/v1/applications/App1/keys`, { json: {}, auth: ADMIN });
  t.equal(keys.status, 201, keys.text);
  const client = { user: String(keys.body.consumerKey), password: String(keys.body.consumerSecret) };
  const sub = await http(`http://127.0.0.1:${kmPort}/admin/v1/subscriptions`, {
    json: { application: 'App1', api: '/shop', version: '1.0.0' },
    auth: ADMIN,
  });
  t.equal(sub.status, 201, sub.text);
  const tok = await http(`http://127.0.0.1:${kmPort}/oauth2/token`, { form: { grant_type: 'client_credentials' }, auth: client });
  t.equal(tok.status, 200, tok.text);
  const token = String(tok.body.access_token);
  // A second application without a subscription.
  await http(`http://127.0.0.1:${kmPort}/admin/v1/applications`, { json: { name: 'App2' }, auth: ADMIN });
  const keys2 = await http(`http://127.0.0.1:${kmPort}/admin/v1/applications/App2/keys`, { json: {}, auth: ADMIN });
  const tok2 = await http(`http://127.0.0.1:${kmPort}/oauth2/token`, {
    form: { grant_type: 'client_credentials' },
    auth: { user: String(keys2.body.consumerKey), password: String(keys2.body.consumerSecret) },
  });
  t.equal(tok2.status, 200);

  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort }), {
    'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`),
  });
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: 1 deployed/), `gateway-worker started:\n${gw.out}\n${gw.err}`);
  t.match(gw.out, /role gateway-worker/);
  t.match(gw.out, /control plane\s+http:\/\/127\.0\.0\.1:\d+ \(2 applications, 1 subscriptions, 0 revoked tokens, 0 blocking conditions\)/);
  t.notMatch(gw.out, /store migration|Key manager: /, 'no store and no key manager on the gateway-worker');
  t.match(gw.out, /no redis:\/\/ event hub/, 'it says it has the state of its start only');
  const gwPort = 8280 + base + 1;
  const ok = await http(`http://127.0.0.1:${gwPort}/shop/1.0.0/x`, { bearer: token });
  t.equal(ok.status, 200, `a token of the key manager process is accepted: ${ok.text}`);
  const noSub = await http(`http://127.0.0.1:${gwPort}/shop/1.0.0/x`, { bearer: String(tok2.body.access_token) });
  t.equal(noSub.status, 403, 'an application without a subscription is refused');
  t.match(noSub.text, /900908/);
  const bad = await http(`http://127.0.0.1:${gwPort}/shop/1.0.0/x`, { bearer: `${token.slice(0, -4)}AAAA` });
  t.equal(bad.status, 401, 'a token with a broken signature is refused');
  // The gateway-worker's own operations port.
  const health = await http(`http://127.0.0.1:${9763 + base + 1}/health`);
  t.equal(health.status, 200, health.text);
  t.equal(
    (await http(`http://127.0.0.1:${9763 + base + 1}/admin/v1/applications`, { auth: ADMIN })).status,
    404,
    'no admin API on a gateway-worker',
  );
});

t.test('traffic-manager runs the store-backed key manager parts and no gateway', async (t) => {
  const base = baseOffset(3);
  const tm = spawnNode(nodeToml({ offset: base, role: 'traffic-manager', channel }));
  t.teardown(() => tm.stop());
  t.ok(await started(tm, /Key manager: /), `${tm.out}\n${tm.err}`);
  t.match(tm.out, /the gateway does not run for role traffic-manager/);
  t.ok(await refused(8280 + base));
  const b = await http(`http://127.0.0.1:${9763 + base}/admin/v1/blocking-conditions`, {
    json: { type: 'IP', value: '10.0.0.1' },
    auth: ADMIN,
  });
  t.equal(b.status, 201, `it owns blocking conditions: ${b.text}`);
});

t.test('a gateway-worker whose control plane never answers gives up after max_retry_count', async (t) => {
  const base = baseOffset(4);
  const dead = 9763 + base; // nothing listens there
  const gw = spawnNode(
    nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: dead, extra: '' }).replace(
      'max_retry_count = 20',
      'max_retry_count = 2',
    ),
  );
  t.teardown(() => gw.stop('SIGKILL'));
  const code = await gw.exited;
  t.equal(code, 1, 'start fails');
  t.equal((gw.err.match(/"event":"control_plane_retry"/g) ?? []).length, 2, 'two retries, as configured');
  t.match(gw.err, /CONTROL_PLANE|ECONNREFUSED/);
});
