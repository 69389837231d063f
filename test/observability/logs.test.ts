/**
 * Structured logs (pino behind the Logger interface): the line format; levels from
 * `[throughway] log_level`; every fault logged once with code, base, state and request id; and no secret
 * in any log line after a run whose requests carry tokens, client secrets and passwords (in query
 * strings, Authorization fields, form bodies), with the access log written to the server log.
 */
import t from 'tap';
import { createLogger, redactUrl } from '../../lib/log';
import { apiToml, closedPort, echoBackend, request } from '../gateway/helpers';
import { adminAuth, appWithKeys, basic, json, postForm, type Harness } from '../keymanager/helpers';
import { NODE_TOML, startTestNode } from './node-helpers';

t.test('line format: level name, ISO time, event, fields; credential fields masked', async (t) => {
  const lines: string[] = [];
  const log = createLogger('info', { write: (l: string) => lines.push(l) });
  log.log('info', 'hello', { a: 1, nested: { password: 'p1' }, client_secret: 'cs1', event: 'inner' });
  log.log('debug', 'hidden');
  t.equal(lines.length, 1, 'below the level: nothing written');
  t.ok(lines[0]?.endsWith('\n'));
  const o = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  t.equal(o.level, 'info');
  t.match(String(o.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal(o.event, 'hello', 'the event name is never overwritten by a field');
  t.equal(o.event_field, 'inner');
  t.equal(o.a, 1);
  t.same(o.nested, { password: '****' });
  t.equal(o.client_secret, '****');
  t.equal(log.enabled('debug'), false);
  log.setLevel('debug');
  t.equal(log.enabled('debug'), true, 'the level changes at run time (SIGHUP)');
  t.equal(log.level, 'debug');
});

t.test('redactUrl masks credential-like query parameters only', async (t) => {
  t.equal(redactUrl('/a/b'), '/a/b');
  t.equal(redactUrl('/a?x=1&access_token=abc&y=2'), '/a?x=1&access_token=****&y=2');
  t.equal(redactUrl('/a?CLIENT_SECRET=s&password=p&code=c'), '/a?CLIENT_SECRET=****&password=****&code=****');
  t.equal(redactUrl('/a?access%5Ftoken=abc'), '/a?access%5Ftoken=****', 'percent-encoded names too');
  t.equal(redactUrl('/a?tokenish=1&flag'), '/a?tokenish=1&flag');
});

t.test('no secret in any log line; every fault logged once with code, base, state and request id', async (t) => {
  const backend = await echoBackend();
  const dead = await closedPort();
  const toml = `${NODE_TOML}[throughway]\nlog_level = "trace"\n[http_access_log]\nenabled = true\nuseLogger = true\n`;
  const n = await startTestNode(toml, {
    a: apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET', 'POST']]] }),
    d: apiToml({ name: 'D', context: '/d', endpoint: `http://127.0.0.1:${dead}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(async () => {
    await n.close();
    await backend.close();
  });
  const secrets: Record<string, string> = {
    'query access token': 'SECRET-query-access-token-1',
    'query client secret': 'SECRET-query-client-secret-2',
    'query password': 'SECRET-query-password-3',
    'bearer token': 'SECRET-bearer-4',
    'basic credentials': 'SECRET-basic-pw-5',
    'api key': 'SECRET-apikey-6',
  };
  const q = `access_token=${secrets['query access token']}&client_secret=${secrets['query client secret']}&password=${secrets['query password']}`;
  const headers = { Authorization: `Bearer ${secrets['bearer token']}`, apikey: secrets['api key'] as string };
  t.equal((await request(n.gw, `/a/1.0.0/x?${q}`, { headers })).status, 200);
  t.equal(
    (
      await request(n.gw, `/a/1.0.0/x?${q}`, {
        method: 'POST',
        body: q,
        headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' },
      })
    ).status,
    200,
  );
  t.equal(
    (
      await request(n.gw, `/nope/1.0.0/x?${q}`, {
        headers: { Authorization: `Basic ${Buffer.from(`u:${secrets['basic credentials']}`).toString('base64')}` },
      })
    ).status,
    404,
  );
  t.equal((await request(n.gw, `/d/1.0.0/x?${q}`, { headers })).status, 502);
  t.equal((await request(n.gw, `/a/1.0.0/x?${q}`, { method: 'DELETE', headers })).status, 405);

  // The key manager on the same node: client secret, password grant, tokens.
  const h = { url: `http://127.0.0.1:${n.mgmt}` } as Harness;
  const { key, secret } = await appWithKeys(h);
  secrets['client secret'] = secret;
  const userPassword = 'SECRET-user-pw-7';
  secrets['user password'] = userPassword;
  t.equal((await json('POST', `${h.url}/admin/v1/users`, { username: 'frank', password: userPassword }, adminAuth())).status, 201);
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'frank', password: userPassword },
    basic(key, secret),
  );
  t.equal(tok.status, 200);
  secrets['access token'] = String(tok.body.access_token);
  secrets['refresh token'] = String(tok.body.refresh_token);
  await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, 'SECRET-wrong-client-secret-8'));
  secrets['wrong client secret'] = 'SECRET-wrong-client-secret-8';
  secrets['admin password'] = 'admin-pw-1';
  // A token used at the gateway and in a query string.
  t.equal(
    (
      await request(n.gw, `/a/1.0.0/y?access_token=${secrets['access token']}`, {
        headers: { Authorization: `Bearer ${secrets['access token']}` },
      })
    ).status,
    200,
  );
  await n.node.close();

  t.ok(n.raw.length > 10, `lines were written (${n.raw.length})`);
  t.ok(
    n.raw.some((l) => l.includes('"event":"http_access"')),
    'access log lines are in the server log',
  );
  t.ok(
    n.raw.some((l) => l.includes('access_token=****')),
    'masked, not dropped',
  );
  for (const [name, s] of Object.entries(secrets)) {
    const bad = n.raw.filter((l) => l.includes(s));
    t.same(bad, [], `no ${name} in any log line`);
  }

  const faults = n.lines.filter((l) => l.event === 'transport_fault' || l.event === 'gateway_fault');
  t.same(
    faults.map((l) => [l.event, l.code]).sort(),
    [
      ['gateway_fault', 103005],
      ['gateway_fault', 103006],
      ['transport_fault', 101503],
    ].sort(),
    'each fault once: no API, method not allowed, connection refused',
  );
  for (const f of faults) {
    t.ok(
      typeof f.code === 'number' && typeof f.base === 'number' && 'state' in f,
      `${String(f.event)} ${String(f.code)}: code, base, state`,
    );
    t.match(String(f.requestId), /^\d+\.\d+$/, 'request id: connection.request');
  }
  const tf = faults.find((f) => f.event === 'transport_fault');
  t.same([tf?.base, tf?.state, tf?.stateName], [101503, 0, 'REQUEST_READY']);
  const gf = faults.find((f) => f.code === 103005);
  t.same([gf?.base, gf?.state, gf?.status], [103005, null, 404], 'gateway codes carry no protocol state');
});

t.test('the level comes from [throughway] log_level', async (t) => {
  const n = await startTestNode(`${NODE_TOML}[throughway]\nlog_level = "warn"\n`);
  t.teardown(() => n.close());
  t.equal((await request(n.gw, '/nope')).status, 404);
  t.ok(
    n.lines.length === 0 || n.lines.every((l) => l.level === 'warn' || l.level === 'error' || l.level === 'fatal'),
    'nothing below warn',
  );
  t.notOk(
    n.lines.some((l) => l.event === 'gateway_fault'),
    'a 404 is logged at info: not written',
  );
});
