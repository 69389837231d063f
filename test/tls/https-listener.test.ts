/**
 * The HTTPS listener ([transport.passthru_https]): real handshakes with certificates made here. PEM and
 * PKCS#12 key stores, a JKS file its password does not open, mutual TLS required and refused (the client
 * certificate reaches the router), protocol and cipher restrictions, certificates reloaded without a
 * restart while an open connection keeps its own, and the sample key pair of the embedded default.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl, type SourceRequest } from '../../lib/transport';
import { serverOptions, watchCertificates, opensslCipher, listenerTlsSettings, type ListenerTlsSettings } from '../../lib/tls/settings';
import { readKeyStore, readTrustStore, detectFormat, TlsStoreError } from '../../lib/tls/keystore';
import { ensureSampleKeystore } from '../../lib/tls/sample';
import { loadConfig } from '../../lib/config/load';
import { silentLogger } from '../../lib/log';
import * as http2 from 'node:http2';
import { http2Handover, DEFAULT_HTTP2_SETTINGS } from '../../lib/http2';
import { HOST, get, makePki, pkcs12, pkcs12Trust, tlsRequest } from './helpers';

const pki = makePki();
t.teardown(() => pki.cleanup());
const keyStoreFile = pki.write('server.pem', pki.server.keyPem + pki.server.certPem);
const caFile = pki.write('ca.pem', pki.ca.certPem);

function settings(over: Partial<ListenerTlsSettings> = {}): ListenerTlsSettings {
  return {
    keyStore: { file: keyStoreFile, type: 'PEM', source: 'test key store' },
    trustStore: undefined,
    verifyClient: 'none',
    minVersion: undefined,
    maxVersion: undefined,
    ciphers: undefined,
    profileFile: undefined,
    reloadInterval: 0,
    ...over,
  };
}

/** A plain backend answering with what it saw, and a transport listening with TLS in front of it. */
async function start(t: Test, opts: tls.TlsOptions, route?: (req: SourceRequest) => void, h2 = false) {
  const backend = net.createServer((c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d.toString('latin1');
      if (!buf.includes('\r\n\r\n')) return;
      const body = JSON.stringify({ head: buf });
      buf = '';
      c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    });
  });
  await new Promise<void>((resolve) => backend.listen(0, HOST, () => resolve()));
  const target = targetFromUrl(`http://${HOST}:${(backend.address() as net.AddressInfo).port}`);
  const transport = createTransport({
    route: (req) => {
      route?.(req);
      return { target };
    },
    settings: { shutdownTimeout: 200 },
  });
  const handover = h2 ? http2Handover((s, secure, v) => transport.handleConnection(s, secure, v), DEFAULT_HTTP2_SETTINGS) : undefined;
  const server = await transport.listenTls({ port: 0, host: HOST, ...(handover !== undefined ? { handover } : {}) }, opts);
  t.teardown(async () => {
    await handover?.close(200);
    await transport.close();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  return { port: (server.address() as net.AddressInfo).port, server, transport };
}

t.test('PEM key store: HTTPS proxied to a plain backend, X-Forwarded-Proto https, req.secure', async (t) => {
  let secure: boolean | undefined;
  const h = await start(t, serverOptions(settings(), undefined), (req) => (secure = req.secure));
  const r = await tlsRequest(h.port, { ca: pki.ca.certPem }, get('/pets'));
  t.ok(r.ok, 'handshake and response');
  t.match(r.response, /^HTTP\/1\.1 200 OK/);
  t.match(r.response, /X-Forwarded-Proto: https/, 'the backend is told the client used https');
  t.equal(r.peerCN, 'localhost', "the listener's certificate");
  t.equal(secure, true, 'the router sees a secure request');
  const untrusting = await tlsRequest(h.port, {}, get());
  t.notOk(untrusting.ok, 'a client without the CA refuses the certificate');
});

t.test('PKCS#12 key store (Node pfx), detected by its bytes whatever the configured type', async (t) => {
  const p12 = pki.write('server.p12', pkcs12(pki.server, 'secret', [pki.ca]));
  t.equal(detectFormat(fs.readFileSync(p12)), 'PKCS12');
  const opts = serverOptions(settings({ keyStore: { file: p12, type: 'JKS', password: 'secret', source: 'p12' } }), undefined);
  t.ok(Buffer.isBuffer(opts.pfx), 'read as pfx');
  const h = await start(t, opts);
  const r = await tlsRequest(h.port, { ca: pki.ca.certPem }, get());
  t.match(r.response, /^HTTP\/1\.1 200/);
  t.throws(
    () => tls.createSecureContext(serverOptions(settings({ keyStore: { file: p12, password: 'wrong', source: 'p12' } }), undefined)),
    'a wrong password fails at start',
  );
});

t.test(
  'a JKS file whose digest the password does not open is a coded start-up error naming the keys (java-stores.test.ts reads real ones)',
  async (t) => {
    const jks = pki.write('wso2carbon.jks', Buffer.concat([Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]), Buffer.alloc(64)]));
    t.equal(detectFormat(fs.readFileSync(jks)), 'JKS');
    try {
      readKeyStore({ file: jks, type: 'JKS', password: 'x', source: '[transport.passthru_https] listener.key_store' });
      t.fail('must not load');
    } catch (err) {
      t.ok(err instanceof TlsStoreError);
      t.equal((err as TlsStoreError).code, 'TLS_PASSWORD');
      t.match(
        (err as Error).message,
        /\[transport\.passthru_https\] listener\.key_store \(password\) .*wso2carbon\.jks/,
        'names the configuration keys and the file',
      );
    }
  },
);

