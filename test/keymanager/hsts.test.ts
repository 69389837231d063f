/**
 * The HTTPS management listener answers with Strict-Transport-Security (docs/security.md, "The management
 * port"): pages, the token endpoint and the admin API, `[throughway.management] hsts_max_age` seconds (a
 * year by default); never over plain HTTP (RFC 6797 §7.2); 0 turns it off.
 */
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { selfSigned } from '../../lib/tls/sample';
import { startKeyManager } from './helpers';

const pair = selfSigned('localhost', ['localhost', '127.0.0.1']);

function hstsOf(port: number, path: string, method = 'GET'): Promise<{ status: number; hsts: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path, method, rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, hsts: res.headers['strict-transport-security'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('every HTTPS answer carries Strict-Transport-Security; HTTP answers do not', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const port = ((await h.km.listenHttps({ key: pair.keyPem, cert: pair.certPem }, 0, '127.0.0.1')).address() as AddressInfo).port;
  for (const [path, method, status] of [
    ['/health', 'GET', 200],
    ['/oauth2/token', 'POST', 400],
    ['/admin/v1/users', 'GET', 401],
    ['/oauth2/authorize/style.css', 'GET', 200],
    ['/nowhere', 'GET', 404],
  ] as const) {
    t.same(await hstsOf(port, path, method), { status, hsts: 'max-age=31536000' }, `${method} ${path}`);
  }
  const plain = await fetch(`${h.url}/health`);
  t.equal(plain.headers.get('strict-transport-security'), null, 'not over plain HTTP');
});

t.test('hsts_max_age = 0 sends none; another value is sent as written', async (t) => {
  for (const [age, want] of [
    [0, undefined],
    [600, 'max-age=600'],
  ] as const) {
    const h = await startKeyManager(`[throughway.management]\nhsts_max_age = ${age}\n`);
    const port = ((await h.km.listenHttps({ key: pair.keyPem, cert: pair.certPem }, 0, '127.0.0.1')).address() as AddressInfo).port;
    t.same(await hstsOf(port, '/health'), { status: 200, hsts: want }, `hsts_max_age = ${age}`);
    await h.close();
  }
});
