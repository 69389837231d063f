/**
 * Client authentication under the login guard (docs/security.md, "Guessing passwords") on every endpoint
 * a client authenticates to: token, revocation and introspection. The client id is decoded once, by
 * client-auth.ts presentedClient (RFC 6749 §2.3.1 form-decoding of Basic); a malformed Basic header is
 * invalid_client and counts against the address. Other addresses are 127.x.y.z (all loopback on Linux).
 */
import * as http from 'node:http';
import t from 'tap';
import { appWithKeys, basic, startKeyManager } from './helpers';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

function post(url: string, form: Record<string, string>, auth: string | undefined, from = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = new URLSearchParams(form).toString();
    const req = http.request(
      url,
      {
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: {
          ...(auth !== undefined ? { Authorization: auth } : {}),
          'Content-Type': 'application/x-www-form-urlencoded',
          'Content-Length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test('a malformed Basic header is invalid_client and counts against the address', async (t) => {
  const h = await startKeyManager(
    '[throughway.management]\nlogin_max_failures = 100\naddress_max_failures = 3\nlogin_lock_time = 60000\nlogin_delay = 0\n',
  );
  t.teardown(() => h.close());
  const app = await appWithKeys(h, 'Malformed');
  const token = `${h.url}/oauth2/token`;
  const from = '127.0.0.5';
  const malformed = [
    'Basic %%%',
    `Basic ${Buffer.from('a%ZZ:secret').toString('base64')}`,
    `Basic ${Buffer.from('no-colon').toString('base64')}`,
  ];
  for (const auth of malformed) {
    const r = await post(token, { grant_type: 'client_credentials' }, auth, from);
    t.match(r, { status: 401, body: { error: 'invalid_client', error_description: /malformed HTTP Basic/ } }, `${auth}: 401`);
    t.match(r.headers['www-authenticate'], /^Basic realm=/);
  }
  t.equal(h.km.guard.failures.get('client'), 3, 'each counted as a failed client sign-in');
  t.match(
    await post(token, { grant_type: 'client_credentials' }, basic(app.key, app.secret), from),
    { status: 429, body: { error: 'access_denied' } },
    'the address is locked, for a good client too',
  );
  t.match(await post(token, { grant_type: 'client_credentials' }, basic(app.key, app.secret)), { status: 200 }, 'another address is not');
});

t.test('revocation and introspection count wrong client secrets and refuse a locked client', async (t) => {
  const h = await startKeyManager('[throughway.management]\nlogin_max_failures = 2\nlogin_lock_time = 60000\nlogin_delay = 0\n');
  t.teardown(() => h.close());
  const app = await appWithKeys(h, 'Guarded');
  const good = basic(app.key, app.secret);
  for (const [endpoint, from] of [
    ['revoke', '127.0.0.6'],
    ['introspect', '127.0.0.7'],
  ] as const) {
    const url = `${h.url}/oauth2/${endpoint}`;
    for (let i = 0; i < 2; i++) {
      t.match(
        await post(url, { token: 'x' }, basic(app.key, `wrong-${i}`), from),
        { status: 401, body: { error: 'invalid_client' } },
        `${endpoint}: wrong secret ${i + 1}`,
      );
    }
    t.match(
      await post(url, { token: 'x' }, good, from),
      { status: 429, body: { error: 'access_denied' } },
      `${endpoint}: the client is locked from this address`,
    );
    t.match(
      await post(url, { token: 'x', client_id: app.key, client_secret: app.secret }, undefined, from),
      { status: 429 },
      `${endpoint}: client_secret_post is the same account`,
    );
    t.equal((await post(url, { token: 'x' }, good)).status, 200, `${endpoint}: from another address the client authenticates`);
  }
  t.equal(h.km.guard.failures.get('client'), 4);
});
