/**
 * Java key stores as keytool writes them, read without Java: JKS (magic 0xFEEDFEED) and JCEKS
 * (0xCECECECE), versions 1 and 2 (docs/tls.md). The reference ships its stores in JKS
 * (wso2carbon.jks, client-truststore.jks; spec 001 [transport.passthru_https] key_store/trust_store).
 *
 * Layout (big-endian; the format of OpenJDK's sun.security.provider.JavaKeyStore and
 * com.sun.crypto.provider.JceKeyStore):
 *   magic u32, version u32, count u32, then count entries:
 *     tag u32 (1 private key, 2 trusted certificate, 3 secret key: JCEKS only), alias (u16 length +
 *     modified UTF-8), date u64;
 *     1: u32 length + EncryptedPrivateKeyInfo (DER), u32 chain length, each certificate
 *        (version 2: u16-prefixed type "X.509") u32 length + DER;
 *     2: one certificate, as above;
 *     3: a Java-serialised SealedObject (its length is not written: reading stops there, see below);
 *   and a SHA-1 digest of (password as UTF-16BE, "Mighty Aphrodite", every byte before the digest).
 *
 * Private keys: JKS protects them with Sun's KeyProtector (OID 1.3.6.1.4.1.42.2.17.1.1): salt (20 bytes),
 * the key XORed with a SHA-1 keystream (SHA-1(password UTF-16BE, previous block), the first block seeded
 * with the salt), then SHA-1(password UTF-16BE, plain key) as a check. JCEKS uses
 * PBEWithMD5AndTripleDES (OID 1.3.6.1.4.1.42.2.19.1): Sun's own derivation (each half of the 8-byte salt
 * hashed with MD5 together with the password `iterations` times; 24 bytes of key and 8 of IV for
 * DES-EDE3-CBC; a salt with equal halves has its first half reversed first). The plain key is PKCS#8.
 */
import * as crypto from 'node:crypto';
import { md5 } from './md5';
import { ThroughwayError } from '../errors';

export type JavaStoreKind = 'JKS' | 'JCEKS';

export const JKS_MAGIC = 0xfeedfeed;
export const JCEKS_MAGIC = 0xcececece;

/** Sun's KeyProtector (JKS). */
const OID_JKS_KEY_PROTECTOR = '1.3.6.1.4.1.42.2.17.1.1';
/** PBEWithMD5AndTripleDES (JCEKS). */
const OID_PBE_MD5_3DES = '1.3.6.1.4.1.42.2.19.1';
/** Bound on the PBE iteration count: JDK 17 writes 200,000; more is a file made to stall the start. */
const MAX_ITERATIONS = 5_000_000;

export interface JavaKeyEntry {
  readonly kind: 'key';
  readonly alias: string;
  /** EncryptedPrivateKeyInfo, still protected. */
  readonly protectedKey: Buffer;
  /** The certificate chain, leaf first (DER). */
  readonly chain: readonly Buffer[];
}

export interface JavaCertEntry {
  readonly kind: 'cert';
  readonly alias: string;
  readonly cert: Buffer;
}

export interface JavaStore {
  readonly kind: JavaStoreKind;
  readonly entries: readonly (JavaKeyEntry | JavaCertEntry)[];
  /** What was left unread (secret key entries), for messages. */
  readonly notes: readonly string[];
}

/** Why a Java store could not be read: its bytes (FORMAT), the store password (PASSWORD) or the key password (KEY_PASSWORD). */
export class JavaStoreError extends ThroughwayError {
  /** JKS_FORMAT, JKS_PASSWORD or JKS_KEY_PASSWORD: read by lib/tls/keystore.ts into its TLS_* codes. */
  readonly code: `JKS_${JavaStoreError['reason']}`;
  constructor(
    readonly reason: 'FORMAT' | 'PASSWORD' | 'KEY_PASSWORD',
    message: string,
  ) {
    super(message);
    this.code = `JKS_${reason}`;
    this.name = 'JavaStoreError';
  }
}

export function javaStoreKind(bytes: Buffer): JavaStoreKind | undefined {
  if (bytes.length < 4) return undefined;
  const magic = bytes.readUInt32BE(0);
  return magic === JKS_MAGIC ? 'JKS' : magic === JCEKS_MAGIC ? 'JCEKS' : undefined;
}

/** Each char as two bytes, big-endian (Java's char[] as the keyed digest and KeyProtector take it). */
function utf16be(password: string): Buffer {
  const b = Buffer.alloc(password.length * 2);
  for (let i = 0; i < password.length; i++) b.writeUInt16BE(password.charCodeAt(i), i * 2);
  return b;
}

