/**
 * The reference's key stores as they are (docs/tls.md): JKS and JCEKS key and trust stores made by
 * keytool, beside PKCS#12 (keytool) and PEM, each serving HTTPS and mutual TLS through the transport's
 * TLS listener; the reference's default layout (wso2carbon.jks, alias wso2carbon, password wso2carbon;
 * client-truststore.jks); a wrong store or key password and a missing alias are coded errors naming the
 * key and the file; the JavaScript MD5 of the JCEKS derivation matches node:crypto.
 */
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl } from '../../lib/transport';
import { serverOptions, type ListenerTlsSettings } from '../../lib/tls/settings';
import { readKeyStore, readTrustStore, TlsStoreError, type StoreRef } from '../../lib/tls/keystore';
import { md5 } from '../../lib/tls/md5';
import { main } from '../../lib/cli';
import { HOST, get, makePki, tlsRequest } from './helpers';

t.test('md5.ts matches node:crypto on lengths around the block boundaries', async (t) => {
  for (const n of [0, 1, 16, 23, 55, 56, 63, 64, 65, 119, 120, 200]) {
    const b = crypto.randomBytes(n);
    t.same(md5(b), crypto.createHash('md5').update(b).digest(), `${n} bytes`);
  }
});

let keytool: string | undefined;
try {
  execFileSync('keytool', ['-help'], { stdio: 'ignore' });
  keytool = 'keytool';
} catch {
  keytool = undefined;
}
const skip = keytool === undefined ? 'keytool (a Java runtime) is not installed' : false;
if (skip !== false) console.log(`# skipping the keytool stores: ${skip}`);

const pki = makePki();
t.teardown(() => pki.cleanup());
const d = (f: string): string => path.join(pki.dir, f);

