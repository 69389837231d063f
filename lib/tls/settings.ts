/**
 * What the TLS listeners and the outbound side read from deployment.toml (spec 001
 * [transport.passthru_https], [transport.http.proxy_profile] and friends), read once into frozen values,
 * and the secure contexts built from them. docs/tls.md.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import type * as Xml from 'fast-xml-parser';
import { load } from '../config/packages';

/** fast-xml-parser, loaded when the first XML is read (lib/config/packages.ts). */
const xmlLib = (): typeof Xml => load<typeof Xml>('fast-xml-parser', 'an ssl_profile XML file');
import type { DeploymentConfig } from '../config/deployment-config.generated';
import type { Logger } from '../log';
import { readKeyStore, readTrustStore, storeStamp, TlsStoreError, type StoreRef } from './keystore';
import { checkServerIdentityFor, type HostnameVerifier } from '../transport/verify';
import type { Outbound } from '../transport/outbound';
import { proxySelector } from './proxy';
import { ThroughwayError } from '../errors';

export type VerifyClient = 'none' | 'optional' | 'require';

/** The HTTPS listener (and the WSS listener and management HTTPS server, which share its stores). */
export interface ListenerTlsSettings {
  /** undefined: the sample key store (sample.ts). */
  readonly keyStore: StoreRef | undefined;
  readonly trustStore: StoreRef | undefined;
  /** listener.parameters.SSLVerifyClient: "require" (mutual TLS), "optional", anything else none. */
  readonly verifyClient: VerifyClient;
  /** listener.protocols: the lowest and highest version listed (Node enables a contiguous range). */
  readonly minVersion: tls.SecureVersion | undefined;
  readonly maxVersion: tls.SecureVersion | undefined;
  /** listener.preferred_ciphers, as one OpenSSL cipher string (IANA names converted). */
  readonly ciphers: string | undefined;
  /** listener.ssl_profile.file_path: the reference's listener profile XML (KeyStore, TrustStore, SSLVerifyClient). */
  readonly profileFile: string | undefined;
  /** listener.ssl_profile_interval: ms between checks of the store and profile files (0: no reloading). */
  readonly reloadInterval: number;
}

const VERSIONS: readonly tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

export class TlsConfigError extends ThroughwayError {
  constructor(
    readonly code: 'TLS_PROTOCOL' | 'TLS_PROFILE' | 'TLS_NO_KEYSTORE' | 'TLS_NO_TRUSTSTORE',
    message: string,
  ) {
    super(message);
    this.name = 'TlsConfigError';
  }
}

function storeRef(
  source: string,
  s: {
    readonly file_name?: string;
    readonly type?: string;
    readonly password?: string;
    readonly key_password?: string;
    readonly alias?: string;
  },
  cwd: string,
): StoreRef | undefined {
  if (s.file_name === undefined || s.file_name === '') return undefined;
  return Object.freeze({
    file: path.resolve(cwd, s.file_name),
    type: s.type,
    password: s.password,
    keyPassword: s.key_password,
    alias: s.alias,
    source,
  });
}

/**
 * IANA cipher suite names (the reference's Java names, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) to
 * OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256); TLS 1.3 suites (TLS_AES_128_GCM_SHA256) and OpenSSL names
 * pass unchanged: Node takes both in one `ciphers` string.
 */
export function opensslCipher(name: string): string {
  const m = /^(?:TLS|SSL)_(.+)_WITH_(.+)$/.exec(name);
  if (m === null) return name;
  const kx = (m[1] as string) === 'RSA' ? '' : (m[1] as string).replace(/_/g, '-') + '-';
  const c = (m[2] as string)
    .replace(/^AES_(\d+)_/, 'AES$1-')
    .replace(/^CHACHA20_POLY1305_SHA256$/, 'CHACHA20-POLY1305')
    .replace(/_/g, '-');
  return kx + c;
}

