/**
 * The declarative sync as a tenant's admin (docs/sync.md), through the binary (`node dist/lib/cli.js`):
 * dump writes that tenant's users, applications, subscriptions and blocking conditions (no tenants, the
 * super admin's routes); diff and apply skip a file's tenants, say so, and make the rest (a blocking
 * condition as the tenant's own, the super tenant's left alone); an application
 * whose creation waits for approval is reported pending. Then the client's refusals: a bad --url, a node
 * that cannot be reached, an answer that is not JSON, an answer past MAX_ANSWER (reading stops there),
 * and a file past MAX_STATE_FILE.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { main } from '../../lib/cli';
import { basic, freePort, json, startKeyManager } from '../keymanager/helpers';

const CLI = path.resolve(__dirname, '..', '..', 'lib', 'cli.js');
interface Run {
  code: number;
  out: string;
  err: string;
}

/** The binary, asynchronously (the node under test answers from this process). */
function binary(args: string[], cwd: string, env: Record<string, string>, stdin: 'ended' | 'open' = 'ended'): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 },
      (error, out, err) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out, err }),
    );
    // Standard input is the password's other source: given empty, or left an open pipe (the password then
    // comes from the environment, and the tool must not wait for its input to end).
    if (stdin === 'ended') child.stdin?.end();
  });
}

async function cli(argv: string[], cwd: string): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    out: (s) => (out += s),
    err: (s) => (err += s),
    cwd,
    env: { THROUGHWAY_ADMIN_PASSWORD: 'pw' },
    stdin: () => Promise.resolve(''),
  });
  return { code, out, err };
}

t.test('dump, diff and apply as a tenant admin, through the binary', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  const acme = basic('bossy@acme.test', 'acme-pw-1');
  const ok = async (method: string, route: string, body: unknown, auth: string): Promise<void> => {
    const r = await json(method, `${A}${route}`, body, auth);
    if (r.status >= 300) throw new Error(`${method} ${route}: ${r.text}`);
  };
  await ok('POST', '/users', { username: 'janey', password: 'janey-pw-1', roles: ['subscriber'] }, acme);
  await ok('POST', '/applications', { name: 'AcmeApp', owner: 'janey' }, acme);
  await ok('POST', '/subscriptions', { application: 'AcmeApp', api: '/t/acme.test/pizza', version: '1.0.0' }, acme);
  // The super tenant's rows, which the tenant admin must not see.
  await ok('POST', '/applications', { name: 'SuperApp' }, basic('admin', 'admin-pw-1'));
  await ok('POST', '/blocking-conditions', { type: 'IP', value: '10.9.9.9' }, basic('admin', 'admin-pw-1'));
  const env = { THROUGHWAY_ADMIN_USER: 'bossy@acme.test', THROUGHWAY_ADMIN_PASSWORD: 'acme-pw-1', THROUGHWAY_SYNC_PASSWORD: 'new-pw-12' };

  const dump = await binary(['dump', '--url', h.url], h.dir, env, 'open');
  t.equal(dump.code, 0, `dump with the password in the environment and standard input an open pipe: ${dump.err}`);
  t.match(dump.out, /^tenants: \[\]$/m);
  t.match(dump.out, /^blockingConditions: \[\]$/m);
  t.match(dump.out, /username: janey@acme\.test/);
  t.match(dump.out, /name: AcmeApp\n\s+owner: janey@acme\.test/);
  t.match(dump.out, /api: \/t\/acme\.test\/pizza/);
  t.notMatch(dump.out, /SuperApp|10\.9\.9\.9/);

  // The file names a tenant (skipped), one user more (made) and a blocking condition (acme.test's own).
  const file = path.join(h.dir, 'acme.yaml');
  fs.writeFileSync(
    file,
    dump.out
      .replace('tenants: []', 'tenants:\n  - domain: other.test\n    admin: chief\n    package: ""\n    active: true')
      .replace(/^users:\n/m, 'users:\n  - username: kenny@acme.test\n    roles:\n      - subscriber\n')
      .replace('blockingConditions: []', 'blockingConditions:\n  - type: IP\n    value: 10.8.8.8\n    invert: false'),
  );
  const diff = await binary(['diff', file, '--url', h.url], h.dir, env);
  t.equal(diff.code, 3, diff.err);
  t.match(diff.err, /^skipped: tenants of .*acme\.yaml \(bossy@acme\.test may not read them/m);
  t.match(diff.out, /\+ users kenny@acme\.test/);
  t.match(diff.out, /\+ blockingConditions IP 10\.8\.8\.8/);
  t.notMatch(diff.out, /other\.test/);
  t.match(diff.out, /^2 changes$/m);

  // An application made while creations wait for approval is reported pending.
  t.equal((await json('PUT', `${A}/workflow-executors/AM_APPLICATION_CREATION`, { executor: 'approval' }, acme)).status, 200);
  const withApp = fs
    .readFileSync(file, 'utf8')
    .replace(
      /^applications:\n/m,
      'applications:\n  - name: Waiting\n    owner: janey@acme.test\n    tier: Unlimited\n    description: ""\n    keys: []\n',
    );
  fs.writeFileSync(file, withApp);
  const applied = await binary(['apply', file, '--url', h.url], h.dir, env);
  t.equal(applied.code, 0, applied.err);
  t.match(applied.out, /\+ users kenny@acme\.test/);
  t.match(applied.out, /\+ applications Waiting of janey@acme\.test.*: pending approval \(task \S+\)/);
  t.ok(await h.store.getUser('kenny@acme.test'), 'the user is made, in the tenant');
  t.equal(await h.store.getTenant('other.test'), undefined, 'no tenant made');
  t.same(
    (await h.store.listBlockingConditions()).map((b) => `${b.tenant} ${b.value}`),
    ['carbon.super 10.9.9.9', 'acme.test 10.8.8.8'],
    "the file's condition is acme.test's; the super tenant's is left alone",
  );
});

