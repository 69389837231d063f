/**
 * The README's quick start, run for real: `node dist/lib/cli.js start` (what `npm start` runs) in a child
 * process, on a temporary copy of conf/ with server.offset set so it never collides with a running
 * `npm start`. The curl lines it prints (and those in the README) work through the gateway against the
 * demo backend; SIGTERM ends it cleanly.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { request, until } from './helpers';

const root = path.join(__dirname, '..', '..', '..');

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

  const printed = out.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('curl '));
  t.ok(printed.length >= 3, 'prints what to curl');
  for (const line of printed) {
    const c = parseCurl(line);
    t.equal(Number(c.url.port), port, `${line}: the gateway port with the offset`);
    const r = await request(port, c.url.pathname + c.url.search, { method: c.method, body: c.body, headers: c.body !== undefined ? { 'Content-Type': 'application/json' } : {} });
    t.ok(r.status === 200 || r.status === 201, `${line} -> ${r.status} ${r.body.slice(0, 80)}`);
  }

  // The README's quick start lines, against this gateway's port.
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const readmeCurls = readme.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('curl ') && l.includes('localhost:8280'));
  t.ok(readmeCurls.length >= 2, 'the README shows curl lines');
  for (const line of readmeCurls) {
    const c = parseCurl(line);
    const r = await request(port, c.url.pathname + c.url.search, { method: c.method, body: c.body, headers: c.body !== undefined ? { 'Content-Type': 'application/json' } : {} });
    t.ok(r.status === 200 || r.status === 201, `README: ${line} -> ${r.status}`);
  }
  const small = await request(port, '/pizzashack/1.0.0/small');
  t.equal(small.body.length, 96, 'the benchmark resource has its documented size');

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: clean exit');
  t.notMatch(err, /"level":"(error|fatal)"/, 'nothing logged as an error');
});