/** True when `password` opens the store's integrity digest. */
export function javaStoreIntegrity(bytes: Buffer, password: string): boolean {
  if (bytes.length < 12 + 20) return false;
  const body = bytes.subarray(0, bytes.length - 20);
  const digest = crypto.createHash('sha1').update(utf16be(password)).update('Mighty Aphrodite', 'utf8').update(body).digest();
  return crypto.timingSafeEqual(digest, bytes.subarray(bytes.length - 20));
}

class Reader {
  private pos = 0;
  constructor(private readonly b: Buffer) {}
  private need(n: number): void {
    if (n < 0 || this.pos + n > this.b.length) throw new JavaStoreError('FORMAT', `truncated at byte ${this.pos}`);
  }
  u16(): number {
    this.need(2);
    const v = this.b.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.b.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  utf(): string {
    // Modified UTF-8 differs from UTF-8 only for NUL and supplementary characters, absent from aliases.
    return this.bytes(this.u16()).toString('utf8');
  }
}

/**
 * The entries of a JKS or JCEKS store, after checking its integrity digest with `password` (a store
 * written without a password, keytool -storepass '', is read when `password` is undefined).
 */
export function readJavaStore(bytes: Buffer, password: string | undefined): JavaStore {
  const kind = javaStoreKind(bytes);
  if (kind === undefined) throw new JavaStoreError('FORMAT', 'not a JKS or JCEKS store');
  if (bytes.length < 12 + 20) throw new JavaStoreError('FORMAT', 'shorter than a header and a digest');
  if (password !== undefined && !javaStoreIntegrity(bytes, password)) {
    throw new JavaStoreError(
      'PASSWORD',
      "the store password does not match the store's integrity digest (wrong password, or the file was altered)",
    );
  }
  const r = new Reader(bytes.subarray(0, bytes.length - 20));
  r.u32();
  const version = r.u32();
  if (version !== 1 && version !== 2) throw new JavaStoreError('FORMAT', `unknown ${kind} version ${version}`);
  const count = r.u32();
  // Every entry takes at least 14 bytes: a count beyond that is a broken file, not a loop to run.
  if (count > bytes.length / 14) throw new JavaStoreError('FORMAT', `entry count ${count} larger than the file`);
  const cert = (): Buffer => {
    if (version === 2) {
      const type = r.utf();
      if (type !== 'X.509') throw new JavaStoreError('FORMAT', `certificate type ${type} (only X.509 is read)`);
    }
    return Buffer.from(r.bytes(r.u32()));
  };
  const entries: (JavaKeyEntry | JavaCertEntry)[] = [];
  const notes: string[] = [];
  for (let i = 0; i < count; i++) {
    const tag = r.u32();
    const alias = r.utf();
    r.bytes(8);
    if (tag === 1) {
      const protectedKey = Buffer.from(r.bytes(r.u32()));
      const n = r.u32();
      if (n > bytes.length / 4) throw new JavaStoreError('FORMAT', `chain length ${n} larger than the file`);
      const chain: Buffer[] = [];
      for (let j = 0; j < n; j++) chain.push(cert());
      entries.push({ kind: 'key', alias, protectedKey, chain });
    } else if (tag === 2) {
      entries.push({ kind: 'cert', alias, cert: cert() });
    } else if (tag === 3 && kind === 'JCEKS') {
      // A secret key is a Java-serialised object whose length is written nowhere: the entries after it
      // cannot be found without a Java deserialiser, so reading stops (TLS has no use for secret keys).
      notes.push(`secret key entry "${alias}" skipped; ${count - i - 1} entries after it not read`);
      break;
    } else {
      throw new JavaStoreError('FORMAT', `unknown entry tag ${tag}`);
    }
  }
  return { kind, entries, notes };
}

/** A small DER reader: tag, content, and what follows. */
function der(b: Buffer, at = 0): { tag: number; content: Buffer; end: number } {
  if (at + 2 > b.length) throw new JavaStoreError('FORMAT', 'truncated DER');
  const tag = b[at] as number;
  let len = b[at + 1] as number;
  let p = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || p + n > b.length) throw new JavaStoreError('FORMAT', 'bad DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (b[p + i] as number);
    p += n;
  }
  if (p + len > b.length) throw new JavaStoreError('FORMAT', 'truncated DER');
  return { tag, content: b.subarray(p, p + len), end: p + len };
}

