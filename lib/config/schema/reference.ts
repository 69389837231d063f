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
 *
 * `[oauth.grant_type.token_exchange]` (RFC 8693) is the grant the reference's own files turn on beside
 * spec 001's `[oauth.grant_type.*]` tables (test/fixtures/deployment-toml/01-product-apim_all-in-one:
 * `enable`, `allow_refresh_tokens`, `iat_validity_period`; docs/key-manager.md, "Token exchange").
 */
import type { KeyDef, SectionDef } from '../schema-types';
import * as R from './reasons';

const STORE_TYPES = ['JKS', 'JCEKS', 'PKCS12', 'PEM'] as const;

function keyStoreKeys(what: string): KeyDef[] {
  return [
    {
      key: 'file_name',
      type: 's',
      format: 'store',
      meaning: `${what} file: a bare name in the security directory (docs/tls.md, "Where store files are found").`,
    },
    {
      key: 'type',
      type: 's',
      default: 'JKS',
      allowed: STORE_TYPES,
      caseInsensitive: true,
      meaning: 'Key store type.',
      differs: R.STORE_TYPE,
    },
    {
      key: 'password',
      type: 's',
      secret: true,
      defaultText: "the store reader's default (<KEYSTORE_PASSWORD>)",
      meaning: 'Key store password.',
    },
    // Not copied: the transports' key stores have no alias key; a JKS store's first key entry serves (docs/tls.md).
    {
      key: 'alias',
      type: 's',
      inactive: 'the first key entry of the store serves (docs/tls.md); an alias is not looked up',
      meaning: 'Alias of the private key.',
    },
    { key: 'key_password', type: 's', secret: true, defaultText: 'the key store password', meaning: 'Private key password.' },
  ];
}

/** The reference's `[user_store] type` values; the `_unique_id` forms name the same stores. */
export const USER_STORE_TYPES = [
  'database_unique_id',
  'database',
  'read_only_ldap',
  'read_only_ldap_unique_id',
  'read_write_ldap',
  'read_write_ldap_unique_id',
  'active_directory',
  'active_directory_unique_id',
] as const;

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
        meaning:
          "Where users and their roles live: database (the key manager's store), read_only_ldap or read_write_ldap (an LDAP directory, read only in throughway), active_directory; [user_store.properties] configure the directory (docs/user-stores.md).",
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
    path: 'oauth.grant_type.token_exchange',
    source: 'reference',
    title: 'OAuth grant type token_exchange (RFC 8693)',
    runs: true,
    enabledBy: 'oauth.grant_type.token_exchange.enable',
    keys: [
      // Off unless written: it turns another issuer's tokens into this server's (docs/key-manager.md).
      {
        key: 'enable',
        type: 'b',
        default: false,
        meaning:
          'Enable the token exchange grant (urn:ietf:params:oauth:grant-type:token-exchange): a JWT of a trusted issuer ([[apim.jwt.issuer]]) or of this server, for an access token of this server.',
      },
      {
        key: 'grant_handler',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Grant handler class.',
      },
      { key: 'allow_refresh_tokens', type: 'b', default: true, meaning: 'Issue a refresh token with the exchanged access token.' },
      {
        key: 'iat_validity_period',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 3600,
        min: 1,
        meaning: 'A subject token issued (iat) longer ago than this is refused.',
      },
    ],
  },
  {
    path: 'truststore',
    source: 'reference',
    title: 'Trust store of the server',
    runs: true,
    keys: [
      {
        key: 'file_name',
        type: 's',
        format: 'store',
        meaning: 'Trust store file: a bare name in the security directory (docs/tls.md, "Where store files are found").',
      },
      {
        key: 'type',
        type: 's',
        default: 'JKS',
        allowed: STORE_TYPES,
        caseInsensitive: true,
        meaning: 'Trust store type.',
        differs: R.STORE_TYPE,
      },
      {
        key: 'password',
        type: 's',
        secret: true,
        defaultText: "the store reader's default (<TRUSTSTORE_PASSWORD>)",
        meaning: 'Trust store password.',
      },
    ],
  },
];
