/**
 * Sections of spec document 000, part 2 (server, database, JWT, gateway, caches, analytics, key manager,
 * AI, OAuth options, mutual TLS, security audit, developer portal, CORS, throttling, workflow, SDK,
 * tracing, token revocation, event hub, e-mail, multi-tenancy, indexing), in the spec's order.
 *
 * Conventions used throughout (see schema-types.ts): a spec type `s` whose default is TRUE/FALSE gets
 * `boolString`; durations carry `format: 'duration'` with the unit of a bare number and a numeric default
 * in that unit; comma lists carry `format: 'list'` with a string[] default; the spec's "super admin
 * credentials" defaults are `$ref{super_admin.*}`; placeholders such as <PASSWORD> are `defaultText` only.
 * Every full key path (section path + key) is defined exactly once, so a table that the spec lists both
 * as dotted keys and as a sub-table (e.g. [apim.throttling] jms.* and [apim.throttling.jms]) lives in the
 * sub-table only.
 */
import type { KeyDef, SectionDef } from '../schema-types';
import * as R from './reasons';

const SUPER_USER = '$ref{super_admin.username}';
const SUPER_PASS = '$ref{super_admin.password}';

const DB_TYPES = ['mysql', 'h2', 'mssql', 'postgre', 'oracle', 'db2'] as const;

/** (spec 000, [apim.notifications] and [output_adapter.email]): both tables use the same keys. */
function emailKeys(): KeyDef[] {
  return [
    { key: 'from_address', type: 's', format: 'email', defaultText: '<EMAIL>', meaning: 'Sender e-mail address.' },
    { key: 'username', type: 's', meaning: 'User that authenticates to the mail server; may equal from_address.' },
    { key: 'password', type: 's', secret: true, defaultText: '<PASSWORD>', meaning: 'Password of the mail server user.' },
    { key: 'hostname', type: 's', format: 'host', meaning: 'SMTP server host.' },
    { key: 'signature', type: 's', meaning: 'Signature appended to sent mail.' },
    { key: 'port', type: 's', format: 'port', default: 25, meaning: 'SMTP server port.' },
    {
      key: 'enable_start_tls',
      type: 's',
      boolString: true,
      default: false,
      meaning: 'Use STARTTLS; needs a trust store that trusts the mail server.',
    },
    { key: 'enable_authentication', type: 's', boolString: true, default: false, meaning: 'Authenticate to the mail server with AUTH.' },
  ];
}

/**
 * (spec 000, Multi-tenancy): each billing package has the same four tables. lib/tenants/packages.ts acts on
 * the three limits (docs/tenants.md, "Billing packages"); throughway bills nothing, so the name and the
 * charges are accepted and not acted on.
 */
function billingSections(): SectionDef[] {
  const base = 'multi_tenancy.billing.package.<package_key>';
  const NO_BILLING = 'throughway bills nothing (docs/tenants.md, "Billing packages").';
  return [
    {
      path: base,
      source: '000',
      title: 'Billing package (package_key: demo, smb or custom)',
      runs: true,
      keys: [
        {
          key: 'name',
          type: 's',
          inactive: 'No page shows packages by name: a tenant names its package by key (demo, smb, custom).',
          defaultText: 'demo: Demo; smb: SMB',
          meaning: 'Display name of the billing package.',
        },
        { key: 'subscription_charge', type: 'i', inactive: NO_BILLING, default: 0, min: 0, meaning: 'Subscription charge of the package.' },
      ],
    },
    {
      path: `${base}.users`,
      source: '000',
      title: 'Billing package: users',
      runs: true,
      keys: [
        { key: 'limit', type: 's', default: '1', meaning: 'Number of users included; may be the word unlimited.' },
        { key: 'charge', type: 's', inactive: NO_BILLING, default: '0', meaning: 'Charge for the users of the package.' },
      ],
    },
    {
      path: `${base}.resource_volume`,
      source: '000',
      title: 'Billing package: resource volume',
      runs: true,
      keys: [
        {
          key: 'limit',
          type: 's',
          differs: "Counts the tenant's APIs (API files of apis/t/<domain>/ deployed): the files past it are refused (docs/tenants.md).",
          meaning: 'Maximum chargeable resource volume.',
        },
        { key: 'overuse_charge', type: 's', inactive: NO_BILLING, default: '0', meaning: 'Charge for resource volume above the limit.' },
      ],
    },
    {
      path: `${base}.bandwidth`,
      source: '000',
      title: 'Billing package: bandwidth',
      runs: true,
      keys: [
        {
          key: 'limit',
          type: 's',
          differs:
            'Bytes through the gateway per calendar month (UTC) for the tenant, one count in the store for all its gateways; a bare number is bytes, units KB/MB/GB/TB are 1024-based; past it calls answer 103012 (docs/tenants.md).',
          meaning: 'Highest bandwidth included.',
        },
        { key: 'overuse_charge', type: 's', inactive: NO_BILLING, default: '0', meaning: 'Charge for bandwidth above the limit.' },
      ],
    },
  ];
}

