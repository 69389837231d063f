/**
 * Reference (opaque) tokens (spec 002 part 5 rule 3): asked of the key manager's introspection endpoint
 * (RFC 7662). In process the key manager answers directly; otherwise over HTTP to [apim.key_manager]
 * service_url with its credentials, through a client held to [apim.http_client] default_max_per_route,
 * cached, and 900900 when the key manager cannot be reached. Here the gateway also runs without a key
 * manager in process: its subscription store is fed by events alone.
 */
import * as http from 'node:http';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway } from '../../lib/embed';
import { closedPort, echoBackend, HOST, memoryLogger, request } from '../gateway/helpers';
import { api, BASE, code, startNode } from './helpers';

t.test('in process: a refresh token or an unknown opaque string is not an access token (900901)', async (t) => {
  const node = await startNode((port) => [api('o', {}, undefined, port)]);
  t.teardown(() => node.close());
  await node.km.manager.addUser({ username: 'bob', password: 'bob-pw-12' });
  const app = await node.app('Op', { subscribe: ['o'] });
  const r = await node.km.oauth.token(
    `Basic ${Buffer.from(`${app.consumerKey}:${app.consumerSecret}`).toString('base64')}`,
    new URLSearchParams({ grant_type: 'password', username: 'bob', password: 'bob-pw-12' }),
  );
  t.ok(r.refresh_token, 'a refresh token to try');
  const refresh = await node.call('/o/1/x', r.refresh_token);
  t.equal(refresh.status, 401);
  t.equal(code(refresh), 900901);
  t.match(JSON.parse(refresh.body).fault.description, /not active/);
  t.equal(code(await node.call('/o/1/x', 'opaque-and-unknown')), 900901);
  t.equal((await node.call('/o/1/x', r.access_token)).status, 200, 'the access token of the same grant passes');
});

t.test('over HTTP: Basic credentials, active tokens pass and are cached, inactive ones 900901, limits, outage 900900', async (t) => {
  let hits = 0;
  let open = 0;
  let maxOpen = 0;
  let auth = '';
  const km = http.createServer((req, res) => {
    hits++;
    open++;
    maxOpen = Math.max(maxOpen, open);
    auth = req.headers.authorization ?? '';
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('token') ?? '';
      const answer = token.startsWith('good')
        ? {
            active: true,
            token_type: 'Bearer',
            client_id: 'ck-1',
            sub: 'carol',
            scope: 'default',
            exp: Math.floor(Date.now() / 1000) + 600,
            keytype: 'PRODUCTION',
            aut: 'APPLICATION_USER',
          }
        : { active: false };
      // Held a little so concurrent calls overlap at the server.
      setTimeout(() => {
        open--;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(answer));
      }, 50);
    });
  });
  await new Promise<void>((resolve) => km.listen(0, HOST, resolve));
  t.teardown(() => new Promise<void>((resolve) => km.close(() => resolve())));
  const kmPort = (km.address() as { port: number }).port;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const text = `${BASE}[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n[apim.key_manager]\nservice_url = "http://${HOST}:${kmPort}/services/"\nusername = "gw-user"\npassword = "gw-pw"\n[apim.http_client]\nmax_total = 10\ndefault_max_per_route = 2\n`;
  const loaded = loadConfig({ text, env: {} });
  t.ok(loaded.ok);
  const bus = createEventBus();
  const gw = createGateway({
    config: loaded.config,
    dir: '.',
    apis: [api('o', {}, undefined, backend.port)],
    logger: memoryLogger(),
    events: bus,
    watch: false,
  });
  t.teardown(() => gw.close());
  const port = (await gw.listen({ port: 0, host: HOST })).port;
  await gw.security.ready;
  // What a key manager in another process would announce (the Redis event hub carries these, docs/scale-out.md).
  bus.publish('application.added', {
    application: { id: 'app-1', name: 'Remote', owner: 'carol', tier: 'Gold', keys: [{ consumerKey: 'ck-1', keyType: 'PRODUCTION' }] },
  });
  bus.publish('subscription.added', {
    subscription: { id: 's-1', applicationId: 'app-1', apiContext: '/o', apiVersion: '1', tier: 'Silver', state: 'UNBLOCKED' },
  });
  const call = (token: string): ReturnType<typeof request> => request(port, '/o/1/x', { headers: { Authorization: `Bearer ${token}` } });

  t.equal((await call('good-1')).status, 200, 'active');
  t.equal(auth, `Basic ${Buffer.from('gw-user:gw-pw').toString('base64')}`, '[apim.key_manager] credentials');
  t.equal((await call('good-1')).status, 200);
  t.equal(hits, 1, 'the second call came from the token cache');
  t.equal(code(await call('bad-1')), 900901, 'inactive');
  bus.publish('subscription.changed', {
    subscription: { id: 's-1', applicationId: 'app-1', apiContext: '/o', apiVersion: '1', tier: 'Silver', state: 'BLOCKED' },
    previousState: 'UNBLOCKED',
  });
  t.equal(code(await call('good-1')), 900907, 'an event blocks the subscription');
  bus.publish('subscription.changed', {
    subscription: { id: 's-1', applicationId: 'app-1', apiContext: '/o', apiVersion: '1', tier: 'Silver', state: 'UNBLOCKED' },
    previousState: 'BLOCKED',
  });

  hits = 0;
  const all = await Promise.all([2, 3, 4, 5, 6, 7].map((i) => call(`good-${i}`)));
  t.same(
    all.map((r) => r.status),
    [200, 200, 200, 200, 200, 200],
  );
  t.equal(hits, 6);
  t.equal(maxOpen, 2, 'six at once, at most default_max_per_route = 2 introspection calls open');

  // The key manager goes away: not a 401 but the spec's 500.
  const down = await closedPort();
  const gw2 = createGateway({
    config: loadConfig({ text: text.replace(`${HOST}:${kmPort}`, `${HOST}:${down}`), env: {} }).config,
    dir: '.',
    apis: [api('o', {}, undefined, backend.port)],
    logger: memoryLogger(),
    watch: false,
  });
  t.teardown(() => gw2.close());
  const p2 = (await gw2.listen({ port: 0, host: HOST })).port;
  const r = await request(p2, '/o/1/x', { headers: { Authorization: 'Bearer good-9' } });
  t.equal(r.status, 500);
  t.equal(code(r), 900900);
  t.match(JSON.parse(r.body).fault.description, /key manager cannot be reached/);
});
