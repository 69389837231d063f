/**
 * [apim.jwt] use_sha256_hash (spec 000: "certificate header signed with SHA256 instead of SHA1"): when the
 * signing key comes from a keystore with its certificate ([custom_keystore.*] PEM or PKCS#12), the backend
 * JWT's header names the certificate's thumbprint, `x5t` (SHA-1, RFC 7515 §4.1.7) by default and
 * `x5t#S256` (SHA-256, §4.1.8) with use_sha256_hash; a key without a certificate gets neither.
 */
import { createHash, X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import forge from 'node-forge';
import { selfSigned } from '../../lib/tls/sample';
import { api, received, startNode } from './helpers';

const pair = selfSigned('jwt-signer', ['localhost']);
const der = new X509Certificate(pair.certPem).raw;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-x5t-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
const pemFile = path.join(dir, 'signer.pem');
fs.writeFileSync(pemFile, `${pair.keyPem}${pair.certPem}`);
const p12File = path.join(dir, 'signer.p12');
const p12 = forge.pkcs12.toPkcs12Asn1(forge.pki.privateKeyFromPem(pair.keyPem), [forge.pki.certificateFromPem(pair.certPem)], 'store-pw', {
  algorithm: '3des',
  friendlyName: 'signer',
});
fs.writeFileSync(p12File, Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'));

function header(jwt: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from((jwt ?? '').split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

const keystore = (file: string, type: string): string =>
  `[throughway.key_manager]\nsigning_keystore = "signer"\n[custom_keystore.signer]\nfile_name = "${file}"\ntype = "${type}"\npassword = "store-pw"\nalias = "signer"\n`;

for (const [type, file] of [
  ['PEM', pemFile],
  ['PKCS12', p12File],
] as const) {
  for (const sha256 of [false, true]) {
    t.test(`${type} key with its certificate, use_sha256_hash = ${sha256}`, async (t) => {
      const node = await startNode(
        (port) => [api('x5', {}, undefined, port)],
        `[apim.jwt]\nenable = true\nencoding = "base64url"\nuse_sha256_hash = ${sha256}\n${keystore(file, type)}`,
      );
      t.teardown(() => node.close());
      const app = await node.app('X5', { subscribe: ['x5'] });
      t.equal((await node.call('/x5/1/x', await node.token(app))).status, 200);
      const h = header(received(node.backend, 'X-JWT-Assertion'));
      if (sha256) {
        t.equal(h['x5t#S256'], createHash('sha256').update(der).digest('base64url'), 'x5t#S256: the SHA-256 thumbprint of the certificate');
        t.notOk('x5t' in h);
      } else {
        t.equal(h.x5t, createHash('sha1').update(der).digest('base64url'), 'x5t: the SHA-1 thumbprint of the certificate');
        t.notOk('x5t#S256' in h);
      }
      t.equal(h.alg, 'RS256');
    });
  }
}

t.test("a key without a certificate (the key ring's own): no thumbprint", async (t) => {
  const node = await startNode(
    (port) => [api('x5', {}, undefined, port)],
    `[apim.jwt]\nenable = true\nencoding = "base64url"\nuse_sha256_hash = true\n`,
  );
  t.teardown(() => node.close());
  const app = await node.app('X5', { subscribe: ['x5'] });
  t.equal((await node.call('/x5/1/x', await node.token(app))).status, 200);
  const h = header(received(node.backend, 'X-JWT-Assertion'));
  t.notOk('x5t' in h || 'x5t#S256' in h);
});
