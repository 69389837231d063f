/**
 * bench/start-node.ts, the deployed node of the peers comparison and of `--instructions --node`: its
 * configuration passes `config check` as a starting node reads it, and the node it starts (`throughway
 * start`, a real process on real sockets) answers the peers' three requests under the API's context and
 * version by proxying them to the backend, on 127.0.0.1 only, and refuses a prefix that is no
 * /context/version.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { apiPrefix, apiToml, deploymentToml } from '../../bench/start-node';
import { loadConfig } from '../../lib/config/load';
import { freeLowPort } from '../helpers/backend';

const SCRIPT = path.join(__dirname, '..', '..', 'bench', 'start-node.js');

t.test('apiPrefix: /context/version, or why not', async (t) => {
  t.same(apiPrefix('/bench/1.0.0'), { context: '/bench', version: '1.0.0' });
  t.same(apiPrefix('/a/b/v2/'), { context: '/a/b', version: 'v2' });
  for (const bad of ['', '/bench', 'bench/1.0.0', '/bench/1.0.0/x y', '/"x"/1']) t.type(apiPrefix(bad), 'string', JSON.stringify(bad));
});

t.test('the written configuration is valid as a starting node reads it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-start-node-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'conf', 'apis'), { recursive: true });
  const file = path.join(dir, 'conf', 'deployment.toml');
  fs.writeFileSync(file, deploymentToml(18_280, 'a-long-random-password'));
  fs.writeFileSync(path.join(dir, 'conf', 'apis', 'bench.toml'), apiToml('/bench', '1.0.0', 'http://127.0.0.1:8100'));
  const r = loadConfig({ file, startChecks: true });
  t.ok(r.ok, r.diagnostics.map((d) => `${d.code} ${d.message}`).join('; '));
  t.equal(r.config.server.server_role, 'default');
  t.equal(r.config.transport.passthru_http.listener['bind-address'], '127.0.0.1');
  t.equal(r.config.throughway.demo.enable, false, 'no demo backend');
});

t.test("the node answers the peers' requests through the API, on 127.0.0.1 only", async (t) => {
  const seen: string[] = [];
  const backend = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    let n = 0;
    req.on('data', (d: Buffer) => (n += d.length));
    req.on('end', () =>
      res.end(req.method === 'POST' ? `{"bytes":${n}}` : req.url === '/64k' ? Buffer.alloc(65_536, 0x61) : '{"ok":true}'),
    );
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  t.teardown(() => backend.close());
  const upstream = `http://127.0.0.1:${(backend.address() as { port: number }).port}`;
  const port = await freeLowPort();
  const child = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, PORT: String(port), UPSTREAM: upstream, EXTRA_PREFIX: '/peers/2.0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => {
    child.kill('SIGTERM');
  });
  const deadline = Date.now() + 120_000;
  while (!out.includes('throughway node (deployed, one open API)')) {
    if (Date.now() > deadline || child.exitCode !== null) t.fail(`the node did not start: ${out.slice(-2000)}`);
    if (Date.now() > deadline || child.exitCode !== null) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ask = (method: string, p: string, body?: Buffer): Promise<{ status: number; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path: p, agent: false }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const small = await ask('GET', '/peers/2.0/small');
  t.equal(small.status, 200);
  t.equal(small.body.toString(), '{"ok":true}');
  const big = await ask('GET', '/peers/2.0/64k');
  t.equal(big.status, 200);
  t.equal(big.body.length, 65_536);
  const up = await ask('POST', '/peers/2.0/upload', Buffer.alloc(100_000, 0x62));
  t.equal(up.status, 200);
  t.equal(up.body.toString(), '{"bytes":100000}');
  t.same(seen, ['GET /small', 'GET /64k', 'POST /upload'], "the backend got the paths without the API's context and version");
  t.equal((await ask('GET', '/small')).status, 404, "outside the API: the gateway's own answer, not the backend");
  const ss = spawnSync('ss', ['-Hltn', `sport = :${port}`], { encoding: 'utf8' });
  if (ss.status === 0)
    t.same(
      ss.stdout
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/)[3]),
      [`127.0.0.1:${port}`],
      'listens on the loopback address only',
    );
  else t.comment(`ss not usable (${ss.stderr.trim()}): the listening address not checked`);
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM stops the node');
  t.notMatch(out, /"level":"(error|fatal)"/, 'no error lines');
});

t.test('a prefix that is no /context/version stops the script', async (t) => {
  const r = spawnSync(process.execPath, [SCRIPT], {
    env: { ...process.env, PORT: '1', EXTRA_PREFIX: '/nope' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(r.status, 2);
  t.match(r.stderr, 'EXTRA_PREFIX must be /context/version');
});
