/**
 * The runtime view (docs/operations.md, "Runtime view"): `GET /status` on a whole node's management port,
 * under keep-alive load the test controls, so it can predict the pool's numbers; a backend that refuses;
 * the fault ring; the configuration's sources and secrets; who may read it; and `throughway status`
 * through the real binary.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { startNode } from '../../lib/node';
import { apiToml, closedPort, confDir, until } from '../gateway/helpers';

const root = path.join(__dirname, '..', '..', '..');
const DB_ENV = 'TW_STATUS_DB_PW';
const TOML = [
  '[server]',
  'hostname = "localhost"',
  '[super_admin]',
  'username = "admin"',
  'password = "admin-pw-1"',
  '[database.apim_db]',
  'type = "h2"',
  'username = "u"',
  `password = "$env{${DB_ENV}}"`,
  '',
].join('\n');

const basic = (user: string, pw: string): string => `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}`;

/** A backend whose /slow answers wait until the test releases them; /fast answers at once. */
async function slowBackend(): Promise<{ port: number; held: http.ServerResponse[]; close(): Promise<void> }> {
  const held: http.ServerResponse[] = [];
  const srv = http.createServer((req, res) => {
    if (req.url?.endsWith('/slow') === true) held.push(res);
    else res.end('fast');
  });
  srv.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    held,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

/** A raw keep-alive client connection: one request at a time, each answer read whole (Content-Length). */
class Client {
  private buf = '';
  private waiting: ((text: string) => void) | undefined;
  constructor(readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.buf += d;
      this.check();
    });
  }
  static open(port: number): Promise<Client> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new Client(s)));
      s.once('error', reject);
    });
  }
  private check(): void {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0 || this.waiting === undefined) return;
    const len = Number(/content-length:\s*(\d+)/i.exec(this.buf.slice(0, end))?.[1] ?? '0');
    if (this.buf.length < end + 4 + len) return;
    const text = this.buf.slice(0, end + 4 + len);
    this.buf = this.buf.slice(end + 4 + len);
    const w = this.waiting;
    this.waiting = undefined;
    w(text);
  }
  send(method: string, url: string): Promise<{ status: number; body: string }> {
    const p = new Promise<string>((resolve) => (this.waiting = resolve));
    this.socket.write(`${method} ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    return p.then((text) => ({ status: Number(text.slice(9, 12)), body: text.slice(text.indexOf('\r\n\r\n') + 4) }));
  }
}

async function getStatus(port: number, auth?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  const r = await fetch(`http://127.0.0.1:${port}/status`, auth !== undefined ? { headers: { Authorization: auth } } : {});
  const text = await r.text();
  return { status: r.status, headers: Object.fromEntries(r.headers), body: JSON.parse(text) };
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [path.join(root, 'dist', 'lib', 'cli.js'), ...args],
      { env: { ...process.env, ...env } },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
    // The tools read standard input to its end (a password may come that way): nothing comes here.
    child.stdin?.end();
  });
}