export function listenerTlsSettings(config: DeploymentConfig, cwd: string): ListenerTlsSettings {
  const l = config.transport.passthru_https.listener;
  const src = '[transport.passthru_https] listener';
  const verify = (l.parameters.SSLVerifyClient ?? '').trim().toLowerCase();
  let minVersion: tls.SecureVersion | undefined;
  let maxVersion: tls.SecureVersion | undefined;
  if (l.protocols !== undefined && l.protocols.length > 0) {
    const idx = l.protocols.map((p) => {
      const i = VERSIONS.indexOf(p.trim() as tls.SecureVersion);
      if (i < 0) throw new TlsConfigError('TLS_PROTOCOL', `${src}.protocols: unknown protocol "${p}" (known: ${VERSIONS.join(', ')})`);
      return i;
    });
    minVersion = VERSIONS[Math.min(...idx)];
    maxVersion = VERSIONS[Math.max(...idx)];
  }
  const ciphers =
    l.preferred_ciphers !== undefined && l.preferred_ciphers.length > 0
      ? l.preferred_ciphers.map((c) => opensslCipher(c.trim())).join(':')
      : undefined;
  return Object.freeze({
    keyStore: storeRef(`${src}.key_store`, l.key_store, cwd),
    trustStore: storeRef(`${src}.trust_store`, l.trust_store, cwd),
    verifyClient: verify === 'require' ? 'require' : verify === 'optional' || verify === 'optional_no_ca' ? 'optional' : 'none',
    minVersion,
    maxVersion,
    ciphers,
    profileFile: l.ssl_profile?.file_path !== undefined ? path.resolve(cwd, l.ssl_profile.file_path) : undefined,
    reloadInterval: l.ssl_profile_interval ?? 0,
  });
}

interface Profile {
  readonly keyStore: StoreRef | undefined;
  readonly trustStore: StoreRef | undefined;
  readonly verifyClient: VerifyClient | undefined;
}

/**
 * The reference's listener profile file: <parameter name="SSLProfiles"><profile> with <KeyStore>
 * (<Location>, <Type>, <Password>, <KeyPassword>), <TrustStore> and <SSLVerifyClient>. The first
 * profile applies to the whole listener (per-address profiles are not supported).
 */
function readProfile(file: string): Profile {
  let xml: string;
  try {
    xml = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new TlsConfigError('TLS_PROFILE', `ssl_profile.file_path ${file}: ${(err as Error).message}`);
  }
  const doc = new (xmlLib().XMLParser)({ parseTagValue: false, trimValues: true }).parse(xml) as Record<string, unknown>;
  const profile = findProfile(doc);
  if (profile === undefined) throw new TlsConfigError('TLS_PROFILE', `ssl_profile.file_path ${file}: no <profile> element`);
  const dir = path.dirname(file);
  const store = (name: string, el: unknown): StoreRef | undefined => {
    if (el === undefined || el === null || typeof el !== 'object') return undefined;
    const e = el as Record<string, string | undefined>;
    if (e.Location === undefined) return undefined;
    return {
      file: path.resolve(dir, e.Location),
      type: e.Type,
      password: e.Password,
      keyPassword: e.KeyPassword,
      source: `${file} <${name}>`,
    };
  };
  const v = typeof profile.SSLVerifyClient === 'string' ? profile.SSLVerifyClient.trim().toLowerCase() : undefined;
  return {
    keyStore: store('KeyStore', profile.KeyStore),
    trustStore: store('TrustStore', profile.TrustStore),
    verifyClient: v === undefined ? undefined : v === 'require' ? 'require' : v === 'optional' ? 'optional' : 'none',
  };
}