t.test(
  'mutual TLS required: a client certificate from the trust store passes and reaches the router; none or a stranger is refused',
  async (t) => {
    let cn: string | undefined;
    const opts = serverOptions(
      settings({ trustStore: { file: caFile, type: 'PEM', source: 'trust' }, verifyClient: 'require' }),
      undefined,
    );
    const h = await start(t, opts, (req) => (cn = (req.peerCertificate?.()?.subject as { CN?: string } | undefined)?.CN));
    const good = await tlsRequest(h.port, { ca: pki.ca.certPem, key: pki.client.keyPem, cert: pki.client.certPem }, get());
    t.match(good.response, /^HTTP\/1\.1 200/, 'alice is served');
    t.equal(cn, 'alice', 'the authentication phase can read the client certificate');
    const none = await tlsRequest(h.port, { ca: pki.ca.certPem }, get());
    t.notMatch(none.response ?? '', /HTTP\/1\.1 200/, 'no certificate: no response');
    const stranger = await tlsRequest(
      h.port,
      { ca: pki.ca.certPem, key: pki.strangerClient.keyPem, cert: pki.strangerClient.certPem },
      get(),
    );
    t.notMatch(stranger.response ?? '', /HTTP\/1\.1 200/, 'a certificate from another CA: no response');
    t.throws(
      () => serverOptions(settings({ verifyClient: 'require' }), undefined),
      /needs .*trust_store/,
      'require without a trust store is a start-up error',
    );
  },
);

t.test('mutual TLS over HTTP/2: each stream of the session sees the certificate the client presented', async (t) => {
  const cns: (string | undefined)[] = [];
  const opts = serverOptions(settings({ trustStore: { file: caFile, type: 'PEM', source: 'trust' }, verifyClient: 'require' }), undefined);
  const h = await start(t, opts, (req) => cns.push((req.peerCertificate?.()?.subject as { CN?: string } | undefined)?.CN), true);
  const session = http2.connect(`https://localhost:${h.port}`, { ca: pki.ca.certPem, key: pki.client.keyPem, cert: pki.client.certPem });
  session.on('error', () => undefined);
  t.teardown(() => session.close());
  const status = (p: string) =>
    new Promise<number>((resolve, reject) => {
      const req = session.request({ ':path': p });
      let st = 0;
      req.on('response', (hd) => (st = Number(hd[':status'])));
      req.on('end', () => resolve(st));
      req.on('error', reject);
      req.resume();
    });
  t.same(await Promise.all([status('/a'), status('/b'), status('/c')]), [200, 200, 200]);
  t.equal(session.alpnProtocol, 'h2');
  t.same(cns, ['alice', 'alice', 'alice'], "the route read the client's certificate on every stream");
});

t.test('listener.protocols: TLSv1.2 only refuses a TLS 1.3-only client', async (t) => {
  const h = await start(t, serverOptions(settings({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }), undefined));
  const r = await tlsRequest(h.port, { ca: pki.ca.certPem });
  t.equal(r.protocol, 'TLSv1.2', 'negotiated down to 1.2');
  const only13 = await tlsRequest(h.port, { ca: pki.ca.certPem, minVersion: 'TLSv1.3' });
  t.notOk(only13.ok, 'a client that speaks only 1.3 is refused');
  const full = await start(t, serverOptions(settings(), undefined));
  t.equal((await tlsRequest(full.port, { ca: pki.ca.certPem })).protocol, 'TLSv1.3', 'unrestricted: 1.3');
});

