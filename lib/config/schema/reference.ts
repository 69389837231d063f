/**
 * The reference's key store tables that its own deployment.toml files write (test/fixtures/deployment-toml:
 * `[keystore.tls]`, `[keystore.primary]`, `[truststore]`) and the spec's tables do not list. They name the
 * server's primary key store and trust store, which spec 001 gives as the defaults of the transports' stores
 * ([transport.passthru_https] listener.key_store.file_name: "primary keystore file of the server";
 * trust_store.file_name: "server trust store file"; sender: "same defaults as the listener"). The loader
 * copies them into the transports' store keys the file leaves out (config/stores.ts, docs/tls.md).
 *
 * `[user_store] type` is the reference's choice of user store that spec 001's `[user_store.properties]`
 * (ConnectionURL, UserSearchBase, MembershipAttribute, ...) configure: the database, an LDAP directory or
 * Active Directory (docs/user-stores.md).
 */
import type { KeyDef, SectionDef } from '../schema-types';

const STORE_TYPES = ['JKS', 'JCEKS', 'PKCS12', 'PEM'] as const;

function keyStoreKeys(what: string): KeyDef[] {
  return [
    { key: 'file_name', type: 's', format: 'store', meaning: `${what} file: a bare name in the security directory (docs/tls.md, "Where store files are found").` },
    { key: 'type', type: 's', default: 'JKS', allowed: STORE_TYPES, caseInsensitive: true, meaning: 'Key store type.' },
    { key: 'password', type: 's', secret: true, defaultText: 'the store reader\'s default (<KEYSTORE_PASSWORD>)', meaning: 'Key store password.' },
    // Not copied: the transports' key stores have no alias key; a JKS store's first key entry serves (docs/tls.md).
    { key: 'alias', type: 's', inactive: true, meaning: 'Alias of the private key.' },
    { key: 'key_password', type: 's', secret: true, defaultText: 'the key store password', meaning: 'Private key password.' },
  ];
}

/** The reference's `[user_store] type` values; the `_unique_id` forms name the same stores. */
export const USER_STORE_TYPES = ['database_unique_id', 'database', 'read_only_ldap', 'read_only_ldap_unique_id', 'read_write_ldap', 'read_write_ldap_unique_id', 'active_directory', 'active_directory_unique_id'] as const;

export const REFERENCE_SECTIONS: readonly SectionDef[] = [
  {
    path: 'user_store',
    source: 'reference',
    title: 'User store',
    runs: true,
    keys: [
      {
        key: 'type',
        type: 's',
        default: 'database_unique_id',
        allowed: USER_STORE_TYPES,
        meaning: 'Where users and their roles live: database (the key manager\'s store), read_only_ldap or read_write_ldap (an LDAP directory, read only in throughway), active_directory; [user_store.properties] configure the directory (docs/user-stores.md).',
      },
    ],
  },
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
      { key: 'file_name', type: 's', format: 'store', meaning: 'Trust store file: a bare name in the security directory (docs/tls.md, "Where store files are found").' },
      { key: 'type', type: 's', default: 'JKS', allowed: STORE_TYPES, caseInsensitive: true, meaning: 'Trust store type.' },
      { key: 'password', type: 's', secret: true, defaultText: 'the store reader\'s default (<TRUSTSTORE_PASSWORD>)', meaning: 'Trust store password.' },
    ],
  },
];