function kt(...args: string[]): void {
  // A JVM that starts quickly: keytool's work is small, its JIT and garbage collector warm-up is not.
  execFileSync(keytool as string, ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', ...args], { stdio: 'pipe', cwd: pki.dir });
}

const SAN = ['-ext', 'SAN=dns:localhost,ip:127.0.0.1', '-dname', 'CN=localhost', '-validity', '30', '-keyalg', 'RSA', '-keysize', '2048'];

/** The stores, made once: the reference's default layout plus JCEKS and PKCS#12 twins. */
function makeStores(): void {
  // The reference's default layout: wso2carbon.jks (alias wso2carbon, password wso2carbon), and
  // client-truststore.jks trusting it and the CA of the test's client certificates.
  kt(
    '-genkeypair',
    '-storetype',
    'JKS',
    '-keystore',
    'wso2carbon.jks',
    '-storepass',
    'wso2carbon',
    '-keypass',
    'wso2carbon',
    '-alias',
    'wso2carbon',
    ...SAN,
  );
  kt('-exportcert', '-keystore', 'wso2carbon.jks', '-storepass', 'wso2carbon', '-alias', 'wso2carbon', '-file', 'wso2carbon.cer');
  fs.writeFileSync(d('ca.cer'), pki.ca.certPem);
  for (const [file, type, pass] of [
    ['client-truststore.jks', 'JKS', 'wso2carbon'],
    ['trust.jceks', 'JCEKS', 'trustpass'],
    ['trust.p12', 'PKCS12', 'trustpass'],
  ] as const) {
    kt('-importcert', '-noprompt', '-storetype', type, '-keystore', file, '-storepass', pass, '-alias', 'testca', '-file', 'ca.cer');
    kt(
      '-importcert',
      '-noprompt',
      '-storetype',
      type,
      '-keystore',
      file,
      '-storepass',
      pass,
      '-alias',
      'wso2carbon',
      '-file',
      'wso2carbon.cer',
    );
  }
  // JCEKS with a key password other than the store password, and a second key entry to choose by alias.
  kt(
    '-genkeypair',
    '-storetype',
    'JCEKS',
    '-keystore',
    'server.jceks',
    '-storepass',
    'storepass',
    '-keypass',
    'keypass1',
    '-alias',
    'other',
    ...SAN.map((a) => a.replace('CN=localhost', 'CN=other')),
  );
  kt(
    '-genkeypair',
    '-storetype',
    'JCEKS',
    '-keystore',
    'server.jceks',
    '-storepass',
    'storepass',
    '-keypass',
    'keypass1',
    '-alias',
    'gateway',
    ...SAN,
  );
  kt('-genkeypair', '-storetype', 'PKCS12', '-keystore', 'server.p12', '-storepass', 'p12pass', '-alias', 'gateway', ...SAN);
  fs.writeFileSync(d('server.pem'), pki.server.keyPem + pki.server.certPem);
}

if (skip === false) makeStores();

function settings(keyStore: StoreRef, trustStore: StoreRef): ListenerTlsSettings {
  return {
    keyStore,
    trustStore,
    verifyClient: 'require',
    minVersion: undefined,
    maxVersion: undefined,
    ciphers: undefined,
    profileFile: undefined,
    reloadInterval: 0,
  };
}

async function serve(t: Test, opts: tls.TlsOptions): Promise<number> {
  const backend = net.createServer((c) => {
    c.once('data', () => c.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'));
  });
  await new Promise<void>((resolve) => backend.listen(0, HOST, () => resolve()));
  const target = targetFromUrl(`http://${HOST}:${(backend.address() as net.AddressInfo).port}`);
  const transport = createTransport({ route: () => ({ target }), settings: { shutdownTimeout: 200 } });
  const server = await transport.listenTls({ port: 0, host: HOST }, opts);
  t.teardown(async () => {
    await transport.close();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  return (server.address() as net.AddressInfo).port;
}

/** The CA a client needs for the listener's certificate (keytool's are self-signed: their own PEM). */
function serverCa(ref: StoreRef): string {
  if (ref.file.endsWith('.pem')) return pki.ca.certPem;
  return (readKeyStore(ref).cert as Buffer).toString('latin1');
}

const cases: [string, StoreRef, StoreRef][] = [
  [
    'JKS (the reference default layout: wso2carbon.jks, client-truststore.jks)',
    { file: d('wso2carbon.jks'), password: 'wso2carbon', keyPassword: 'wso2carbon', alias: 'wso2carbon', source: 'key' },
    { file: d('client-truststore.jks'), password: 'wso2carbon', source: 'trust' },
  ],
  [
    'JCEKS (key password apart, alias chooses the second entry)',
    { file: d('server.jceks'), type: 'JCEKS', password: 'storepass', keyPassword: 'keypass1', alias: 'gateway', source: 'key' },
    { file: d('trust.jceks'), password: 'trustpass', source: 'trust' },
  ],
  [
    'PKCS#12 made by keytool',
    { file: d('server.p12'), type: 'PKCS12', password: 'p12pass', source: 'key' },
    { file: d('trust.p12'), password: 'trustpass', source: 'trust' },
  ],
  [
    'PEM',
    { file: d('server.pem'), type: 'PEM', source: 'key' },
    { file: d('client-truststore.jks'), password: 'wso2carbon', source: 'trust' },
  ],
];

for (const [name, key, trust] of cases) {
  t.test(`${name}: HTTPS and mutual TLS`, { skip }, async (t) => {
    const port = await serve(t, serverOptions(settings(key, trust), undefined));
    const ca = key.file.endsWith('.p12') ? undefined : serverCa(key);
    const clientTls = ca !== undefined ? { ca } : { rejectUnauthorized: false };
    const good = await tlsRequest(port, { ...clientTls, key: pki.client.keyPem, cert: pki.client.certPem }, get('/pets'));
    t.match(good.response, /^HTTP\/1\.1 200 OK/, 'a client certificate from the trust store is served');
    t.equal(good.peerCN, 'localhost', "the store's certificate is the listener's");
    const none = await tlsRequest(port, clientTls, get());
    t.notMatch(none.response ?? '', /HTTP\/1\.1 200/, 'no client certificate: refused');
    const stranger = await tlsRequest(port, { ...clientTls, key: pki.strangerClient.keyPem, cert: pki.strangerClient.certPem }, get());
    t.notMatch(stranger.response ?? '', /HTTP\/1\.1 200/, 'a certificate from another CA: refused');
  });
}

t.test('JKS and JCEKS: what the trust stores hold, and the chosen key', { skip }, async (t) => {
  t.equal(
    readTrustStore({ file: d('client-truststore.jks'), password: 'wso2carbon', source: 't' }).length,
    2,
    'both trusted certificate entries',
  );
  const other = readKeyStore({ file: d('server.jceks'), password: 'storepass', keyPassword: 'keypass1', alias: 'OTHER', source: 'k' });
  t.match(
    new crypto.X509Certificate(other.cert as Buffer).subject,
    /CN=other/,
    'alias (case-insensitive, as JKS stores it) picks the entry',
  );
  const first = readKeyStore({ file: d('wso2carbon.jks'), password: 'wso2carbon', source: 'k' });
  t.ok(crypto.createPrivateKey(first.key as Buffer), 'no alias: the first private key entry; key_password defaults to the password');
});

t.test('wrong passwords and a missing alias are coded errors naming the key and the file', { skip }, async (t) => {
  const code = (f: () => unknown): [string | undefined, string] => {
    try {
      f();
      return [undefined, ''];
    } catch (err) {
      return [(err as TlsStoreError).code, (err as Error).message];
    }
  };
  const src = '[transport.passthru_https] listener.key_store';
  let [c, m] = code(() => readKeyStore({ file: d('wso2carbon.jks'), password: 'wrong', source: src }));
  t.equal(c, 'TLS_PASSWORD');
  t.match(m, /listener\.key_store \(password\) .*wso2carbon\.jks: the store password does not match/);
  [c, m] = code(() => readTrustStore({ file: d('trust.jceks'), password: 'wrong', source: 'trust' }));
  t.equal(c, 'TLS_PASSWORD', 'a JCEKS trust store too');
  [c, m] = code(() =>
    readKeyStore({ file: d('server.jceks'), password: 'storepass', keyPassword: 'wrong', alias: 'gateway', source: src }),
  );
  t.equal(c, 'TLS_PASSWORD');
  t.match(m, /\(key_password\) .*server\.jceks: key "gateway": the key password does not open it/);
  [c, m] = code(() => readKeyStore({ file: d('wso2carbon.jks'), password: 'wso2carbon', alias: 'missing', source: src }));
  t.equal(c, 'TLS_ALIAS');
  t.match(m, /no private key entry with alias "missing" \(private key entries: wso2carbon\)/);
  [c] = code(() => readKeyStore({ file: d('client-truststore.jks'), password: 'wso2carbon', source: src }));
  t.equal(c, 'TLS_NO_KEY', 'a trust store used as a key store');
  const altered = Buffer.from(fs.readFileSync(d('wso2carbon.jks')));
  altered[100] = (altered[100] as number) ^ 1;
  fs.writeFileSync(d('altered.jks'), altered);
  [c] = code(() => readKeyStore({ file: d('altered.jks'), password: 'wso2carbon', source: src }));
  t.equal(c, 'TLS_PASSWORD', 'an altered file fails the integrity digest');
});

t.test('config check refuses a JKS store its password does not open, as start does, and passes the right one', { skip }, async (t) => {
  const run = async (password: string): Promise<{ code: number; out: string; err: string }> => {
    fs.writeFileSync(
      d('deployment.toml'),
      `[server]\nhostname = "localhost"\n\n[transport.passthru_https]\nlistener.key_store.file_name = "wso2carbon.jks"\nlistener.key_store.password = "${password}"\nlistener.key_store.key_password = "wso2carbon"\nlistener.trust_store.file_name = "client-truststore.jks"\nlistener.trust_store.password = "wso2carbon"\n` +
        'sender.key_store.file_name = "wso2carbon.jks"\nsender.key_store.password = "wso2carbon"\nsender.key_store.key_password = "wso2carbon"\nsender.trust_store.file_name = "client-truststore.jks"\nsender.trust_store.password = "wso2carbon"\n',
    );
    let out = '';
    let err = '';
    const code = await main(['config', 'check', '--config', 'deployment.toml'], {
      cwd: pki.dir,
      out: (s: string) => (out += s),
      err: (s: string) => (err += s),
    } as Parameters<typeof main>[1]);
    return { code, out, err };
  };
  const bad = await run('wrong');
  t.equal(bad.code, 1, 'a wrong store password is an error');
  t.match(bad.err, /TLS_PASSWORD: \[transport\.passthru_https\] listener\.key_store \(password\) .*wso2carbon\.jks/);
  const good = await run('wso2carbon');
  t.equal(good.code, 0, `the reference's default layout passes: ${good.err}`);
  t.match(good.out, /valid/);
});