export const DOC000_SECTIONS: readonly SectionDef[] = [
  // ---------------------------------------------------------------- server, admin, database
  {
    path: 'server',
    required: true,
    source: '000',
    title: 'Server node identity',
    runs: true,
    keys: [
      {
        key: 'hostname',
        type: 's',
        required: true,
        default: 'localhost',
        format: 'host',
        meaning: 'Host name or IP address of the machine (localhost, 127.0.0.1, any IP, any host name).',
      },
      {
        key: 'offset',
        type: 'i',
        default: 0,
        meaning: 'Added to every runtime port (base 9443 with offset 1 gives 9444); use unique values per instance on one machine.',
      },
      // A single-process gateway has no HA clustering mode to switch.
      {
        key: 'mode',
        type: 's',
        allowed: ['single', 'ha'],
        inactive:
          'throughway has no single/HA switch: nodes share state through [throughway.scale] and Redis whatever the mode (docs/scale-out.md)',
        meaning: 'Deployment mode: single or ha.',
      },
      {
        key: 'base_path',
        type: 's',
        format: 'url',
        inactive:
          'the management URLs are built from [server] hostname and the listening ports (docs/transport.md); a written base path is not read',
        meaning: 'Management base URL built from protocol, host and management port.',
      },
      {
        key: 'discard_empty_caches',
        type: 'b',
        default: false,
        inactive: "the reference's Java caches; throughway's caches are bounded in-process maps with no empty-cache objects to discard",
        meaning: 'Discard empty caches (listed in the sample).',
      },
      {
        key: 'server_role',
        type: 's',
        required: true,
        default: 'default',
        allowed: ['default', 'api-devportal', 'api-key-manager', 'api-publisher', 'gateway-worker', 'traffic-manager'],
        meaning: 'Profile this node runs.',
      },
      {
        key: 'enableMTOM',
        type: 'b',
        default: false,
        inactive: 'SOAP attachments (MTOM) are not decoded: a body passes through as bytes unless a mediation reads it (docs/mediation.md)',
        meaning: 'Enables MTOM (SOAP message transmission optimisation).',
      },
      {
        key: 'enableSwA',
        type: 'b',
        default: false,
        inactive: 'SOAP with Attachments is not decoded: a body passes through as bytes unless a mediation reads it (docs/mediation.md)',
        meaning: 'Enables SOAP with Attachments; attached files are processed.',
      },
      {
        key: 'disable_shutdown_from_ui',
        type: 'b',
        default: false,
        inactive: "the reference's management console; throughway has none to remove the option from (its consoles: docs/portal.md)",
        meaning: 'Removes the shutdown option from the management console.',
      },
      {
        key: 'disable_restart_from_ui',
        type: 'b',
        default: false,
        inactive: "the reference's management console; throughway has none to remove the option from (its consoles: docs/portal.md)",
        meaning: 'Removes the restart option from the management console.',
      },
    ],
  },
  {
    path: 'super_admin',
    required: true,
    source: '000',
    title: 'Super admin account',
    runs: true,
    keys: [
      { key: 'username', type: 's', default: 'admin', meaning: 'Super admin user name.' },
      // The reference's well-known default; the spec only names a placeholder (spec 000, [super_admin]).
      {
        key: 'password',
        type: 's',
        secret: true,
        default: 'admin',
        defaultText: 'built-in default password (<DEFAULT_PASSWORD>)',
        meaning: 'Super admin password.',
      },
      { key: 'create_admin_account', type: 's', boolString: true, default: true, meaning: 'Create a user with these details.' },
    ],
  },
  {
    path: 'database_configuration',
    source: '000',
    title: 'Embedded database console',
    runs: true,
    keys: [
      // throughway serves no database browser; the switch is accepted so reference files load.
      {
        key: 'enable_h2_console',
        type: 'b',
        required: true,
        default: false,
        inactive: 'there is no embedded H2 database: the embedded store is SQLite (docs/operations.md), with no web console',
        meaning: 'true allows browsing the embedded database from a web browser.',
      },
    ],
  },
  {
    path: 'database.apim_db',
    required: true,
    source: '000',
    title: 'API manager database',
    runs: true,
    keys: [
      {
        key: 'type',
        type: 's',
        required: true,
        default: 'h2',
        allowed: DB_TYPES,
        differs: 'h2 is an embedded SQLite file (Node has no h2); mssql, oracle and db2 are refused at start',
        meaning: 'Database type.',
      },
      // The spec marks hostname and port R but also says "use with port, or use url; url overrides host
      // and port" (spec 000, [database.apim_db]): they are alternatives to url, so neither is enforced
      // (the reference's own files give url only).
      { key: 'hostname', type: 's', format: 'host', meaning: 'Database host; use with port, or use url (url overrides host and port).' },
      { key: 'port', type: 's', format: 'port', meaning: 'Database port; use with hostname, or use url.' },
      {
        key: 'url',
        type: 's',
        defaultText: 'embedded file database URL ending DB_CLOSE_ON_EXIT=FALSE',
        meaning: 'Connection URL; required for h2 and to pass JDBC properties, otherwise optional.',
      },
      // R in the spec with a default ("built-in default user/password"): not enforced. The embedded h2
      // store (an SQLite file, docs/migrating.md) ignores them; postgre/mysql connect without them.
      { key: 'username', type: 's', defaultText: 'built-in default user (ignored by type h2)', meaning: 'Connection user.' },
      {
        key: 'password',
        type: 's',
        secret: true,
        defaultText: 'built-in default (<DB_PASSWORD>; ignored by type h2)',
        meaning: 'Connection password.',
      },
      {
        key: 'validationQuery',
        type: 's',
        required: true,
        default: 'SELECT 1',
        meaning: 'Query that validates a connection; depends on the database.',
      },
      { key: 'pool_options.maxActive', type: 's', default: '50', meaning: 'Maximum simultaneously active pooled connections.' },
      {
        key: 'pool_options.maxWait',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 60000,
        min: 0,
        meaning: 'Maximum wait for a free connection once maxActive is used up.',
      },
      {
        key: 'pool_options.testOnBorrow',
        type: 's',
        boolString: true,
        default: true,
        meaning: 'Validate before borrowing; a failed connection is dropped and another borrowed.',
      },
      {
        key: 'pool_options.validationInterval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 0,
        meaning: 'A connection validated within this interval is not revalidated.',
      },
      {
        key: 'pool_options.defaultAutoCommit',
        type: 's',
        boolString: true,
        default: true,
        meaning: 'Each statement commits as its own transaction.',
      },
    ],
  },
  {
    path: 'database.shared_db',
    required: true,
    source: '000',
    title: 'Shared database',
    runs: true,
    // (spec 000, [database.shared_db]): only type, url, username, password apply; none required. With a url
    // of its own it holds users, roles, tenants and profiles (lib/store/split.ts, docs/operations.md).
    keys: [
      {
        key: 'type',
        type: 's',
        default: 'h2',
        allowed: DB_TYPES,
        differs: 'h2 is an embedded SQLite file (Node has no h2); mssql, oracle and db2 are refused at start',
        meaning: 'Database type.',
      },
      {
        key: 'url',
        type: 's',
        defaultText: 'embedded file database URL naming a shared database file, ending DB_CLOSE_ON_EXIT=FALSE',
        differs:
          'Without a url, or naming apim_db\'s database, there is one store; with one of its own it holds users, roles, tenants and profiles (the reference\'s registry has no counterpart: docs/operations.md, "Two databases")',
        meaning: 'Connection URL of the database shared between nodes.',
      },
      {
        key: 'username',
        type: 's',
        defaultText: 'built-in default user',
        meaning: 'Connection user.',
      },
      {
        key: 'password',
        type: 's',
        secret: true,
        defaultText: 'built-in default (<DB_PASSWORD>)',
        meaning: 'Connection password.',
      },
    ],
  },

  // ---------------------------------------------------------------- JWT
  {
    path: 'apim.jwt',
    required: true,
    source: '000',
    title: 'Backend JWT generation',
    runs: true,
    enabledBy: 'apim.jwt.enable',
    keys: [
      {
        key: 'enable',
        type: 's',
        required: true,
        boolString: true,
        default: false,
        meaning: 'Enable generation of a JWT for the backend.',
      },
      {
        key: 'encoding',
        type: 's',
        default: 'base64',
        allowed: ['base64', 'base64url'],
        meaning: 'base64, or base64url for the URL-safe generator.',
      },
      {
        key: 'generator_impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Generator class.',
      },
      { key: 'header', type: 's', default: 'X-JWT-Assertion', meaning: 'HTTP header carrying the JWT to the backend.' },
      { key: 'enable_user_claims', type: 's', boolString: true, default: false, meaning: 'false: no user store claims in the JWT.' },
      {
        key: 'claims_extractor_impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        meaning: 'Custom claim retriever class; used with enable_user_claims = true.',
      },
      {
        key: 'claim_dialect',
        type: 's',
        defaultText: 'vendor claims dialect URI (<CLAIM_DIALECT_URI>)',
        meaning: 'Claim URI set used in the JWT.',
      },
      { key: 'signing_algorithm', type: 's', default: 'SHA256withRSA', meaning: 'Signing algorithm; NONE disables signing.' },
      { key: 'enable_claim_retrieval', type: 'b', meaning: "Adds the authorized user's claims to the backend JWT (default key manager)." },
      {
        key: 'gateway_generator.impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Custom generator for self-contained JWT access tokens.',
      },
      {
        key: 'gateway_generator.excluded_claims',
        type: 's',
        format: 'list',
        meaning: 'Claims omitted from the backend JWT for self-contained tokens.',
      },
      {
        key: 'binding_federated_user_claims',
        type: 'b',
        default: false,
        inactive:
          'no federated identity providers: every user is of the local store or a directory, so there are no federated claims to bind',
        meaning: 'true disables binding federated user claims to the backend JWT.',
      },
      { key: 'use_kid_property', type: 'b', default: true, meaning: 'Include kid in the backend JWT header.' },
      { key: 'use_sha256_hash', type: 'b', default: false, meaning: 'Certificate thumbprint header uses SHA-256 instead of SHA-1.' },
    ],
  },
  {
    path: 'apim.jwt.issuer',
    repeatable: true,
    source: '000',
    title: 'Trusted JWT issuer',
    runs: true,
    keys: [
      { key: 'name', type: 's', meaning: 'Issuer name (iss) of JWTs from a third-party key manager.' },
      // Not in the spec's table: the gateway needs them to validate such tokens (docs/security.md).
      {
        key: 'audience',
        type: 's',
        meaning: 'Audience (aud) the gateway requires in tokens of this issuer (throughway addition); unset: aud is not checked.',
      },
      {
        key: 'subscription_validation',
        type: 'b',
        default: false,
        meaning:
          "Check tokens of this issuer against the gateway's subscriptions by their client id (throughway addition); false: a valid token of a trusted issuer is enough, since its clients are not applications of the built-in key manager.",
      },
    ],
  },
  {
    path: 'apim.jwt.issuer.jwks',
    source: '000',
    title: 'JWKS endpoint of a JWT issuer',
    runs: true,
    keys: [{ key: 'url', type: 's', format: 'url', meaning: 'JWKS endpoint of the issuer.' }],
  },
  {
    path: 'apim.jwt.issuer.claim_mapping',
    repeatable: true,
    source: '000',
    title: 'Claim mapping of a JWT issuer',
    runs: true,
    keys: [
      { key: 'remote_claim', type: 's', meaning: 'Name of the claim in the remote token.' },
      { key: 'local_claim', type: 's', meaning: 'Local claim name the remote claim maps to.' },
    ],
  },

  // ---------------------------------------------------------------- gateway environments
  {
    path: 'apim.gateway.environment',
    repeatable: true,
    required: true,
    source: '000',
    title: 'Gateway environment',
    runs: true,
    // The endpoints, name, type, description and show_as_token_endpoint_url are the gateway URLs the start
    // summary, `apis list` and the key manager report (lib/gateway/environments.ts); the developer portal
    // shows the environments with display_in_api_console and sends try-it calls to the first http_endpoint
    // (lib/portal, docs/portal.md); the publishing keys are accepted and named by `config check` as not
    // acted on (docs/migrating.md).
    keys: [
      { key: 'name', type: 's', required: true, default: 'Default', meaning: 'Environment name.' },
      {
        key: 'type',
        type: 's',
        required: true,
        default: 'hybrid',
        allowed: ['production', 'sandbox', 'hybrid'],
        meaning: 'Which tokens the environment serves.',
      },
      {
        key: 'display_in_api_console',
        type: 's',
        required: true,
        boolString: true,
        default: true,
        meaning: "Show the environment under 'Try it' in the developer portal console.",
      },
      {
        key: 'description',
        type: 's',
        required: true,
        default: 'This is a hybrid gateway that handles both production and sandbox token traffic.',
        defaultText: 'text describing a hybrid gateway for production and sandbox tokens',
        meaning: 'Description of the environment.',
      },
      {
        key: 'show_as_token_endpoint_url',
        type: 's',
        required: true,
        boolString: true,
        default: true,
        meaning: 'Used to build the sample request in the developer portal.',
      },
      {
        key: 'service_url',
        type: 's',
        inactive: R.PULLED,
        required: true,
        format: 'url',
        default: 'https://localhost:9443/services/',
        meaning: 'APIs are published to this URL.',
      },
      {
        key: 'username',
        type: 's',
        inactive: R.PULLED,
        required: true,
        default: SUPER_USER,
        defaultText: 'super admin user name',
        meaning: 'Publishing credential: user.',
      },
      {
        key: 'password',
        type: 's',
        inactive: R.PULLED,
        required: true,
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super admin password',
        meaning: 'Publishing credential: password.',
      },
      // The spec marks ws_endpoint and https_endpoint R; throughway needs neither (an environment without
      // them has no such URL), so a file that leaves them out still loads.
      {
        key: 'ws_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'no default; ws://<host>:<port> (gateway WS port 9099 in the sample)',
        meaning: 'WebSocket endpoint of the gateway.',
      },
      // Not in the spec's table, but the reference's own files set it on the entry (shared/fixtures).
      {
        key: 'wss_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'no default; wss://<host>:<port> (gateway WSS port 8099)',
        meaning: 'Secure WebSocket endpoint of the gateway (throughway addition: the reference files write it here).',
      },
      {
        key: 'https_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'no default; https://<host>:<port> (8243 in the sample)',
        meaning: 'HTTPS endpoint of the gateway.',
      },
      {
        key: 'http_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'no default; http://<host>:<port> (8280 in the sample)',
        meaning: 'HTTP endpoint of the gateway.',
      },
    ],
  },
  {
    path: 'apim.gateway.environment.virtual_host',
    source: '000',
    title: 'Virtual host of a gateway environment',
    runs: true,
    keys: [
      {
        key: 'http_endpoint',
        type: 's',
        inactive: "virtual hosts are not listed: the portal and `apis list` show the environment's own endpoints (docs/portal.md)",
        format: 'url',
        defaultText: 'http://<host of https endpoint>:80',
        meaning: 'HTTP endpoint, http://<host>:<port>/<optional context>.',
      },
      {
        key: 'https_endpoint',
        type: 's',
        inactive: "virtual hosts are not listed: the portal and `apis list` show the environment's own endpoints (docs/portal.md)",
        required: true,
        format: 'url',
        meaning: 'HTTPS endpoint, https://<host>:<port>/<optional context>.',
      },
      {
        key: 'ws_endpoint',
        type: 's',
        inactive: "virtual hosts are not listed: the portal and `apis list` show the environment's own endpoints (docs/portal.md)",
        format: 'url',
        defaultText: 'ws://<host of https endpoint>:9099',
        meaning: 'WebSocket endpoint.',
      },
      {
        key: 'wss_endpoint',
        type: 's',
        inactive: "virtual hosts are not listed: the portal and `apis list` show the environment's own endpoints (docs/portal.md)",
        format: 'url',
        defaultText: 'wss://<host of https endpoint>:8099',
        meaning: 'Secure WebSocket endpoint.',
      },
    ],
  },
  {
    path: 'apim.sync_runtime_artifacts.gateway',
    required: true,
    source: '000',
    title: 'Gateway artifact synchronisation',
    runs: true,
    keys: [
      {
        key: 'gateway_labels',
        type: 'a',
        required: true,
        default: ['Default'],
        meaning: 'Labels the gateway subscribes to; only APIs with those labels are pulled and deployed.',
      },
      {
        key: 'deployment_retry_duration',
        type: 'i',
        format: 'duration',
        unit: 'ms',
        default: 15000,
        min: 0,
        meaning: 'Wait before the first retry of a failed deployment.',
      },
      { key: 'max_retry_count', type: 'i', default: 5, min: 0, meaning: 'Maximum deployment retries.' },
      { key: 'retry_progression_factor', type: 'f', default: 2.0, min: 1, meaning: 'Multiplier of the retry wait after each failure.' },
    ],
  },

  // ---------------------------------------------------------------- caches (spec 000, Caches)
  // The cache table has no type column: enable is a boolean, expiry_time a duration. Bare numbers in
  // minutes for the token/resource caches ("15 m"; the reference's gateway file writes expiry_time = 15),
  // in seconds for the JWT claim cache (same as the JWT expiry; the same file writes 900).
  {
    path: 'apim.cache.gateway_token',
    required: true,
    source: '000',
    title: 'Gateway token cache',
    runs: true,
    enabledBy: 'apim.cache.gateway_token.enable',
    keys: [
      {
        key: 'enable',
        type: 'b',
        default: true,
        meaning: 'Gateway token cache; token validation checks the cache first (recommended on).',
      },
      {
        key: 'expiry_time',
        type: 's',
        format: 'duration',
        unit: 'm',
        default: 15,
        min: 0,
        defaultText: '15 m (sample 900s)',
        meaning: 'Expiry of cached token validation results.',
      },
    ],
  },
  {
    path: 'apim.cache.resource',
    required: true,
    source: '000',
    title: 'Gateway resource cache',
    runs: true,
    enabledBy: 'apim.cache.resource.enable',
    keys: [
      // throughway has no resource cache (lib/gateway/router.ts): resources are compiled into the route
      // table when an API is deployed and every call is matched against it, so nothing can go stale.
      {
        key: 'enable',
        type: 'b',
        inactive:
          'no resource cache: resources are compiled into the route table when an API is deployed and matched from it on every call',
        default: true,
        meaning: 'Caches API resources at the gateway; entries expire in 15 minutes.',
      },
      {
        key: 'expiry_time',
        type: 's',
        inactive: 'no resource cache exists to expire: resources are compiled into the route table when an API is deployed',
        format: 'duration',
        unit: 'm',
        min: 0,
        defaultText: '- (sample 900s; entries expire in 15 minutes)',
        meaning: 'Expiry of cached API resources.',
      },
    ],
  },
  {
    path: 'apim.cache.km_token',
    required: true,
    source: '000',
    title: 'Key manager token cache',
    runs: true,
    enabledBy: 'apim.cache.km_token.enable',
    keys: [
      {
        key: 'enable',
        type: 'b',
        default: false,
        meaning: 'Key manager token cache; enable only one of the gateway and key manager token caches.',
      },
      {
        key: 'expiry_time',
        type: 's',
        format: 'duration',
        unit: 'm',
        default: 15,
        min: 0,
        defaultText: '15 m',
        meaning: 'Expiry of the key manager token cache.',
      },
    ],
  },
  {
    path: 'apim.cache.recent_apis',
    required: true,
    source: '000',
    title: 'Recently added APIs cache (developer portal)',
    runs: false,
    notRun: R.PORTAL_CACHE,
    enabledBy: 'apim.cache.recent_apis.enable',
    keys: [{ key: 'enable', type: 'b', default: false, meaning: 'Caches recently added APIs in the developer portal for 15 minutes.' }],
  },
  {
    path: 'apim.cache.scopes',
    required: true,
    source: '000',
    title: 'Scope cache',
    runs: true,
    enabledBy: 'apim.cache.scopes.enable',
    // throughway has no scope cache: the gateway checks the scopes compiled with each deployed resource, the
    // key manager reads the deployed APIs' scopes at each token request (lib/keymanager/oauth.ts).
    keys: [
      {
        key: 'enable',
        type: 'b',
        inactive: 'resource scopes are compiled with the deployed API and read from it on every call: there is no scope cache to switch',
        default: true,
        meaning: 'Scope cache, entries live 15 minutes.',
      },
    ],
  },
  {
    path: 'apim.cache.publisher_roles',
    required: true,
    source: '000',
    title: 'Publisher role cache',
    runs: false,
    notRun: R.PORTAL_CACHE,
    enabledBy: 'apim.cache.publisher_roles.enable',
    keys: [{ key: 'enable', type: 'b', default: true, meaning: 'Publisher role cache, entries live 15 minutes.' }],
  },
  {
    path: 'apim.cache.jwt_claim',
    required: true,
    source: '000',
    title: 'JWT claim cache',
    runs: true,
    enabledBy: 'apim.cache.jwt_claim.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Caches user claims used to build the backend JWT.' },
      {
        key: 'expiry_time',
        type: 's',
        format: 'duration',
        unit: 's',
        min: 0,
        defaultText: 'not defined: same as the JWT expiry',
        meaning: 'Expiry of cached claims.',
      },
    ],
  },
  {
    path: 'apim.cache.tags',
    required: true,
    source: '000',
    title: 'Tag cache (developer portal)',
    runs: false,
    notRun: R.PORTAL_CACHE,
    keys: [
      {
        key: 'expiry_time',
        type: 's',
        format: 'duration',
        unit: 'm',
        default: 2,
        min: 0,
        defaultText: '2m',
        meaning: 'Tag cache expiry; the cache is disabled when undefined.',
      },
    ],
  },

  // ---------------------------------------------------------------- analytics
  {
    path: 'apim.analytics',
    required: true,
    source: '000',
    title: 'Analytics',
    runs: true,
    enabledBy: 'apim.analytics.enable',
    keys: [
      { key: 'enable', type: 's', required: true, boolString: true, default: false, meaning: 'Enable analytics.' },
      {
        key: 'store_api_url',
        type: 's',
        required: true,
        format: 'url',
        default: 'https://localhost:7444',
        inactive: R.ANALYTICS_NODE,
        meaning: 'Analytics store REST URL; use the load-balancing URL for several nodes.',
      },
      {
        key: 'username',
        type: 's',
        required: true,
        default: SUPER_USER,
        defaultText: 'super admin credentials',
        inactive: R.ANALYTICS_NODE,
        meaning: 'User on the analytics node.',
      },
      {
        key: 'password',
        type: 's',
        required: true,
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super admin credentials',
        inactive: R.ANALYTICS_NODE,
        meaning: 'Password on the analytics node.',
      },
      {
        key: 'receiver_username',
        type: 's',
        default: '$ref{apim.analytics.username}',
        defaultText: 'apim.analytics.username',
        meaning: 'Event publishing user (HTTP Basic credentials of every POST to a receiver, docs/analytics.md).',
      },
      {
        key: 'receiver_password',
        type: 's',
        secret: true,
        default: '$ref{apim.analytics.password}',
        defaultText: 'apim.analytics.password',
        meaning: 'Event publishing password.',
      },
      {
        key: 'store_api_username',
        type: 's',
        inactive: R.ANALYTICS_NODE,
        default: '$ref{apim.analytics.username}',
        defaultText: 'apim.analytics.username',
        meaning: 'Store REST API user.',
      },
      {
        key: 'store_api_password',
        type: 's',
        secret: true,
        inactive: R.ANALYTICS_NODE,
        default: '$ref{apim.analytics.password}',
        defaultText: 'apim.analytics.password',
        meaning: 'Store REST API password.',
      },
      {
        key: 'event_publisher_type',
        type: 's',
        inactive: 'events go to the publishers docs/analytics.md lists; a custom publisher is a Java class of the reference',
        meaning: 'Event publisher type (sample value custom).',
      },
      {
        key: 'event_publisher_impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        meaning: 'Publisher class; required when the type is custom.',
      },
      { key: 'publish_response_size', type: 's', boolString: true, default: false, meaning: 'TRUE publishes the response size in bytes.' },
    ],
  },
  {
    path: 'apim.analytics.url_group',
    repeatable: true,
    required: true,
    source: '000',
    title: 'Analytics receiver group',
    runs: true,
    enabledBy: 'apim.analytics.enable',
    keys: [
      {
        key: 'analytics_url',
        type: 'a',
        required: true,
        default: ['tcp://localhost:7612'],
        meaning:
          'Event receiver URLs of one node group. http(s):// receivers get JSON batches; tcp:// and ssl:// (the reference binary protocol) are named in a warning and not used (docs/analytics.md).',
      },
      {
        key: 'analytics_auth_url',
        type: 'a',
        required: true,
        default: ['ssl://localhost:7712'],
        inactive: R.ANALYTICS_NODE,
        meaning: 'Authentication URLs of one node group.',
      },
      { key: 'type', type: 's', allowed: ['loadbalance', 'failover'], meaning: 'How the URLs of the group are used (unset: failover).' },
    ],
  },

  // ---------------------------------------------------------------- key manager, HTTP client, AI
  {
    path: 'apim.key_manager',
    required: true,
    source: '000',
    title: 'Key manager connection',
    runs: true,
    keys: [
      {
        key: 'service_url',
        type: 's',
        required: true,
        format: 'url',
        default: 'https://localhost:9443/services/',
        meaning: 'Service URL of the key manager.',
      },
      { key: 'username', type: 's', default: SUPER_USER, defaultText: 'super admin credentials', meaning: 'Key manager user.' },
      {
        key: 'password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super admin credentials',
        meaning: 'Key manager password.',
      },
      { key: 'pool.init_idle_capacity', type: 's', default: '50', inactive: R.KM_POOL, meaning: 'Minimum clients to the key manager.' },
      { key: 'pool.max_idle', type: 's', default: '100', inactive: R.KM_POOL, meaning: 'Maximum clients to the key manager.' },
      {
        key: 'key_validation_handler_type',
        type: 's',
        default: 'default',
        allowed: ['default', 'custom'],
        inactive: 'the gateway validates keys with its built-in handler; a custom handler is a Java class of the reference',
        meaning: 'Key validation handler: default or custom.',
      },
      {
        key: 'key_validation_handler_impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        meaning: 'Custom handler class, used when the type is custom.',
      },
    ],
  },
  {
    path: 'apim.http_client',
    required: true,
    source: '000',
    title: 'Key validation HTTP client',
    runs: true,
    keys: [
      {
        key: 'max_total',
        type: 'i',
        required: true,
        default: 100,
        min: 1,
        meaning: 'Maximum connections for key validation calls (reference tokens only); raise under latency.',
      },
      {
        key: 'default_max_per_route',
        type: 'i',
        required: true,
        default: 50,
        min: 1,
        meaning: 'Maximum connections per key manager host.',
      },
    ],
  },
  {
    path: 'apim.ai',
    required: true,
    source: '000',
    title: 'AI features',
    runs: false,
    notRun: "the reference's AI features call a hosted AI service with a subscription token; throughway calls no such service",
    enabledBy: 'apim.ai.enable',
    keys: [
      { key: 'enable', type: 'b', required: true, default: true, meaning: 'Enable AI features.' },
      {
        key: 'token',
        type: 's',
        required: true,
        secret: true,
        defaultText: '<ACCESS_TOKEN>',
        meaning: 'Access token authenticating AI requests.',
      },
      { key: 'endpoint', type: 's', format: 'url', defaultText: '<AI_ENDPOINT>', meaning: 'URL exposing AI capabilities.' },
    ],
  },

  // ---------------------------------------------------------------- OAuth options, mutual TLS, audit
  {
    path: 'apim.oauth_config',
    required: true,
    source: '000',
    title: 'OAuth options of the gateway',
    runs: true,
    keys: [
      {
        key: 'enable_outbound_auth_header',
        type: 's',
        boolString: true,
        default: false,
        meaning: "TRUE sends the client's Authorization header on to the backend.",
      },
      { key: 'auth_header', type: 's', default: 'Authorization', meaning: 'Header carrying the access token; any custom header name.' },
      {
        key: 'revoke_endpoint',
        type: 's',
        format: 'url',
        default: 'https://localhost:9443/oauth2/revoke',
        inactive:
          "the developer portal revokes through the key manager's own /oauth2/revoke (docs/key-manager.md); a written URL is not shown",
        meaning: 'Revocation URL used in the developer portal.',
      },
      {
        key: 'enable_token_encryption',
        type: 's',
        boolString: true,
        default: false,
        inactive:
          'access tokens are never stored and refresh tokens and secrets only as SHA-256 digests (docs/key-manager.md, "Tokens at rest")',
        meaning: 'TRUE encrypts tokens stored in the database (RSA/ECB with OAEP SHA-1 MGF1 padding).',
      },
      {
        key: 'enable_token_hashing',
        type: 's',
        boolString: true,
        default: false,
        inactive:
          'refresh tokens and client secrets are always stored as SHA-256 digests, whatever the value (docs/key-manager.md, "Tokens at rest")',
        meaning: 'Hash stored tokens.',
      },
      {
        key: 'allowed_scopes',
        type: 's',
        format: 'list',
        default: ['^device_.*', 'openid'],
        defaultText: 'one pattern for scopes starting device_, and the scope openid',
        meaning: 'Allow-listed scopes.',
      },
    ],
  },
  {
    path: 'apimgt.mutual_ssl',
    required: true,
    source: '000',
    title: 'Mutual TLS',
    runs: true,
    keys: [
      {
        key: 'certificate_header',
        type: 's',
        defaultText: 'header named with the vendor word and CLIENT-CERTIFICATE (sample SSL-CLIENT-CERT)',
        meaning: 'Header carrying the client certificate from a TLS-terminating load balancer.',
      },
      {
        key: 'enable_client_validation',
        type: 'b',
        default: false,
        inactive: 'a client certificate is validated where [apimgt.mutual_ssl] certificate_header carries it; there is no separate switch',
        meaning: 'true when mutual TLS terminates between the load balancer and the gateway.',
      },
      {
        key: 'client_certificate_encode',
        type: 'b',
        default: false,
        meaning: 'true when the load balancer passes the certificate encoded.',
      },
      { key: 'enable_certificate_chain_validation', type: 'b', default: false, meaning: 'Validate the whole client certificate chain.' },
    ],
  },
  {
    path: 'security_audit',
    required: true,
    source: '000',
    title: 'API security audit',
    runs: true,
    // The section written turns on the publisher's local audit (lib/audit, docs/security-audit.md); the
    // keys of the reference's hosted audit service name a service throughway does not call.
    keys: [
      {
        key: 'api_token',
        type: 's',
        required: true,
        secret: true,
        defaultText: '<API_TOKEN>',
        inactive: R.EXTERNAL_AUDIT,
        meaning: 'Token of the security audit service.',
      },
      {
        key: 'collection_id',
        type: 's',
        required: true,
        defaultText: '<COLLECTION_ID>',
        inactive: R.EXTERNAL_AUDIT,
        meaning: 'Collection the audited APIs belong to.',
      },
      {
        key: 'global',
        type: 'b',
        default: true,
        differs:
          'true (the default) audits every API locally once [security_audit] is written; false turns the audit off, as throughway has no per-API audit switch (docs/security-audit.md)',
        meaning: 'Audit enabled globally.',
      },
      {
        key: 'base_url',
        type: 's',
        format: 'url',
        defaultText: '{audit_url}/api/v1/apis',
        inactive: R.EXTERNAL_AUDIT,
        meaning: 'Base URL of the audit API.',
      },
    ],
  },

  // ---------------------------------------------------------------- developer portal, CORS
  {
    path: 'apim.devportal',
    required: true,
    source: '000',
    title: 'Developer portal',
    runs: true,
    // The developer portal (lib/portal, docs/portal.md, docs/self-service.md) acts on every key but
    // application_sharing_impl (a class of the reference); login_username_case_insensitive is the key
    // manager's sign-in (lib/store/passwords.ts findSignInUser, docs/user-stores.md).
    keys: [
      {
        key: 'url',
        type: 's',
        differs:
          "The base of the links in account e-mail (confirmation, recovery); the default (not written) takes the consoles' own origin.",
        required: true,
        format: 'url',
        default: 'https://localhost:9443/devportal',
        meaning: 'Public URL of the developer portal.',
      },
      { key: 'enable_application_sharing', type: 's', boolString: true, default: false, meaning: 'Share applications by claim.' },
      {
        key: 'application_sharing_type',
        type: 's',
        differs: 'saml shares as default does, by the claim: throughway reads no SAML response.',
        allowed: ['default', 'saml'],
        defaultText: 'undefined (behaves as default)',
        meaning: 'default or saml; saml extracts groups from the SAML response.',
      },
      {
        key: 'application_sharing_impl',
        type: 's',
        inactive: R.JAVA_CLASS,
        format: 'class',
        defaultText: 'depends on type',
        meaning: 'Custom class; wins over the type when both are set.',
      },
      {
        key: 'application_sharing_claim',
        type: 's',
        differs:
          'The claim is the organisation of the user profile given at sign-up (the database user store); an LDAP directory holds none.',
        defaultText: 'vendor claim URI for organization',
        meaning: 'Claim used to group applications.',
      },
      {
        key: 'login_username_case_insensitive',
        type: 's',
        differs:
          "Acts on every sign-in to the key manager's store (password grant, sign-in page and consoles, admin API Basic), each tenant's users within their tenant; an LDAP directory matches names by its own rules (docs/user-stores.md).",
        boolString: true,
        default: true,
        meaning: 'User names are case-insensitive at login.',
      },
      { key: 'display_multiple_versions', type: 's', boolString: true, default: false, meaning: 'List all versions of an API.' },
      { key: 'display_deprecated_apis', type: 's', boolString: true, default: false, meaning: 'List deprecated APIs.' },
      { key: 'enable_comments', type: 's', boolString: true, default: true, meaning: 'Allow comments on APIs.' },
      { key: 'enable_ratings', type: 's', boolString: true, default: true, meaning: 'Allow star ratings.' },
      { key: 'enable_forum', type: 's', boolString: true, default: true, meaning: 'Enable the forum.' },
      // Not in spec 000's key table; the reference's own deployment.toml files write it (docs/tenants.md).
      {
        key: 'enable_cross_tenant_subscriptions',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'An application may subscribe to an API of another tenant (docs/tenants.md).',
      },
    ],
  },
  {
    path: 'apim.cors',
    required: true,
    source: '000',
    title: 'CORS (publisher and gateway)',
    runs: true,
    enabledBy: 'apim.cors.enable',
    // The CORS table has no type column: the switches are booleans, the values comma lists (the
    // reference's own files write them as TOML arrays, which format 'list' accepts).
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'CORS handling on.' },
      { key: 'allow_origins', type: 's', format: 'list', default: ['*'], meaning: 'Value of Access-Control-Allow-Origin.' },
      {
        key: 'allow_methods',
        type: 's',
        format: 'list',
        default: ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'],
        meaning: 'Allowed methods.',
      },
      {
        key: 'allow_headers',
        type: 's',
        format: 'list',
        default: ['authorization', 'Access-Control-Allow-Origin', 'Content-Type', 'SOAPAction'],
        meaning: 'Allowed request headers.',
      },
      {
        key: 'allow_credentials',
        type: 'b',
        default: false,
        meaning: 'true lets cookies and credentials be sent cross-origin; allow_origins must then not be *.',
      },
    ],
  },

  // ---------------------------------------------------------------- throttling
  {
    path: 'apim.throttling',
    required: true,
    source: '000',
    title: 'Throttling',
    runs: true,
    keys: [
      // The reference's binary/Thrift event wire formats; throughway talks to its traffic manager its own way.
      {
        key: 'event_type',
        type: 's',
        default: 'Binary',
        allowed: ['Binary', 'Thrift'],
        inactive: R.TM_WIRE,
        meaning: 'Transport to the traffic manager: Binary (recommended) or Thrift.',
      },
      {
        key: 'receiver_url',
        type: 's',
        format: 'url',
        defaultText: 'tcp://<local ip>:<receiver port>',
        inactive: R.TM_WIRE,
        meaning: 'Traffic manager connection URL.',
      },
      {
        key: 'enable_header_based_throttling',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'Allows header-condition policies in the admin portal.',
      },
      {
        key: 'enable_jwt_claim_based_throttling',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'Allows JWT-claim-condition policies.',
      },
      {
        key: 'enable_query_param_based_throttling',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'Allows query-parameter-condition policies.',
      },
      { key: 'enable_unlimited_tier', type: 's', boolString: true, default: true, meaning: 'false disables the unlimited tier.' },
      {
        key: 'skip_redeploying_policies',
        type: 's',
        format: 'list',
        inactive: 'policies live in the store and apply from it at once (docs/throttling.md); nothing is redeployed at start to skip',
        meaning: 'Policies not redeployed at startup.',
      },
      {
        key: 'enable_decision_connection',
        type: 'b',
        default: true,
        meaning:
          'Enables the (JMS) connection that retrieves throttle decisions. throughway: the traffic manager\'s decisions (counter_store = "traffic-manager") or the shared Redis totals (counter_store = "redis") are read (docs/throttling.md).',
      },
      {
        key: 'enable_data_publishing',
        type: 'b',
        default: true,
        meaning:
          "Publish request and throttle data. throughway: this node's counts go to the traffic manager or the shared Redis counters (docs/throttling.md).",
      },
      {
        key: 'enable_policy_deploy',
        type: 'b',
        default: true,
        inactive:
          'policies apply from the store on every gateway (docs/throttling.md); there is no separate deployment of policies to switch',
        meaning: 'Deploy throttling policies.',
      },
      { key: 'enable_blacklist_condition', type: 'b', default: true, meaning: 'Apply blocking conditions from the admin portal.' },
      { key: 'enable_persistence', type: 'b', default: false, meaning: 'Persist traffic manager counter state.' },
      // inactive: its requirement is not enforced (files without it start); read by lib/scale only as the hub URL of last resort.
      // R with no default in the spec; throughway needs none (no URL: no decision hub), and a default is what
      // satisfies R (spec 000, part 1.7), so a [apim.throttling] table without it still loads.
      {
        key: 'throttle_decision_endpoints',
        type: 'a',
        required: true,
        default: [],
        defaultText: 'none',
        differs: 'JMS URLs are not used: the first redis:// URL carries throttle data and decisions (docs/throttling.md)',
        meaning:
          'JMS connection URLs of the decision channel (sample tcp://<host>:5672). throughway: its first redis:// URL carries throttle data and decisions with [throughway.throttling] counter_store = "traffic-manager" (docs/throttling.md), and is the event hub when the [apim.event_hub] keys have none (docs/scale-out.md).',
      },
    ],
  },
  {
    // (spec 000, [apim.throttling]): the jms.* rows and the [apim.throttling.jms] sub-table are the same
    // TOML paths; they are all kept here. JMS itself is not spoken by throughway.
    path: 'apim.throttling.jms',
    source: '000',
    title: 'Throttling: JMS decision connection',
    runs: true,
    enabledBy: 'apim.throttling.enable_decision_connection',
    keys: [
      { key: 'ssl', type: 'b', default: false, inactive: R.TM_WIRE, meaning: 'SSL on the JMS connection.' },
      {
        key: 'start_delay',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive: R.TM_WIRE,
        defaultText: 'not defined',
        meaning: 'Delay before reading the traffic manager at startup (sample 5m).',
      },
      {
        key: 'conn_jndi_name',
        type: 's',
        default: 'TopicConnectionFactory',
        inactive: R.TM_WIRE,
        meaning: 'Connection factory JNDI name.',
      },
      { key: 'destination_type', type: 's', default: 'topic', inactive: R.TM_WIRE, meaning: 'JMS destination type.' },
      {
        key: 'java_naming_factory_initial',
        type: 's',
        format: 'class',
        inactive: R.TM_WIRE,
        defaultText: 'built-in default class',
        meaning: 'JMS initial context factory.',
      },
      { key: 'topic_connection_factory', type: 's', inactive: R.TM_WIRE, defaultText: 'not defined', meaning: 'Topic connection factory.' },
      {
        key: 'username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'JMS user, if different.',
      },
      {
        key: 'password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'JMS password, if different.',
      },
    ],
  },
  {
    path: 'apim.throttling.blacklist_condition',
    source: '000',
    title: 'Throttling: blocking conditions',
    runs: true,
    enabledBy: 'apim.throttling.enable_blacklist_condition',
    keys: [
      {
        key: 'start_delay',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive:
          'blocking conditions reach gateways as events (docs/events.md: blocking.added/removed) at once; nothing is fetched on a timer',
        meaning: 'Delay before blocking conditions are first fetched (e.g. 5m).',
      },
      {
        key: 'period',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive:
          'blocking conditions reach gateways as events (docs/events.md: blocking.added/removed) at once; nothing is fetched on a timer',
        meaning: 'Interval between fetches of blocking conditions (e.g. 1h).',
      },
    ],
  },
  {
    path: 'apim.throttling.event_sync',
    source: '000',
    title: 'Throttling: traffic manager event synchronisation',
    runs: true,
    keys: [
      {
        key: 'hostName',
        type: 's',
        format: 'host',
        inactive:
          "the reference's event synchronisation and management servers between its nodes; throughway's nodes meet in Redis (docs/scale-out.md)",
        meaning: 'Bind host of the event synchronisation server.',
      },
      {
        key: 'port',
        type: 'i',
        format: 'port',
        default: 11224,
        defaultText: 'sample 11224',
        inactive:
          "the reference's event synchronisation and management servers between its nodes; throughway's nodes meet in Redis (docs/scale-out.md)",
        meaning: 'Port of the event synchronisation server.',
      },
    ],
  },
  {
    path: 'apim.throttling.event_management',
    source: '000',
    title: 'Throttling: traffic manager event management',
    runs: true,
    keys: [
      {
        key: 'hostName',
        type: 's',
        format: 'host',
        inactive:
          "the reference's event synchronisation and management servers between its nodes; throughway's nodes meet in Redis (docs/scale-out.md)",
        meaning: 'Bind host of the event management server.',
      },
      {
        key: 'port',
        type: 'i',
        format: 'port',
        default: 10005,
        defaultText: 'sample 10005',
        inactive:
          "the reference's event synchronisation and management servers between its nodes; throughway's nodes meet in Redis (docs/scale-out.md)",
        meaning: 'Port of the event management server.',
      },
    ],
  },
  {
    path: 'apim.throttling.url_group',
    repeatable: true,
    required: true,
    source: '000',
    title: 'Traffic manager group',
    runs: true,
    keys: [
      {
        key: 'traffic_manager_urls',
        type: 'a',
        required: true,
        defaultText: '- (form tcp://<host>:9611)',
        inactive: R.TM_WIRE,
        meaning: 'Binary server URLs of the traffic managers.',
      },
      {
        key: 'traffic_manager_auth_urls',
        type: 'a',
        required: true,
        defaultText: '- (form ssl://<host>:9711)',
        inactive: R.TM_WIRE,
        meaning: 'Binary authentication URLs of the traffic managers.',
      },
      {
        key: 'type',
        type: 's',
        default: 'failover',
        allowed: ['failover', 'loadbalance'],
        inactive: R.TM_WIRE,
        meaning: 'How the URLs of the group are used.',
      },
      {
        key: 'username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Traffic manager user.',
      },
      {
        key: 'password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Traffic manager password.',
      },
      {
        key: 'receiver_username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Receiver user.',
      },
      {
        key: 'receiver_password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Receiver password.',
      },
      {
        key: 'policy_deploy.username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Policy deployment user.',
      },
      {
        key: 'policy_deploy.password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'Policy deployment password.',
      },
      {
        key: 'jms.username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'JMS user.',
      },
      {
        key: 'jms.password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive: R.TM_WIRE,
        meaning: 'JMS password.',
      },
      // Thread and connection pool sizes of the reference's data publisher (spec 002, part 8).
      { key: 'publisher.max_idle', type: 's', default: '1000', inactive: R.TM_WIRE, meaning: 'Maximum connections in the publisher pool.' },
      {
        key: 'publisher.init_idle_size',
        type: 's',
        default: '200',
        inactive: R.TM_WIRE,
        meaning: 'Minimum connections in the publisher pool.',
      },
      { key: 'publisher.pool_size', type: 's', default: '200', inactive: R.TM_WIRE, meaning: 'Publisher thread pool size.' },
      { key: 'publisher.max_pool_size', type: 's', default: '1000', inactive: R.TM_WIRE, meaning: 'Maximum publisher thread pool size.' },
      {
        key: 'publisher.keep_alive_time',
        type: 's',
        format: 'duration',
        unit: 's',
        default: 200,
        min: 0,
        defaultText: '200s',
        inactive: R.TM_WIRE,
        meaning: 'Idle time after which publisher pool threads end.',
      },
      {
        key: 'service_url',
        type: 's',
        required: true,
        format: 'url',
        default: 'https://localhost:9443/services/',
        defaultText: 'https://localhost:<management port>/services/ (with context)',
        inactive: R.TM_WIRE,
        meaning: 'Traffic manager service URL.',
      },
      {
        key: 'blacklist_condition.start_delay',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        defaultText: 'not defined',
        inactive:
          'blocking conditions reach gateways as events (docs/events.md: blocking.added/removed) at once; nothing is fetched on a timer',
        meaning: 'Delay before blocking conditions are fetched from the key manager.',
      },
      { key: 'jms.destination', type: 's', default: 'throttleData', inactive: R.TM_WIRE, meaning: 'Topic name.' },
      {
        key: 'jms.start_delay',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive: R.TM_WIRE,
        defaultText: 'as in [apim.throttling]',
        meaning: 'Delay before reading the decision topic at startup.',
      },
      {
        key: 'jms.conn_jndi_name',
        type: 's',
        default: 'TopicConnectionFactory',
        inactive: R.TM_WIRE,
        meaning: 'Connection factory JNDI name.',
      },
      { key: 'jms.destination_type', type: 's', default: 'topic', inactive: R.TM_WIRE, meaning: 'JMS destination type.' },
      {
        key: 'jms.java_naming_factory_initial',
        type: 's',
        format: 'class',
        inactive: R.TM_WIRE,
        defaultText: 'as in [apim.throttling]',
        meaning: 'JMS initial context factory.',
      },
      {
        key: 'decision_connection_type',
        type: 's',
        inactive: R.TM_WIRE,
        defaultText: 'built-in broker type',
        meaning: 'JMS connection type.',
      },
      // The spec types this row s but calls it a "JMS connection array", and the same key in
      // [apim.throttling] is a; an array is what is written, so it is typed a here too.
      {
        key: 'throttle_decision_endpoints',
        type: 'a',
        required: true,
        inactive:
          "JMS URLs of the decision channel are not opened; a redis:// URL here is the traffic manager's Redis of last resort (docs/throttling.md)",
        meaning: 'JMS connection URLs of the decision channel.',
      },
    ],
  },

  // ---------------------------------------------------------------- workflow, SDK, tracing
  {
    path: 'apim.workflow',
    source: '000',
    title: 'Workflow engine connection',
    runs: true,
    keys: [
      {
        key: 'enable',
        type: 's',
        boolString: true,
        default: false,
        differs:
          'Allows the external executor, which a tenant chooses per workflow type (docs/workflows.md); the simple and approval executors need no engine.',
        meaning: 'Run API state changes through the workflow engine.',
      },
      { key: 'service_url', type: 's', format: 'url', default: 'https://localhost:9445/bpmn', meaning: 'Workflow engine URL.' },
      { key: 'username', type: 's', default: SUPER_USER, defaultText: 'super admin credentials', meaning: 'User (in the sample).' },
      {
        key: 'password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super admin credentials',
        meaning: 'Password (in the sample).',
      },
      { key: 'wf_engine_user', type: 's', default: SUPER_USER, defaultText: 'super user credentials', meaning: 'Workflow engine user.' },
      {
        key: 'wf_engine_pass',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        meaning: 'Workflow engine password.',
      },
      {
        key: 'callback_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'https://localhost:<management port>/api/am/publisher/<version>/workflows/update-workflow-status',
        meaning: 'Callback the workflow engine calls.',
      },
      {
        key: 'token_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'https://localhost:<gateway https port>/token',
        inactive:
          "throughway does not call it: the workflow engine takes its callback token there (the gateway's /token is the key manager's, docs/workflows.md)",
        meaning: 'Token endpoint used by the workflow engine.',
      },
      {
        key: 'client_registration_endpoint',
        type: 's',
        format: 'url',
        defaultText: 'https://localhost:<management port>/client-registration/<version>/register',
        inactive: 'throughway does not call it: the workflow engine registers its callback client there (docs/workflows.md)',
        meaning: 'Dynamic client registration endpoint.',
      },
      {
        key: 'client_registration_username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super user credentials',
        meaning: 'Client registration user.',
      },
      {
        key: 'client_registration_password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super user credentials',
        inactive:
          "throughway does not read it: the engine presents it at the registration endpoint, where it is checked as any admin's (docs/workflows.md)",
        meaning: 'Client registration password.',
      },
    ],
  },
  {
    path: 'apim.sdk',
    source: '000',
    title: 'Client SDK generation',
    // lib/sdk (docs/self-service.md, "SDKs"): javascript, java and jmeter are built; the other languages are listed as not built.
    runs: true,
    keys: [
      { key: 'group_id', type: 's', defaultText: 'vendor-prefixed project group', meaning: 'Group id of generated SDKs.' },
      { key: 'artifact_id', type: 's', defaultText: 'vendor-prefixed artifact name', meaning: 'Artifact id of generated SDKs.' },
      { key: 'model_package', type: 's', defaultText: 'vendor-prefixed model package', meaning: 'Package of generated model classes.' },
      { key: 'api_package', type: 's', defaultText: 'vendor-prefixed api package', meaning: 'Package of generated API classes.' },
      {
        key: 'supported_languages',
        type: 's',
        format: 'list',
        differs:
          "javascript, java and jmeter are built and offered; the other languages are listed on the API's page as not built (docs/self-service.md).",
        default: ['android', 'java', 'javascript', 'jmeter'], // The spec's allowed values, and scala and flash, which the reference's own files list
        // (test/fixtures/deployment-toml/01-product-apim_all-in-one.deployment.toml).
        allowed: [
          'android',
          'java',
          'csharp',
          'dart',
          'groovy',
          'javascript',
          'jmeter',
          'perl',
          'php',
          'python',
          'ruby',
          'swift5',
          'clojure',
          'scala',
          'flash',
        ],
        meaning: 'Languages SDKs can be generated for.',
      },
    ],
  },
  {
    path: 'apim.open_tracer',
    source: '000',
    title: 'Tracing',
    runs: true,
    keys: [
      {
        key: 'remote_tracer.enable',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'Send traces (execution time down to message level) to a remote tracer.',
      },
      {
        key: 'remote_tracer.name',
        type: 's',
        defaultText: 'name of the built-in distributed tracer',
        meaning:
          'Remote tracer name. Spans are sent as Zipkin v2 JSON to http://hostname:port/api/v2/spans whatever the name (docs/tracing.md).',
      },
      { key: 'remote_tracer.properties.hostname', type: 's', format: 'host', default: 'localhost', meaning: 'Remote tracer host.' },
      { key: 'remote_tracer.properties.port', type: 's', format: 'port', default: 9411, meaning: 'Remote tracer port.' },
      { key: 'log_tracer.enable', type: 's', boolString: true, default: false, meaning: 'Write tracer values to the log.' },
    ],
  },

  // ---------------------------------------------------------------- token revocation, event hub
  {
    path: 'apim.token.revocation',
    required: true,
    source: '000',
    title: 'Token revocation notification',
    runs: true,
    keys: [
      {
        key: 'notifier_impl',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in class',
        meaning: 'Custom notifier; a revoked token is announced on a topic.',
      },
      { key: 'enable_realtime_notifier', type: 'b', defaultText: 'sample true', meaning: 'Announce revoked tokens in real time.' },
      // The spec gives 5000 without a unit; milliseconds, as for the reference's message time-to-live.
      {
        key: 'realtime_notifier.ttl',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 0,
        inactive:
          'revocations are Redis messages (docs/scale-out.md) and a revoked id is kept until the token expires, not for a fixed time to live',
        meaning: 'Time to live of a real-time revocation announcement.',
      },
      // The persistent notifier writes to an external key-value store, which throughway does not use.
      {
        key: 'enable_persistent_notifier',
        type: 'b',
        defaultText: 'sample true',
        inactive: R.PERSISTENT_NOTIFIER,
        meaning: 'Store revoked tokens in a key-value store.',
      },
      {
        key: 'persistent_notifier.hostname',
        type: 's',
        format: 'url',
        default: 'https://localhost:2379/v2/keys/jti/',
        inactive: R.PERSISTENT_NOTIFIER,
        meaning: 'Key-value store URL.',
      },
      {
        key: 'persistent_notifier.ttl',
        type: 's',
        default: '5000',
        inactive: R.PERSISTENT_NOTIFIER,
        meaning: 'Time to live of a stored revocation (unit not stated).',
      },
      {
        key: 'persistent_notifier.username',
        type: 's',
        defaultText: 'built-in default user',
        inactive: R.PERSISTENT_NOTIFIER,
        meaning: 'Key-value store user.',
      },
      {
        key: 'persistent_notifier.password',
        type: 's',
        secret: true,
        defaultText: '<PASSWORD>',
        inactive: R.PERSISTENT_NOTIFIER,
        meaning: 'Key-value store password.',
      },
    ],
  },
  {
    path: 'apim.event_hub',
    source: '000',
    title: 'Event hub (control plane)',
    runs: true,
    enabledBy: 'apim.event_hub.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Enable the event hub (the sample writes enabled).' },
      {
        key: 'username',
        type: 's',
        default: SUPER_USER,
        defaultText: 'super tenant admin credentials',
        inactive: R.HUB_LINKS,
        meaning: 'Event hub user.',
      },
      {
        key: 'password',
        type: 's',
        secret: true,
        default: SUPER_PASS,
        defaultText: 'super tenant admin credentials',
        inactive: R.HUB_LINKS,
        meaning: 'Event hub password.',
      },
      {
        key: 'service_url',
        type: 's',
        format: 'url',
        inactive: "gateways pull deployments from the control plane's /admin/v1 routes (docs/scale-out.md), not from this URL",
        meaning: 'Internal URL artifacts are pulled from on the control plane.',
      },
      {
        key: 'event_listening_endpoints',
        type: 'a',
        differs:
          "a redis:// URL is the event hub (docs/scale-out.md); the reference's tcp:// JMS URLs are not opened (one warning, event_hub_jms_ignored)",
        meaning: 'JMS endpoints to the control plane.',
      },
      {
        key: 'event_duplicate_url',
        type: 'a',
        meaning:
          'JMS endpoints for HA peer communication; extra URLs act as failover. throughway: a redis:// URL here is the event hub when event_listening_endpoints has none.',
      },
      {
        key: 'event_waiting_time',
        type: 'i',
        format: 'duration',
        unit: 'ms',
        min: 0,
        meaning: 'Wait before the gateway or traffic manager processes events from the hub.',
      },
    ],
  },
  {
    path: 'apim.event_hub.publish.url_group',
    repeatable: true,
    source: '000',
    title: 'Event hub publishing group',
    runs: true,
    enabledBy: 'apim.event_hub.enable',
    keys: [
      {
        key: 'urls',
        type: 'a',
        required: true,
        inactive: R.HUB_LINKS,
        meaning: 'URLs event streams are published to on the control plane; later entries are failover.',
      },
      { key: 'auth_urls', type: 'a', required: true, inactive: R.HUB_LINKS, meaning: 'Secure binary streaming authentication URLs.' },
    ],
  },

  // ---------------------------------------------------------------- e-mail
  // lib/mail (docs/self-service.md, "E-mail"): the outbox sends through these servers.
  { path: 'apim.notifications', source: '000', title: 'Notification e-mail', runs: true, keys: emailKeys() },
  { path: 'output_adapter.email', source: '000', title: 'E-mail output adapter (password recovery)', runs: true, keys: emailKeys() },
  {
    path: 'tenant_mgt',
    source: '000',
    title: 'Tenant management',
    // lib/tenants (docs/tenants.md): a tenant user's own name may be an e-mail address.
    runs: true,
    keys: [
      {
        key: 'enable_email_domain',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'Tenant users log in with their e-mail address.',
      },
    ],
  },

  // ---------------------------------------------------------------- multi-tenancy
  {
    path: 'multi_tenancy.platform',
    source: '000',
    title: 'Multi-tenancy platform',
    // lib/tenants (docs/tenants.md) acts on tenant_activation_moderated, the developer portal's sign-up on
    // email_validation_mandatory_for_login (docs/self-service.md); throughway sends no tenant management
    // e-mail, bills nothing and has no usage summary, public cloud or single sign-on page.
    runs: true,
    keys: [
      {
        key: 'disable_tenant_management_emails',
        type: 'b',
        inactive: 'throughway sends no tenant management e-mail, so there is none to disable.',
        default: true,
        meaning: 'Do not send tenant management e-mails.',
      },
      {
        key: 'email_validation_mandatory_for_login',
        type: 'b',
        differs:
          'Acts on users who signed up in the developer portal: they sign in once their e-mail address is confirmed (docs/self-service.md).',
        default: false,
        meaning: 'Tenants must validate their e-mail before logging in.',
      },
      { key: 'tenant_activation_moderated', type: 'b', default: false, meaning: 'Tenant activation needs moderation.' },
      {
        key: 'super_admin_email',
        type: 's',
        inactive: 'throughway sends no tenant management e-mail to the super admin.',
        format: 'email',
        defaultText: '<EMAIL>',
        meaning: 'E-mail address of the super admin.',
      },
      {
        key: 'skip_summary_generator',
        type: 'b',
        inactive: "throughway has no usage summary generator (the reference's billing usage summaries).",
        default: false,
        meaning: 'Skip the usage summary generator.',
      },
      {
        key: 'notification_email',
        type: 's',
        inactive: 'throughway sends no tenant management e-mail.',
        format: 'email',
        meaning: 'Address that receives notifications.',
      },
      {
        key: 'finance_notification_email',
        type: 's',
        inactive: 'throughway bills nothing: no finance notification.',
        format: 'email',
        meaning: 'Address that receives finance notifications.',
      },
      {
        key: 'charge_on_registration',
        type: 'b',
        inactive: 'throughway bills nothing: a tenant is never charged.',
        default: false,
        meaning: 'Charge tenants on registration.',
      },
      {
        key: 'public_cloud_setup',
        type: 'b',
        inactive: 'throughway has no public cloud sign-up of tenants: the super admin creates them (docs/tenants.md).',
        default: true,
        meaning: 'The deployment is a public cloud setup.',
      },
      {
        key: 'web_analytics_url',
        type: 's',
        inactive: "throughway's consoles load no web analytics script.",
        format: 'url',
        meaning: 'Web analytics URL.',
      },
      {
        key: 'sso_loading_message',
        type: 's',
        inactive: 'throughway has no single sign-on page between its consoles.',
        meaning: 'Message shown while single sign-on loads.',
      },
    ],
  },
  {
    path: 'multi_tenancy.platform.payment',
    source: '000',
    title: 'Multi-tenancy payment account',
    runs: false,
    notRun: 'throughway bills nothing: no payment account is used.',
    keys: [
      { key: 'url', type: 's', format: 'url', defaultText: '<PAYMENT_URL>', meaning: 'URL of the attached payment account.' },
      { key: 'username', type: 's', defaultText: '<USERNAME>', meaning: 'Payment account user.' },
      { key: 'password', type: 's', secret: true, defaultText: '<PASSWORD>', meaning: 'Payment account password.' },
      // An API signature of a payment account is a credential.
      { key: 'signature', type: 's', secret: true, defaultText: '<SIGNATURE>', meaning: 'Payment account API signature.' },
      { key: 'environment', type: 's', meaning: 'Payment account environment.' },
    ],
  },
  {
    path: 'multi_tenancy.platform.manager_service',
    source: '000',
    title: 'Multi-tenancy manager service',
    runs: false,
    notRun: "throughway manages tenants itself (the admin API's /admin/v1/tenants, `throughway tenants`): no remote manager service.",
    keys: [
      { key: 'url', type: 's', format: 'url', meaning: 'Manager service URL.' },
      { key: 'admin_username', type: 's', meaning: 'Manager service admin user.' },
      { key: 'admin_password', type: 's', secret: true, meaning: 'Manager service admin password.' },
    ],
  },
  {
    path: 'multi_tenancy.usage_agent.data_persistence_task',
    source: '000',
    title: 'Usage agent data persistence task',
    runs: false,
    notRun: 'no usage agent: the bandwidth each tenant uses is counted by each gateway in memory (docs/tenants.md, "Billing packages").',
    keys: [
      { key: 'startup_delay_in_ms', type: 's', format: 'duration', unit: 'ms', min: 0, meaning: 'Delay before the first run.' },
      { key: 'records_per_execution', type: 's', meaning: 'Records persisted per run.' },
      {
        key: 'execution_interval_in_ms',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: -1,
        min: -1,
        meaning: 'Interval between runs.',
      },
    ],
  },
  {
    path: 'multi_tenancy.throttling_manager_tasks',
    source: '000',
    title: 'Multi-tenancy throttling manager tasks',
    runs: false,
    notRun: 'no usage-based throttling tasks: a tenant\'s package limits act directly (docs/tenants.md, "Billing packages").',
    keys: [{ key: 'data_providers', type: 'a', meaning: 'Data provider classes.' }],
  },
  {
    path: 'multi_tenancy.throttling_manager_tasks.parameters',
    source: '000',
    title: 'Multi-tenancy throttling manager task parameters',
    runs: false,
    notRun: 'no usage-based throttling tasks (see [multi_tenancy.throttling_manager_tasks]).',
    keys: [
      { key: 'interval', type: 's', format: 'duration', unit: 'ms', min: 0, meaning: 'Task interval.' },
      { key: 'delay', type: 's', format: 'duration', unit: 'ms', min: 0, meaning: 'Task start delay.' },
    ],
  },
  {
    path: 'multi_tenancy.cloud_services',
    source: '000',
    title: 'Multi-tenancy cloud services',
    runs: false,
    notRun: 'throughway offers no cloud services catalogue to tenants.',
    keys: [
      { key: 'name', type: 's', meaning: 'Service name.' },
      { key: 'key', type: 's', meaning: 'Service key.' },
      { key: 'label', type: 's', meaning: 'Service label.' },
      { key: 'link', type: 's', format: 'url', meaning: 'Service link.' },
      { key: 'description', type: 's', meaning: 'Service description.' },
      { key: 'default', type: 'b', default: true, meaning: 'The service is offered by default.' },
    ],
  },
  ...billingSections(),

  // ---------------------------------------------------------------- indexing
  {
    path: 'indexing',
    source: '000',
    title: 'Registry indexing of APIs',
    runs: false,
    notRun: R.REGISTRY,
    enabledBy: 'indexing.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Index APIs; needed only on publisher and developer portal nodes.' },
      {
        key: 'starting_delay',
        type: 's',
        format: 'duration',
        unit: 's',
        default: 35,
        min: 0,
        meaning: 'Delay after start before indexing.',
      },
      { key: 'frequency', type: 's', format: 'duration', unit: 's', default: 3, min: 0, meaning: 'Interval between indexing runs.' },
      { key: 'bach_size', type: 's', default: '40', meaning: 'Resources per indexing thread (key spelled so).' },
      { key: 'pool_size', type: 's', default: '40', meaning: 'Indexing worker threads.' },
      {
        key: 're_indexing',
        type: 's',
        defaultText: 'not defined',
        meaning: 'A number from 1; increase by one to force reindexing (back up and delete the index directory first).',
      },
    ],
  },
];
