/**
 * The Redis event hub across processes (docs/scale-out.md): one api-key-manager
 * process and gateway-worker processes, real Redis.
 *
 *  - a token revoked on the key manager is refused by both gateways within a second;
 *  - a subscription blocked takes effect on both, and unblocked again;
 *  - a gateway started after those events gets the state from the snapshot and follows later events;
 *  - Redis stopped in the middle (a private redis-server): the gateway keeps serving with its last state,
 *    logs the outage once, reports it in /health, and after Redis is back converges (the snapshot it pulls
 *    on reconnect) on what changed meanwhile.
 *
 * The shared Redis comes from THROUGHWAY_TEST_REDIS_URL (skipped with a reason when unset or
 * unreachable); the restart test starts its own /usr/bin/redis-server (skipped when absent).
 */
import * as fs from 'node:fs';
import { Redis } from 'ioredis';
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import {
  ADMIN,
  REDIS_SERVER,
  baseOffset,
  http,
  nodeToml,
  ownRedis,
  ownRedisOrSkip,
  redisReachable,
  securedApi,
  spawnNode,
  spawnStarted,
  started,
  tcpProxy,
  type Proc,
} from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

interface Client {
  readonly user: string;
  readonly password: string;
}

async function app(km: string, name: string, subscribe: boolean): Promise<{ client: Client; subscription: string }> {
  const a = await http(`${km}/admin/v1/applications`, { json: { name }, auth: ADMIN });
  if (a.status !== 201) throw new Error(a.text);
  const k = await http(`${km}/admin/v1/applications/${name}/keys`, { json: {}, auth: ADMIN });
  let subscription = '';
  if (subscribe) {
    const s = await http(`${km}/admin/v1/subscriptions`, { json: { application: name, api: '/shop', version: '1.0.0' }, auth: ADMIN });
    if (s.status !== 201) throw new Error(s.text);
    subscription = String(s.body.id);
  }
  return { client: { user: String(k.body.consumerKey), password: String(k.body.consumerSecret) }, subscription };
}

async function token(km: string, c: Client): Promise<string> {
  const r = await http(`${km}/oauth2/token`, { form: { grant_type: 'client_credentials' }, auth: c });
  if (r.status !== 200) throw new Error(r.text);
  return String(r.body.access_token);
}

const call = async (port: number, bearer: string): Promise<number> =>
  (await http(`http://127.0.0.1:${port}/shop/1.0.0/x`, { bearer })).status;
/** `status code` of a call: "200 -", "401 900907" (subscription blocked), "429 900805" (blocking condition). */
const outcome = async (port: number, bearer: string): Promise<string> => {
  const r = await http(`http://127.0.0.1:${port}/shop/1.0.0/x`, { bearer });
  return `${r.status} ${/\b(9\d{5})\b/.exec(r.text)?.[1] ?? '-'}`;
};
const BLOCKED_SUB = '401 900907';

t.test('two gateway-workers follow one key manager over Redis', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const channel = `tw-test-hub-${process.pid}-${Date.now()}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(10);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const apis = { 'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`) };
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel, redis }), apis);
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  t.match(kmp.out, new RegExp(`event hub\\s+${redis.replace(/[/.]/g, '\\$&')} channel ${channel} \\(publishing\\)`));
  const a1 = await app(km, 'One', true);
  const tok1 = await token(km, a1.client);

  const gws: Proc[] = [];
  const ports: number[] = [];
  for (const i of [1, 2]) {
    const gw = spawnNode(nodeToml({ offset: base + i, role: 'gateway-worker', channel, redis, km: kmPort }), apis);
    t.teardown(() => gw.stop());
    gws.push(gw);
    ports.push(8280 + base + i);
  }
  for (const gw of gws) {
    t.ok(await started(gw, /APIs: 1 deployed/), `${gw.out}\n${gw.err}`);
    t.match(gw.out, /event hub\s+\S+ channel \S+ \(subscribed\)/);
  }
  for (const p of ports) t.equal(await call(p, tok1), 200, `gateway ${p} accepts the token`);

  // Revoked on the key manager: refused by both within one second (docs/scale-out.md).
  const rv = await http(`${km}/oauth2/revoke`, { form: { token: tok1 }, auth: a1.client });
  t.equal(rv.status, 200, rv.text);
  for (const p of ports)
    t.ok(await until(async () => (await call(p, tok1)) === 401, 1000, 20), `gateway ${p} refuses the revoked token within a second`);

  // A subscription blocked, then unblocked.
  const tok1b = await token(km, a1.client);
  for (const p of ports) t.equal(await call(p, tok1b), 200, 'a new token of the same application is accepted');
  const blk = await http(`${km}/admin/v1/subscriptions/${a1.subscription}`, { method: 'PATCH', json: { state: 'BLOCKED' }, auth: ADMIN });
  t.equal(blk.status, 200, blk.text);
  for (const p of ports)
    t.ok(
      await until(async () => (await outcome(p, tok1b)) === BLOCKED_SUB, 1000, 20),
      `gateway ${p} refuses calls of the blocked subscription (900907) within a second`,
    );

  // A second application subscribed after the gateways started: its token works on both (events).
  const a2 = await app(km, 'Two', true);
  const tok2 = await token(km, a2.client);
  for (const p of ports)
    t.ok(await until(async () => (await call(p, tok2)) === 200, 1000, 20), `gateway ${p} knows the new application and subscription`);

  // A gateway started after all that: the snapshot gives it the same state.
  const late = spawnNode(nodeToml({ offset: base + 3, role: 'gateway-worker', channel, redis, km: kmPort }), apis);
  t.teardown(() => late.stop());
  t.ok(await started(late, /APIs: 1 deployed/), `${late.out}\n${late.err}`);
  const lp = 8280 + base + 3;
  t.equal(await call(lp, tok1), 401, 'the late gateway refuses the token revoked before it started');
  t.equal(await outcome(lp, tok1b), BLOCKED_SUB, 'and the subscription blocked before it started');
  t.equal(await call(lp, tok2), 200, 'and accepts the application added before it started');
  // Later events reach it too.
  const unb = await http(`${km}/admin/v1/subscriptions/${a1.subscription}`, { method: 'PATCH', json: { state: 'UNBLOCKED' }, auth: ADMIN });
  t.equal(unb.status, 200);
  for (const p of [...ports, lp])
    t.ok(await until(async () => (await call(p, tok1b)) === 200, 1000, 20), `gateway ${p} sees the subscription unblocked`);
  const health = await http(`http://127.0.0.1:${9763 + base + 3}/health`);
  t.equal(health.status, 200, health.text);
  t.match(health.text, /"name":"event_hub","order":98,"status":"UP"/);
});

