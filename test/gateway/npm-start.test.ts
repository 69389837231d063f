/**
 * The README's quick start, run for real: `node dist/lib/cli.js start` (what `npm start` runs) in a child
 * process, on a temporary copy of conf/ with server.offset set so it never collides with a running
 * `npm start`. The curl lines it prints (and those in the README) work through the gateway against the
 * demo backend; SIGTERM ends it cleanly. The protected demo API's lines (a bearer token) are refused
 * without a token (900902) and work with one got as printed: apps create, keys generate, subscriptions add,
 * then the token endpoint.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { request, until } from './helpers';

const root = path.join(__dirname, '..', '..', '..');
const cli = path.join(root, 'dist', 'lib', 'cli.js');
const run = promisify(execFile);

/** The requests of `curl` lines: method, path and body (the forms the start-up output and README use). */
function parseCurl(line: string): { method: string; url: URL; body: string | undefined } {
  const url = new URL(/(http:\/\/\S+)/.exec(line)?.[1] ?? '');
  const method = /-X (\w+)/.exec(line)?.[1] ?? 'GET';
  const body = /-d '([^']*)'/.exec(line)?.[1];
  return { method, url, body };
}

t.test('npm start: gateway + demo backend, the printed curl lines work, SIGTERM exits 0', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-start-'));
  fs.cpSync(path.join(root, 'conf'), path.join(dir, 'conf'), { recursive: true });
  const offset = 15000 + (process.pid % 5000);
  const tomlPath = path.join(dir, 'conf', 'deployment.toml');
  const toml = fs.readFileSync(tomlPath, 'utf8');
  t.match(toml, /^offset = 0\b/m, 'the default configuration has an offset line to change');
  fs.writeFileSync(tomlPath, toml.replace(/^offset = 0\b/m, `offset = ${offset}`));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

  const child = spawn(process.execPath, [path.join(root, 'dist', 'lib', 'cli.js'), 'start'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  t.ok(await until(() => out.includes('Try:') && out.trimEnd().split('\n').pop()?.trim().startsWith('curl') === true, 10_000), `started:\n${out}\n${err}`);
  const port = 8280 + offset;
  t.match(out, new RegExp(`gateway HTTP\\s+port ${port}\\b`));
  t.match(out, new RegExp(`demo backend\\s+port ${9000 + offset}\\b`));
  t.match(out, /PizzaShack 1\.0\.0/);

  // The printed key manager lines: application, keys, subscription to the protected API, token.
  const commands = out.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('npm run -s throughway -- '));
  t.match(commands.join('\n'), /subscriptions add --app MyApp --api \/pizzashack-secured --api-version 1\.0\.0/);
  let keys = '';
  for (const c of commands) keys += (await run(process.execPath, [cli, ...c.slice('npm run -s throughway -- '.length).split(' ')], { cwd: dir })).stdout;
  const key = /consumer key\s+(\S+)/.exec(keys)?.[1] ?? '';
  const secret = /consumer secret\s+(\S+)/.exec(keys)?.[1] ?? '';
  const tokenUrl = /then: curl .*(http:\/\/\S+\/oauth2\/token)/.exec(out)?.[1] ?? '';
  const tr = await fetch(tokenUrl, { method: 'POST', headers: { Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
  t.equal(tr.status, 200, 'a token from the printed token line');
  const token = ((await tr.json()) as { access_token: string }).access_token;

  const printed = out.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('curl '));
  t.ok(printed.length >= 4, 'prints what to curl');
  const secured = printed.filter((l) => l.includes("-H 'Authorization: Bearer <access token>'"));
  t.ok(secured.length >= 2 && secured.every((l) => l.includes('/pizzashack-secured/1.0.0/')), 'the protected demo API, with a bearer token');
  for (const line of printed) {
    const c = parseCurl(line);
    t.equal(Number(c.url.port), port, `${line}: the gateway port with the offset`);
    const headers: Record<string, string> = c.body !== undefined ? { 'Content-Type': 'application/json' } : {};
    if (line.includes('Bearer <access token>')) {
      const no = await request(port, c.url.pathname + c.url.search, { method: c.method, body: c.body, headers });
      t.equal(no.status, 401, `${line} without a token -> 401`);
      t.match(no.body, /"code":900902/);
      t.equal(no.headers['www-authenticate'], 'Bearer realm="throughway"');
      headers.Authorization = `Bearer ${token}`;
    }
    const r = await request(port, c.url.pathname + c.url.search, { method: c.method, body: c.body, headers });
    t.ok(r.status === 200 || r.status === 201, `${line} -> ${r.status} ${r.body.slice(0, 80)}`);
  }

  // The README's quick start lines, against this gateway's port.
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const readmeCurls = readme.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('curl ') && l.includes('localhost:8280'));
  t.ok(readmeCurls.length >= 2, 'the README shows curl lines');
  t.ok(readmeCurls.some((l) => l.includes('/pizzashack-secured/')), 'among them the protected demo API');
  for (const line of readmeCurls) {
    const c = parseCurl(line);
    const headers: Record<string, string> = c.body !== undefined ? { 'Content-Type': 'application/json' } : {};
    if (line.includes('Bearer <access token>')) headers.Authorization = `Bearer ${token}`;
    const r = await request(port, c.url.pathname + c.url.search, { method: c.method, body: c.body, headers });
    t.ok(r.status === 200 || r.status === 201, `README: ${line} -> ${r.status}`);
  }
  const small = await request(port, '/pizzashack/1.0.0/small');
  t.equal(small.body.length, 96, 'the benchmark resource has its documented size');

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: clean exit');
  t.notMatch(err, /"level":"(error|fatal)"/, 'nothing logged as an error');
});
