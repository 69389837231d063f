/**
 * Key stores and trust stores (spec 001 [transport.passthru_https] key_store/trust_store, and
 * [custom_keystore.*]) read into what Node's TLS takes.
 *
 * The written `type` is only a hint: the real format is taken from the file's bytes: PEM text, PKCS#12
 * (DER, Node reads it as `pfx`) or a Java store, JKS (magic 0xFEEDFEED) or JCEKS (0xCECECECE), read by
 * jks.ts into PEM. A store is read only when an enabled listener or sender really uses it (docs/tls.md).
 *
 * node-forge reads the certificates out of a PKCS#12 trust store: Node's TLS accepts a pfx only together
 * with a private key, and a trust store has none (node-forge reads PKCS#12).
 */
import * as fs from 'node:fs';
import type forge from 'node-forge';
import { load } from '../config/packages';
import { decryptJavaKey, javaStoreKind, JavaStoreError, readJavaStore, toPem, type JavaKeyEntry } from './jks';
import { ThroughwayError } from '../errors';

export type StoreFormat = 'PEM' | 'PKCS12' | 'JKS';

/** What a store section says: file, type (a hint), passwords. */
export interface StoreRef {
  readonly file: string;
  readonly type?: string | undefined;
  readonly password?: string | undefined;
  readonly keyPassword?: string | undefined;
  /** The key entry to use (JKS and JCEKS: the alias; PKCS#12: the friendly name); unset: the first private key entry. */
  readonly alias?: string | undefined;
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

/**
 * Why a store cannot be used; `code` is stable (TLS_READ, TLS_FORMAT, TLS_NO_KEY, TLS_NO_CERT,
 * TLS_PASSWORD: the store or key password does not open it, TLS_ALIAS: no private key entry of that alias).
 */
export class TlsStoreError extends ThroughwayError {
  constructor(
    readonly code: 'TLS_READ' | 'TLS_FORMAT' | 'TLS_NO_KEY' | 'TLS_NO_CERT' | 'TLS_PASSWORD' | 'TLS_ALIAS',
    message: string,
  ) {
    super(message);
    this.name = 'TlsStoreError';
  }
}

/** The format of a store, from its bytes (never from its name or the configured type). */
export function detectFormat(bytes: Buffer): StoreFormat | undefined {
  if (javaStoreKind(bytes) !== undefined) return 'JKS';
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
  return { bytes, format };
}

/** A Java store's entries, its integrity checked with the store password (codes as TlsStoreError). */
function javaStore(ref: StoreRef, bytes: Buffer): ReturnType<typeof readJavaStore> {
  try {
    return readJavaStore(bytes, ref.password);
  } catch (err) {
    throw javaError(ref, err);
  }
}

function javaError(ref: StoreRef, err: unknown): TlsStoreError {
  if (!(err instanceof JavaStoreError)) return new TlsStoreError('TLS_FORMAT', `${ref.source} ${ref.file}: ${(err as Error).message}`);
  const what = err.reason === 'FORMAT' ? 'TLS_FORMAT' : 'TLS_PASSWORD';
  const key = err.reason === 'PASSWORD' ? ' (password)' : err.reason === 'KEY_PASSWORD' ? ' (key_password)' : '';
  return new TlsStoreError(what, `${ref.source}${key} ${ref.file}: ${err.message}`);
}

/** The private key entry `ref.alias` names (aliases are case-insensitive in JKS), else the first one. */
function javaKeyEntry(ref: StoreRef, entries: readonly { kind: string; alias: string }[], notes: readonly string[]): JavaKeyEntry {
  const keys = entries.filter((e): e is JavaKeyEntry => e.kind === 'key');
  const extra = notes.length > 0 ? ` (${notes.join('; ')})` : '';
  if (ref.alias !== undefined && ref.alias !== '') {
    const found = keys.find((e) => e.alias.toLowerCase() === (ref.alias as string).toLowerCase());
    if (found === undefined) {
      throw new TlsStoreError(
        'TLS_ALIAS',
        `${ref.source} ${ref.file}: no private key entry with alias "${ref.alias}" (private key entries: ${keys.map((k) => k.alias).join(', ') || 'none'})${extra}`,
      );
    }
    return found;
  }
  const first = keys[0];
  if (first === undefined) throw new TlsStoreError('TLS_NO_KEY', `${ref.source} ${ref.file}: no private key entry${extra}`);
  return first;
}

function readJavaKeyStore(ref: StoreRef, bytes: Buffer): KeyMaterial {
  const store = javaStore(ref, bytes);
  const entry = javaKeyEntry(ref, store.entries, store.notes);
  const password = ref.keyPassword ?? ref.password;
  if (password === undefined)
    throw new TlsStoreError('TLS_PASSWORD', `${ref.source} ${ref.file}: key "${entry.alias}" needs key_password (or password)`);
  let pkcs8: Buffer;
  try {
    pkcs8 = decryptJavaKey(entry, password);
  } catch (err) {
    throw javaError(ref, err);
  }
  if (entry.chain.length === 0)
    throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: key "${entry.alias}" has no certificate chain`);
  return {
    key: Buffer.from(toPem('PRIVATE KEY', pkcs8), 'latin1'),
    cert: Buffer.from(entry.chain.map((c) => toPem('CERTIFICATE', c)).join(''), 'latin1'),
  };
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
  if (format === 'JKS') return readJavaKeyStore(ref, bytes);
  if (format === 'PKCS12') {
    // One passphrase in Node's pfx: the spec says to keep key_password equal to the store password.
    return ref.password !== undefined ? { pfx: bytes, passphrase: ref.password } : { pfx: bytes };
  }
  const blocks = pemBlocks(bytes.toString('latin1'));
  const keys = blocks.filter((b) => b.label.endsWith('PRIVATE KEY'));
  const certs = blocks.filter((b) => b.label === 'CERTIFICATE');
  if (keys.length === 0)
    throw new TlsStoreError(
      'TLS_NO_KEY',
      `${ref.source} ${ref.file}: no PRIVATE KEY block (a PEM key store holds the key and its certificate chain)`,
    );
  if (certs.length === 0) throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no CERTIFICATE block`);
  const passphrase = ref.keyPassword ?? ref.password;
  const key = Buffer.from((keys[0] as { pem: string }).pem + '\n', 'latin1');
  const cert = Buffer.from(certs.map((c) => c.pem).join('\n') + '\n', 'latin1');
  return passphrase !== undefined && (keys[0] as { label: string }).label.startsWith('ENCRYPTED')
    ? { key, cert, passphrase }
    : { key, cert };
}

/** A trust store: the certificates trusted as issuers (PEM text for tls `ca`). */
export function readTrustStore(ref: StoreRef): string[] {
  const { bytes, format } = read(ref);
  if (format === 'PEM') {
    const certs = pemBlocks(bytes.toString('latin1')).filter((b) => b.label === 'CERTIFICATE');
    if (certs.length === 0) throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no CERTIFICATE block`);
    return certs.map((c) => c.pem);
  }
  if (format === 'JKS') {
    // Trusted certificate entries, and the leaf of each key entry (as Java's TrustManagerFactory reads a
    // trust store).
    const out: string[] = [];
    for (const e of javaStore(ref, bytes).entries) {
      if (e.kind === 'cert') out.push(toPem('CERTIFICATE', e.cert).trim());
      else if (e.chain[0] !== undefined) out.push(toPem('CERTIFICATE', e.chain[0]).trim());
    }
    if (out.length === 0)
      throw new TlsStoreError('TLS_NO_CERT', `${ref.source} ${ref.file}: no certificate in the ${javaStoreKind(bytes) ?? 'JKS'} store`);
    return out;
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
