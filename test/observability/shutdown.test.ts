/**
 * Lifecycle on a real process (`node dist/lib/cli.js start`): SIGHUP with a broken deployment.toml is
 * refused and the node keeps serving; SIGTERM under load loses no in-flight request: 20 calls (half of
 * them 64 KiB uploads) held by the backend when the signal arrives all complete with their full
 * responses, while the listener stops accepting, idle keep-alive connections are closed, /health turns
 * 503, and the process exits 0.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { apiToml, echoBackend, request, until } from '../gateway/helpers';
import { NODE_TOML } from './node-helpers';
import { freeOffset } from '../ports';

const root = path.join(__dirname, '..', '..', '..');
const CALLS = 20;

t.test('SIGHUP refuses a broken configuration; SIGTERM under load loses no in-flight request', async (t) => {
  const held: { res: http.ServerResponse; body: string }[] = [];
  const backend = await echoBackend((req, res, body) => {
    if (!(req.url ?? '').includes('hold')) return false;
    held.push({ res, body });
    return true;
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-shutdown-'));
  const offset = await freeOffset();
  const toml = `${NODE_TOML.replace('[server]\n', `[server]\noffset = ${offset}\n`)}[server_health_check]\nenable = true\n`;
  fs.writeFileSync(path.join(dir, 'deployment.toml'), toml);
  fs.mkdirSync(path.join(dir, 'apis'));
  fs.writeFileSync(
    path.join(dir, 'apis', 'a.toml'),
    apiToml({ name: 'A', context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/*', ['GET', 'POST']]] }),
  );
  const child = spawn(process.execPath, [path.join(root, 'dist', 'lib', 'cli.js'), 'start', '--config', 'deployment.toml'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    for (const h of held) if (!h.res.writableEnded) h.res.end();
    await backend.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const gw = 8280 + offset;
  const mgmt = 9763 + offset;
  t.ok(await until(() => out.includes('APIs: 1 deployed') || child.exitCode !== null, 15_000), `started:\n${out}\n${err}`);
  t.match(out, /role default/, 'start-up names the role');
  t.match(out, new RegExp(`gateway HTTP\\s+port ${gw}\\b`), 'and the effective ports');
  t.match(out, new RegExp(`operations\\s+port ${mgmt}: /health/live, /health/ready, /health, /metrics`));
  t.equal((await request(gw, '/a/1.0.0/x')).status, 200);

  // SIGHUP with a broken file: refused, still serving; then the file is put back.
  fs.writeFileSync(path.join(dir, 'deployment.toml'), `${toml}[throughway]\nlog_level = "loud"\n`);
  child.kill('SIGHUP');
  t.ok(await until(() => out.includes('reload refused'), 5000), 'the reload is refused');
  t.match(
    err,
    /"message":"deployment\.toml:\d+:\d+: error CONFIG_ALLOWED throughway\.log_level[^\n]*"event":"config_reload_error"/,
    'the error is logged with file and line',
  );
  t.equal((await request(gw, '/a/1.0.0/x')).status, 200, 'the node still serves');
  fs.writeFileSync(path.join(dir, 'deployment.toml'), toml);
  child.kill('SIGHUP');
  t.ok(await until(() => out.includes('reloaded: 1 API(s) deployed'), 5000), 'a valid file reloads');

  // An idle keep-alive client, then load held by the backend.
  const idle = net.connect(gw, '127.0.0.1');
  let idleData = '';
  idle.on('data', (c: Buffer) => (idleData += c.toString('latin1')));
  const idleClosed = new Promise<void>((resolve) => idle.on('close', () => resolve()));
  idle.write('GET /a/1.0.0/x HTTP/1.1\r\nHost: x\r\n\r\n');
  t.ok(await until(() => idleData.includes('"url"')), 'the keep-alive client got its response');
  const upload = 'u'.repeat(64 * 1024);
  const calls = Array.from({ length: CALLS }, (_, i) =>
    i % 2 === 0
      ? request(gw, `/a/1.0.0/hold/${i}`)
      : request(gw, `/a/1.0.0/hold/${i}`, { method: 'POST', body: upload, headers: { 'Content-Type': 'text/plain' } }),
  );
  t.ok(await until(() => held.length === CALLS, 10_000), `the backend holds all ${CALLS} calls (${held.length})`);

  child.kill('SIGTERM');
  t.ok(await until(() => err.includes('"event":"shutdown_started"'), 5000), 'shutdown started');
  t.match(out, /SIGTERM: stopping \(in-flight calls get up to 30000 ms\)/);
  await idleClosed;
  t.pass('the idle keep-alive connection is closed');
  const refused = await new Promise<string>((resolve) => {
    const c = net.connect(gw, '127.0.0.1');
    c.on('connect', () => {
      c.destroy();
      resolve('connected');
    });
    c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
  t.equal(refused, 'ECONNREFUSED', 'no new connection is accepted');
  const health = await fetch(`http://127.0.0.1:${mgmt}/health`);
  t.equal(health.status, 503, '/health is DOWN while draining');
  t.same(((await health.json()) as { failing: string[] }).failing, ['shutdown']);
  const ready = await fetch(`http://127.0.0.1:${mgmt}/health/ready`);
  t.equal(ready.status, 503, '/health/ready is DOWN while draining');
  t.same(((await ready.json()) as { failing: string[] }).failing, ['shutdown']);
  t.equal((await fetch(`http://127.0.0.1:${mgmt}/health/live`)).status, 200, 'and /health/live still answers');
  t.equal(child.exitCode, null, 'still running: calls are in flight');

  for (const h of held) h.res.end(`done ${h.body.length}`);
  const results = await Promise.all(calls);
  t.same(
    results.map((r) => r.status),
    Array(CALLS).fill(200),
    'every in-flight call answered 200',
  );
  t.same(
    results.map((r) => r.body),
    results.map((_, i) => `done ${i % 2 === 0 ? 0 : upload.length}`),
    'with its full response (uploads arrived whole)',
  );
  t.equal(await exited, 0, 'then the process exits 0');
  t.match(err, /"event":"shutdown_complete"/);
  t.notMatch(err, /"level":"(error|fatal)".*"event":"(?!config_reload_error|config_reload_refused)/, 'no other error logged');
});
