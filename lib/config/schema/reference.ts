/**
 * The reference's key store tables that its own deployment.toml files write (test/fixtures/deployment-toml:
 * `[keystore.tls]`, `[keystore.primary]`, `[truststore]`) and the spec's tables do not list. They name the
 * server's primary key store and trust store, which spec 001 gives as the defaults of the transports' stores
 * ([transport.passthru_https] listener.key_store.file_name: "primary keystore file of the server";
 * trust_store.file_name: "server trust store file"; sender: "same defaults as the listener"). The loader
 * copies them into the transports' store keys the file leaves out (config/stores.ts, docs/tls.md).
 */
import type { KeyDef, SectionDef } from '../schema-types';

const STORE_TYPES = ['JKS', 'JCEKS', 'PKCS12', 'PEM'] as const;

function keyStoreKeys(what: string): KeyDef[] {
  return [
    { key: 'file_name', type: 's', format: 'path', meaning: `${what} file (relative paths from the configuration file's directory).` },
    { key: 'type', type: 's', default: 'JKS', allowed: STORE_TYPES, caseInsensitive: true, meaning: 'Key store type.' },
    { key: 'password', type: 's', secret: true, defaultText: 'the store reader\'s default (<KEYSTORE_PASSWORD>)', meaning: 'Key store password.' },
    // Not copied: the transports' key stores have no alias key; a JKS store's first key entry serves (docs/tls.md).
    { key: 'alias', type: 's', inactive: true, meaning: 'Alias of the private key.' },
    { key: 'key_password', type: 's', secret: true, defaultText: 'the key store password', meaning: 'Private key password.' },
  ];
}

export const REFERENCE_SECTIONS: readonly SectionDef[] = [
  {
    path: 'keystore.primary',
    source: 'reference',
    title: 'Primary key store of the server',
    runs: true,
    keys: keyStoreKeys('Primary key store'),
  },
  {
    path: 'keystore.tls',
    source: 'reference',
    title: 'TLS key store of the server (default: the primary key store)',
    runs: true,
    keys: keyStoreKeys('TLS key store'),
  },
  {
    path: 'truststore',
    source: 'reference',
    title: 'Trust store of the server',
    runs: true,
    keys: [
      { key: 'file_name', type: 's', format: 'path', meaning: 'Trust store file (relative paths from the configuration file\'s directory).' },
      { key: 'type', type: 's', default: 'JKS', allowed: STORE_TYPES, caseInsensitive: true, meaning: 'Trust store type.' },
      { key: 'password', type: 's', secret: true, defaultText: 'the store reader\'s default (<TRUSTSTORE_PASSWORD>)', meaning: 'Trust store password.' },
    ],
  },
];
