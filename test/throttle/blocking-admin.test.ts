/**
 * Blocking conditions edited at run time: the admin API and the CLI (remote and local mode) store them,
 * the key manager publishes blocking.added / blocking.removed, and a gateway on the same bus refuses and
 * serves again at once (900805). A gateway started later gets the stored list.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { main } from '../../lib/cli';
import { BASE_TOML, apiToml, echoBackend, request, startGateway } from '../gateway/helpers';
import { ADMIN, adminAuth, json, startKeyManager } from '../keymanager/helpers';
import { BlockingConditions } from '../../lib/throttle/blocking';

async function cli(args: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s), cwd });
  return { code, out, err };
}

t.test('admin API and CLI --url: a condition blocks the gateway at once, and its removal unblocks it', async (t) => {
  const h = await startKeyManager();
  const backend = await echoBackend();
  const g = await startGateway(
    BASE_TOML,
    { a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }) },
    {},
    { events: h.bus },
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await h.close();
  });
  const A = `${h.url}/admin/v1/blocking-conditions`;
  const auth = adminAuth();
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 200);

  t.equal((await json('POST', A, { type: 'IP', value: '127.0.0.1' })).status, 401, 'credentials required');
  t.match(await json('POST', A, { type: 'HOST', value: 'x' }, auth), {
    status: 400,
    body: { error_description: /type must be one of API, APPLICATION, USER, IP, IP_RANGE/ },
  });
  t.match(await json('POST', A, { type: 'IP', value: '999.1.1.1' }, auth), {
    status: 400,
    body: { error_description: /not an IP address/ },
  });
  t.match(await json('POST', A, { type: 'USER', value: 'bob', invert: true }, auth), {
    status: 400,
    body: { error_description: /invert applies to IP and IP_RANGE/ },
  });
  const added = await json('POST', A, { type: 'IP', value: '127.0.0.1' }, auth);
  t.equal(added.status, 201, added.text);
  t.match(added.body, { type: 'IP', value: '127.0.0.1', invert: false });
  t.match(await json('POST', A, { type: 'IP', value: '127.0.0.1' }, auth), { status: 409 }, 'the same condition twice');
  const blocked = await request(g.port, '/a/1.0.0/r');
  t.same([blocked.status, blocked.json().fault.code], [429, 900805], 'blocked by the next call after the admin call returned');
  t.same(
    ((await json('GET', A, undefined, auth)).body.list as { id: string }[]).map((c) => c.id),
    [added.body.id],
  );
  t.equal((await json('DELETE', `${A}/${String(added.body.id)}`, undefined, auth)).status, 200);
  t.equal((await json('DELETE', `${A}/${String(added.body.id)}`, undefined, auth)).status, 404);
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 200, 'served again');

  const url = ['--url', h.url, '--admin-user', ADMIN.user, '--admin-password', ADMIN.password];
  const viaCli = await cli(['blocking', 'add', '--type', 'api', '--value', '/a', ...url], h.dir);
  t.equal(viaCli.code, 0, viaCli.err);
  t.match(viaCli.out, /blocking condition \S+ added: API \/a\n/);
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 429, "the CLI's condition is in force");
  const list = await cli(['blocking', 'list', ...url], h.dir);
  t.match(list.out, /ID\s+TYPE\s+VALUE\s+INVERT\s+TENANT\n\S+\s+API\s+\/a\s+carbon\.super\n/);
  const id = /added: /.test(viaCli.out) ? (/condition (\S+) added/.exec(viaCli.out)?.[1] ?? '') : '';
  const removed = await cli(['blocking', 'remove', id, ...url], h.dir);
  t.equal(removed.code, 0, removed.err);
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 200);
  t.same(
    h.events.filter((e) => e.name.startsWith('blocking.')).map((e) => e.name),
    ['blocking.added', 'blocking.removed', 'blocking.added', 'blocking.removed'],
  );
  const bad = await cli(['blocking', 'add', '--type', 'IP_RANGE', '--value', '10.0.0.9-10.0.0.1', ...url], h.dir);
  t.equal(bad.code, 1);
  t.match(bad.err, /not an IP range/);
});

t.test('local mode stores the condition; a gateway started on the store applies it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-blk-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    `[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:./var/apim"\nusername = "a"\npassword = "b"\n`,
  );
  const add = await cli(['blocking', 'add', '--type', 'IP_RANGE', '--value', '127.0.0.0/8', '--invert'], dir);
  t.equal(add.code, 0, add.err);
  t.match(add.out, /added: IP_RANGE not 127\.0\.0\.0\/8 \(a running node applies it on restart; use --url to apply it at once\)/);
  const json = await cli(['blocking', 'list', '--json'], dir);
  const list = (JSON.parse(json.out) as { list: { type: string; value: string; invert: boolean }[] }).list;
  t.match(list, [{ type: 'IP_RANGE', value: '127.0.0.0/8', invert: true }]);
  const backend = await echoBackend();
  const g = await startGateway(
    BASE_TOML,
    { a: apiToml({ context: '/a', endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }) },
    {},
    { throttling: { blocking: list.map((c, i) => ({ id: String(i), type: c.type as 'IP_RANGE', value: c.value, invert: c.invert })) } },
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 200, 'inverted: 127.0.0.1 is inside the range, so not blocked');
  g.gw.throttle.blocking.replace([{ id: 'x', type: 'IP_RANGE', value: '10.0.0.0/8', invert: true }]);
  t.equal((await request(g.port, '/a/1.0.0/r')).status, 429, 'inverted range not holding 127.0.0.1: blocked');
});

t.test('a super tenant API condition from before tenants had their own still blocks the tenant API it names', async (t) => {
  const b = new BlockingConditions();
  b.replace([
    { id: 'old', type: 'API', value: '/t/acme.test/pizza', invert: false, tenant: 'carbon.super' },
    { id: 'ip', type: 'IP', value: '10.0.0.9', invert: false, tenant: 'carbon.super' },
  ]);
  const call = (apiContext: string, ip = '10.0.0.1') => ({
    ip,
    apiPath: `${apiContext}/1.0.0`,
    apiContext,
    application: undefined,
    user: undefined,
  });
  t.equal(b.blocks(call('/t/acme.test/pizza')), 'API', "acme.test's /pizza blocked as before");
  t.equal(b.blocks(call('/t/beta.test/pizza')), undefined, "beta.test's is not");
  t.equal(b.blocks(call('/pizza')), undefined, "the super tenant's /pizza is not");
  t.equal(b.blocks(call('/pizza', '10.0.0.9')), 'IP', "the super tenant's IP condition on its own calls");
  t.equal(b.blocks(call('/t/acme.test/menu', '10.0.0.9')), undefined, "and not on a tenant's (each tenant has its own)");
});