t.test('the client refuses a bad URL, an unreachable node, an answer that is not JSON or too long, a file too long', async (t) => {
  const dir = t.testdir();
  t.match(await cli(['dump', '--url', 'ftp://node.example'], dir), { code: 1, err: /--url must be http:\/\/ or https:\/\/, not ftp:/ });
  t.match(await cli(['dump', '--url', 'not a url'], dir), { code: 1, err: /--url "not a url" is not a URL/ });
  const closed = await freePort();
  t.match(await cli(['dump', '--url', `http://127.0.0.1:${closed}`], dir), {
    code: 1,
    err: new RegExp(`GET http://127\\.0\\.0\\.1:${closed}/admin/v1/tenants: .*ECONNREFUSED`),
  });

  let written = 0;
  let hugeClosed: (early: boolean) => void = () => undefined;
  const closedEarly = new Promise<boolean>((r) => (hugeClosed = r));
  let huge = false;
  const server = http.createServer((req, res) => {
    if (!huge) {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<html>a login page</html>');
      return;
    }
    // An answer that never ends: the client must stop reading past its bound.
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const pump = (): void => {
      while (!res.destroyed && written < 64 * 1024 * 1024) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    res.on('close', () => hugeClosed(written < 64 * 1024 * 1024));
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.match(await cli(['dump', '--url', url], dir), { code: 1, err: /GET \/admin\/v1\/tenants: the answer is not JSON/ });
  huge = true;
  t.match(await cli(['dump', '--url', url], dir), { code: 1, err: /GET \/admin\/v1\/tenants: answer longer than 16777216 bytes/ });
  t.ok(await closedEarly, 'the client closed the answer before the server sent it all');

  const big = path.join(dir, 'big.yaml');
  fs.writeFileSync(big, `users: []\n${'#'.repeat(8 * 1024 * 1024)}\n`);
  t.match(await cli(['diff', big, '--url', url], dir), {
    code: 1,
    err: /SYNC_YAML.*longer than 8388608 bytes[\s\S]*nothing sent to the node/,
  });
});