t.test('listener.preferred_ciphers: IANA names converted; a client without a listed cipher is refused', async (t) => {
  t.equal(opensslCipher('TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'), 'ECDHE-RSA-AES128-GCM-SHA256');
  t.equal(opensslCipher('TLS_RSA_WITH_AES_256_GCM_SHA384'), 'AES256-GCM-SHA384');
  t.equal(opensslCipher('TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256'), 'ECDHE-RSA-CHACHA20-POLY1305');
  t.equal(opensslCipher('TLS_AES_128_GCM_SHA256'), 'TLS_AES_128_GCM_SHA256', 'TLS 1.3 names unchanged');
  const h = await start(t, serverOptions(settings({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' }), undefined));
  const r = await tlsRequest(h.port, { ca: pki.ca.certPem });
  t.equal(r.cipher, 'ECDHE-RSA-AES128-GCM-SHA256');
  const other = await tlsRequest(h.port, { ca: pki.ca.certPem, maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' });
  t.notOk(other.ok, 'no common cipher: refused');
});

t.test('certificate reload without restart: new connections get the new certificate, an open one keeps its own', async (t) => {
  const file = pki.write('reloading.pem', pki.server.keyPem + pki.server.certPem);
  const s = settings({ keyStore: { file, type: 'PEM', source: 'reloading' }, reloadInterval: 30 });
  const h = await start(t, serverOptions(s, undefined));
  const stop = watchCertificates([h.server], s, undefined, silentLogger);
  t.teardown(stop);
  // An open keep-alive connection, before the change.
  const open = tls.connect({ host: HOST, port: h.port, servername: 'localhost', ca: pki.ca.certPem });
  await new Promise<void>((resolve) => open.once('secureConnect', () => resolve()));
  t.teardown(() => open.destroy());
  const { selfSigned } = await import('../../lib/tls/sample');
  const renewed = selfSigned('renewed.localhost', ['localhost', '127.0.0.1'], { issuer: pki.ca, bits: 2048 });
  fs.writeFileSync(file + '.tmp', renewed.keyPem + renewed.certPem);
  fs.renameSync(file + '.tmp', file);
  let cn: string | undefined;
  for (let i = 0; i < 100 && cn !== 'renewed.localhost'; i++) {
    await new Promise((r) => setTimeout(r, 30));
    cn = (await tlsRequest(h.port, { ca: pki.ca.certPem })).peerCN;
  }
  t.equal(cn, 'renewed.localhost', 'a new connection sees the new certificate');
  t.equal((open.getPeerCertificate().subject as { CN?: string }).CN, 'localhost', 'the open connection keeps the old one');
  const answer = await new Promise<string>((resolve) => {
    let d = '';
    open.on('data', (b: Buffer) => {
      d += b.toString('latin1');
      if (d.includes('"}')) resolve(d);
    });
    open.write(get('/still-open'));
  });
  t.match(answer, /^HTTP\/1\.1 200/, 'and is still served');
});

t.test('sample key pair: generated once under var/security, reused, serves TLS for localhost', async (t) => {
  const first = ensureSampleKeystore(pki.dir, 'gw.example');
  t.ok(first.created);
  t.equal(first.file, path.join(pki.dir, 'var', 'security', 'throughway-sample.pem'));
  t.equal(fs.statSync(first.file).mode & 0o777, 0o600, 'private key readable by the owner only');
  const again = ensureSampleKeystore(pki.dir, 'gw.example');
  t.notOk(again.created, 'the second start reuses it');
  const h = await start(t, serverOptions(settings({ keyStore: undefined }), first.file));
  const r = await tlsRequest(h.port, { rejectUnauthorized: false, checkServerIdentity: () => undefined }, get());
  t.match(r.response, /^HTTP\/1\.1 200/);
  t.equal(r.peerCN, 'gw.example');
  const cert = new (await import('node:crypto')).X509Certificate(fs.readFileSync(first.file));
  t.match(cert.subjectAltName, /DNS:localhost/);
  t.match(cert.subjectAltName, /IP Address:127\.0\.0\.1/);
});

t.test('deployment.toml keys: protocols, ciphers, SSLVerifyClient, stores and the reload interval', async (t) => {
  const toml = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "a"\npassword = "a"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n
[transport.passthru_https]
listener.parameters.SSLVerifyClient = "require"
listener.protocols = "TLSv1.2,TLSv1.3"
listener.preferred_ciphers = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256"
listener.ssl_profile_interval = "10m"
listener.key_store.file_name = "server.pem"
listener.key_store.type = "PEM"
listener.key_store.password = "x"
listener.key_store.key_password = "x"
listener.trust_store.file_name = "ca.pem"
listener.trust_store.type = "PEM"
listener.trust_store.password = "x"
sender.key_store.file_name = "server.pem"
sender.key_store.password = "x"
sender.key_store.key_password = "x"
sender.trust_store.file_name = "ca.pem"
sender.trust_store.password = "x"
`;
  // Relative store paths resolve against the configuration's directory.
  const loaded = loadConfig({ text: toml, file: path.join(pki.dir, 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error')));
  if (!loaded.ok) return;
  const s = listenerTlsSettings(loaded.config, pki.dir);
  t.equal(s.verifyClient, 'require');
  t.equal(s.minVersion, 'TLSv1.2');
  t.equal(s.maxVersion, 'TLSv1.3');
  t.equal(s.ciphers, 'ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256');
  t.equal(s.reloadInterval, 600_000);
  t.equal(s.keyStore?.file, keyStoreFile);
  const opts = serverOptions(s, undefined);
  t.equal(opts.requestCert, true);
  t.equal(opts.rejectUnauthorized, true);
});

t.test('trust stores: PEM and PKCS#12 (certificates only, read with node-forge)', async (t) => {
  const p12 = pki.write('trust.p12', pkcs12Trust([pki.ca, pki.otherCa], 'changeit'));
  const certs = readTrustStore({ file: p12, type: 'PKCS12', password: 'changeit', source: 'trust' });
  t.equal(certs.length, 2, 'both certificates');
  t.ok(
    certs.every((c) => c.startsWith('-----BEGIN CERTIFICATE-----')),
    'as PEM for tls `ca`',
  );
  t.same(readTrustStore({ file: caFile, source: 'pem' }), [pki.ca.certPem.trim()], 'PEM: the CERTIFICATE blocks');
  t.throws(() => readTrustStore({ file: p12, password: 'wrong', source: 'trust' }), /PKCS#12 not readable/);
  const opts = serverOptions(
    settings({ trustStore: { file: p12, password: 'changeit', source: 'trust' }, verifyClient: 'require' }),
    undefined,
  );
  const h = await start(t, opts);
  const r = await tlsRequest(h.port, { ca: pki.ca.certPem, key: pki.strangerClient.keyPem, cert: pki.strangerClient.certPem }, get());
  t.match(r.response, /^HTTP\/1\.1 200/, 'a client of the second CA in the PKCS#12 trust store is accepted');
});

t.test('ssl_profile.file_path: the reference profile XML gives the stores; a changed profile is reloaded', async (t) => {
  const { selfSigned } = await import('../../lib/tls/sample');
  const other = selfSigned('profile.localhost', ['localhost', '127.0.0.1'], { issuer: pki.ca, bits: 2048 });
  const otherFile = pki.write('other.pem', other.keyPem + other.certPem);
  const profile = (ks: string, verify: string) =>
    `<parameter name="SSLProfiles"><profile><bindAddress>0.0.0.0</bindAddress><KeyStore><Location>${ks}</Location><Type>PEM</Type><Password>x</Password><KeyPassword>x</KeyPassword></KeyStore><TrustStore><Location>ca.pem</Location><Type>PEM</Type><Password>x</Password></TrustStore><SSLVerifyClient>${verify}</SSLVerifyClient></profile></parameter>`;
  const profileFile = pki.write('listenerprofiles.xml', profile('server.pem', 'optional'));
  const s = settings({ keyStore: undefined, profileFile, reloadInterval: 30 });
  const opts = serverOptions(s, undefined);
  t.equal(opts.requestCert, true, 'SSLVerifyClient from the profile');
  t.equal(opts.rejectUnauthorized, false, 'optional: asked, not required');
  const h = await start(t, opts);
  const stop = watchCertificates([h.server], s, undefined, silentLogger);
  t.teardown(stop);
  t.equal(
    (await tlsRequest(h.port, { ca: pki.ca.certPem })).peerCN,
    'localhost',
    'the key store the profile names (relative to the profile file)',
  );
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(profileFile, profile(path.basename(otherFile), 'optional') + ' ');
  let cn: string | undefined;
  for (let i = 0; i < 100 && cn !== 'profile.localhost'; i++) {
    await new Promise((r) => setTimeout(r, 30));
    cn = (await tlsRequest(h.port, { ca: pki.ca.certPem })).peerCN;
  }
  t.equal(cn, 'profile.localhost', 'the profile now names another key store: new connections use it');
});
