/**
 * Throttling through real sockets: the unauthenticated tier per client IP, API and resource policies,
 * the hard limit, blocking conditions added and removed at run time by events, the fault body with
 * nextAccessTime and Retry-After, RateLimit fields on allowed and refused responses, a refused request's
 * body drained and not forwarded, and 1,000 parallel calls against a limit of 100. A fake clock drives
 * every window.
 */
import * as http from 'node:http';
import t, { type Test } from 'tap';
import { createEventBus } from '../../lib/events/bus';
import { BASE_TOML, apiToml, echoBackend, request, startGateway, type TestGateway, type EchoBackend } from '../gateway/helpers';
import { RawClient } from '../helpers/client';

const T0 = 1_800_000_000_000;
const POLICIES = `
[[subscription]]
name = "Unauthenticated"
request_count = 500
[[subscription]]
name = "Unlimited"
unlimited = true
[[subscription]]
name = "Three"
request_count = 3
[[api]]
name = "Two"
request_count = 2
[[api]]
name = "Hundred"
request_count = 100
[[api]]
name = "Unlimited"
unlimited = true
`;

interface Rig {
  readonly g: TestGateway;
  readonly backend: EchoBackend;
  readonly clock: { now: number };
  readonly events: ReturnType<typeof createEventBus>;
}

async function rig(t: Test, apis: Record<string, (ep: string) => string>, policies = POLICIES): Promise<Rig> {
  const backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  const clock = { now: T0 };
  const events = createEventBus();
  const files = Object.fromEntries(Object.entries(apis).map(([k, f]) => [k, f(ep)]));
  const g = await startGateway(BASE_TOML, files, { 'policies.toml': policies }, { events, throttling: { now: () => clock.now } });
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  return { g, backend, clock, events };
}

async function statuses(port: number, path: string, n: number, agent: http.Agent, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(port, path, { agent, headers })).status);
  return out;
}

const count = (list: readonly number[], s: number): number => list.filter((x) => x === s).length;

