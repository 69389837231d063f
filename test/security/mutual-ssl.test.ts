/**
 * [apimgt.mutual_ssl] through a load balancer: the client certificate arrives in certificate_header
 * (URL-encoded PEM when client_certificate_encode) and is checked against the trust store; chain
 * validation follows intermediates the header carries. APIs ask for it with mutual_ssl = "mandatory" or
 * "optional" (docs/apis.md). Certificates are made here with node-forge: a CA, an intermediate, clients.
 */
import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import forge from 'node-forge';
import t from 'tap';
import { api, code, startNode, type Node } from './helpers';

interface Issued {
  readonly cert: forge.pki.Certificate;
  readonly key: forge.pki.PrivateKey;
  readonly pem: string;
}

let serial = 1;
function issue(cn: string, o: { issuer?: Issued; ca?: boolean; from?: Date; to?: Date } = {}): Issued {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }) as string);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }) as string);
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = o.from ?? new Date(Date.now() - 3600_000);
  cert.validity.notAfter = o.to ?? new Date(Date.now() + 365 * 86400_000);
  const attrs = [{ name: 'commonName', value: cn }];
  cert.setSubject(attrs);
  cert.setIssuer(o.issuer !== undefined ? o.issuer.cert.subject.attributes : attrs);
  cert.setExtensions([{ name: 'basicConstraints', cA: o.ca === true }]);
  cert.sign((o.issuer?.key ?? key) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { cert, key, pem: forge.pki.certificateToPem(cert) };
}

const ca = issue('Test Root CA', { ca: true });
const intermediate = issue('Test Intermediate CA', { ca: true, issuer: ca });
const client = issue('client-a', { issuer: ca });
const viaIntermediate = issue('client-b', { issuer: intermediate });
const expired = issue('client-old', { issuer: ca, from: new Date(Date.now() - 7200_000), to: new Date(Date.now() - 3600_000) });
const stranger = issue('client-x', { issuer: issue('Other CA', { ca: true }) });

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-mtls-'));
const trust = path.join(dir, 'client-trust.pem');
fs.writeFileSync(trust, ca.pem);
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

const HEADER = 'X-SSL-Client-Cert';
const enc = (pem: string): string => encodeURIComponent(pem);

async function start(chain: boolean, trustStore = trust): Promise<Node> {
  return startNode(
    (port) => [
      api('m', { auth: 'none', mutual_ssl: 'mandatory' }, undefined, port),
      api('mo', { mutual_ssl: 'optional' }, undefined, port),
      api('mt', { mutual_ssl: 'mandatory' }, undefined, port),
    ],
    `[apimgt.mutual_ssl]\ncertificate_header = "${HEADER}"\nclient_certificate_encode = true\nenable_certificate_chain_validation = ${chain}\n[throughway.security]\nclient_trust_store = "${trustStore}"\n`,
  );
}

t.test('mandatory: missing, untrusted, expired certificates are 900901; a trusted one passes and names the caller', async (t) => {
  const node = await start(false);
  t.teardown(() => node.close());
  const missing = await node.call('/m/1/x');
  t.equal(missing.status, 401);
  t.equal(code(missing), 900901);
  t.match(JSON.parse(missing.body).fault.description, /client certificate is required/);
  t.equal(missing.headers['www-authenticate'], 'Bearer realm="throughway", error="invalid_token"');
  const untrusted = await node.call('/m/1/x', undefined, { [HEADER]: enc(stranger.pem) });
  t.equal(code(untrusted), 900901);
  t.match(JSON.parse(untrusted.body).fault.description, /not issued by a trusted certificate/);
  const old = await node.call('/m/1/x', undefined, { [HEADER]: enc(expired.pem) });
  t.equal(code(old), 900901);
  t.match(JSON.parse(old.body).fault.description, /expired/);
  t.equal(code(await node.call('/m/1/x', undefined, { [HEADER]: 'not%20a%20certificate' })), 900901, 'garbage');
  const ok = await node.call('/m/1/x', undefined, { [HEADER]: enc(client.pem) });
  t.equal(ok.status, 200, 'trusted client certificate (URL-encoded PEM)');
  t.equal((await node.call('/m/1/x', undefined, { [HEADER]: enc(ca.pem) })).status, 200, 'a certificate of the trust store itself');
  const spaced = client.pem.replace(/\r?\n/g, ' ');
  t.equal(
    (await node.call('/m/1/x', undefined, { [HEADER]: encodeURIComponent(spaced) })).status,
    200,
    'PEM with its line breaks turned into spaces',
  );
});

t.test('mandatory with auth = oauth2: the certificate and a token are both needed', async (t) => {
  const node = await start(false);
  t.teardown(() => node.close());
  t.equal(code(await node.call('/mt/1/x', undefined, { [HEADER]: enc(client.pem) })), 900902, 'certificate, no token');
  const app = await node.app('MT', { subscribe: ['mt'] });
  const token = await node.token(app);
  t.equal(code(await node.call('/mt/1/x', token)), 900901, 'token, no certificate');
  t.equal((await node.call('/mt/1/x', token, { [HEADER]: enc(client.pem) })).status, 200, 'both');
});

t.test('optional: a valid certificate replaces the token; an invalid one is refused; none falls back to the token', async (t) => {
  const node = await start(false);
  t.teardown(() => node.close());
  t.equal((await node.call('/mo/1/x', undefined, { [HEADER]: enc(client.pem) })).status, 200, 'certificate only');
  t.equal(code(await node.call('/mo/1/x', undefined, { [HEADER]: enc(stranger.pem) })), 900901, 'an untrusted certificate is not ignored');
  t.equal(code(await node.call('/mo/1/x')), 900902, 'neither: missing credentials');
});

t.test('chain validation: intermediates in the header lead to the trusted root; without it they do not count', async (t) => {
  const chain = enc(viaIntermediate.pem + intermediate.pem);
  const plain = await start(false);
  t.teardown(() => plain.close());
  const refused = await plain.call('/m/1/x', undefined, { [HEADER]: chain });
  t.equal(code(refused), 900901, 'enable_certificate_chain_validation = false: only certificates issued by the trust store');
  const node = await start(true);
  t.teardown(() => node.close());
  t.equal((await node.call('/m/1/x', undefined, { [HEADER]: chain })).status, 200, 'client <- intermediate <- trusted root');
  const alone = await node.call('/m/1/x', undefined, { [HEADER]: enc(viaIntermediate.pem) });
  t.equal(code(alone), 900901, 'the intermediate missing');
  t.match(JSON.parse(alone.body).fault.description, /chain does not lead to a trusted certificate/);
  const notCa = issue('client-c', { issuer: client });
  t.equal(
    code(await node.call('/m/1/x', undefined, { [HEADER]: enc(notCa.pem + client.pem) })),
    900901,
    'a link that is not a CA certificate',
  );
});

t.test('an unreadable trust store trusts nothing, and says so in the log', async (t) => {
  const node = await start(false, path.join(dir, 'missing.pem'));
  t.teardown(() => node.close());
  t.equal(code(await node.call('/m/1/x', undefined, { [HEADER]: enc(client.pem) })), 900901);
  t.ok(node.logger.lines.some((l) => l.event === 'client_trust_store_unreadable'));
});