t.test('the runtime view: listeners, pools under held load, failures, faults, config sources, access, the CLI', async (t) => {
  const backend = await slowBackend();
  const down = await closedPort();
  const dir = confDir(TOML, {
    up: apiToml({
      name: 'Up',
      context: '/up',
      endpoint: `http://127.0.0.1:${backend.port}/b`,
      resources: [
        ['/slow', ['GET']],
        ['/fast', ['GET']],
      ],
    }),
    down: apiToml({ name: 'Down', context: '/down', endpoint: `http://127.0.0.1:${down}/b`, resources: [['/x', ['GET']]] }),
  });
  const file = path.join(dir, 'deployment.toml');
  const loaded = loadConfig({ file, env: { [DB_ENV]: 'db-secret-pw' } });
  t.ok(loaded.ok, 'configuration valid');
  const node = await startNode(loaded, { cwd: dir, ephemeralPorts: true, log: () => undefined, logSink: { write: () => true } });
  const gw = node.ports.gateway ?? 0;
  const mgmt = node.ports.management ?? 0;
  const clients: Client[] = [];
  t.teardown(async () => {
    for (const c of clients) c.socket.destroy();
    for (const r of backend.held) r.end();
    await node.close();
    await backend.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const admin = basic('admin', 'admin-pw-1');

  // Four keep-alive client connections, each with a call the backend holds: four backend connections, all in use.
  for (let i = 0; i < 4; i++) clients.push(await Client.open(gw));
  const slow = clients.map((c) => c.send('GET', '/up/1.0.0/slow'));
  t.ok(await until(() => backend.held.length === 4), 'the backend holds four calls');
  let s = await getStatus(mgmt, admin);
  t.equal(s.status, 200);
  t.equal(s.headers['cache-control'], 'no-store');
  const upKey = `127.0.0.1:${backend.port}`;
  t.match(
    s.body.pools.find((p: { endpoint: string }) => p.endpoint === upKey),
    { open: 4, idle: 0, inUse: 4, waiting: 0, failures: 0, lastError: null },
  );
  const listener = s.body.listeners.find((l: { name: string }) => l.name === 'gateway HTTP');
  t.match(
    listener,
    { address: '127.0.0.1', port: gw, protocol: 'http', connections: 4 },
    'the four client connections on the gateway listener',
  );
  t.ok(
    s.body.listeners.some((l: { name: string; port: number }) => l.name === 'management' && l.port === mgmt),
    'the management listener',
  );

  // Two released: their backend connections go idle, two stay in use; the clients stay connected.
  backend.held.shift()?.end('one');
  backend.held.shift()?.end('two');
  const answered = await Promise.race([Promise.all(slow.slice(0, 2)), new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000))]);
  t.same(
    answered?.map((a) => a.status),
    [200, 200],
  );
  s = await getStatus(mgmt, admin);
  t.match(
    s.body.pools.find((p: { endpoint: string }) => p.endpoint === upKey),
    { open: 4, idle: 2, inUse: 2, failures: 0 },
  );
  t.equal(s.body.listeners.find((l: { name: string }) => l.name === 'gateway HTTP').connections, 4, 'keep-alive: still four');

  // A backend that refuses, an unknown API, a method the resource does not take: three faults.
  const refused = await clients[0]?.send('GET', '/down/1.0.0/x');
  const unknown = await clients[1]?.send('GET', '/nothing/here?token=secret-in-query');
  const method = await clients[0]?.send('GET', '/up/1.0.0/nope');
  const codeOf = (r: { body: string } | undefined): number => (JSON.parse(r?.body ?? '{}') as { fault: { code: number } }).fault.code;
  t.equal(refused?.status, 502);
  t.equal(codeOf(refused), 101503, 'connect refused at state 0');
  s = await getStatus(mgmt, admin);
  const downPool = s.body.pools.find((p: { endpoint: string }) => p.endpoint === `127.0.0.1:${down}`);
  t.match(downPool, { failures: 1, lastError: { code: 101503, base: 101503, state: 0, reason: 'connect_refused' } });
  t.ok(Math.abs(Date.parse(downPool.lastError.at) - Date.now()) < 60_000, 'the last error has its time');
  const recent = s.body.faults.recent as { code: number; status: number; api: string | null; method: string; path: string; at: string }[];
  t.same(
    recent.map((f) => [f.code, f.status]),
    [
      [codeOf(method), method?.status],
      [codeOf(unknown), unknown?.status],
      [101503, 502],
    ],
    'the three faults, newest first, with their codes and statuses',
  );
  t.match(recent[2], { api: /Down/, method: 'GET', path: '/down/1.0.0/x' });
  t.match(recent[0], { api: /Up/ });
  t.equal(recent[1]?.api, null, 'no API for an unknown path');
  t.equal(recent[1]?.path, '/nothing/here', 'the query is not shown');
  t.equal(s.body.faults.total, 3);
  t.equal(s.body.faults.capacity, 100);
  t.equal(s.body.faults.byCode['101503'], 1);

  // The configuration: written keys name file:line, defaults say so, $env says env; secrets masked.
  const value = (key: string): { value: unknown; source: string; at?: string } =>
    s.body.config.values.find((v: { key: string }) => v.key === key);
  t.same(value('server.hostname'), { key: 'server.hostname', value: 'localhost', source: `${file}:2` });
  t.match(value('server.offset'), { source: 'default' });
  t.same(value('database.apim_db.password'), { key: 'database.apim_db.password', value: '****', source: '$env', at: `${file}:9` });
  t.match(value('super_admin.password'), { value: '****', source: `${file}:5` });
  const text = JSON.stringify(s.body);
  t.notOk(text.includes('db-secret-pw'), 'the environment secret is not shown');
  t.notOk(text.includes('admin-pw-1'), 'the admin password is not shown');
  t.notOk(text.includes('secret-in-query'), 'no query string');
  t.same(s.body.plugins, { count: 0, names: [], attachable: [] });
  t.equal(s.body.tenants.count, 0);

  // Who may read it: no credentials 401 with a challenge, a wrong password 401, a tenant admin 403.
  const none = await getStatus(mgmt);
  t.equal(none.status, 401);
  t.match(none.headers['www-authenticate'], /^Basic /);
  t.equal((await getStatus(mgmt, basic('admin', 'wrong'))).status, 401);
  const made = await fetch(`http://127.0.0.1:${mgmt}/admin/v1/tenants`, {
    method: 'POST',
    headers: { Authorization: admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' }),
  });
  t.equal(made.status, 201, 'a tenant');
  const boss = await getStatus(mgmt, basic('bossy@acme.test', 'acme-pw-1'));
  t.match(boss, { status: 403, body: { error: 'access_denied' } }, "a tenant's admin is refused");
  t.equal((await getStatus(mgmt, admin)).body.tenants.count, 1, 'the tenant counted');

  // `throughway status` through the real binary, with the password from the environment.
  const cli = await run(['status', '--url', `http://127.0.0.1:${mgmt}`], { THROUGHWAY_ADMIN_PASSWORD: 'admin-pw-1' });
  t.equal(cli.code, 0, cli.stderr);
  t.match(cli.stdout, new RegExp(`gateway HTTP\\s+127\\.0\\.0\\.1\\s+${gw}\\s+http\\s+4`), 'the listener line');
  t.match(
    cli.stdout,
    new RegExp(`127\\.0\\.0\\.1:${backend.port}\\s+4\\s+2\\s+2\\s+0\\s+\\d+\\s+0\\s+-`),
    'the pool line: open, idle, in use',
  );
  t.match(cli.stdout, new RegExp(`127\\.0\\.0\\.1:${down}\\s+0\\s+0\\s+0\\s+0\\s+\\d+\\s+1\\s+101503 connect_refused`), 'the refused pool');
  t.match(cli.stdout, /Faults: 3 since start/);
  t.match(cli.stdout, /by code: .*101503 x1/);
  t.match(cli.stdout, /database\.apim_db\.password = "\*\*\*\*"\s+# \$env at .*deployment\.toml:9/);
  t.match(cli.stdout, /Tenants: 1/);
  t.notOk(cli.stdout.includes('db-secret-pw'));
  const json = await run(['status', '--url', `http://127.0.0.1:${mgmt}`, '--json'], { THROUGHWAY_ADMIN_PASSWORD: 'admin-pw-1' });
  t.equal(json.code, 0);
  t.equal((JSON.parse(json.stdout) as { faults: { total: number } }).faults.total, 3, '--json prints the document');
  const refusedCli = await run(['status', '--url', `http://127.0.0.1:${mgmt}`], { THROUGHWAY_ADMIN_PASSWORD: 'wrong' });
  t.equal(refusedCli.code, 1);
  t.match(refusedCli.stderr, /throughway status: 401/);
});
