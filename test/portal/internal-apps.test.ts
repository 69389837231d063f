/**
 * The consoles' own application, `throughway-consoles <origin>` (lib/keymanager/console-clients.ts), is
 * the node's, not a user's (docs/key-manager.md, "Authorization code with PKCE"): a node with its
 * consoles keeps it out of `throughway apps list` (the real binary, local and --url),
 * GET /admin/v1/applications, `throughway dump` and the developer portal's applications page, and its
 * sign-in page names the consoles in words. A user's application of a similar name still shows in the
 * admin API and the CLI: only the super admin's is internal.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import t from 'tap';
import { main } from '../../lib/cli';
import { ADMIN, cookieOf, hidden, req, ROOT, signIn, startPortalNode } from './helpers';

const BIN = path.join(ROOT, 'dist', 'lib', 'cli.js');
const auth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;

function bin(args: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, THROUGHWAY_ADMIN_PASSWORD: ADMIN.password } }, (err, out, e) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out, err: e }),
    );
  });
}

async function admin(method: string, url: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url, {
    method,
    headers: { Authorization: auth, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const names = (list: unknown): string[] => (list as { name: string }[]).map((a) => a.name).sort();

t.test('the consoles application is hidden from every list and from the sign-in page', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const A = `${node.base}/admin/v1`;

  // It exists: the gateway snapshot (everything a gateway needs) has it.
  const snapshot = await admin('GET', `${A}/snapshot`);
  const internal = names(snapshot.body.applications).find((n) => n.startsWith('throughway-consoles '));
  t.ok(internal, `the node registered its consoles application (${internal ?? 'none'})`);
  const internalName = internal ?? 'throughway-consoles';

  t.equal((await admin('POST', `${A}/applications`, { name: 'Shop' })).status, 201);
  t.equal((await admin('POST', `${A}/users`, { username: 'carol', password: 'carol-pw-1', roles: ['subscriber'] })).status, 201);
  // A user's application whose name looks the same is the user's: it shows.
  t.equal((await admin('POST', `${A}/applications`, { name: 'throughway-consoles mine', owner: 'carol' })).status, 201);

  // The admin API's list; the application stays reachable by name.
  const list = await admin('GET', `${A}/applications`);
  t.equal(list.status, 200);
  t.same(names(list.body.list), ['Shop', 'throughway-consoles mine'], 'GET /admin/v1/applications');
  t.same(names((await admin('GET', `${A}/applications?owner=admin`)).body.list), ['Shop'], '?owner=admin');
  t.equal((await admin('GET', `${A}/applications/${encodeURIComponent(internalName)}?owner=admin`)).status, 200, 'by name');

  // The CLI, the real binary: remote (--url) and local (--config, the node's store).
  const remote = await bin(
    ['apps', 'list', '--url', node.base, '--admin-user', ADMIN.username, '--admin-password', ADMIN.password],
    node.dir,
  );
  t.equal(remote.code, 0, remote.err);
  t.match(remote.out, /^Shop\s+admin/m);
  t.notMatch(remote.out, /throughway-consoles http/, 'apps list --url');
  const local = await bin(['apps', 'list', '--config', path.join(node.dir, 'deployment.toml')], node.dir);
  t.equal(local.code, 0, local.err);
  t.match(local.out, /^Shop\s+admin/m);
  t.match(local.out, /^throughway-consoles mine\s+carol/m);
  t.notMatch(local.out, /throughway-consoles http/, 'apps list (local store)');

  // throughway dump.
  let out = '';
  let err = '';
  const code = await main(['dump', '--url', node.base], {
    out: (s) => (out += s),
    err: (s) => (err += s),
    cwd: node.dir,
    env: { THROUGHWAY_ADMIN_PASSWORD: ADMIN.password },
    stdin: () => Promise.resolve(''),
  });
  t.equal(code, 0, err);
  t.match(out, /name: Shop/);
  t.notMatch(out, /throughway-consoles http/, 'dump');

  // The sign-in page of the consoles: the consoles in words, not the internal name.
  const login = await req(`${node.base}/devportal/login?back=%2Fdevportal`);
  const page = await req(`${node.base}${login.location}`);
  t.equal(page.status, 200);
  t.match(page.text, /Sign in to continue to <strong>the developer portal and publisher at https?:\/\/[^<]+<\/strong>/);
  t.notMatch(page.text, /throughway-consoles/, 'the sign-in page does not show the internal name');
  t.ok(hidden(page.text, 'authz') !== '' && cookieOf(page, 'tw_authz') !== '', 'a sign-in form');

  // The developer portal's applications page of the admin, who owns the consoles application.
  const cookie = await signIn(node.base);
  const apps = await req(`${node.base}/devportal/applications`, cookie);
  t.equal(apps.status, 200);
  t.match(apps.text, />Shop</);
  t.notMatch(apps.text, /throughway-consoles/, 'the developer portal');
});
