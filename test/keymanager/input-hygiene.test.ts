/**
 * Names and descriptions are bounded and free of control characters (the columns are 255 characters;
 * a CR/LF in a name would forge a line of `apps list` or of a log): 400 naming the field, on the admin
 * API and in local CLI mode; the CLI escapes control characters of stored values it prints. A token
 * whose iat lies beyond [oauth] timestamp_skew in the future introspects inactive.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SignJWT } from 'jose';
import { main } from '../../lib/cli';
import { printable } from '../../lib/keymanager/cli';
import { adminAuth, appWithKeys, basic, json, postForm, startKeyManager } from './helpers';

t.test('admin API: control characters and overlong names are a 400 naming the field', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const apps = `${h.url}/admin/v1/applications`;
  for (const [name, ch] of [
    ['a\r\nb', '000D'],
    ['a\nb', '000A'],
    ['a\u0000b', '0000'],
    ['a\u001bb', '001B'],
    ['a\u009bb', '009B'],
    ['a\u2028b', '2028'],
  ] as const) {
    const r = await json('POST', apps, { name }, adminAuth());
    t.match(
      r,
      { status: 400, body: { error: 'invalid_request', error_description: new RegExp(`^name contains the control character U\\+${ch}`) } },
      `U+${ch} refused`,
    );
  }
  t.match(await json('POST', apps, { name: 'x'.repeat(256) }, adminAuth()), {
    status: 400,
    body: { error_description: 'name is longer than 255 characters' },
  });
  t.equal((await json('POST', apps, { name: 'é'.repeat(255) }, adminAuth())).status, 201, '255 characters (not bytes) fit');
  t.match(await json('POST', apps, { name: 'ok', description: 'line1\nline2' }, adminAuth()), {
    status: 400,
    body: { error_description: /^description contains/ },
  });
  t.match(await json('POST', apps, { name: 'ok', description: 'd'.repeat(10_000) }, adminAuth()), {
    status: 400,
    body: { error_description: /^description is longer than 255/ },
  });
  t.match(await json('POST', `${h.url}/admin/v1/users`, { username: 'eve\u0000', password: 'pw-long-1' }, adminAuth()), {
    status: 400,
    body: { error_description: /^username contains/ },
  });
  t.match(
    await json('POST', `${h.url}/admin/v1/users`, { username: 'eve1', password: 'pw-long-1', roles: ['ok', 'bad\r\n'] }, adminAuth()),
    { status: 400, body: { error_description: /^roles contains/ } },
  );
  t.same(
    (await json('GET', apps, undefined, adminAuth())).body.list,
    [await json('GET', `${apps}/${encodeURIComponent('é'.repeat(255))}`, undefined, adminAuth()).then((r) => r.body)],
    'nothing else was stored',
  );
});

t.test('the CLI refuses them in local mode and never prints control characters raw', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-hyg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    `[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:./var/apim"\nusername = "a"\npassword = "b"\n`,
  );
  let out = '';
  let err = '';
  const io = { out: (s: string) => (out += s), err: (s: string) => (err += s), cwd: dir };
  t.equal(await main(['apps', 'create', 'evil\r\nrow'], io), 1);
  t.match(err, /name contains the control character U\+000D/);
  t.notOk(/[\r\u0000-\u0008]/.test(err), 'the error is printed escaped');
  // A name stored by an older version (straight into the store) is printed escaped.
  t.equal(printable('a\r\nb\u001b[2J\u009bc\\d'), 'a\\x0d\\x0ab\\x1b[2J\\x9bc\\\\d');
  out = '';
  t.equal(await main(['apps', 'create', 'fine', '--description', 'ok'], io), 0);
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(out));
});

t.test('a token issued in the future (iat beyond the skew) introspects inactive', async (t) => {
  const h = await startKeyManager('[oauth]\ntimestamp_skew = 60\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const k = h.km.keys.current();
  const now = Math.floor(Date.now() / 1000);
  const mint = (iat: number): Promise<string> =>
    new SignJWT({ client_id: key, azp: key, scope: 'default', keytype: 'PRODUCTION', aut: 'APPLICATION' })
      .setProtectedHeader({ alg: k.alg, kid: k.kid, typ: 'at+jwt' })
      .setIssuer(h.km.settings.issuer)
      .setSubject('admin')
      .setJti(`j${iat}`)
      .setIssuedAt(iat)
      .setExpirationTime(now + 3600)
      .sign(k.privateKey);
  t.equal(
    (await postForm(`${h.url}/oauth2/introspect`, { token: await mint(now + 30) }, basic(key, secret))).body.active,
    true,
    '30 s ahead: within the skew',
  );
  t.same(
    (await postForm(`${h.url}/oauth2/introspect`, { token: await mint(now + 600) }, basic(key, secret))).body,
    { active: false },
    '10 minutes ahead: refused',
  );
});
