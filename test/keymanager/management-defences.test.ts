/**
 * The management port resists attack (docs/security.md): default credentials on loopback only, failed
 * sign-ins locked per (account, address), timeouts and a connection limit on the listeners, and secrets at
 * rest (owner-only store files, the signing key encrypted).
 *
 * Other client addresses: every 127.x.y.z address is loopback on Linux, so a request bound to 127.0.0.2
 * comes from another address than one bound to 127.0.0.1.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { loadConfig } from '../../lib/config/load';
import { createKeyManager } from '../../lib/keymanager';
import { openStore } from '../../lib/store/open';
import { ADMIN, adminAuth, appWithKeys, basic, json, startKeyManager } from './helpers';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** One request from a chosen local address. */
function request(url: string, o: { method?: string; auth?: string; form?: Record<string, string>; from?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = o.form !== undefined ? new URLSearchParams(o.form).toString() : undefined;
    const req = http.request(
      url,
      {
        method: o.method ?? (body !== undefined ? 'POST' : 'GET'),
        localAddress: o.from ?? '127.0.0.1',
        agent: false,
        headers: {
          ...(o.auth !== undefined ? { Authorization: o.auth } : {}),
          ...(body !== undefined ? { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> = {};
          try {
            parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
          } catch {
            parsed = { text };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('the default super admin password keeps the management port on loopback', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-loop-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const start = async (toml: string, db: string): Promise<{ address: string; loopbackOnly: boolean }> => {
    const loaded = loadConfig({
      text: `${toml}[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, db)}"\nusername = "tw"\npassword = "tw"\n`,
      env: {},
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const store = await openStore(loaded.config, dir);
    const km = await createKeyManager({ loaded, store });
    try {
      // No host asked: every interface, unless the default password is in use.
      const a = await km.listen(0);
      t.same(km.addresses().http?.port, a.port);
      return { address: a.address, loopbackOnly: km.loopbackOnly };
    } finally {
      await km.close();
      await store.close();
    }
  };
  t.same(await start('', 'a'), { address: '127.0.0.1', loopbackOnly: true }, 'admin:admin (the defaults): 127.0.0.1 only');
  const changed = await start(`[super_admin]\nusername = "admin"\npassword = "a-changed-pw"\n`, 'b');
  t.equal(changed.loopbackOnly, false);
  t.ok(
    changed.address === '::' || changed.address === '0.0.0.0',
    `a changed password binds as asked (every interface): ${changed.address}`,
  );
  // The configured password changed, but the store still holds "admin" for the super admin: still loopback.
  t.same(
    await start(`[super_admin]\nusername = "admin"\npassword = "a-changed-pw"\n`, 'a'),
    { address: '127.0.0.1', loopbackOnly: true },
    'the stored default password counts too',
  );
});

t.test('failed sign-ins lock the (account, address) pair, not the account', async (t) => {
  const h = await startKeyManager('[throughway.management]\nlogin_max_failures = 3\nlogin_lock_time = 5000\nlogin_delay = 0\n');
  t.teardown(() => h.close());
  const admin = `${h.url}/admin/v1/users`;
  const app = await appWithKeys(h, 'LockApp');
  const u = await json('POST', `${h.url}/admin/v1/users`, { username: 'dora1', password: 'dora-pw-1' }, adminAuth());
  t.equal(u.status, 201);
  for (let i = 0; i < 3; i++) {
    const r = await request(admin, { auth: basic(ADMIN.user, `wrong-${i}`) });
    t.match(r, { status: 401, body: { error: 'invalid_client' } }, `wrong admin password ${i + 1}: 401`);
  }
  const locked = await request(admin, { auth: adminAuth() });
  t.match(locked, { status: 429, body: { error: 'access_denied' } }, 'locked: the right password is refused from this address');
  t.ok(Number(locked.headers['retry-after']) >= 1, 'with Retry-After');
  t.match(await request(admin, { auth: adminAuth(), from: '127.0.0.2' }), { status: 200 }, 'another address signs in');

  // The password grant and client secrets, from 127.0.0.3 (its own counts).
  const from = '127.0.0.3';
  const token = `${h.url}/oauth2/token`;
  for (let i = 0; i < 3; i++) {
    t.match(
      await request(token, {
        from,
        auth: basic(app.key, app.secret),
        form: { grant_type: 'password', username: 'dora1', password: `bad-${i}` },
      }),
      { status: 400, body: { error: 'invalid_grant' } },
    );
  }
  t.match(
    await request(token, {
      from,
      auth: basic(app.key, app.secret),
      form: { grant_type: 'password', username: 'dora1', password: 'dora-pw-1' },
    }),
    { status: 429, body: { error: 'access_denied' } },
    'the user is locked from this address',
  );
  t.match(
    await request(token, { auth: basic(app.key, app.secret), form: { grant_type: 'password', username: 'dora1', password: 'dora-pw-1' } }),
    { status: 200 },
    'and signs in from another',
  );
  for (let i = 0; i < 3; i++) {
    t.match(await request(token, { from, auth: basic(app.key, `bad-secret-${i}`), form: { grant_type: 'client_credentials' } }), {
      status: 401,
      body: { error: 'invalid_client' },
    });
  }
  t.match(
    await request(token, { from, auth: basic(app.key, app.secret), form: { grant_type: 'client_credentials' } }),
    { status: 429, body: { error: 'access_denied' } },
    'the client is locked from this address',
  );

  // The lock expires (login_lock_time = 5 s).
  await wait(5200);
  t.match(await request(admin, { auth: adminAuth() }), { status: 200 }, 'the admin signs in again after the lock time');
  t.match(
    await request(token, { from, auth: basic(app.key, app.secret), form: { grant_type: 'client_credentials' } }),
    { status: 200 },
    'so does the client',
  );

  const log = h.logLines.join('\n');
  t.match(log, /"login_failed"/);
  t.match(log, /"login_locked"/);
  t.match(log, /"login_refused_locked"/);
  t.notMatch(log, /wrong-0|bad-1|bad-secret-2|dora-pw-1/, 'no password or secret in the log');
  t.equal(h.km.guard.failures.get('admin'), 3);
  t.equal(h.km.guard.failures.get('password'), 3);
  t.equal(h.km.guard.failures.get('client'), 3);
});

t.test('an address guessing many accounts is locked', async (t) => {
  const h = await startKeyManager(
    '[throughway.management]\nlogin_max_failures = 100\naddress_max_failures = 4\nlogin_lock_time = 60000\nlogin_delay = 0\n',
  );
  t.teardown(() => h.close());
  for (let i = 0; i < 4; i++) t.match(await request(`${h.url}/admin/v1/users`, { auth: basic(`user${i}`, 'guess') }), { status: 401 });
  t.match(await request(`${h.url}/admin/v1/users`, { auth: adminAuth() }), { status: 429 }, 'the address is locked');
  t.match(await request(`${h.url}/admin/v1/users`, { auth: adminAuth(), from: '127.0.0.4' }), { status: 200 });
});

/** Resolves when the server closes the socket; with the bytes it answered. */
function closed(s: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

t.test('slow request heads and bodies are closed; connections beyond the limit are refused', async (t) => {
  const h = await startKeyManager(
    '[throughway.management]\nheader_timeout = 300\nrequest_timeout = 600\nmax_connections = 2\nmax_connections_per_address = 2\n',
  );
  t.teardown(() => h.close());
  const port = Number(new URL(h.url).port);

  const head = await connect(port);
  const headDone = closed(head);
  head.write('POST /oauth2/token HTTP/1.1\r\nHost: x\r\n');
  // Silence: the server closes the connection (Node answers 408 to an incomplete request).
  t.match(await headDone, /^(HTTP\/1\.1 408|)/, 'a partial head is closed');

  const body = await connect(port);
  const bodyDone = closed(body);
  body.write(
    'POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type',
  );
  t.match(await bodyDone, /^(HTTP\/1\.1 408|)/, 'an unfinished body on /oauth2/token is closed');
});

t.test('connections beyond max_connections are closed at once', async (t) => {
  const h = await startKeyManager('[throughway.management]\nmax_connections = 2\nmax_connections_per_address = 2\n');
  t.teardown(() => h.close());
  const port = Number(new URL(h.url).port);
  const held: net.Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const s = await connect(port);
    held.push(s);
    // A full exchange, so the server has counted the connection; keep-alive keeps it open.
    const got = await new Promise<string>((resolve) => {
      s.once('data', (c: Buffer) => resolve(c.toString('latin1')));
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    t.match(got, /^HTTP\/1\.1 200/);
  }
  const third = await connect(port);
  const done = closed(third);
  third.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(await done, '', 'the third connection is closed without an answer');
  for (const s of held) s.destroy();
});

function modes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of fs.readdirSync(dir)) out[f] = fs.statSync(path.join(dir, f)).mode & 0o777;
  return out;
}

t.test("store files are the owner's only, and the signing key is encrypted at rest", async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-rest-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  const varDir = path.join(root, 'var');
  const database = `[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(varDir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n`;

  // First start without a secret: the key is stored as a plain JWK (a store of an older version).
  let h = await startKeyManager('', { dir: root, database });
  const app = await appWithKeys(h, 'RestApp');
  let keys = await h.store.listSigningKeys();
  t.ok(keys[0]?.privateJwk.startsWith('{'), 'unencrypted without signing_key_secret');
  const kid = keys[0]?.kid;
  t.equal(fs.statSync(varDir).mode & 0o777, 0o700, 'var/ is 0700');
  const files = modes(varDir);
  t.ok(
    Object.keys(files).some((f) => f.endsWith('-wal')),
    `a WAL file exists: ${Object.keys(files).join(' ')}`,
  );
  for (const [f, m] of Object.entries(files)) t.equal(m, 0o600, `${f} is 0600`);
  await h.close();

  // An older store's world-readable files are narrowed at the next start.
  for (const f of fs.readdirSync(varDir)) fs.chmodSync(path.join(varDir, f), 0o644);

  // Restart with the secret: the key is encrypted in place and still signs.
  const toml = '[throughway.management]\nsigning_key_secret = "correct horse battery staple"\n';
  h = await startKeyManager(toml, { dir: root, database });
  for (const [f, m] of Object.entries(modes(varDir))) t.equal(m, 0o600, `${f} is 0600 again`);
  keys = await h.store.listSigningKeys();
  t.equal(keys.length, 1);
  t.equal(keys[0]?.kid, kid, 'the same key');
  t.ok(keys[0]?.privateJwk.startsWith('enc:v1:'), 'stored encrypted');
  const got = await request(`${h.url}/oauth2/token`, { auth: basic(app.key, app.secret), form: { grant_type: 'client_credentials' } });
  t.equal(got.status, 200);
  const jwks = await request(`${h.url}/oauth2/jwks`, {});
  const v = await jwtVerify(String(got.body.access_token), createLocalJWKSet(jwks.body as { keys: [] }));
  t.equal(v.protectedHeader.kid, kid, 'signed by the migrated key');
  await h.close();
  const bytes = Buffer.concat(fs.readdirSync(varDir).map((f) => fs.readFileSync(path.join(varDir, f))));
  t.notOk(bytes.includes('"d":"'), 'no private JWK readable in the store files');
  t.notOk(bytes.includes('PRIVATE KEY'), 'no PEM private key either');

  // Without the secret, or with another, the key manager refuses to start.
  await t.rejects(startKeyManager('', { dir: root, database }), { code: 'KEY_RING', message: /signing_key_secret/ });
  await t.rejects(startKeyManager('[throughway.management]\nsigning_key_secret = "another"\n', { dir: root, database }), {
    code: 'KEY_RING',
    message: /not the secret/,
  });
});

t.test(
  "[transport.http.properties] connectionTimeout (the reference's connector attribute) bounds the head in place of header_timeout",
  async (t) => {
    const cases = [
      [
        'connectionTimeout written, header_timeout ten minutes',
        '[throughway.management]\nheader_timeout = 600000\nrequest_timeout = 600000\n[transport.http.properties]\nconnectionTimeout = 300\n',
      ],
      ['no connectionTimeout: header_timeout', '[throughway.management]\nheader_timeout = 300\nrequest_timeout = 600000\n'],
    ] as const;
    for (const [name, toml] of cases) {
      const h = await startKeyManager(toml);
      const s = await connect(Number(new URL(h.url).port));
      // Without the short bound the head would be waited for ten minutes: still open after 20 s is the failure.
      const open = new Promise<string>((resolve) => setTimeout(() => resolve('open'), 20_000).unref());
      const done = closed(s).then((bytes) => `closed ${bytes}`);
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n');
      t.match(await Promise.race([done, open]), /^closed (HTTP\/1\.1 408|)/, name);
      s.destroy();
      await h.close();
    }
  },
);
