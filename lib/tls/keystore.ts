/**
 * Key stores and trust stores (spec 001 [transport.passthru_https] key_store/trust_store, and
 * [custom_keystore.*]) read into what Node's TLS takes.
 *
 * The spec's default type name is JKS, a Java format Node cannot read; the written `type` is therefore
 * only a hint and the real format is taken from the file's bytes: PEM text, PKCS#12 (DER, Node reads it
 * as `pfx`) or JKS (magic 0xFEEDFEED, refused with the keytool command that converts it). A JKS file is
 * an error only when an enabled listener or sender really uses it (docs/tls.md).
 *
 * node-forge reads the certificates out of a PKCS#12 trust store: Node's TLS accepts a pfx only together
 * with a private key, and a trust store has none (node-forge reads PKCS#12).
 */
import * as fs from 'node:fs';
import type forge from 'node-forge';
import { load } from '../config/packages';

export type StoreFormat = 'PEM' | 'PKCS12' | 'JKS';

/** What a store section says: file, type (a hint), passwords. */
export interface StoreRef {
  readonly file: string;
  readonly type?: string | undefined;
  readonly password?: string | undefined;
  readonly keyPassword?: string | undefined;
  /** The config keys it came from, for messages ("[transport.passthru_https] listener.key_store"). */
  readonly source: string;
}

/** A private key with its certificate chain, in the shape tls.createSecureContext takes. */
export interface KeyMaterial {
  readonly pfx?: Buffer;
  readonly key?: Buffer;
  readonly cert?: Buffer;
  readonly passphrase?: string;
}

/** Why a store cannot be used; `code` is stable (TLS_JKS, TLS_READ, TLS_FORMAT, TLS_NO_KEY, TLS_NO_CERT). */
export class TlsStoreError extends Error {
  constructor(
    readonly code: 'TLS_JKS' | 'TLS_READ' | 'TLS_FORMAT' | 'TLS_NO_KEY' | 'TLS_NO_CERT',
    message: string,
  ) {
    super(message);
    this.name = 'TlsStoreError';
  }
}

const JKS_MAGIC = 0xfeedfeed;
/** JCEKS, the other Java keystore format keytool writes. */
const JCEKS_MAGIC = 0xcececece;

/** The format of a store, from its bytes (never from its name or the configured type). */
export function detectFormat(bytes: Buffer): StoreFormat | undefined {
  if (bytes.length >= 4) {
    const magic = bytes.readUInt32BE(0);
    if (magic === JKS_MAGIC || magic === JCEKS_MAGIC) return 'JKS';
  }
  // DER SEQUENCE: PKCS#12 PFX (RFC 7292 §4).
  if (bytes.length > 2 && bytes[0] === 0x30) return 'PKCS12';
  if (bytes.toString('latin1', 0, Math.min(bytes.length, 4096)).includes('-----BEGIN ')) return 'PEM';
  return undefined;
}

function read(ref: StoreRef): { bytes: Buffer; format: StoreFormat } {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(ref.file);
  } catch (err) {
    throw new TlsStoreError('TLS_READ', `${ref.source} ${ref.file}: ${(err as Error).message}`);
  }
  const format = detectFormat(bytes);
  if (format === undefined) throw new TlsStoreError('TLS_FORMAT', `${ref.source} ${ref.file}: neither PEM nor PKCS#12 nor JKS`);
  if (format === 'JKS') {
    // Node's TLS reads PEM and PKCS#12 only; keytool converts (JDK 8 and later).
    throw new TlsStoreError(
      'TLS_JKS',
      `${ref.source} ${ref.file} is a Java keystore (JKS), which Node cannot read. Convert it to PKCS#12 and set type = "PKCS12":\n` +
        `  keytool -importkeystore -srckeystore ${ref.file} -srcstoretype JKS -destkeystore ${pkcs12Name(ref.file)} -deststoretype PKCS12`,
    );
  }
  return { bytes, format };
}

function pkcs12Name(file: string): string {
  return file.replace(/\.(jks|keystore)$/i, '') + '.p12';
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;

function pemBlocks(text: string): { label: string; pem: string }[] {
  const out: { label: string; pem: string }[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) out.push({ label: m[1] as string, pem: m[0] });
  return out;
}

/** A key store: a private key and its certificate chain. */
export function readKeyStore(ref: StoreRef): KeyMaterial {
  const { bytes, format } = read(ref);
  if (format === 'PKCS12') {
    // One passphrase in Node's pfx: the spec says to keep key_password equal to the store password.
    return ref.password !== undefined ? { pfx: bytes, passphrase: ref.password } : { pfx: bytes };
  }
  const blocks = pemBlocks(bytes.toString('latin1'));
  const keys = blocks.filter((b) => b.label.endsWith('PRIVATE KEY'));
  const certs = blocks.filter((b) => b.label === 'CERTIFICATE');
  if (keys.length === 0) throw new TlsStoreError('TLS_NO_KEY', `${ref.source} ${ref.file}: no PRIVATE KEY block (a PEM key store holds the key and its certificate chain)`);
  if (certs.length === 0) throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no CERTIFICATE block`);
  const passphrase = ref.keyPassword ?? ref.password;
  const key = Buffer.from((keys[0] as { pem: string }).pem + '\n', 'latin1');
  const cert = Buffer.from(certs.map((c) => c.pem).join('\n') + '\n', 'latin1');
  return passphrase !== undefined && (keys[0] as { label: string }).label.startsWith('ENCRYPTED') ? { key, cert, passphrase } : { key, cert };
}

/** A trust store: the certificates trusted as issuers (PEM text for tls `ca`). */
export function readTrustStore(ref: StoreRef): string[] {
  const { bytes, format } = read(ref);
  if (format === 'PEM') {
    const certs = pemBlocks(bytes.toString('latin1')).filter((b) => b.label === 'CERTIFICATE');
    if (certs.length === 0) throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no CERTIFICATE block`);
    return certs.map((c) => c.pem);
  }
  const forge = load<typeof import('node-forge')>('node-forge', `${ref.source} (a PKCS#12 trust store)`);
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    const asn1 = forge.asn1.fromDer(forge.util.createBuffer(bytes.toString('binary')));
    p12 = forge.pkcs12.pkcs12FromAsn1(asn1, false, ref.password ?? '');
  } catch (err) {
    throw new TlsStoreError('TLS_FORMAT', `${ref.source} ${ref.file}: PKCS#12 not readable (wrong password?): ${(err as Error).message}`);
  }
  const bags = p12.getBags({ bagType: forge.pki.oids.certBag as string })[forge.pki.oids.certBag as string] ?? [];
  const out: string[] = [];
  for (const b of bags) if (b.cert !== undefined) out.push(forge.pki.certificateToPem(b.cert));
  if (out.length === 0) throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no certificate in the PKCS#12 file`);
  return out;
}

/** Fingerprint of the files behind a store: reloads compare it (size and modification time). */
export function storeStamp(files: readonly string[]): string {
  let s = '';
  for (const f of files) {
    try {
      const st = fs.statSync(f);
      s += `${f}:${st.size}:${st.mtimeMs};`;
    } catch {
      s += `${f}:missing;`;
    }
  }
  return s;
}
