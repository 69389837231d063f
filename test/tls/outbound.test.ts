/**
 * Outbound TLS for `https://` endpoints: the sender trust store decides which backends are trusted,
 * each hostname verifier mode (AllowAll, DefaultAndLocalhost, Strict) accepts or refuses a certificate
 * that does not name the host (103080, 502), the sender key store gives the client certificate a backend
 * requires, SNI names the host, and a pool resumes its TLS session on new connections.
 */
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl, type TransportFault, type Outbound } from '../../lib/transport';
import { checkServerIdentityFor, type HostnameVerifier } from '../../lib/transport/verify';
import { outboundFrom } from '../../lib/tls/settings';
import { loadConfig } from '../../lib/config/load';
import { selfSigned } from '../../lib/tls/sample';
import { HOST, makePki } from './helpers';
import * as path from 'node:path';

const pki = makePki();
t.teardown(() => pki.cleanup());
/** A certificate that names only backend.test: wrong for 127.0.0.1 and localhost. */
const wrongName = selfSigned('backend.test', ['backend.test'], { issuer: pki.ca, bits: 2048 });

interface Backend {
  readonly port: number;
  readonly seen: { servername: string | false | null; reused: boolean; clientCN: string | undefined }[];
  close(): Promise<void>;
}

async function httpsBackend(cert: { keyPem: string; certPem: string }, opts: https.ServerOptions = {}): Promise<Backend> {
  const seen: Backend['seen'] = [];
  const server = https.createServer({ key: cert.keyPem, cert: cert.certPem, ...opts }, (req, res) => {
    const s = req.socket as tls.TLSSocket;
    seen.push({
      servername: s.servername,
      reused: s.isSessionReused(),
      clientCN: (s.getPeerCertificate()?.subject as { CN?: string } | undefined)?.CN,
    });
    res.end('secure hello');
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function outbound(mode: HostnameVerifier, extra: tls.SecureContextOptions = {}): Outbound {
  return { tls: { context: tls.createSecureContext({ ca: pki.ca.certPem, ...extra }), checkServerIdentity: checkServerIdentityFor(mode) } };
}

async function call(t: Test, url: string, ob: Outbound, requests = 1, settings = {}) {
  const target = targetFromUrl(url, ob);
  const faults: TransportFault[] = [];
  const transport = createTransport({
    route: () => ({ target }),
    settings: { shutdownTimeout: 200, ...settings },
    events: { onFault: (f) => faults.push(f) },
  });
  const a = await transport.listen({ port: 0, host: HOST });
  t.teardown(() => transport.close());
  const answers: { status: number; body: string }[] = [];
  for (let i = 0; i < requests; i++) {
    answers.push(
      await new Promise((resolve) => {
        const c = net.connect(a.port, HOST);
        let d = '';
        c.on('data', (b) => (d += b.toString('latin1')));
        c.on('close', () => resolve({ status: Number(d.slice(9, 12)), body: d.slice(d.indexOf('\r\n\r\n') + 4) }));
        c.write('GET /x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n');
      }),
    );
  }
  return { answers, faults };
}

t.test('trusted backend: proxied over TLS; SNI names the host; an untrusted CA is 103080', async (t) => {
  const b = await httpsBackend(pki.server);
  t.teardown(() => b.close());
  const ok = await call(t, `https://localhost:${b.port}/`, outbound('Strict'));
  t.same(ok.answers[0], { status: 200, body: 'secure hello' });
  t.equal(b.seen[0]?.servername, 'localhost', 'SNI sent');
  const ip = await call(t, `https://127.0.0.1:${b.port}/`, outbound('Strict'));
  t.equal(ip.answers[0]?.status, 200, 'an IP SAN matches an IP endpoint');
  t.equal(b.seen[1]?.servername, false, 'no SNI for an IP address (RFC 6066 §3)');
  const untrusted = await call(t, `https://localhost:${b.port}/`, {
    tls: { context: tls.createSecureContext({ ca: pki.otherCa.certPem }), checkServerIdentity: checkServerIdentityFor('AllowAll') },
  });
  t.equal(untrusted.answers[0]?.status, 502);
  t.match(untrusted.answers[0]?.body, /"code":103080/);
  t.equal(untrusted.faults[0]?.reason, 'tls_handshake', 'AllowAll still verifies the chain');
});

t.test('hostname verifiers against a certificate naming only backend.test', async (t) => {
  const b = await httpsBackend(wrongName);
  t.teardown(() => b.close());
  const strict = await call(t, `https://127.0.0.1:${b.port}/`, outbound('Strict'));
  t.equal(strict.answers[0]?.status, 502, 'Strict refuses');
  t.equal(strict.faults[0]?.code, 103080);
  t.match(strict.faults[0]?.cause, /ERR_TLS_CERT_ALTNAME_INVALID/);
  const local = await call(t, `https://127.0.0.1:${b.port}/`, outbound('DefaultAndLocalhost'));
  t.equal(local.answers[0]?.status, 200, 'DefaultAndLocalhost accepts any name for 127.0.0.1');
  const localName = await call(t, `https://localhost:${b.port}/`, outbound('DefaultAndLocalhost'));
  t.equal(localName.answers[0]?.status, 200, '... and for localhost');
  const all = await call(t, `https://localhost:${b.port}/`, outbound('AllowAll'));
  t.equal(all.answers[0]?.status, 200, 'AllowAll accepts');
});

t.test('verifier rules: wildcards one label deep (Strict) or several (Default), localhost only in DefaultAndLocalhost', async (t) => {
  const cert = { subject: { CN: 'x' }, subjectaltname: 'DNS:*.example.test' } as unknown as tls.PeerCertificate;
  const strict = checkServerIdentityFor('Strict');
  const dflt = checkServerIdentityFor('DefaultAndLocalhost');
  t.equal(strict('a.example.test', cert), undefined, 'Strict: one label');
  t.ok(strict('a.b.example.test', cert) instanceof Error, 'Strict: not two labels');
  t.equal(dflt('a.b.example.test', cert), undefined, 'Default: several labels');
  t.ok(dflt('example.test', cert) instanceof Error, 'Default: not the bare domain');
  t.ok(dflt('a.other.test', cert) instanceof Error, 'Default: not another domain');
  t.ok(strict('localhost', cert) instanceof Error, 'Strict: localhost is checked like any name');
  t.equal(dflt('localhost', cert), undefined, 'DefaultAndLocalhost: localhost accepted');
  const tld = { subject: { CN: 'x' }, subjectaltname: 'DNS:*.test' } as unknown as tls.PeerCertificate;
  t.ok(dflt('a.b.test', tld) instanceof Error, 'no wildcard over a whole top-level domain');
});

t.test('sender key store: the client certificate a backend requires', async (t) => {
  const b = await httpsBackend(pki.server, { requestCert: true, rejectUnauthorized: true, ca: pki.ca.certPem });
  t.teardown(() => b.close());
  const without = await call(t, `https://localhost:${b.port}/`, outbound('Strict'));
  t.not(without.answers[0]?.status, 200, 'no client certificate: refused by the backend');
  const withCert = await call(t, `https://localhost:${b.port}/`, outbound('Strict', { key: pki.client.keyPem, cert: pki.client.certPem }));
  t.equal(withCert.answers[0]?.status, 200);
  t.equal(b.seen.at(-1)?.clientCN, 'alice', 'the backend saw the sender certificate');
});

t.test('TLS session reuse: a new connection of the pool resumes the last session', async (t) => {
  const b = await httpsBackend(pki.server);
  t.teardown(() => b.close());
  // One backend connection per request, so each request makes a new TLS connection.
  const r = await call(t, `https://localhost:${b.port}/`, outbound('Strict'), 3, { disableKeepAlive: true });
  t.same(
    r.answers.map((a) => a.status),
    [200, 200, 200],
  );
  t.equal(b.seen[0]?.reused, false, 'the first handshake is full');
  t.ok(
    b.seen.slice(1).some((s) => s.reused),
    'a later connection resumed the session',
  );
});

t.test('configuration: sender stores and hostname_verifier from deployment.toml; JKS only when used', async (t) => {
  const caFile = pki.write('ca.pem', pki.ca.certPem);
  const jks = pki.write('client.jks', Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0]));
  const toml = (
    trust: string,
  ) => `[server]\nhostname = "localhost"\n[super_admin]\nusername = "a"\npassword = "a"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n
[transport.passthru_https]
sender.hostname_verifier = "Strict"
listener.key_store.file_name = "x.pem"
listener.key_store.password = "x"
listener.key_store.key_password = "x"
listener.trust_store.file_name = "x.pem"
listener.trust_store.password = "x"
sender.key_store.file_name = ""
sender.key_store.password = "x"
sender.key_store.key_password = "x"
sender.trust_store.file_name = "${trust}"
sender.trust_store.password = "x"
`;
  const good = loadConfig({ text: toml(caFile), file: path.join(pki.dir, 'deployment.toml') });
  t.ok(good.ok);
  if (!good.ok) return;
  const b = await httpsBackend(wrongName);
  t.teardown(() => b.close());
  const ob = outboundFrom(good.config, pki.dir);
  const r = await call(t, `https://127.0.0.1:${b.port}/`, ob);
  t.equal(r.faults[0]?.code, 103080, 'Strict from the file refuses the wrong name');
  const bad = loadConfig({ text: toml(jks), file: path.join(pki.dir, 'deployment.toml') });
  if (!bad.ok) return;
  const lazy = outboundFrom(bad.config, pki.dir);
  t.doesNotThrow(() => targetFromUrl('http://127.0.0.1:1/', lazy), 'a JKS sender store is no error for http:// endpoints');
  t.throws(
    () => targetFromUrl('https://127.0.0.1:1/', lazy),
    /sender\.(key|trust)_store.* .*client\.jks: shorter than/,
    'but is for the first https:// endpoint (a broken store)',
  );
});