t.test('unauthenticated tier: 500 per minute per client IP, the fault body, Retry-After and RateLimit fields', async (t) => {
  const r = await rig(t, {
    a: (ep) => apiToml({ context: '/a', endpoint: ep, resources: [['/r', ['GET']]], unauthenticatedPolicy: null }),
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  r.clock.now = T0 + 20_000;
  const first = await request(r.g.port, '/a/1.0.0/r', { agent });
  t.equal(first.status, 200);
  t.same(
    [first.headers['ratelimit-limit'], first.headers['ratelimit-remaining'], first.headers['ratelimit-reset']],
    ['500', '499', '40'],
    'RateLimit fields on an allowed response',
  );
  const rest = await statuses(r.g.port, '/a/1.0.0/r', 499, agent);
  t.equal(count(rest, 200), 499, 'exactly 500 allowed');
  const refused = await request(r.g.port, '/a/1.0.0/r', { agent });
  t.equal(refused.status, 429);
  const f = refused.json().fault;
  t.same([f.code, f.type, f.message], [900804, 'Status report', 'Subscription level throttled out']);
  t.equal(f.nextAccessTime, new Date(T0 + 60_000).toISOString(), 'nextAccessTime: the end of the window');
  t.equal(refused.headers['retry-after'], '40');
  t.same(
    [refused.headers['ratelimit-limit'], refused.headers['ratelimit-remaining'], refused.headers['ratelimit-reset']],
    ['500', '0', '40'],
    'RateLimit fields on the refusal',
  );
  t.equal(r.backend.seen.length, 500, 'the refused call never reached the backend');
  r.clock.now = T0 + 60_000;
  const next = await request(r.g.port, '/a/1.0.0/r', { agent });
  t.equal(next.status, 200, 'the next window allows again');
  t.same(
    [next.headers['ratelimit-limit'], next.headers['ratelimit-remaining'], next.headers['ratelimit-reset']],
    ['500', '499', '60'],
    'a new reset, from its own count',
  );
});

t.test('unauthenticated_policy: Unlimited at API level, another tier per resource', async (t) => {
  const r = await rig(t, {
    a: (ep) =>
      apiToml({ context: '/a', endpoint: ep, resources: [['/r', ['GET']]], unauthenticatedPolicy: 'Unlimited', extra: '' }) +
      '[[resources]]\npath = "/three"\nmethods = ["GET"]\nunauthenticated_policy = "Three"\n',
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const open = await statuses(r.g.port, '/a/1.0.0/r', 600, agent);
  t.equal(count(open, 200), 600, 'Unlimited: 600 calls in one minute');
  const plain = await request(r.g.port, '/a/1.0.0/r', { agent });
  t.equal(plain.headers['ratelimit-limit'], undefined, 'no RateLimit fields when nothing limits the call');
  const first = await request(r.g.port, '/a/1.0.0/three', { agent });
  t.same(
    [first.status, first.headers['ratelimit-limit'], first.headers['ratelimit-remaining']],
    [200, '3', '2'],
    "the tier's own limit in RateLimit-Limit",
  );
  t.same(await statuses(r.g.port, '/a/1.0.0/three', 3, agent), [200, 200, 429], 'the resource names its own tier');
});

t.test('API-level (900800) and resource-level (900802) policies over every caller', async (t) => {
  const r = await rig(t, {
    api: (ep) =>
      apiToml({
        context: '/api',
        endpoint: ep,
        resources: [
          ['/x', ['GET']],
          ['/y', ['GET']],
        ],
        extra: 'policy = "Two"',
      }),
    res: (ep) =>
      apiToml({ name: 'R', context: '/res', endpoint: ep, resources: [['/y', ['GET']]] }) +
      '[[resources]]\npath = "/x"\nmethods = ["GET"]\npolicy = "Two"\n',
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.same(
    [...(await statuses(r.g.port, '/api/1.0.0/x', 1, agent)), ...(await statuses(r.g.port, '/api/1.0.0/y', 2, agent))],
    [200, 200, 429],
    'the API count covers every resource',
  );
  const api = await request(r.g.port, '/api/1.0.0/x', { agent });
  t.same([api.status, api.json().fault.code, api.json().fault.message], [429, 900800, 'Message throttled out']);
  t.same(await statuses(r.g.port, '/res/1.0.0/x', 3, agent), [200, 200, 429]);
  const res = await request(r.g.port, '/res/1.0.0/x', { agent });
  t.same([res.json().fault.code, res.json().fault.message], [900802, 'Resource level throttle out']);
  t.same(await statuses(r.g.port, '/res/1.0.0/y', 3, agent), [200, 200, 200], 'a resource without a policy is not limited by it');
});

t.test('an API file naming an unknown policy is not deployed, with file:line', async (t) => {
  const r = await rig(t, {
    bad: (ep) => apiToml({ context: '/bad', endpoint: ep, resources: [['/x', ['GET']]], extra: 'policy = "Twoo"' }),
  });
  t.equal(r.g.gw.deployed().length, 0);
  const d = r.g.gw.states()[0]?.diagnostics.find((x) => x.level === 'error');
  t.same([d?.code, d?.line, d?.field], ['API_VALUE', 6, 'policy']);
  t.match(d?.message, /"Twoo" is not an \[\[api\]\] policy of the policies file; did you mean "Two"\?/);
});

t.test('hard limit per endpoint (900801): 503, over every caller', async (t) => {
  const r = await rig(t, {
    a: (ep) =>
      apiToml({ context: '/a', endpoint: ep, resources: [['/r', ['GET']]] }).replace(
        `production = "${ep}"`,
        `production = { url = "${ep}", max_tps = 3 }`,
      ),
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  r.clock.now = T0 + 250;
  t.same(await statuses(r.g.port, '/a/1.0.0/r', 4, agent), [200, 200, 200, 503]);
  const f = await request(r.g.port, '/a/1.0.0/r', { agent });
  t.same([f.status, f.json().fault.code, f.json().fault.message, f.headers['retry-after']], [503, 900801, 'Hard limit exceeded', '1']);
  r.clock.now = T0 + 1000;
  t.equal((await request(r.g.port, '/a/1.0.0/r', { agent })).status, 200, 'next second');
});

t.test('blocking conditions added and removed at run time (events), each applied at once', async (t) => {
  const r = await rig(t, { a: (ep) => apiToml({ context: '/a', endpoint: ep, resources: [['/r', ['GET']]] }) });
  t.equal((await request(r.g.port, '/a/1.0.0/r')).status, 200);
  const cases = [
    { id: 'c1', type: 'IP', value: '127.0.0.1', invert: false },
    { id: 'c2', type: 'IP_RANGE', value: '127.0.0.0/8', invert: false },
    { id: 'c3', type: 'API', value: '/a/1.0.0', invert: false },
    { id: 'c4', type: 'API', value: '/a', invert: false },
    { id: 'c5', type: 'IP', value: '10.1.1.1', invert: true },
  ] as const;
  for (const c of cases) {
    r.events.publish('blocking.added', { condition: c });
    const b = await request(r.g.port, '/a/1.0.0/r');
    t.same(
      [b.status, b.json().fault.code, b.json().fault.message],
      [429, 900805, 'Message blocked'],
      `${c.type} ${c.value}${c.invert ? ' (inverted)' : ''}: blocked`,
    );
    t.equal(b.headers['retry-after'], undefined, 'no retry time for a block');
    r.events.publish('blocking.removed', { condition: c });
    t.equal((await request(r.g.port, '/a/1.0.0/r')).status, 200, `${c.type} ${c.value} removed: served again`);
  }
  r.events.publish('blocking.added', { condition: { id: 'x', type: 'IP', value: '10.9.9.9', invert: false } });
  t.equal((await request(r.g.port, '/a/1.0.0/r')).status, 200, 'a condition on another address does not block');
  t.equal(r.g.gw.throttle.blocking.size, 1);
});

t.test("a refused request's body is drained, not forwarded; the connection serves the next request", async (t) => {
  const r = await rig(t, {
    a: (ep) =>
      apiToml({
        context: '/a',
        endpoint: ep,
        resources: [
          ['/up', ['POST']],
          ['/r', ['GET']],
        ],
      }),
  });
  r.events.publish('blocking.added', { condition: { id: 'api', type: 'API', value: '/a/1.0.0', invert: false } });
  const c = await RawClient.connect(r.g.port);
  t.teardown(() => c.destroy());
  const body = 'x'.repeat(100_000);
  await c.write(`POST /a/1.0.0/up HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  const first = await c.message(1);
  t.equal(first.status, 429);
  r.events.publish('blocking.removed', { condition: { id: 'api', type: 'API', value: '/a/1.0.0', invert: false } });
  await c.write('GET /a/1.0.0/r HTTP/1.1\r\nHost: t\r\n\r\n');
  const second = await c.message(2);
  t.equal(second.status, 200, 'the same connection, after the drained body');
  t.same(
    r.backend.seen.map((s) => `${s.method} ${s.url}`),
    ['GET /r'],
    'the refused POST never reached the backend',
  );
});

t.test('concurrency: 1,000 parallel calls against a limit of 100 allow exactly 100', async (t) => {
  const r = await rig(t, {
    a: (ep) => apiToml({ context: '/a', endpoint: ep, resources: [['/r', ['GET']]], extra: 'policy = "Hundred"' }),
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
  t.teardown(() => agent.destroy());
  const all = await Promise.all(Array.from({ length: 1000 }, () => request(r.g.port, '/a/1.0.0/r', { agent })));
  const s = all.map((x) => x.status);
  t.equal(count(s, 200), 100, 'exactly 100 allowed');
  t.equal(count(s, 429), 900, 'the other 900 refused');
  t.equal(r.backend.seen.length, 100);
});

t.test('counters survive a hot deploy of the API', async (t) => {
  const fs = await import('node:fs');
  const path = await import('node:path');
  let ep = '';
  const file = (extra: string): string =>
    apiToml({
      context: '/a',
      endpoint: ep,
      resources: [
        ['/r', ['GET']],
        ['/s', ['GET']],
      ],
      unauthenticatedPolicy: 'Three',
      extra,
    });
  const r = await rig(t, {
    a: (e) => {
      ep = e;
      return file('');
    },
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.same(await statuses(r.g.port, '/a/1.0.0/r', 2, agent), [200, 200]);
  fs.writeFileSync(path.join(r.g.dir, 'apis', 'a.toml'), file('description = "changed"'));
  const report = r.g.gw.reload();
  t.equal(report.deployed[0]?.name, 'Test');
  t.same(await statuses(r.g.port, '/a/1.0.0/s', 2, agent), [200, 429], 'the third call of the minute is the last, after the redeploy too');
});