function oid(content: Buffer): string {
  const parts: number[] = [];
  let v = 0;
  for (const byte of content) {
    v = v * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      if (parts.length === 0) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

/** The PKCS#8 DER of a private key entry, opened with `password` (the key password). */
export function decryptJavaKey(entry: JavaKeyEntry, password: string): Buffer {
  const outer = der(entry.protectedKey);
  if (outer.tag !== 0x30) throw new JavaStoreError('FORMAT', `key "${entry.alias}": not an EncryptedPrivateKeyInfo`);
  const algId = der(outer.content);
  const data = der(outer.content, algId.end);
  if (algId.tag !== 0x30 || data.tag !== 0x04) throw new JavaStoreError('FORMAT', `key "${entry.alias}": not an EncryptedPrivateKeyInfo`);
  const algOid = der(algId.content);
  const algorithm = oid(algOid.content);
  const wrong = (): JavaStoreError => new JavaStoreError('KEY_PASSWORD', `key "${entry.alias}": the key password does not open it`);
  if (algorithm === OID_JKS_KEY_PROTECTOR) {
    const enc = data.content;
    if (enc.length < 41) throw new JavaStoreError('FORMAT', `key "${entry.alias}": too short`);
    const pw = utf16be(password);
    const salt = enc.subarray(0, 20);
    const body = enc.subarray(20, enc.length - 20);
    const check = enc.subarray(enc.length - 20);
    const plain = Buffer.alloc(body.length);
    let digest: Buffer = salt;
    for (let off = 0; off < body.length; off += 20) {
      digest = crypto.createHash('sha1').update(pw).update(digest).digest();
      for (let i = 0; i < 20 && off + i < body.length; i++) plain[off + i] = (body[off + i] as number) ^ (digest[i] as number);
    }
    const ok = crypto.createHash('sha1').update(pw).update(plain).digest();
    if (!crypto.timingSafeEqual(ok, check)) throw wrong();
    return plain;
  }
  if (algorithm === OID_PBE_MD5_3DES) {
    const params = der(algId.content, algOid.end);
    const saltEl = der(params.content);
    const iterEl = der(params.content, saltEl.end);
    if (saltEl.tag !== 0x04 || saltEl.content.length !== 8 || iterEl.tag !== 0x02)
      throw new JavaStoreError('FORMAT', `key "${entry.alias}": PBE parameters`);
    let iterations = 0;
    for (const byte of iterEl.content) iterations = iterations * 256 + byte;
    if (iterations < 1 || iterations > MAX_ITERATIONS)
      throw new JavaStoreError('FORMAT', `key "${entry.alias}": iteration count ${iterations} outside 1..${MAX_ITERATIONS}`);
    // PBEKey keeps the low 7 bits of each char (ASCII passwords, as keytool requires for JCEKS).
    const pw = Buffer.from(Array.from(password, (c) => c.charCodeAt(0) & 0x7f));
    const salt = Buffer.from(saltEl.content);
    if (salt.subarray(0, 4).equals(salt.subarray(4))) {
      [salt[0], salt[3]] = [salt[3] as number, salt[0] as number];
      [salt[1], salt[2]] = [salt[2] as number, salt[1] as number];
    }
    const derived: Buffer[] = [];
    for (let half = 0; half < 2; half++) {
      // md5.ts: a round in JavaScript instead of a call into node:crypto (its comment has the figures).
      const buf = Buffer.alloc(16 + pw.length);
      salt.copy(buf, 0, half * 4, half * 4 + 4);
      pw.copy(buf, 4);
      let h = md5(buf.subarray(0, 4 + pw.length));
      pw.copy(buf, 16);
      for (let j = 1; j < iterations; j++) {
        h.copy(buf, 0);
        md5(buf, h);
      }
      derived.push(h);
    }
    const km = Buffer.concat(derived);
    try {
      const d = crypto.createDecipheriv('des-ede3-cbc', km.subarray(0, 24), km.subarray(24, 32));
      const plain = Buffer.concat([d.update(data.content), d.final()]);
      // A wrong password may still leave valid padding (1 in 256): the PKCS#8 SEQUENCE must parse whole.
      const seq = der(plain);
      if (seq.tag !== 0x30 || seq.end !== plain.length) throw wrong();
      return plain;
    } catch (err) {
      if (err instanceof JavaStoreError) throw err;
      throw wrong();
    }
  }
  throw new JavaStoreError(
    'FORMAT',
    `key "${entry.alias}": protection algorithm ${algorithm} is not read (JKS KeyProtector and JCEKS PBEWithMD5AndTripleDES are)`,
  );
}

/** DER to PEM text with `label`. */
export function toPem(label: string, derBytes: Buffer): string {
  const b64 = derBytes.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}