function findProfile(node: unknown): Record<string, unknown> | undefined {
  if (node === null || typeof node !== 'object') return undefined;
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (k === 'profile') return (Array.isArray(v) ? v[0] : v) as Record<string, unknown>;
    const found = findProfile(v);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The server options of a TLS listener, read from its stores now (TlsStoreError / TlsConfigError). */
export function serverOptions(s: ListenerTlsSettings, sampleFile: string | undefined): tls.TlsOptions {
  const profile = s.profileFile === undefined ? undefined : readProfile(s.profileFile);
  const keyRef =
    profile?.keyStore ??
    s.keyStore ??
    (sampleFile !== undefined ? { file: sampleFile, type: 'PEM', source: 'sample key store' } : undefined);
  if (keyRef === undefined)
    throw new TlsConfigError('TLS_NO_KEYSTORE', '[transport.passthru_https] listener.key_store.file_name is not set');
  const trustRef = profile?.trustStore ?? s.trustStore;
  const verifyClient = profile?.verifyClient ?? s.verifyClient;
  const opts: tls.TlsOptions = { ...readKeyStore(keyRef) };
  if (trustRef !== undefined) opts.ca = readTrustStore(trustRef);
  if (verifyClient !== 'none') {
    if (trustRef === undefined)
      throw new TlsConfigError(
        'TLS_NO_TRUSTSTORE',
        `SSLVerifyClient = "${verifyClient}" needs [transport.passthru_https] listener.trust_store.file_name (the issuers of accepted client certificates)`,
      );
    opts.requestCert = true;
    opts.rejectUnauthorized = verifyClient === 'require';
  }
  if (s.minVersion !== undefined) opts.minVersion = s.minVersion;
  if (s.maxVersion !== undefined) opts.maxVersion = s.maxVersion;
  if (s.ciphers !== undefined) {
    opts.ciphers = s.ciphers;
    opts.honorCipherOrder = true;
  }
  // Session tickets (RFC 5077) let returning clients skip the full handshake.
  return opts;
}

/** The files a listener's certificates come from (what a reload watches). */
function watchedFiles(s: ListenerTlsSettings, sampleFile: string | undefined): string[] {
  const files: string[] = [];
  if (s.profileFile !== undefined) {
    files.push(s.profileFile);
    try {
      const p = readProfile(s.profileFile);
      if (p.keyStore !== undefined) files.push(p.keyStore.file);
      if (p.trustStore !== undefined) files.push(p.trustStore.file);
    } catch {
      // A broken profile is reported by the reload itself.
    }
  }
  const key = s.keyStore?.file ?? sampleFile;
  if (key !== undefined) files.push(key);
  if (s.trustStore !== undefined) files.push(s.trustStore.file);
  return files;
}

/**
 * Reloads a listener's certificates when their files change (listener.ssl_profile_interval): new
 * handshakes get the new context, existing connections keep theirs. A file that cannot be read leaves
 * the previous certificates in place (logged). Returns a stop function.
 */
/**
 * Reads the listener stores again now and gives every TLS server the new certificates (SIGHUP; the
 * watcher below does the same when a file's stamp changes). Stores that cannot be read are refused: the
 * servers keep the certificates they have. Existing connections keep theirs (setSecureContext).
 */
export function reloadCertificates(
  servers: readonly tls.Server[],
  s: ListenerTlsSettings,
  sampleFile: string | undefined,
  logger: Logger,
): { readonly ok: boolean; readonly error?: string } {
  if (servers.length === 0) return { ok: true };
  try {
    const opts = serverOptions(s, sampleFile);
    for (const server of servers) server.setSecureContext(opts);
    logger.log('info', 'tls_certificates_reloaded', { files: watchedFiles(s, sampleFile) });
    return { ok: true };
  } catch (err) {
    logger.log('error', 'tls_reload_failed', { code: (err as TlsStoreError).code, message: (err as Error).message });
    return { ok: false, error: (err as Error).message };
  }
}

export function watchCertificates(
  servers: readonly tls.Server[],
  s: ListenerTlsSettings,
  sampleFile: string | undefined,
  logger: Logger,
  interval = s.reloadInterval,
): () => void {
  if (interval <= 0) return () => undefined;
  let stamp = storeStamp(watchedFiles(s, sampleFile));
  const timer = setInterval(() => {
    const now = storeStamp(watchedFiles(s, sampleFile));
    if (now === stamp) return;
    try {
      const opts = serverOptions(s, sampleFile);
      for (const server of servers) server.setSecureContext(opts);
      stamp = now;
      logger.log('info', 'tls_certificates_reloaded', { files: watchedFiles(s, sampleFile) });
    } catch (err) {
      logger.log('error', 'tls_reload_failed', { code: (err as TlsStoreError).code, message: (err as Error).message });
      stamp = now;
    }
  }, interval);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The outbound side: TLS for `https://` endpoints (sender.trust_store, sender.key_store,
 * sender.hostname_verifier) and proxies. The secure context is built on first use, so a sender store
 * that is JKS is an error only when an `https://` endpoint needs it.
 */
export function outboundFrom(config: DeploymentConfig, cwd: string): Outbound {
  const sender = config.transport.passthru_https.sender;
  const src = '[transport.passthru_https] sender';
  const trust = storeRef(`${src}.trust_store`, sender.trust_store, cwd);
  const key = storeRef(`${src}.key_store`, sender.key_store, cwd);
  const verifier: HostnameVerifier = sender.hostname_verifier;
  let built: { context: tls.SecureContext; checkServerIdentity: ReturnType<typeof checkServerIdentityFor> } | undefined;
  let builtWss: typeof built;
  const wssTrust = config.transport.wss.sender.trust_store;
  const wss =
    wssTrust?.location !== undefined && wssTrust.location !== ''
      ? { file: path.resolve(cwd, wssTrust.location), password: wssTrust.password, source: '[transport.wss] sender.trust_store' }
      : undefined;
  const proxyFor = proxySelector(config);
  return {
    get wssTls() {
      if (wss === undefined) return undefined;
      // wss:// backends: [transport.wss] sender.trust_store, with the client certificate and verifier of
      // [transport.passthru_https] sender.
      if (builtWss === undefined) {
        const opts: tls.SecureContextOptions = { ca: readTrustStore(wss) };
        if (key !== undefined) Object.assign(opts, readKeyStore(key));
        builtWss = { context: tls.createSecureContext(opts), checkServerIdentity: checkServerIdentityFor(verifier) };
      }
      return builtWss;
    },
    get tls() {
      if (built === undefined) {
        const opts: tls.SecureContextOptions = {};
        if (trust !== undefined) opts.ca = readTrustStore(trust);
        if (key !== undefined) Object.assign(opts, readKeyStore(key));
        built = { context: tls.createSecureContext(opts), checkServerIdentity: checkServerIdentityFor(verifier) };
      }
      return built;
    },
    ...(proxyFor !== undefined ? { proxyFor } : {}),
  };
}

/** A key or trust store that `start` would refuse, as `config check` reports it. */
export interface StoreProblem {
  readonly source: string;
  readonly file: string;
  readonly code: string;
  readonly message: string;
}

/**
 * Opens every store an enabled transport would read (the HTTPS listener's key and trust stores, the
 * sender's, the WSS sender's trust store) with the configured passwords and alias, as `start` and the first
 * `https://` endpoint do: `config check` refuses what `start` would (docs/tls.md). The listener's SSL
 * profile file, read at start, is checked too.
 */
export function checkTlsStores(config: DeploymentConfig, cwd: string): StoreProblem[] {
  const problems: StoreProblem[] = [];
  const attempt = (ref: StoreRef | undefined, read: (r: StoreRef) => unknown): void => {
    if (ref === undefined) return;
    try {
      read(ref);
    } catch (err) {
      problems.push({
        source: ref.source,
        file: ref.file,
        code: (err as TlsStoreError).code ?? 'TLS_READ',
        message: (err as Error).message,
      });
    }
  };
  const pt = config.transport.passthru_https;
  if (pt.listener.enable !== false) {
    const s = listenerTlsSettings(config, cwd);
    attempt(s.keyStore, readKeyStore);
    attempt(s.trustStore, readTrustStore);
    if (s.profileFile !== undefined) {
      try {
        const p = readProfile(s.profileFile);
        attempt(p.keyStore, readKeyStore);
        attempt(p.trustStore, readTrustStore);
      } catch (err) {
        problems.push({
          source: '[transport.passthru_https] listener.ssl_profile.file_path',
          file: s.profileFile,
          code: (err as TlsConfigError).code,
          message: (err as Error).message,
        });
      }
    }
  }
  attempt(storeRef('[transport.passthru_https] sender.key_store', pt.sender.key_store, cwd), readKeyStore);
  attempt(storeRef('[transport.passthru_https] sender.trust_store', pt.sender.trust_store, cwd), readTrustStore);
  const wss = config.transport.wss.sender.trust_store;
  if (wss?.location !== undefined && wss.location !== '')
    attempt(
      { file: path.resolve(cwd, wss.location), password: wss.password, source: '[transport.wss] sender.trust_store' },
      readTrustStore,
    );
  return problems;
}