t.test('Redis restarted mid-way: the gateway keeps serving and converges', async (t) => {
  const own = await ownRedisOrSkip(t);
  if (own === undefined) return;
  const channel = `tw-test-restart-${process.pid}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const base = baseOffset(20);
  const kmPort = 9763 + base;
  const km = `http://127.0.0.1:${kmPort}`;
  const apis = { 'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`) };
  const kmp = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel, redis: own.url }), apis);
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const a1 = await app(km, 'One', true);
  const a2 = await app(km, 'Two', true);
  const tok1 = await token(km, a1.client);
  const tok2 = await token(km, a2.client);
  const tok1b = await token(km, a1.client);
  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, redis: own.url, km: kmPort }), apis);
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: 1 deployed/), `${gw.out}\n${gw.err}`);
  const port = 8280 + base + 1;
  const mgmt = 9763 + base + 1;
  t.equal(await call(port, tok1), 200);
  t.equal(await call(port, tok2), 200);

  await own.stop();
  t.ok(await until(() => gw.err.includes('"event":"event_hub_unavailable"'), 5000), 'the outage is logged');
  t.equal(await call(port, tok1), 200, 'the gateway keeps serving with its last state');
  const down = await http(`http://127.0.0.1:${mgmt}/health`);
  t.equal(down.status, 503, 'the health check reports the hub');
  t.match(down.text, /"name":"event_hub","order":98,"status":"DOWN","message":"event hub Redis unreachable/);
  // Changes while the gateway cannot hear them.
  t.equal((await http(`${km}/oauth2/revoke`, { form: { token: tok1 }, auth: a1.client })).status, 200);
  t.equal(
    (await http(`${km}/admin/v1/subscriptions/${a2.subscription}`, { method: 'PATCH', json: { state: 'BLOCKED' }, auth: ADMIN })).status,
    200,
  );
  t.equal((await http(`${km}/admin/v1/blocking-conditions`, { json: { type: 'IP', value: '127.0.0.1' }, auth: ADMIN })).status, 201);
  t.equal(await call(port, tok1), 200, 'not known yet: Redis is away');
  // Several reconnect attempts fail meanwhile: still one log line.
  await new Promise((r) => setTimeout(r, 700));
  t.equal((gw.err.match(/"event":"event_hub_unavailable"/g) ?? []).length, 1, 'logged once per outage');

  await own.start();
  t.ok(
    await until(() => gw.err.includes('"event":"event_hub_resynced"'), 10_000),
    `the gateway pulls the snapshot after reconnecting\n${gw.err.slice(-2000)}`,
  );
  t.ok(
    await until(async () => (await outcome(port, tok1b)) === '429 900805', 3000, 20),
    'converged: the IP blocking condition added meanwhile applies',
  );
  const del = await http(`${km}/admin/v1/blocking-conditions`, { auth: ADMIN });
  const id = String((del.body.list as { id: string }[])[0]?.id);
  t.equal((await http(`${km}/admin/v1/blocking-conditions/${id}`, { method: 'DELETE', auth: ADMIN })).status, 200);
  t.ok(await until(async () => (await call(port, tok1)) === 401, 3000, 20), 'converged: the token revoked meanwhile is refused');
  t.ok(
    await until(async () => (await outcome(port, tok2)) === BLOCKED_SUB, 3000, 20),
    'converged: the subscription blocked meanwhile is refused',
  );
  t.ok(
    await until(async () => (await outcome(port, tok1b)) === '200 -', 3000, 20),
    'and the blocking condition removed after Redis returned (an event) is lifted',
  );
  const up = await http(`http://127.0.0.1:${mgmt}/health`);
  t.equal(up.status, 200, `healthy again: ${up.text}`);
  t.match(gw.err, /"event":"event_hub_reconnected"/);
});

