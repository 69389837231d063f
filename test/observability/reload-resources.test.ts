/**
 * SIGHUP's reload (RunningNode.reload(), what the signal calls) beyond deployment.toml: the throttling
 * policies file is read again (a changed limit applies at once, a new policy name becomes usable by API
 * files, a broken file is refused and the running policies stay), and the HTTPS listener's certificates
 * are read again (new connections get the new certificate; an unreadable store is refused and the
 * listener keeps the one it has). The certificate watcher is off (ssl_profile_interval unset), so only
 * the reload can change them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { apiToml, echoBackend, request } from '../gateway/helpers';
import { makePki, tlsRequest } from '../tls/helpers';
import { NODE_TOML, startTestNode } from './node-helpers';

const policies = (limit: number, extra = ''): string =>
  `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[api]]\nname = "Lim"\nrequest_count = ${limit}\nunit_time = 1\ntime_unit = "day"\n${extra}`;

const code = (body: string): number => (JSON.parse(body) as { fault: { code: number } }).fault.code;

t.test('the policies file: a new limit applies, a new name deploys an API, a broken file is refused', async (t) => {
  const backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  const apis = {
    a: apiToml({ name: 'A', context: '/a', endpoint: ep, resources: [['/*', ['GET']]], extra: 'policy = "Lim"' }),
    b: apiToml({ name: 'B', context: '/b', endpoint: ep, resources: [['/*', ['GET']]], extra: 'policy = "Fresh"' }),
  };
  // A day-long window: the counts cannot roll over during the test.
  const n = await startTestNode(NODE_TOML, apis, { 'policies.toml': policies(2) });
  t.teardown(async () => {
    await n.close();
    await backend.close();
  });
  const statuses = async (p: string, k: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < k; i++) out.push((await request(n.gw, p)).status);
    return out;
  };
  t.same(await statuses('/a/1.0.0/x', 3), [200, 200, 429], 'limit 2');
  t.equal((await request(n.gw, '/b/1.0.0/x')).status, 404, 'B names a policy the file does not define: not deployed');

  const file = path.join(n.dir, 'policies.toml');
  fs.writeFileSync(file, policies(4, '[[api]]\nname = "Fresh"\nrequest_count = 1\nunit_time = 1\ntime_unit = "day"\n'));
  n.node.reload();
  t.match(n.out.join('\n'), /reloaded throttling policies from .*policies\.toml/);
  t.ok(n.lines.some((l) => l.event === 'throttle_policies_reloaded'));
  t.same(await statuses('/a/1.0.0/x', 3), [200, 200, 429], 'limit 4: the counts kept (2 used), two more pass');
  t.same(await statuses('/b/1.0.0/x', 2), [200, 429], 'B deployed with the new policy');

  fs.writeFileSync(file, '[[api]]\nname = "Lim"\nrequest_count = "lots"\n');
  n.node.reload();
  t.match(n.out.join('\n'), /throttling policies refused: \d+ error\(s\); the running policies stay/);
  t.ok(n.lines.some((l) => l.event === 'throttle_policies_reload_refused' && l.level === 'error'));
  const r = await request(n.gw, '/a/1.0.0/x');
  t.equal(r.status, 429);
  t.equal(code(r.body), 900800, 'the running limit of 4 still holds');
  t.equal((await request(n.gw, '/b/1.0.0/x')).status, 429, 'B still deployed');
});

t.test('the HTTPS listener certificates: replaced on reload, an unreadable store refused', async (t) => {
  const pki = makePki();
  t.teardown(() => pki.cleanup());
  // The listener's key store: the sample key pair's file (read when present), here issued by the test CA.
  const sample = path.join('var', 'security', 'throughway-sample.pem');
  const n = await startTestNode(NODE_TOML, {}, { [sample]: pki.server.keyPem + pki.server.certPem });
  t.teardown(() => n.close());
  const pem = path.join(n.dir, sample);
  const m = /gateway HTTPS\s+port (\d+)/.exec(n.out.join('\n'));
  const port = Number(m?.[1]);
  t.ok(port > 0, 'the HTTPS listener is up');
  t.equal((await tlsRequest(port, { ca: pki.ca.certPem })).peerCN, 'localhost');

  const { selfSigned } = await import('../../lib/tls/sample');
  const renewed = selfSigned('renewed.localhost', ['localhost', '127.0.0.1'], { issuer: pki.ca, bits: 2048 });
  fs.writeFileSync(pem, renewed.keyPem + renewed.certPem);
  t.equal((await tlsRequest(port, { ca: pki.ca.certPem })).peerCN, 'localhost', 'no watcher: unchanged until the reload');
  n.node.reload();
  t.ok(n.lines.some((l) => l.event === 'tls_certificates_reloaded'));
  t.equal((await tlsRequest(port, { ca: pki.ca.certPem })).peerCN, 'renewed.localhost', 'new connections get the new certificate');

  fs.writeFileSync(pem, 'not a key store');
  n.node.reload();
  t.match(n.out.join('\n'), /TLS certificates refused \(.+\); the running ones stay/);
  t.ok(n.lines.some((l) => l.event === 'tls_reload_failed'));
  t.equal((await tlsRequest(port, { ca: pki.ca.certPem })).peerCN, 'renewed.localhost', 'the listener keeps its certificate');
});
