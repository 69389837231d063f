/**
 * An endpoint that points at the node's own management port (the admin API, the key manager, /oauth2/token)
 * is refused at deploy with API_SELF_ENDPOINT unless the endpoint sets allow_management_port = true:
 * otherwise every client of the gateway port reaches the management port from the node's own address.
 * A stand-in for the management port (a real server on the port the configuration names) counts what
 * reaches it.
 */
import * as http from 'node:http';
import t from 'tap';
import { BASE_TOML, apiToml, request, startGateway } from './helpers';

async function standIn(): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((q, s) => {
    hits.push(q.url ?? '');
    s.end('{"admin":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, hits, close: () => new Promise((r) => server.close(() => r())) };
}

t.test("an endpoint at the node's own management port is refused unless allow_management_port = true", async (t) => {
  const mgmt = await standIn();
  t.teardown(() => mgmt.close());
  // The management HTTP port of this configuration is the stand-in's; HTTPS keeps 9443.
  const toml = `${BASE_TOML}[transport.http.properties]\nport = ${mgmt.port}\n`;
  const self = (context: string, host: string): string =>
    apiToml({ context, endpoint: `http://${host}:${mgmt.port}/admin/v1`, resources: [['/*', ['GET']]] });
  const g = await startGateway(toml, {
    loop: self('/loop', '127.0.0.1'),
    named: self('/named', 'localhost'),
    mapped: self('/mapped', '[::ffff:127.0.0.1]'),
    https: apiToml({ context: '/tls', endpoint: 'https://127.0.0.2:9443/oauth2', resources: [['/*', ['GET']]] }),
  });
  t.teardown(() => g.close());
  const diags = g.gw
    .states()
    .flatMap((s) => s.diagnostics)
    .filter((d) => d.code === 'API_SELF_ENDPOINT');
  t.equal(diags.length, 4, 'each of them refused');
  t.match(
    diags[0]?.message,
    new RegExp(`points at this node's own management port (${mgmt.port}|9443): every client of the API would reach the admin API`),
  );
  t.match(diags[0]?.expected, /allow_management_port = true/);
  t.equal(g.gw.deployed().length, 0);
  for (const c of ['/loop', '/named', '/mapped']) t.equal((await request(g.port, `${c}/1.0.0/users`)).status, 404, `${c}: not routed`);
  t.same(mgmt.hits, [], 'nothing reached the management port');
});

t.test('allow_management_port = true deploys it; another port of loopback is not refused', async (t) => {
  const mgmt = await standIn();
  t.teardown(() => mgmt.close());
  const toml = `${BASE_TOML}[transport.http.properties]\nport = ${mgmt.port}\n`;
  const allowed = `name = "Self"\ncontext = "/self"\nversion = "1.0.0"\nauth = "none"\n[endpoints.production]\nurl = "http://127.0.0.1:${mgmt.port}/admin/v1"\nallow_management_port = true\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
  const g = await startGateway(toml, {
    self: allowed,
    other: apiToml({ context: '/other', endpoint: `http://127.0.0.1:${mgmt.port + 1}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(() => g.close());
  t.same(
    g.gw
      .states()
      .flatMap((s) => s.diagnostics)
      .filter((d) => d.level === 'error'),
    [],
  );
  t.equal(g.gw.deployed().length, 2);
  t.equal((await request(g.port, '/self/1.0.0/users')).status, 200);
  t.same(mgmt.hits, ['/admin/v1/users'], 'the allowed endpoint reaches it');
});