t.test('revoked ids read back from Redis: refused after a reconnect with the control plane gone', async (t) => {
  if (!fs.existsSync(REDIS_SERVER)) {
    t.skip(`${REDIS_SERVER} not installed: cannot start a private Redis`, () => undefined);
    return;
  }
  const own = await ownRedis();
  t.teardown(() => own.stop());
  // The gateway reaches Redis through the relay only: stopping it is "Redis gone" for the gateway alone,
  // so the key manager still writes the revoked id (a key manager stopped while its Redis is away loses
  // its queued writes with it: nothing could be read back).
  const relay = await tcpProxy(own.port);
  t.teardown(() => relay.stop());
  const redis = new Redis(own.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  t.teardown(() => redis.disconnect());
  const channel = `tw-test-revoked-${process.pid}`;
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const apis = { 'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`) };
  const k = await spawnStarted({
    salt: 61,
    toml: (offset) => nodeToml({ offset, role: 'api-key-manager', channel, redis: own.url }),
    apis,
    marker: /Key manager: /,
  });
  const kmp = k.node;
  t.teardown(() => kmp.stop());
  t.ok(k.ok, `${kmp.out}\n${kmp.err}`);
  const kmPort = 9763 + k.offset;
  const km = `http://127.0.0.1:${kmPort}`;
  const a1 = await app(km, 'One', true);
  const tok = await token(km, a1.client);
  const other = await token(km, a1.client);
  const g = await spawnStarted({
    salt: 61,
    index: 1,
    toml: (offset) => nodeToml({ offset, role: 'gateway-worker', channel, redis: relay.url, km: kmPort }),
    apis,
    marker: /APIs: 1 deployed/,
  });
  const gw = g.node;
  t.teardown(() => gw.stop());
  t.ok(g.ok, `${gw.out}\n${gw.err}`);
  const port = 8280 + g.offset;
  t.equal(await call(port, tok), 200);

  await relay.stop();
  t.ok(await until(() => gw.err.includes('"event":"event_hub_unavailable"'), 5000), 'the gateway lost Redis');
  const rv = await http(`${km}/oauth2/revoke`, { form: { token: tok }, auth: a1.client });
  t.equal(rv.status, 200, rv.text);
  const claims = JSON.parse(Buffer.from(tok.split('.')[1] ?? '', 'base64url').toString()) as { jti: string; exp: number };
  const key = `${channel}:revoked:${claims.jti}`;
  let pttl = -2;
  // The token's remaining life when PTTL was asked: measured just before (Redis reads the same clock after).
  let remaining = 0;
  const asked = async (): Promise<number> => {
    remaining = claims.exp * 1000 - Date.now();
    return (pttl = await redis.pttl(key));
  };
  t.ok(await until(async () => (await asked()) > 0, 3000), `the key manager wrote ${key} (PTTL ${pttl})`);
  t.ok(pttl > 0 && pttl <= remaining, `its TTL is the token's remaining life: PTTL ${pttl} ms, ${remaining} ms left`);
  t.ok(pttl > remaining - 60_000, 'close to it (within a minute)');
  t.equal(await redis.get(key), String(claims.exp * 1000), "the value is the token's expiry (epoch ms)");
  t.equal(await call(port, tok), 200, 'not known to the gateway yet: its Redis is away');

  // The control plane goes away, then the gateway's Redis comes back: only Redis can tell it.
  await kmp.stop();
  const resyncedBefore = (gw.err.match(/"event":"event_hub_resynced"/g) ?? []).length;
  await relay.start();
  t.ok(
    await until(() => gw.err.includes('"event":"event_hub_revoked_read"'), 10_000),
    `the gateway read the revoked id from Redis\n${gw.err.slice(-2000)}`,
  );
  t.ok(
    await until(async () => (await call(port, tok)) === 401, 3000, 20),
    'the revoked token is refused although the control plane is gone',
  );
  t.equal(await call(port, other), 200, 'another token of the application is still accepted');
  t.equal(
    (gw.err.match(/"event":"event_hub_resynced"/g) ?? []).length,
    resyncedBefore,
    'no snapshot was pulled (the control plane is gone): Redis alone told it',
  );
  t.match(gw.err, /"event":"control_plane_retry"/, 'the snapshot pull is failing meanwhile');
});
