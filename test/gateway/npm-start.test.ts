/**
 * The README's quick start, run for real: `node dist/lib/cli.js start` (what `npm start` runs) in a child
 * process, on a temporary copy of conf/ with server.offset set so it never collides with a running
 * `npm start`. The curl lines it prints (and those in the README) work through the gateway against the
 * demo backend; SIGTERM ends it cleanly. The protected demo API's lines (a bearer token) are refused
 * without a token (900902) and work with one got as printed: apps create, keys generate, subscriptions add,
 * then the token endpoint. Every command of the README's quick start and of docs/quickstart.md runs too
 * (doc-commands.ts), so neither page can drift from what the node does.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { request, until } from './helpers';
import { runDocCommand, shCommands, type DocCommand, type DocRun } from './doc-commands';
import { SHIPPED_TOML, startConfCopy } from '../conf-node';

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
  t.match(fs.readFileSync(SHIPPED_TOML, 'utf8'), /^offset = 0\b/m, 'the default configuration has an offset line to change');
  const node = await startConfCopy(t, 'throughway-start-');
  const { dir, offset, child, exited } = node;

  t.ok(
    await until(() => node.out.includes('Try:') && node.out.trimEnd().split('\n').pop()?.trim().startsWith('curl') === true, 120_000),
    `started:\n${node.out}\n${node.err}`,
  );
  const port = 8280 + offset;
  t.match(node.out, new RegExp(`gateway HTTP\\s+port ${port}\\b`));
  t.match(node.out, new RegExp(`demo backend\\s+port ${9000 + offset}\\b`));
  t.match(node.out, /PizzaShack 1\.0\.0/);

  // The printed key manager lines: application, keys, subscription to the protected API, token.
  const commands = node.out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('npm run -s throughway -- '));
  t.match(commands.join('\n'), /subscriptions add --app MyApp --api \/pizzashack-secured --api-version 1\.0\.0/);
  let keys = '';
  for (const c of commands)
    keys += (await run(process.execPath, [cli, ...c.slice('npm run -s throughway -- '.length).split(' ')], { cwd: dir })).stdout;
  const key = /consumer key\s+(\S+)/.exec(keys)?.[1] ?? '';
  const secret = /consumer secret\s+(\S+)/.exec(keys)?.[1] ?? '';
  const tokenUrl = /then: curl .*(http:\/\/\S+\/oauth2\/token)/.exec(node.out)?.[1] ?? '';
  const tr = await fetch(tokenUrl, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  t.equal(tr.status, 200, 'a token from the printed token line');
  const token = ((await tr.json()) as { access_token: string }).access_token;

  const printed = node.out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('curl '));
  t.ok(printed.length >= 4, 'prints what to curl');
  const secured = printed.filter((l) => l.includes("-H 'Authorization: Bearer <access token>'"));
  t.ok(
    secured.length >= 2 && secured.every((l) => l.includes('/pizzashack-secured/1.0.0/')),
    'the protected demo API, with a bearer token',
  );
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

  // The README's quick start and docs/quickstart.md, every command of their sh blocks, against this node.
  // Each page creates its own application (MyApp renamed), as the printed lines above already made MyApp.
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const readmeCurls = readme
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('curl ') && l.includes('localhost:8280'));
  t.ok(readmeCurls.length >= 2, 'the README shows curl lines');
  t.ok(
    readmeCurls.some((l) => l.includes('/pizzashack-secured/')),
    'among them the protected demo API',
  );
  // The start-up output the README shows is what the node prints (ports moved by the offset, the paths
  // relative to the working directory); lines with "..." are shortened there.
  const shown = readme.slice(readme.indexOf('It prints its ports'));
  const block = shown.slice(shown.indexOf('```\n') + 4, shown.indexOf('\n```', shown.indexOf('```\n') + 4));
  const real = fs.realpathSync(dir);
  const printedLines = new Set(node.out.split('\n').map((l) => l.split(`${real}/`).join('').split(`${dir}/`).join('').trim()));
  const readmeOut = block.split('\n').filter((l) => !l.includes('...'));
  t.ok(readmeOut.length >= 15, 'the README shows the start-up output');
  for (const l of readmeOut) {
    const moved = l
      .trim()
      .replace(/offset 0$/, `offset ${offset}`)
      .replace(/\bport (\d+)/g, (_m, p: string) => `port ${Number(p) + offset}`)
      .replace(/localhost:(\d+)/g, (_m, p: string) => `localhost:${Number(p) + offset}`);
    t.ok(printedLines.has(moved), `README start-up line printed: ${l.trim()}`);
  }
  const pages: [string, DocCommand[], string][] = [
    ['README.md', shCommands(readme, '## Quick start', '## Commands'), 'ReadmeApp'],
    ['docs/quickstart.md', shCommands(fs.readFileSync(path.join(root, 'docs', 'quickstart.md'), 'utf8')), 'QuickstartApp'],
  ];
  // Run otherwise (npm start is the child above) or not at all (npm install, and npm test: this suite).
  const notRun = new Set(['npm install', 'npm start', 'npm test']);
  for (const [page, commands, app] of pages) {
    t.ok(commands.length >= 8, `${page}: its commands (${commands.length})`);
    const r: DocRun = { cwd: dir, offset, values: new Map() };
    const kinds = new Set<string>();
    for (const c of commands) {
      if (notRun.has(c.line)) continue;
      const res = await runDocCommand({ line: c.line.replace(/\bMyApp\b/g, app), status: c.status }, r);
      kinds.add(res.kind);
      if (res.kind === 'curl') {
        if (c.status !== undefined) t.equal(res.status, c.status, `${page}: ${c.line} -> ${c.status}`);
        else t.ok(res.status === 200 || res.status === 201, `${page}: ${c.line} -> ${res.status} ${res.output.slice(0, 80)}`);
        if (c.line.includes('pizzashack-secured') && c.status === 401) t.match(res.output, /"code":900902/, `${page}: no token, 900902`);
        if (c.line.includes('/pasta')) t.match(res.output, /"code":900906/, `${page}: no such resource, 900906`);
        if (c.line.includes('/no-such-api/')) t.match(res.output, /"code":103005/, `${page}: no such API, 103005`);
      } else if (res.kind === 'autocannon') {
        t.equal(res.ok2xx, 20, `${page}: autocannon's requests answered 2xx`);
        t.equal(res.non2xx, 0, `${page}: no errors or other statuses`);
      } else t.pass(`${page}: ${c.line}`);
    }
    t.ok(r.values.has('access token'), `${page}: a token got with the page's own keys`);
    t.same([...kinds].sort(), ['autocannon', 'cli', 'curl'], `${page}: curl, CLI and autocannon lines all ran`);
  }
  const small = await request(port, '/pizzashack/1.0.0/small');
  t.equal(small.body.length, 96, 'the benchmark resource has its documented size');

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: clean exit');
  t.notMatch(node.err, /"level":"(error|fatal)"/, 'nothing logged as an error');
});
