/**
 * Reads the key manager's signing key from a `[custom_keystore.<name>]` file (spec 001, `[custom_keystore.*]`):
 * PEM (PKCS#8, PKCS#1 or SEC1) through node:crypto, PKCS#12 through node-forge (Node's crypto can use a pfx
 * for TLS but cannot hand out its private key). JKS, the reference's default format,
 * has no reader in Node: it is refused with the keytool command that converts it to PKCS#12.
 *
 * The file's content decides, not `type` alone: a JKS file (magic 0xFEEDFEED) is refused whatever `type`
 * says, so a keystore copied from the reference with `type = "PKCS12"` fails with the right advice rather
 * than a parser error.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type forge from 'node-forge';
import { load } from '../config/packages';

/** node-forge, loaded when a PKCS#12 key store is read (lib/config/packages.ts). */
const forgeLib = (): typeof forge => load<typeof forge>('node-forge', '[keystore.primary] type = "PKCS12"');
import { KeyRingError, readPemKey, type ExternalKey } from './keys';

/** JKS files start with 0xFEEDFEED (JCEKS with 0xCECECECE, same advice). */
function isJks(buf: Buffer): boolean {
  if (buf.length < 4) return false;
  const magic = buf.readUInt32BE(0);
  return magic === 0xfeedfeed || magic === 0xcececece;
}

export function jksAdvice(file: string): string {
  return `convert it to PKCS#12 with \`keytool -importkeystore -srckeystore ${file} -srcstoretype JKS -destkeystore ${file.replace(/\.(jks|keystore)$/i, '')}.p12 -deststoretype PKCS12\`, then set type = "PKCS12" and file_name to the .p12 file`;
}

interface KeyBag {
  /** node-forge decodes RSA keys itself; other types (EC) come back as their PrivateKeyInfo. */
  readonly key: forge.pki.PrivateKey | null;
  readonly asn1?: forge.asn1.Asn1;
  readonly attributes: { friendlyName?: string[] };
}

/** The certificate among `candidates` (DER or PEM) whose public key is `key`'s, as DER. */
function certificateOf(key: KeyObject, candidates: readonly (Buffer | string)[]): Buffer | undefined {
  for (const c of candidates) {
    try {
      const x = new X509Certificate(c);
      if (x.checkPrivateKey(key)) return x.raw;
    } catch {
      // Not a certificate Node reads: not the key's.
    }
  }
  return undefined;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The private keys of a PKCS#12 file, opened with the first of `passwords` that verifies its MAC; its certificates (DER). */
function pkcs12Bags(buf: Buffer, passwords: readonly string[], source: string, certificates: Buffer[] = []): KeyBag[] {
  const forge = forgeLib();
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(buf.toString('binary')));
  } catch (err) {
    throw new KeyRingError(`${source}: not a PKCS#12 file (${(err as Error).message})`);
  }
  let last: Error | undefined;
  for (const password of passwords) {
    try {
      const p12 = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
      const out: KeyBag[] = [];
      for (const bagType of [forge.pki.oids.pkcs8ShroudedKeyBag, forge.pki.oids.keyBag] as string[]) {
        for (const bag of p12.getBags({ bagType })[bagType] ?? []) out.push(bag as unknown as KeyBag);
      }
      const certBag = forge.pki.oids.certBag as string;
      for (const bag of p12.getBags({ bagType: certBag })[certBag] ?? []) {
        if (bag.cert != null) certificates.push(Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(bag.cert)).getBytes(), 'binary'));
      }
      return out;
    } catch (err) {
      last = err as Error;
    }
  }
  const why = last?.message ?? 'no password';
  if (/password/i.test(why))
    throw new KeyRingError(`${source}: wrong password (password / key_password do not open the PKCS#12 file: ${why})`);
  throw new KeyRingError(`${source}: unreadable PKCS#12 file: ${why}`);
}

function bagKey(bag: KeyBag): KeyObject {
  const forge = forgeLib();
  if (bag.key !== null) return createPrivateKey({ key: forge.pki.privateKeyToPem(bag.key), format: 'pem' });
  if (bag.asn1 === undefined) throw new KeyRingError('key bag without a key');
  const der = Buffer.from(forge.asn1.toDer(bag.asn1).getBytes(), 'binary');
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

/**
 * The private key of a PKCS#12 file: the one whose friendly name is `alias` when given (the reference
 * names keys by alias), else the only one.
 */
export function readPkcs12Key(buf: Buffer, passwords: readonly string[], alias: string | undefined, source: string): ExternalKey {
  const certificates: Buffer[] = [];
  const bags = pkcs12Bags(buf, passwords, source, certificates);
  if (bags.length === 0) throw new KeyRingError(`${source}: the PKCS#12 file holds no private key (only certificates?)`);
  let bag: KeyBag | undefined;
  if (alias !== undefined && alias !== '') {
    bag = bags.find((b) => b.attributes.friendlyName?.includes(alias) === true);
    if (bag === undefined) {
      const names = bags.map((b) => b.attributes.friendlyName?.[0] ?? '(no alias)').join(', ');
      throw new KeyRingError(`${source}: no private key with alias "${alias}" (the file has: ${names})`);
    }
  } else if (bags.length > 1) {
    throw new KeyRingError(`${source}: the PKCS#12 file holds ${bags.length} private keys: set alias to choose one`);
  } else {
    bag = bags[0] as KeyBag;
  }
  try {
    const privateKey = bagKey(bag);
    const certificate = certificateOf(privateKey, certificates);
    return { source, privateKey, ...(certificate !== undefined ? { certificate } : {}) };
  } catch (err) {
    throw new KeyRingError(`${source}: unsupported private key in the PKCS#12 file: ${(err as Error).message}`);
  }
}

export interface KeystoreFile {
  /** `[custom_keystore.<name>]`, for messages. */
  readonly table: string;
  readonly file: string;
  readonly type: string | undefined;
  readonly password: string | undefined;
  readonly keyPassword: string | undefined;
  readonly alias: string | undefined;
}

/** Reads the signing key of a keystore: PEM or PKCS#12; JKS and other types refused with the way out. */
export function readKeystore(content: Buffer, ks: KeystoreFile): ExternalKey {
  const source = `${ks.table} ${ks.file}`;
  if (isJks(content))
    throw new KeyRingError(
      `${source} is a JKS keystore${ks.type !== 'JKS' ? ` (although type = "${ks.type ?? '(unset)'}")` : ''}, which Node cannot read: ${jksAdvice(ks.file)}`,
    );
  switch (ks.type) {
    case 'PEM': {
      // key_password wins: it is the one that encrypts the key (spec 001: keep both equal).
      const k = readPemKey(content, ks.keyPassword ?? ks.password, source);
      const certificate = certificateOf(k.privateKey, content.toString('latin1').match(PEM_CERT) ?? []);
      return certificate !== undefined ? { ...k, certificate } : k;
    }
    case 'PKCS12': {
      // The store password opens the file (MAC and safe contents); node-forge takes one password for both,
      // so key_password is tried second for files whose key was encrypted with it.
      const passwords = [...new Set([ks.password ?? '', ...(ks.keyPassword !== undefined ? [ks.keyPassword] : [])])];
      return readPkcs12Key(content, passwords, ks.alias, source);
    }
    case 'JKS':
      throw new KeyRingError(`${ks.table} type = "JKS": Node cannot read JKS keystores: ${jksAdvice(ks.file)}`);
    default:
      throw new KeyRingError(`${ks.table} type = "${ks.type ?? '(unset)'}": the key manager reads PEM and PKCS12 keystores`);
  }
}
