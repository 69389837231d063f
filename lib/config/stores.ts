/**
 * The transports' key and trust stores, defaulted as spec 001 gives them: [transport.passthru_https]
 * listener.key_store defaults to "the primary keystore file of the server", trust_store to "the server
 * trust store file", and the sender to the same as the listener; [transport.wss] sender.trust_store to the
 * server trust store. The server's stores are the reference's [keystore.tls] (else [keystore.primary]) and
 * [truststore] tables (schema/reference.ts); in the reference's layout a file naming none takes the
 * reference's default stores from the security directory first (config/load.ts fillReferenceDefaults).
 * Without them nothing is filled: the listener then serves the generated sample key pair (docs/tls.md).
 *
 * A store is filled as a whole (file, type, passwords) and only when the file leaves its file name out: a
 * password of one store never goes with the file of another.
 */
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import { get, isTable } from './schema-index';
import type { Segment } from './locate';
import { hasRuntimeToken } from './convert';

/** One key filled from another: diagnostics about the value point at the key the file wrote (`from`). */
export interface StoreFill {
  readonly target: readonly Segment[];
  readonly from: readonly Segment[];
}

/** A store file a starting node opens, and the key the file names it with. */
export interface StoreFile {
  readonly key: readonly Segment[];
  readonly file: string;
}

function setPath(doc: Record<string, unknown>, segments: readonly Segment[], value: unknown): void {
  let cur: Record<string, unknown> = doc;
  for (const s of segments.slice(0, -1)) {
    const name = String(s);
    let next = Object.prototype.hasOwnProperty.call(cur, name) ? cur[name] : undefined;
    if (!isTable(next)) {
      next = {};
      Object.defineProperty(cur, name, { value: next, enumerable: true, writable: true, configurable: true });
    }
    cur = next as Record<string, unknown>;
  }
  Object.defineProperty(cur, String(segments[segments.length - 1]), { value, enumerable: true, writable: true, configurable: true });
}

const fileOf = (doc: unknown, at: readonly Segment[]): unknown => get(doc, [...at, 'file_name']);
const named = (v: unknown): v is string => typeof v === 'string' && v !== '';

/**
 * Fills the transports' store keys the file leaves out. `written(segments)` tells a key the file writes
 * from a schema default (the store types have the literal default JKS, which a copied store replaces).
 */
export function fillStoreDefaults(doc: Record<string, unknown>, written: (segments: readonly Segment[]) => boolean): StoreFill[] {
  const fills: StoreFill[] = [];
  const copy = (to: readonly Segment[], from: readonly Segment[], keys: readonly (readonly [string, string])[]): void => {
    for (const [t, f] of keys) {
      const target = [...to, t];
      const source = [...from, f];
      const v = get(doc, source);
      if (v === undefined || written(target)) continue;
      setPath(doc, target, v);
      fills.push({ target, from: source });
    }
  };
  const https: Segment[] = ['transport', 'passthru_https'];
  const KEY = [
    ['file_name', 'file_name'],
    ['type', 'type'],
    ['password', 'password'],
    ['key_password', 'key_password'],
  ] as const;
  const TRUST = [
    ['file_name', 'file_name'],
    ['type', 'type'],
    ['password', 'password'],
  ] as const;
  const primary: Segment[] | undefined = named(fileOf(doc, ['keystore', 'tls']))
    ? ['keystore', 'tls']
    : named(fileOf(doc, ['keystore', 'primary']))
      ? ['keystore', 'primary']
      : undefined;
  const trust: Segment[] | undefined = named(fileOf(doc, ['truststore'])) ? ['truststore'] : undefined;
  const listenerKey = [...https, 'listener', 'key_store'];
  const listenerTrust = [...https, 'listener', 'trust_store'];
  if (primary !== undefined && !named(fileOf(doc, listenerKey))) copy(listenerKey, primary, KEY);
  if (trust !== undefined && !named(fileOf(doc, listenerTrust))) copy(listenerTrust, trust, TRUST);
  // The sender: "same defaults as the listener" (spec 001, [transport.passthru_https]).
  const senderKey = [...https, 'sender', 'key_store'];
  const senderTrust = [...https, 'sender', 'trust_store'];
  if (named(fileOf(doc, listenerKey)) && !named(fileOf(doc, senderKey))) copy(senderKey, listenerKey, KEY);
  if (named(fileOf(doc, listenerTrust)) && !named(fileOf(doc, senderTrust))) copy(senderTrust, listenerTrust, TRUST);
  const wssTrust: Segment[] = ['transport', 'wss', 'sender', 'trust_store'];
  if (trust !== undefined && !named(get(doc, [...wssTrust, 'location']))) {
    copy(wssTrust, trust, [
      ['location', 'file_name'],
      ['password', 'password'],
    ]);
  }
  return fills;
}

