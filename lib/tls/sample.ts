/**
 * The sample key pair of the embedded default (docs/tls.md): generated on first start, never committed, kept
 * next to the embedded database (var/, like var/apim_db.sqlite) as one PEM key store, var/security/
 * throughway-sample.pem (private key and self-signed certificate, mode 0600). The HTTPS listeners and the
 * management HTTPS server use it when no key store file is configured (docs/tls.md).
 *
 * Node's crypto makes the RSA key; node-forge makes the X.509 certificate, which Node cannot create by
 * itself (a well-kept library instead of shelling out to an `openssl` that may be
 * missing or differ between hosts).
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type forge from 'node-forge';
import { load } from '../config/packages';

/** node-forge, loaded when a certificate is made (lib/config/packages.ts). */
const forgeLib = (): typeof forge =>
  load<typeof forge>('node-forge', 'the sample key store (no [transport.passthru_https.listener] key_store)');

export const SAMPLE_KEYSTORE = path.join('var', 'security', 'throughway-sample.pem');

export interface SelfSigned {
  readonly keyPem: string;
  readonly certPem: string;
}

/**
 * A self-signed certificate for `names` (DNS names and IP addresses go into subjectAltName, RFC 6125:
 * clients match the host there, not in the CN), optionally signed by `issuer` (tests build small CAs).
 */
export function selfSigned(
  commonName: string,
  names: readonly string[],
  options: { days?: number; issuer?: SelfSigned; ca?: boolean; bits?: number } = {},
): SelfSigned {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: options.bits ?? 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const forge = forgeLib();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }) as string);
  cert.serialNumber = '01' + crypto.randomBytes(15).toString('hex');
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + (options.days ?? 825) * 86_400_000);
  const subject = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'throughway' },
  ];
  cert.setSubject(subject);
  let signer = forge.pki.privateKeyFromPem(keyPem);
  if (options.issuer !== undefined) {
    cert.setIssuer(forge.pki.certificateFromPem(options.issuer.certPem).subject.attributes);
    signer = forge.pki.privateKeyFromPem(options.issuer.keyPem);
  } else {
    cert.setIssuer(subject);
  }
  const altNames = names.map((n) => (/^[\d.]+$/.test(n) || n.includes(':') ? { type: 7, ip: n } : { type: 2, value: n }));
  const extensions: object[] = [{ name: 'basicConstraints', cA: options.ca === true }];
  if (options.ca === true) extensions.push({ name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true });
  else
    extensions.push(
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    );
  if (altNames.length > 0) extensions.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(extensions);
  cert.sign(signer, forge.md.sha256.create());
  return { keyPem, certPem: forge.pki.certificateToPem(cert) };
}

/**
 * The sample key store under `cwd`: read when present, generated (for localhost, `hostname` and
 * 127.0.0.1) when not. Returns its path and whether it was made now.
 */
export function ensureSampleKeystore(cwd: string, hostname: string): { file: string; created: boolean } {
  const file = path.resolve(cwd, SAMPLE_KEYSTORE);
  if (fs.existsSync(file)) return { file, created: false };
  const names = [...new Set(['localhost', hostname, '127.0.0.1', '::1'])];
  const pair = selfSigned(hostname, names);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Written aside and renamed: two nodes starting at once never read half a file.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, pair.keyPem + pair.certPem, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return { file, created: true };
}
