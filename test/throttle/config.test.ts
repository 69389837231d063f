/**
 * Throttling as deployment.toml configures it: the policies file path, an invalid policies file stops
 * the gateway with file:line, enable_unlimited_tier = false, the condition switches of [apim.throttling]
 * (header conditions on and off), enable_blacklist_condition, and the Unlimited fast path.
 */
import * as http from 'node:http';
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, request, startGateway } from '../gateway/helpers';
import { ThrottleConfigError } from '../../lib/throttle';

const POLICIES = `[[subscription]]
name = "Unlimited"
unlimited = true
[[api]]
name = "ByHeader"
request_count = 100
[[api.condition_group]]
request_count = 2
[[api.condition_group.condition]]
type = "header"
name = "X-Plan"
value = "free"
`;

t.test('[throughway.throttling] policies_file, and an invalid file stops the gateway with file:line', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const api = {
    a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]], extra: 'policy = "ByHeader"' }),
  };
  const g = await startGateway(`${BASE_TOML}[throughway.throttling]\npolicies_file = "limits/mine.toml"\n`, api, {
    'limits/mine.toml': POLICIES,
  });
  t.teardown(() => g.close());
  t.equal(g.gw.deployed().length, 1, 'the API names a policy of that file');
  t.ok(g.gw.throttle.policies().api.has('ByHeader'));
  t.equal(g.gw.throttle.settings.policiesFile.endsWith('limits/mine.toml'), true);

  let thrown: unknown;
  try {
    await startGateway(BASE_TOML, api, { 'policies.toml': '[[api]]\nname = "X"\nrequest_count = -5\n' });
  } catch (err) {
    thrown = err;
  }
  t.ok(thrown instanceof ThrottleConfigError, 'createGateway throws ThrottleConfigError');
  t.match((thrown as Error).message, /policies\.toml:3: error POLICY_VALUE api\[0\]\.request_count: expected a whole number >= 1, got -5/);
});

t.test('header conditions follow enable_header_based_throttling', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const api = {
    a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]], extra: 'policy = "ByHeader"' }),
  };
  for (const on of [true, false]) {
    const g = await startGateway(`${BASE_TOML}[apim.throttling]\nenable_header_based_throttling = ${on}\n`, api, {
      'policies.toml': POLICIES,
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const got: number[] = [];
    for (let i = 0; i < 3; i++) got.push((await request(g.port, '/a/1.0.0/r', { agent, headers: { 'X-Plan': 'free' } })).status);
    agent.destroy();
    await g.close();
    t.same(got, on ? [200, 200, 429] : [200, 200, 200], `switch ${on ? "on: the group's limit of 2" : "off: the policy's 100"}`);
  }
});

t.test('enable_unlimited_tier = false: an API naming Unlimited is not deployed', async (t) => {
  const g = await startGateway(`${BASE_TOML}[apim.throttling]\nenable_unlimited_tier = false\n`, {
    a: apiToml({ context: '/a', endpoint: 'http://127.0.0.1:9', resources: [['/r', ['GET']]] }),
  });
  t.teardown(() => g.close());
  t.equal(g.gw.deployed().length, 0);
  t.match(
    g.gw.states()[0]?.diagnostics.find((d) => d.level === 'error')?.message,
    /"Unlimited" is not a \[\[subscription\]\] policy of the policies file.*enable_unlimited_tier is false/,
  );
});

t.test('enable_blacklist_condition = false: blocking conditions do not apply', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const g = await startGateway(
    `${BASE_TOML}[apim.throttling]\nenable_blacklist_condition = false\n`,
    { a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }) },
    {},
    { throttling: { blocking: [{ id: '1', type: 'IP', value: '127.0.0.1', invert: false }] } },
  );
  t.teardown(() => g.close());
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 200);
});

t.test('an Unlimited API without policies counts nothing; a blocking condition still applies to it', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const g = await startGateway(BASE_TOML, {
    a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
  });
  t.teardown(() => g.close());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  t.teardown(() => agent.destroy());
  const r = await request(g.port, '/a/1.0.0/r', { agent });
  t.equal(r.status, 200);
  t.equal(r.headers['ratelimit-limit'], undefined);
  t.equal(g.gw.throttle.counters.size, 0, 'no counter created');
  g.gw.throttle.blocking.add({ id: 'b', type: 'API', value: '/a', invert: false });
  t.equal((await request(g.port, '/a/1.0.0/r', { agent })).status, 429);
});

t.test('`throughway config check` validates the policies file with file:line', async (t) => {
  const { main } = await import('../../lib/cli');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-thr-check-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), BASE_TOML);
  const run = async (): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await main(['config', 'check', '--config', path.join(dir, 'deployment.toml')], {
      out: (s) => (out += s),
      err: (s) => (err += s),
      cwd: dir,
    });
    return { code, out, err };
  };
  const defaults = await run();
  t.equal(defaults.code, 0, defaults.err);
  t.match(
    defaults.out,
    /throttling: built-in default policies \(no .*policies\.toml\): 5 subscription, 4 application, 4 API, 0 custom policies; counters memory/,
  );
  fs.writeFileSync(path.join(dir, 'policies.toml'), '[[subscription]]\nname = "Gold"\nrequest_count = 5000\ntime_unit = "minutes"\n');
  const bad = await run();
  t.equal(bad.code, 1);
  t.match(bad.err, /policies\.toml:4: error POLICY_VALUE subscription\[0\]\.time_unit: "minutes" is not one of sec, min, hour, day/);
  t.match(bad.out, /policies\.toml: invalid: 1 error/);
});