/** The store files a starting node opens with this configuration (docs/tls.md): those must exist. */
export function storeFiles(doc: unknown): StoreFile[] {
  const out: StoreFile[] = [];
  const add = (key: Segment[]): void => {
    const v = get(doc, key);
    if (named(v) && !hasRuntimeToken(v)) out.push({ key, file: v });
  };
  for (const side of ['listener', 'sender']) {
    for (const store of ['key_store', 'trust_store']) add(['transport', 'passthru_https', side, store, 'file_name']);
  }
  add(['transport', 'passthru_https', 'listener', 'ssl_profile', 'file_path']);
  if (get(doc, ['transport', 'wss', 'sender', 'enable']) === true) add(['transport', 'wss', 'sender', 'trust_store', 'location']);
  // The saml_bearer grant's identity provider certificates (docs/key-manager.md, "SAML 2.0 bearer").
  for (const key of samlCertificateKeys(doc)) add(key);
  return out;
}

/** The keys of the saml_bearer grant's identity provider certificate files (docs/key-manager.md, "SAML 2.0 bearer"), when the grant is on. */
function samlCertificateKeys(doc: unknown): Segment[][] {
  const idps = get(doc, ['oauth', 'grant_type', 'saml_bearer', 'identity_provider']);
  if (get(doc, ['oauth', 'grant_type', 'saml_bearer', 'enable']) === false || !Array.isArray(idps)) return [];
  return idps.map((_, i) => ['oauth', 'grant_type', 'saml_bearer', 'identity_provider', i, 'certificate_file']);
}

/**
 * The PEM certificates of a certificate file's text (several during a key rollover), each parsed by
 * node:crypto; `problem` says why the text cannot be used (none, or one that does not parse).
 */
export function pemCertificates(text: string): { certificates: string[]; problem?: string } {
  const certificates = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length === 0) return { certificates, problem: 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)' };
  for (const [i, pem] of certificates.entries()) {
    try {
      new X509Certificate(pem);
    } catch (err) {
      return { certificates, problem: `certificate ${i + 1} does not parse: ${(err as Error).message}` };
    }
  }
  return { certificates };
}

/** Certificate files a starting node reads that exist but hold no usable PEM certificate, with why. */
export function invalidCertificateFiles(doc: unknown): (StoreFile & { readonly problem: string })[] {
  const out: (StoreFile & { readonly problem: string })[] = [];
  for (const key of samlCertificateKeys(doc)) {
    const file = get(doc, key);
    if (!named(file) || hasRuntimeToken(file)) continue;
    let text: string;
    try {
      if (!fs.statSync(file).isFile()) continue;
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue; // missing: missingStoreFiles reports it
    }
    const { problem } = pemCertificates(text);
    if (problem !== undefined) out.push({ key, file, problem });
  }
  return out;
}

/** The files of `storeFiles` that are not there (or are not files). */
export function missingStoreFiles(doc: unknown): StoreFile[] {
  return storeFiles(doc).filter((s) => {
    try {
      return !fs.statSync(s.file).isFile();
    } catch {
      return true;
    }
  });
}
