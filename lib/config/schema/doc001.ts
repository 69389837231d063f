/**
 * Sections of spec document 001, part 2 (transports, message builders and formatters, mediation,
 * handlers, governance, broker heartbeat, health checks, OAuth settings and grants, token persistence,
 * user store, keystores, access log, registry handlers, transport headers), in the spec's order.
 * Conventions: see doc000.ts.
 */
import type { KeyDef, SectionDef } from '../schema-types';
import * as R from './reasons';

const STORE_TYPES = ['JKS', 'PKCS12', 'PEM'] as const;
const HOSTNAME_VERIFIERS = ['AllowAll', 'DefaultAndLocalhost', 'Strict'] as const;

/**
 * (spec 001, [transport.http.properties] and [transport.https.properties]): the servlet transport of the
 * management side. throughway's listeners are not thread-per-connection servlets, so thread counts,
 * upload timeouts and servlet compression are accepted without effect.
 */
function servletKeys(https: boolean): KeyDef[] {
  const keys: KeyDef[] = [
    https
      ? {
          key: 'port',
          type: 'i',
          required: true,
          format: 'port',
          default: 9443,
          meaning: 'Listening port of the management HTTPS transport.',
        }
      : // The spec lists 9443 for both tables; 9443 is the HTTPS port (spec 002, part 4), and the
        // reference's plain HTTP servlet port is 9763, so two listeners never collide by default.
        {
          key: 'port',
          type: 'i',
          required: true,
          format: 'port',
          default: 9763,
          defaultText: '9443 in the spec table; 9763 is the plain HTTP port of the reference',
          differs: "defaults to 9763 (the reference's plain HTTP port), where the spec table repeats the HTTPS port 9443",
          meaning: 'Listening port of the management HTTP transport (9763, not the 9443 the spec table repeats from HTTPS).',
        },
    {
      key: 'redirectPort',
      type: 's',
      format: 'port',
      inactive: R.TOMCAT,
      meaning: 'Port plain requests needing TLS are redirected to (in the sample).',
    },
    {
      key: 'bindOnInit',
      type: 'b',
      required: true,
      default: false,
      inactive: R.TOMCAT,
      meaning: "Bind the socket when the connector is initialised ('true' or 'false').",
    },
    {
      key: 'maxHttpHeaderSize',
      type: 'i',
      required: true,
      format: 'bytes',
      default: 8192,
      min: 1,
      ...(https
        ? {}
        : { differs: "also bounds the gateway's pass-through request heads (431), which the spec gives no limit of their own" }),
      meaning: 'Maximum size of a request head.',
    },
    {
      key: 'acceptorThreadCount',
      type: 'i',
      required: true,
      default: 2,
      min: 1,
      inactive: R.TOMCAT,
      meaning: 'Threads accepting connections.',
    },
    {
      key: 'maxThreads',
      type: 'i',
      required: true,
      default: 250,
      min: 1,
      inactive: R.TOMCAT,
      meaning: 'Maximum request processing threads.',
    },
    { key: 'minSpareThreads', type: 'i', required: true, default: 50, min: 0, inactive: R.TOMCAT, meaning: 'Threads kept idle.' },
    {
      key: 'disableUploadTimeout',
      type: 'b',
      required: true,
      default: false,
      inactive: R.TOMCAT,
      meaning: 'Disable the separate timeout for request body uploads.',
    },
    {
      key: 'connectionUploadTimeout',
      type: 'i',
      required: true,
      format: 'duration',
      unit: 'ms',
      default: 120000,
      min: 0,
      inactive: R.TOMCAT,
      meaning: 'Timeout while a request body is uploaded.',
    },
    {
      key: 'maxKeepAliveRequests',
      type: 'i',
      required: true,
      default: 120000,
      min: -1,
      meaning: 'Requests served on one keep-alive connection before it is closed.',
    },
    {
      key: 'keepAliveTimeout',
      type: 'i',
      required: true,
      format: 'duration',
      unit: 'ms',
      default: 60000,
      min: 0,
      meaning: 'Idle keep-alive connections are closed after this.',
    },
    { key: 'acceptCount', type: 'i', required: true, default: 200, min: 1, meaning: 'Queue of pending connections (listen backlog).' },
    // Not in the spec's table: the reference's connector attribute (its catalina-server.xml, 20000), written by
    // its deployment.toml files. Absent: [throughway.management] header_timeout.
    {
      key: 'connectionTimeout',
      type: 'i',
      format: 'duration',
      unit: 'ms',
      min: 1,
      defaultText: '[throughway.management] header_timeout',
      differs:
        "bounds the whole request head (Node's headersTimeout), not only the request line; at most [throughway.management] request_timeout",
      meaning:
        "After a connection is accepted, the request must arrive within this, else the connection is closed (the reference's connector attribute; not in the spec's table).",
    },
    // The spec's default is the vendor's server identification string; throughway identifies itself.
    {
      key: 'server',
      type: 's',
      required: true,
      default: 'throughway',
      defaultText: 'vendor server identification string',
      inactive: R.TOMCAT,
      meaning: 'Value of the Server response header.',
    },
    {
      key: 'compression',
      type: 's',
      required: true,
      default: 'on',
      inactive: R.TOMCAT,
      meaning: 'Response compression of the servlet transport.',
    },
    {
      key: 'compressionMinSize',
      type: 'i',
      required: true,
      format: 'bytes',
      default: 2048,
      min: 0,
      inactive: R.TOMCAT,
      meaning: 'Smallest response that is compressed.',
    },
    {
      key: 'noCompressionUserAgents',
      type: 's',
      required: true,
      format: 'list',
      default: ['gozilla', 'traviata'],
      defaultText: 'two agent names, comma separated',
      inactive: R.TOMCAT,
      meaning: 'User agents that never get compressed responses.',
    },
    {
      key: 'compressibleMimeType',
      type: 's',
      required: true,
      format: 'list',
      default: [
        'text/html',
        'text/javascript',
        'application/x-javascript',
        'application/javascript',
        'application/xml',
        'text/css',
        'application/xslt+xml',
        'text/xsl',
        'image/gif',
        'image/jpg',
        'image/jpeg',
      ],
      inactive: R.TOMCAT,
      meaning: 'Media types that are compressed.',
    },
    { key: 'URIEncoding', type: 's', required: true, default: 'UTF-8', inactive: R.TOMCAT, meaning: 'Character encoding of request URIs.' },
  ];
  if (https) {
    keys.push(
      {
        key: 'enableLookups',
        type: 'b',
        required: true,
        default: false,
        inactive: R.TOMCAT,
        meaning: 'Reverse DNS lookups of client addresses.',
      },
      {
        key: 'scheme',
        type: 's',
        required: true,
        default: 'https',
        inactive: R.TOMCAT,
        meaning: 'Scheme reported for requests on this connector.',
      },
      {
        key: 'secure',
        type: 'b',
        required: true,
        default: true,
        inactive: R.TOMCAT,
        meaning: 'Requests on this connector count as secure.',
      },
      { key: 'SSLEnabled', type: 'b', required: true, default: true, inactive: R.TOMCAT, meaning: 'TLS on this connector.' },
    );
  }
  return keys;
}

/** (spec 001, [transport.passthru_http]): keys the HTTPS section repeats. */
function passthruSharedKeys(https: boolean): KeyDef[] {
  return [
    { key: 'listener.enable', type: 'b', default: true, meaning: 'Enable the listener.' },
    https
      ? {
          key: 'listener.parameters.port',
          type: 'i',
          required: true,
          format: 'port',
          default: 8243,
          meaning: 'Gateway HTTPS listening port.',
        }
      : { key: 'listener.parameters.port', type: 'i', format: 'port', default: 8280, meaning: 'Gateway HTTP listening port.' },
    {
      key: 'listener.parameters.httpGetProcessor',
      type: 's',
      format: 'class',
      inactive: R.JAVA_CLASS,
      defaultText: 'built-in default class',
      meaning: 'Class handling HTTP GET.',
    },
    {
      key: 'listener.parameters.WSDLEPRPrefix',
      type: 's',
      required: true,
      inactive:
        'throughway serves no WSDLs or service endpoint references to prefix (SOAP services are proxied as HTTP, docs/mediation.md)',
      meaning: 'URL prefix added to service endpoint references and WSDLs.',
    },
    { key: 'sender.http.proxyHost', type: 's', format: 'host', meaning: 'Outbound proxy host.' },
    { key: 'sender.http.proxyPort', type: 'i', format: 'port', meaning: 'Outbound proxy port.' },
    // The spec marks these two R without showing a default; a default is what satisfies R (spec 000
    // part 1.7), so a bare listener table loads: no host bypasses a proxy, and the reference's own
    // default verifier.
    {
      key: 'sender.http.nonProxyHosts',
      type: 's',
      required: true,
      default: '',
      meaning: 'Hosts reached directly; for a wildcard sub-domain a period goes before the asterisk (empty: none).',
    },
    {
      key: 'sender.hostname_verifier',
      type: 's',
      required: true,
      default: 'DefaultAndLocalhost',
      allowed: HOSTNAME_VERIFIERS,
      ...(https
        ? {}
        : { inactive: "the plain sender makes no TLS connections: https:// endpoints use [transport.passthru_https]'s sender" }),
      meaning: 'Backend TLS host name verification (sample AllowAll; default DefaultAndLocalhost).',
    },
  ];
}

/**
 * (spec 001, [transport.passthru_https]): listener and sender key/trust stores. The spec marks them R and
 * gives each a default (the server's primary key store and trust store, built-in passwords; the sender the
 * same as the listener): R is satisfied by a default (spec 000, part 1.7), so none is enforced. The loader
 * fills the ones a file leaves out from [keystore.tls]/[keystore.primary]/[truststore] when written
 * (config/stores.ts); else the listener serves the generated sample key pair (docs/tls.md).
 */
function storeKeys(side: 'listener' | 'sender'): KeyDef[] {
  const same = side === 'sender' ? 'the listener key store, else ' : '';
  const sameT = side === 'sender' ? 'the listener trust store, else ' : '';
  return [
    {
      key: `${side}.key_store.file_name`,
      type: 's',
      format: 'store',
      defaultText: `${same}the primary keystore file of the server: [keystore.tls], else [keystore.primary], else the generated sample key pair`,
      meaning: 'Keystore path.',
    },
    {
      key: `${side}.key_store.type`,
      type: 's',
      default: 'JKS',
      allowed: STORE_TYPES,
      differs: R.STORE_TYPE,
      meaning: 'Keystore type (with the file name from [keystore.*], its type).',
    },
    {
      key: `${side}.key_store.password`,
      type: 's',
      secret: true,
      defaultText: `${same}the primary key store's password; else the store reader's built-in default (<KEYSTORE_PASSWORD>)`,
      meaning: 'Keystore password.',
    },
    {
      key: `${side}.key_store.key_password`,
      type: 's',
      secret: true,
      defaultText: `${same}the primary key store's key password; else the key store password`,
      meaning: 'Private key password.',
    },
    {
      key: `${side}.trust_store.file_name`,
      type: 's',
      format: 'store',
      defaultText: `${sameT}the server trust store file: [truststore] when written (none otherwise)`,
      meaning: 'Trust store of trusted certificates.',
    },
    {
      key: `${side}.trust_store.type`,
      type: 's',
      default: 'JKS',
      allowed: STORE_TYPES,
      differs: R.STORE_TYPE,
      meaning: 'Trust store type (with the file name from [truststore], its type).',
    },
    {
      key: `${side}.trust_store.password`,
      type: 's',
      secret: true,
      defaultText: `${sameT}the server trust store's password; else the store reader's built-in default (<TRUSTSTORE_PASSWORD>)`,
      meaning: 'Trust store password.',
    },
  ];
}

/** (spec 001, [transport.blocking_http] and [transport.blocking_https]). */
function blockingKeys(): KeyDef[] {
  return [
    { key: 'sender.parameters.cacheHttpClient', type: 'b', required: true, meaning: 'Keep cache entries and cached responses in memory.' },
    {
      key: 'sender.parameters.Transfer-Encoding',
      type: 's',
      required: true,
      allowed: ['chunked', 'true'],
      meaning: 'chunked or true; may replace Content-Length.',
    },
    {
      key: 'sender.parameters.defaultMaxConnectionsPerHost',
      type: 'i',
      required: true,
      min: 1,
      meaning: 'Connections per host; raise when a slow backend holds connections (sample 200).',
    },
    {
      key: 'sender.parameters.OmitSOAP12Action',
      type: 'b',
      required: true,
      meaning: 'true omits the optional action part of Content-Type for SOAP 1.2.',
    },
    {
      key: 'sender.parameters.SO_TIMEOUT',
      type: 'i',
      required: true,
      format: 'duration',
      unit: 'ms',
      min: 0,
      meaning: 'Socket timeout (sample 60000).',
    },
    { key: 'sender.parameters.http.proxyHost', type: 's', format: 'host', meaning: 'Proxy host (blocking mode).' },
    { key: 'sender.parameters.http.proxyPort', type: 'i', format: 'port', meaning: 'Proxy port (blocking mode).' },
    { key: 'sender.parameters.http.nonProxyHosts', type: 's', meaning: 'Hosts reached directly (blocking mode).' },
  ];
}

const PROXY_PROFILES_MEANING =
  'Proxy profiles: each profile holds targetHosts (*, a host, an IP or a comma list; regular expressions allowed), proxyHost, proxyPort, proxyUserName and proxyPassword.';

/** (spec 001, Proxy profiles, option 2). */
function proxyProfileKeys(): KeyDef[] {
  return [
    { key: 'target_hosts', type: 'a', meaning: 'Backend hosts this profile applies to.' },
    { key: 'proxy_host', type: 's', format: 'host', meaning: 'Proxy host.' },
    { key: 'proxy_port', type: 's', format: 'port', meaning: 'Proxy port.' },
    { key: 'proxy_username', type: 's', meaning: 'Proxy user.' },
    { key: 'proxy_password', type: 's', secret: true, meaning: 'Proxy password.' },
    { key: 'bypass_hosts', type: 'a', meaning: 'Hosts reached without the proxy.' },
  ];
}

/** (spec 001, WebSocket). `port` is a throughway addition: the spec shows these ports only in part 4 of 002. */
function wsKeys(secure: boolean): KeyDef[] {
  const keys: KeyDef[] = [
    secure
      ? {
          key: 'port',
          type: 'i',
          format: 'port',
          default: 8099,
          meaning: 'Gateway WSS listening port (throughway addition; the spec shows 8099 only in document 002, part 4).',
        }
      : {
          key: 'port',
          type: 'i',
          format: 'port',
          default: 9099,
          meaning: 'Gateway WS listening port (throughway addition; the spec shows 9099 only in document 002, part 4).',
        },
    { key: 'sender.enable', type: 'b', required: true, default: false, meaning: 'Enables the transport.' },
    {
      key: 'sender.parameters.ws.outflow.dispatch.sequence',
      type: 's',
      default: 'outflowDispatchSeq',
      inactive: 'WebSocket frames are relayed without mediation sequences (docs/websocket.md)',
      meaning: 'Mediation sequence of the backend-to-client path.',
    },
    {
      key: 'sender.parameters.ws.outflow.dispatch.fault.sequence',
      type: 's',
      default: 'outflowFaultSeq',
      inactive: 'WebSocket frames are relayed without mediation sequences (docs/websocket.md)',
      meaning: 'Fault sequence of the backend-to-client path.',
    },
    // The spec's row is sender.parameter.customParameter, "replace customParameter with a parameter
    // name": any name is allowed, so the table under sender.parameter is free.
    {
      key: 'sender.parameter',
      type: 'map',
      inactive:
        "the reference's custom WebSocket sender parameters are Java properties of its sender; throughway's sender has no open parameters",
      meaning: 'Custom sender parameters, sender.parameter.<name> = value (spec example customParameter).',
    },
  ];
  if (secure) {
    keys.push(
      // R in the spec with a default (the server trust store): filled from [truststore] when written
      // (config/stores.ts), else the outbound side's trust (docs/tls.md); never enforced.
      {
        key: 'sender.trust_store.location',
        type: 's',
        format: 'store',
        defaultText: 'the server trust store file: [truststore] when written',
        meaning: 'Trust store for backend WSS connections.',
      },
      {
        key: 'sender.trust_store.password',
        type: 's',
        secret: true,
        defaultText: "the server trust store's password; else built-in default",
        meaning: 'Trust store password.',
      },
    );
  }
  return keys;
}

const BUILDER_TYPES = [
  'application_xml',
  'form_urlencoded',
  'multipart_form_data',
  'text_plain',
  'application_json',
  'json_badgerfish',
  'text_javascript',
  'octet_stream',
  'application_binary',
];

/** (spec 001, Message builders and formatters): content type -> class; throughway loads no classes. */
/** `runs`: the gateway maps the class to a built-in format (lib/mediation/formats.ts); blocking twins are only checked. */
const CLASS_DIFFERS =
  "no Java classes: the reference's class (or a format name) picks a built-in format (xml, json, form, multipart, text, binary); others are refused";

function classMapKeys(kind: 'builder' | 'formatter', runs = false): KeyDef[] {
  const names = kind === 'formatter' ? [...BUILDER_TYPES, 'text_xml', 'soap_xml'] : BUILDER_TYPES;
  return names.map((n): KeyDef => ({
    key: n,
    type: 's',
    format: 'class',
    ...(runs ? { differs: CLASS_DIFFERS } : {}),
    defaultText: `built-in ${kind} class`,
    meaning: `Message ${kind} class for ${n.replace(/_/g, ' ')} content.`,
  }));
}

function customClassKeys(kind: 'builder' | 'formatter', runs = false): KeyDef[] {
  return [
    { key: 'content_type', type: 's', required: true, meaning: `Content type (a media type path) the ${kind} applies to.` },
    {
      key: 'class',
      type: 's',
      required: true,
      format: 'class',
      ...(runs ? { differs: CLASS_DIFFERS } : {}),
      meaning: `Implementation class of the ${kind}.`,
    },
  ];
}

/** `unbuilt`: why the grant answers unsupported_grant_type even when enabled (its `enable` acts differently). */
function grantSection(grant: string, enable: boolean, extra: readonly KeyDef[] = [], unbuilt?: string): SectionDef {
  return {
    path: `oauth.grant_type.${grant}`,
    source: '001',
    title: `OAuth grant type ${grant}`,
    runs: true,
    enabledBy: `oauth.grant_type.${grant}.enable`,
    keys: [
      {
        key: 'enable',
        type: 'b',
        default: enable,
        ...(unbuilt !== undefined ? { differs: unbuilt } : {}),
        meaning: `Enable the ${grant} grant.`,
      },
      {
        key: 'grant_handler',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Grant handler class.',
      },
      ...extra,
    ],
  };
}

const GRANT_VALIDATOR: KeyDef = {
  key: 'grant_validator',
  type: 's',
  format: 'class',
  inactive: R.JAVA_CLASS,
  defaultText: 'built-in default class',
  meaning: 'Grant validator class.',
};

export const DOC001_SECTIONS: readonly SectionDef[] = [
  // ---------------------------------------------------------------- servlet transports
  { path: 'transport.http.properties', source: '001', title: 'Management HTTP transport', runs: true, keys: servletKeys(false) },
  { path: 'transport.https.properties', source: '001', title: 'Management HTTPS transport', runs: true, keys: servletKeys(true) },

  // ---------------------------------------------------------------- pass-through transports
  {
    path: 'transport.passthru_http',
    source: '001',
    title: 'Gateway HTTP pass-through transport',
    runs: true,
    keys: [
      ...passthruSharedKeys(false),
      // throughway is non-blocking by construction.
      {
        key: 'listener.parameters.non-blocking',
        type: 's',
        boolString: true,
        default: true,
        inactive: 'the transport is always non-blocking (Node event loop); there is no blocking mode to choose',
        meaning: 'Non-blocking IO.',
      },
      { key: 'listener.bind-address', type: 's', format: 'host', meaning: 'Address the listener binds (in the sample).' },
      { key: 'sender.enable', type: 'b', default: true, meaning: 'Enable the sender.' },
      {
        key: 'sender.warnOnHTTP500',
        type: 's',
        required: true,
        inactive:
          'a backend 500 is relayed as any status is; the reference logs it as a warning per content type, throughway logs every call alike',
        meaning: 'Content types for which a backend HTTP 500 is only a warning (in the sample).',
      },
    ],
  },
  {
    // (spec 001, Proxy profiles, option 1). The spec also lists sender.parameters.non-blocking under
    // [transport.passthru_http]: the same TOML path, so it lives here. proxyProfiles is R only for this
    // option; requiring it would reject a file that sets only non-blocking.
    path: 'transport.passthru_http.sender.parameters',
    source: '001',
    title: 'Gateway HTTP sender parameters (proxy profiles)',
    runs: true,
    keys: [
      {
        key: 'non-blocking',
        type: 's',
        boolString: true,
        inactive: 'the transport is always non-blocking (Node event loop); there is no blocking mode to choose',
        meaning: 'Non-blocking sender IO (in the sample; listed as sender.parameters.non-blocking).',
      },
      { key: 'proxyProfiles', type: 's', secret: true, meaning: PROXY_PROFILES_MEANING },
    ],
  },
  {
    path: 'transport.passthru_https',
    source: '001',
    title: 'Gateway HTTPS pass-through transport',
    runs: true,
    keys: [
      ...passthruSharedKeys(true),
      { key: 'listener.parameters.bind-address', type: 's', format: 'host', meaning: 'Address the listener binds (in the sample).' },
      { key: 'listener.parameters.SSLVerifyClient', type: 's', meaning: 'Client certificate verification (sample value require).' },
      { key: 'listener.protocols', type: 's', format: 'list', meaning: 'TLS protocol versions accepted (sample TLSv1,TLSv1.1,TLSv1.2).' },
      // Dynamic SSL profile files are the reference's XML format (lib/tls/settings.ts reads its first <profile>).
      {
        key: 'listener.ssl_profile.file_path',
        type: 's',
        format: 'store',
        meaning:
          "SSL profile file (sample under the security resources directory): the reference's XML, whose first <profile> gives KeyStore, TrustStore and SSLVerifyClient for the whole listener (docs/tls.md).",
      },
      {
        key: 'listener.ssl_profile_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        meaning:
          'Reload interval of the SSL profile file (sample 600000): this often the profile and store files are checked, and changed certificates are used for new connections without a restart (existing connections keep theirs).',
      },
      { key: 'listener.preferred_ciphers', type: 's', format: 'list', meaning: 'Cipher suite names, comma separated.' },
      ...storeKeys('listener'),
      {
        key: 'sender.enable',
        type: 'b',
        defaultText: 'in sample true',
        inactive: 'the sender always runs: a route with an https:// backend uses it',
        meaning: 'Enable the sender.',
      },
      ...storeKeys('sender'),
      {
        key: 'sender.ssl_profile.file_path',
        type: 's',
        format: 'store',
        inactive:
          'dynamic SSL profiles are not read: sender TLS settings come from [transport.passthru_https] and [throughway.tls] and reload on SIGHUP (docs/tls.md)',
        meaning: 'Sender SSL profile file (in the sample).',
      },
      {
        key: 'sender.ssl_profile.interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive: 'dynamic SSL profiles are not read (see sender.ssl_profile.file_path)',
        meaning: 'Reload interval of the sender SSL profile file (sample 600000).',
      },
    ],
  },
  {
    path: 'transport.passthru_https.sender.parameters',
    source: '001',
    title: 'Gateway HTTPS sender parameters (proxy profiles)',
    runs: true,
    keys: [{ key: 'proxyProfiles', type: 's', required: true, secret: true, meaning: PROXY_PROFILES_MEANING }],
  },
  {
    path: 'passthru_http',
    source: '001',
    title: 'Pass-through tuning',
    runs: true,
    keys: [
      {
        key: 'http.socket.timeout',
        type: 'i',
        required: true,
        format: 'duration',
        unit: 'ms',
        default: 180000,
        min: 0,
        meaning: 'Maximum inactivity between two data packets.',
      },
      {
        key: 'worker_pool_size_core',
        type: 'i',
        required: true,
        default: 400,
        min: 1,
        inactive: 'Node serves requests on one event loop per process; there is no worker pool to size (docs/transport.md)',
        meaning: 'Core workers handling requests.',
      },
      {
        key: 'worker_pool_size_max',
        type: 'i',
        required: true,
        default: 400,
        min: 1,
        differs: 'Node has one event loop: bounds the requests proxied at once, not threads',
        meaning: 'Maximum workers.',
      },
      {
        key: 'worker_pool_queue_length',
        type: 'i',
        required: true,
        default: -1,
        min: -1,
        differs: 'a full queue answers 503 (103002) at once instead of waiting for a thread',
        meaning: '-1 is an unbounded queue; when a bounded queue is full, job submissions fail and messages are dropped.',
      },
      // throughway sizes its socket reads with [throughway] read_buffer_size instead.
      {
        key: 'io_buffer_size',
        type: 'i',
        required: true,
        format: 'bytes',
        default: 16384,
        min: 1,
        differs:
          'sets the read buffer of client and backend connections only when larger than [throughway] read_buffer_size (larger reads cost less)',
        meaning: 'IO buffer size; leave at default (throughway uses throughway.read_buffer_size).',
      },
      {
        key: 'http.max.connection.per.host.port',
        type: 'i',
        required: true,
        default: 32767,
        min: 1,
        meaning: 'Maximum backend connections per host and port.',
      },
      // No default in the spec: a pass-through proxy is transparent by default (docs/transport.md).
      {
        key: 'http.user.agent.preserve',
        type: 'b',
        required: true,
        default: true,
        meaning: 'true preserves the User-Agent header in the outgoing message (default true: throughway is transparent).',
      },
      {
        key: 'http.server.preserve',
        type: 'b',
        default: true,
        meaning: 'true preserves the Server header of the backend response (sample true).',
      },
      {
        key: 'http.headers.preserve',
        type: 's',
        required: true,
        format: 'list',
        default: ['Content-Type'],
        meaning: 'Header fields kept in the outgoing message, comma separated.',
      },
      {
        key: 'disable_connection_keepalive',
        type: 'b',
        required: true,
        default: false,
        meaning: 'Close backend connections after each request.',
      },
      {
        key: 'max_open_connections',
        type: 'i',
        default: -1,
        min: -1,
        meaning: 'Limit of simultaneously open incoming connections; -1 or removal disables it.',
      },
      { key: 'force_xml_validation', type: 'b', default: false, meaning: 'Build the whole XML document to detect malformed XML.' },
      { key: 'force_json_validation', type: 'b', default: false, meaning: 'Parse JSON bodies to validate them.' },
    ],
  },
  { path: 'transport.blocking_http', source: '001', title: 'Blocking HTTP sender', runs: false, notRun: R.BLOCKING, keys: blockingKeys() },
  {
    path: 'transport.blocking_https',
    source: '001',
    title: 'Blocking HTTPS sender',
    runs: false,
    notRun: R.BLOCKING,
    keys: blockingKeys(),
  },

  // ---------------------------------------------------------------- proxy profiles (option 2)
  {
    path: 'transport.http.proxy_profile',
    repeatable: true,
    source: '001',
    title: 'Backend HTTP proxy profile',
    runs: true,
    keys: proxyProfileKeys(),
  },
  {
    path: 'transport.http.secured_proxy_profile',
    repeatable: true,
    source: '001',
    title: 'Backend HTTPS proxy profile',
    runs: true,
    keys: proxyProfileKeys(),
  },

  // ---------------------------------------------------------------- WebSocket
  {
    path: 'transport.ws',
    source: '001',
    title: 'Gateway WebSocket transport',
    runs: true,
    enabledBy: 'transport.ws.sender.enable',
    keys: wsKeys(false),
  },
  {
    path: 'transport.wss',
    source: '001',
    title: 'Gateway secure WebSocket transport',
    runs: true,
    enabledBy: 'transport.wss.sender.enable',
    keys: wsKeys(true),
  },

  // ---------------------------------------------------------------- message builders and formatters
  { path: 'message_builders', source: '001', title: 'Message builders', runs: true, keys: classMapKeys('builder', true) },
  {
    path: 'blocking.message_builders',
    source: '001',
    title: 'Message builders (blocking transport)',
    runs: false,
    notRun: R.BLOCKING,
    keys: classMapKeys('builder'),
  },
  { path: 'message_formatters', source: '001', title: 'Message formatters', runs: true, keys: classMapKeys('formatter', true) },
  {
    path: 'blocking.message_formatters',
    source: '001',
    title: 'Message formatters (blocking transport)',
    runs: false,
    notRun: R.BLOCKING,
    keys: classMapKeys('formatter'),
  },
  {
    path: 'custom_message_builders',
    repeatable: true,
    source: '001',
    title: 'Custom message builder',
    runs: true,
    keys: customClassKeys('builder', true),
  },
  {
    path: 'blocking.custom_message_builders',
    repeatable: true,
    source: '001',
    title: 'Custom message builder (blocking transport)',
    runs: false,
    notRun: R.BLOCKING,
    keys: customClassKeys('builder'),
  },
  {
    path: 'custom_message_formatters',
    repeatable: true,
    source: '001',
    title: 'Custom message formatter',
    runs: true,
    keys: customClassKeys('formatter', true),
  },
  {
    path: 'blocking.custom_message_formatters',
    repeatable: true,
    source: '001',
    title: 'Custom message formatter (blocking transport)',
    runs: false,
    notRun: R.BLOCKING,
    keys: customClassKeys('formatter'),
  },

  // ---------------------------------------------------------------- mediation
  {
    // The engine pool runs payload validation, conversion and scripts in worker threads (docs/mediation.md);
    // XPath, temporary data, the debugger and inbound endpoints are the reference's and not throughway's.
    path: 'mediation',
    source: '001',
    title: 'Mediation engine',
    runs: true,
    keys: [
      { key: 'engine.core_threads', type: 'i', default: 20, min: 1, meaning: 'Initial threads of the mediation pool.' },
      { key: 'engine.max_threads', type: 'i', default: 100, min: 1, meaning: 'Maximum threads of the mediation pool.' },
      {
        key: 'engine.threads_queue_length',
        type: 'i',
        default: 10,
        min: -1,
        meaning: 'Queue length; -1 infinite; a full finite queue rejects requests.',
      },
      {
        key: 'engine.global_timeout_interval',
        type: 'i',
        format: 'duration',
        unit: 'ms',
        default: 120000,
        min: 0,
        meaning: 'A backend response must arrive within this; later responses are dropped with a warning.',
      },
      {
        key: 'engine.enable_xpath_dom_failover',
        type: 'b',
        default: true,
        inactive: 'throughway has no XPath mediators (scripts are JavaScript), so there is no XPath engine to switch',
        meaning: 'May switch to XPath 2.0.',
      },
      {
        key: 'engine.temp_data_chunk_size',
        type: 'i',
        default: 3072,
        min: 1,
        inactive: 'a mediated body is gathered in memory, bounded by [throughway.mediation] max_body, and never spooled to temporary files',
        meaning: 'Chunk size of temporary message data.',
      },
      {
        key: 'engine.script_mediator_pool_size',
        type: 'i',
        default: 15,
        min: 1,
        meaning: 'Script engine pool per externally referenced script.',
      },
      {
        key: 'engine.preserve_namespace_on_xml_to_json',
        type: 'b',
        default: false,
        meaning: 'Keep namespace declarations in JSON output.',
      },
      {
        key: 'engine.command_debugger_port',
        type: 'i',
        format: 'port',
        default: 9005,
        defaultText: 'sample 9005',
        inactive: 'throughway has no mediation debugger; nothing listens on this port',
        meaning: 'Mediation debugger command port.',
      },
      {
        key: 'engine.event_debugger_port',
        type: 'i',
        format: 'port',
        default: 9006,
        defaultText: 'sample 9006',
        inactive: 'throughway has no mediation debugger; nothing listens on this port',
        meaning: 'Mediation debugger event port.',
      },
      {
        key: 'engine.enable_xml_nil',
        type: 'b',
        default: false,
        meaning:
          'XML nil handling in JSON conversion (sample switch): JSON null becomes an element with xsi:nil="true", and such an element becomes null (off: null is an empty element).',
      },
      {
        key: 'engine.enable_namespace_declaration',
        type: 'b',
        default: false,
        meaning:
          'Namespace declarations in JSON conversion (sample switch): XML -> JSON keeps the xmlns declarations as @xmlns fields even when prefixes are removed (engine.preserve_namespace_on_xml_to_json off).',
      },
      {
        key: 'engine.build_valid_nc_name',
        type: 'b',
        default: false,
        meaning:
          'Build valid XML NCNames from JSON keys (sample switch): a character an XML name cannot hold is written _xHHHH_ (hex of the character) in JSON -> XML, and decoded back in XML -> JSON.',
      },
      {
        key: 'engine.enable_auto_primitive',
        type: 'b',
        default: false,
        meaning: 'Automatic primitive conversion in JSON output (sample switch).',
      },
      { key: 'engine.json_out_auto_array', type: 'b', default: false, meaning: 'Automatic arrays in JSON output (sample switch).' },
      {
        key: 'engine.disable_auto_primitive_regex',
        type: 's',
        format: 'regex',
        meaning:
          'Regular expression (JavaScript syntax) of values exempt from primitive conversion under engine.enable_auto_primitive: a matching value stays a JSON string.',
      },
      {
        key: 'engine.disable_custom_replace_regex',
        type: 's',
        inactive: 'the conversion makes no custom replacements, so there is nothing to disable',
        meaning: 'Regular expression of custom replacements to disable (sample).',
      },
      {
        key: 'flow.statistics.enable',
        type: 'b',
        default: false,
        meaning: 'Record time per mediator, per message and fault count per flow.',
      },
      {
        key: 'flow.statistics.capture_all',
        type: 'b',
        default: false,
        inactive:
          "API files have no statistics switch of their own, so flow.statistics.enable already records every mediated call of every API (the reference's capture_all = true); with either value the result is the same",
        meaning: 'With flow statistics on, enable statistics for all artifacts.',
      },
      {
        key: 'statistics.enable_clean',
        type: 'b',
        default: true,
        inactive:
          'each statistics record is one log line (mediation_statistics) written at once; no statistics are kept, so there is nothing to clear',
        meaning: 'Clear existing statistics before each request.',
      },
      {
        key: 'statistics.clean_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        inactive: 'no statistics are kept between calls (see statistics.enable_clean)',
        meaning: 'Statistics clean interval (sample 1000ms).',
      },
      {
        key: 'stat.tracer.collect_payloads',
        type: 'b',
        default: false,
        meaning:
          'Record the payload before and after each mediator: the first 4 KiB before and after mediation, request and response side, in the mediation_trace log line (non-UTF-8 bytes as base64).',
      },
      {
        key: 'stat.tracer.collect_mediation_properties',
        type: 'b',
        default: false,
        meaning:
          "Record message-context and transport-scope properties: the mediation_trace log line gets `properties` (API, method, formats in and out, Content-Type, the fields as they leave mediation, status, the script's changes, the fault, per-step timings).",
      },
      {
        key: 'inbound.core_threads',
        type: 'i',
        min: 1,
        inactive: 'throughway has no inbound endpoints (file, JMS, Kafka listeners); only the HTTP listeners take calls',
        meaning: 'Initial threads of inbound endpoints (sample 20).',
      },
      {
        key: 'inbound.max_threads',
        type: 'i',
        min: 1,
        inactive: 'throughway has no inbound endpoints (see inbound.core_threads)',
        meaning: 'Maximum threads of inbound endpoints (sample 100).',
      },
    ],
  },

  // ---------------------------------------------------------------- engine handlers
  // (spec 001, Engine handlers): three forms. [[engine_handlers]] entries are the repeatable section;
  // [engine_handlers] with <handler_name>.name/.class and [engine_handlers.<handler_name>] are the same
  // TOML shape and share the placeholder section.
  {
    path: '',
    source: '001',
    title: 'Top-level settings',
    runs: false,
    notRun: R.HANDLERS,
    keys: [{ key: 'enabled_global_handlers', type: 'a', meaning: 'Names of the enabled global handlers.' }],
  },
  {
    path: 'engine_handlers',
    repeatable: true,
    source: '001',
    title: 'Engine handler',
    runs: false,
    notRun: R.HANDLERS,
    keys: [
      { key: 'name', type: 's', required: true, meaning: 'Handler name.' },
      { key: 'class', type: 's', required: true, format: 'class', meaning: 'Handler class.' },
    ],
  },
  {
    path: 'engine_handlers.<handler_name>',
    source: '001',
    title: 'Named engine handler',
    runs: false,
    notRun: R.HANDLERS,
    keys: [
      { key: 'name', type: 's', meaning: 'Handler name (the [engine_handlers] <handler_name>.name form).' },
      { key: 'enabled', type: 'b', meaning: 'Enable or disable the handler.' },
      { key: 'class', type: 's', required: true, format: 'class', meaning: 'Fully qualified handler class.' },
    ],
  },

  // ---------------------------------------------------------------- governance, heartbeat
  {
    path: 'governance',
    source: '001',
    title: 'Governance',
    runs: false,
    notRun: R.REGISTRY,
    keys: [{ key: 'life_cycle_checklist_items_enabled', type: 'b', default: true, meaning: 'Enable lifecycle checklist items.' }],
  },
  {
    path: 'broker.heartbeat',
    source: '001',
    title: 'Message broker heartbeat',
    runs: false,
    notRun:
      "the reference's message broker between its nodes; throughway's nodes meet in Redis, whose connection is watched by its own client (docs/scale-out.md)",
    keys: [
      {
        key: 'delay',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 0,
        min: 0,
        meaning: 'Interval of keep-alive pings; configure when connections idle long.',
      },
      {
        key: 'timeoutFactor',
        type: 'f',
        default: 2.0,
        min: 0,
        meaning: 'Time allowed for a subscriber to answer a heartbeat before the channel ends (the sample writes timeout_factor).',
      },
    ],
  },

  // ---------------------------------------------------------------- health checks
  {
    path: 'server_health_check',
    source: '001',
    title: 'Health check',
    runs: true,
    enabledBy: 'server_health_check.enable',
    keys: [{ key: 'enable', type: 'b', default: false, meaning: 'Enable the health check.' }],
  },
  {
    path: 'server_health_check.health_checker.super_tenant_health_checker',
    source: '001',
    title: 'Health checker: user stores',
    runs: true,
    enabledBy: 'server_health_check.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Check the user stores.' },
      { key: 'order', type: 'i', default: 98, meaning: 'Order among the health checkers.' },
    ],
  },
  {
    path: 'server_health_check.health_checker.super_tenant_health_checker.properties',
    source: '001',
    title: 'Health checker: user stores, properties',
    runs: true,
    enabledBy: 'server_health_check.enable',
    keys: [
      {
        key: 'monitored.user.stores',
        type: 'a',
        defaultText: 'all secondary user stores of the super tenant',
        inactive: 'the health check reads the user store throughway uses ([user_store]); there are no secondary stores to pick',
        meaning: 'User store domain names to check.',
      },
    ],
  },
  {
    path: 'server_health_check.health_checker.data_source_health_checker',
    source: '001',
    title: 'Health checker: data sources',
    runs: true,
    enabledBy: 'server_health_check.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Check pool information and obtain a connection from each data source.' },
      { key: 'order', type: 'i', default: 98, meaning: 'Order among the health checkers.' },
    ],
  },
  {
    path: 'server_health_check.health_checker.data_source_health_checker.properties',
    source: '001',
    title: 'Health checker: data sources, properties',
    runs: true,
    enabledBy: 'server_health_check.enable',
    keys: [
      {
        key: 'pool_usage_limit_percentage',
        type: 'i',
        default: 80,
        min: 0,
        max: 100,
        meaning: 'Pool usage above this percentage is unhealthy.',
      },
      {
        key: 'monitored.datasources',
        type: 'a',
        defaultText: 'all',
        inactive: 'the health check reads the one store of [database.apim_db]; there are no JNDI data sources to name',
        meaning: 'JNDI names of the data sources to check.',
      },
    ],
  },
  {
    path: 'health_checker',
    source: '001',
    title: 'Custom health checker',
    runs: false,
    notRun: 'custom health checkers are Java classes of the reference; the health check runs the built-in checks (docs/operations.md)',
    keys: [
      { key: 'name', type: 's', meaning: 'Health checker name.' },
      { key: 'order', type: 'i', meaning: 'Order among the health checkers.' },
      { key: 'properties', type: 'map', meaning: 'Key-value properties of the checker.' },
    ],
  },

  // ---------------------------------------------------------------- OAuth
  {
    path: 'oauth',
    source: '001',
    title: 'OAuth',
    runs: true,
    keys: [
      {
        key: 'additional_params_from_error_url',
        type: 'b',
        default: false,
        inactive: 'errors go to the redirect URI with only the RFC 6749 §4.1.2.1 parameters',
        meaning: 'Allow extra parameters in the OAuth2 error URL.',
      },
      { key: 'allowed_scopes', type: 'a', meaning: 'Scopes allowed without validation.' },
      { key: 'timestamp_skew', type: 'i', format: 'duration', unit: 's', default: 0, min: 0, meaning: 'Allowed clock skew.' },
      {
        key: 'extensions.token_generator',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Token issuer class.',
      },
      {
        key: 'extensions.token_context_generator',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Authorization context token issuer class.',
      },
      {
        key: 'extensions.token_context_claim_retriever',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'built-in default class',
        meaning: 'Claim retriever class for the context.',
      },
      {
        key: 'extensions.token_context_dialect_uri',
        type: 's',
        defaultText: 'vendor claims dialect URI',
        inactive: 'tokens carry the claims docs/key-manager.md lists; there are no claim dialects to pick',
        meaning: 'Consumer claim dialect.',
      },
    ],
  },
  {
    path: 'oauth.token_validation',
    source: '001',
    title: 'OAuth token validity',
    runs: true,
    keys: [
      {
        key: 'app_access_token_validity',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 3600,
        min: 0,
        meaning: 'Validity of application access tokens.',
      },
      {
        key: 'user_access_token_validity',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 3600,
        min: 0,
        meaning: 'Validity of user access tokens.',
      },
      {
        key: 'refresh_token_validity',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 86400,
        min: 0,
        meaning: 'Validity of refresh tokens.',
      },
    ],
  },
  {
    path: 'oauth.token_cleanup',
    source: '001',
    title: 'OAuth token cleanup',
    runs: true,
    enabledBy: 'oauth.token_cleanup.enable',
    keys: [
      { key: 'enable', type: 'b', default: true, meaning: 'Remove old invalid tokens.' },
      {
        key: 'retain_access_tokens_for_auditing',
        type: 'b',
        default: true,
        inactive: 'expired and revoked tokens are removed; no audit table is kept (docs/key-manager.md)',
        meaning: 'Move old invalid tokens to the audit table when cleanup runs.',
      },
    ],
  },
  {
    // (spec 001, OpenID Connect: [oauth.oidc.*]): the keys below are written dotted under [oauth.oidc].
    path: 'oauth.oidc',
    source: '001',
    title: 'OpenID Connect',
    runs: true,
    keys: [
      {
        key: 'extensions.id_token_builder',
        type: 's',
        format: 'class',
        defaultText: 'built-in default class',
        inactive: R.JAVA_CLASS,
        meaning: 'ID token builder class.',
      },
      {
        key: 'extensions.claim_callback_handler',
        type: 's',
        format: 'class',
        defaultText: 'built-in default class',
        inactive: R.JAVA_CLASS,
        meaning: 'Adds custom claims to the ID token.',
      },
      {
        key: 'extensions.user_info_claim_retriever',
        type: 's',
        format: 'class',
        defaultText: 'built-in default class',
        inactive: R.JAVA_CLASS,
        meaning: 'Builds the claims of the user-info response.',
      },
      {
        key: 'user_info.response_type',
        type: 's',
        default: 'json',
        allowed: ['json', 'jwt'],
        inactive: 'the user-info response is JSON (OpenID Connect Core §5.3.2); a signed JWT response is not built',
        meaning: 'Format of the user-info response; jwt for a JWT response.',
      },
      {
        key: 'token_validation.id_token_validity',
        type: 'i',
        format: 'duration',
        unit: 's',
        default: 3600,
        min: 0,
        meaning: 'Validity of ID tokens.',
      },
      {
        key: 'id_token.issuer',
        type: 's',
        format: 'url',
        defaultText: 'the OAuth2 token endpoint URL',
        meaning: 'Issuer of ID tokens; adjust per deployment.',
      },
      {
        key: 'id_token.redirect_error_page',
        type: 'b',
        default: true,
        inactive: 'ID token errors are answered as OAuth errors to the redirect URI; there is no error page to choose',
        meaning: 'Redirect to an error page on ID token errors.',
      },
      {
        key: 'claims.enable_oidc_dialect',
        type: 'b',
        default: false,
        inactive: 'claims are named as OpenID Connect names them already; there is no other dialect to switch from',
        meaning: 'Use the OpenID Connect claim dialect.',
      },
      {
        key: 'claims.enable_unmapped_user_attributes',
        type: 'b',
        default: false,
        inactive: 'only mapped claims are sent (docs/key-manager.md)',
        meaning: 'Include user attributes that have no claim mapping.',
      },
    ],
  },
  grantSection('authorization_code', true),
  grantSection('password', true),
  grantSection('refresh_token', true),
  grantSection('client_credentials', true, [
    { key: 'allow_refresh_tokens', type: 'b', default: false, meaning: 'Issue refresh tokens for the client credentials grant.' },
    { key: 'allow_id_token', type: 'b', default: false, meaning: 'Issue ID tokens for the client credentials grant.' },
  ]),
  grantSection('saml_bearer', true),
  grantSection('iwa_ntlm', true, [GRANT_VALIDATOR], `true still answers unsupported_grant_type: ${R.NTLM_KERBEROS}`),
  grantSection('jwt_bearer', true, [GRANT_VALIDATOR]),
  grantSection('kerberos', false, [GRANT_VALIDATOR], `true still answers unsupported_grant_type: ${R.NTLM_KERBEROS}`),

  // ---------------------------------------------------------------- token persistence
  {
    path: 'session_data.persistence',
    source: '001',
    title: 'Token persistence',
    runs: true,
    keys: [
      {
        key: 'persistence_pool_size',
        type: 'i',
        default: 0,
        min: 0,
        inactive: 'tokens are self-contained and not persisted (docs/key-manager.md, "Tokens at rest"): there is no persisting queue',
        meaning: 'Threads consuming the token persisting queue; 0 persists synchronously, above 0 asynchronously.',
      },
    ],
  },
  {
    path: 'oauth.token_generation',
    source: '001',
    title: 'Token generation',
    runs: true,
    keys: [
      {
        key: 'retry_count_on_persistence_failures',
        type: 'i',
        default: 5,
        min: 0,
        meaning: 'Retries on a key violation when storing an access token.',
      },
    ],
  },

  // ---------------------------------------------------------------- user store
  {
    // (spec 001, [user_store.properties]): strings unless stated; "defaults are empty unless stated" is
    // represented as no default.
    path: 'user_store.properties',
    source: '001',
    title: 'User store properties',
    runs: true,
    keys: [
      {
        key: 'TenantManager',
        type: 's',
        required: true,
        format: 'class',
        inactive: R.JAVA_CLASS,
        defaultText: 'JDBC-based or hybrid LDAP-based built-in tenant manager class',
        meaning: 'Tenant manager class.',
      },
      { key: 'MaxUserNameListLength', type: 'i', min: 0, inactive: R.USER_CORE, meaning: 'Users listed; 0 lists all.' },
      { key: 'ConnectionURL', type: 's', meaning: 'Connection URL of the user store server.' },
      { key: 'ConnectionName', type: 's', meaning: 'DN of the connecting user; needs read and search rights.' },
      { key: 'ConnectionPassword', type: 's', secret: true, defaultText: '<PASSWORD>', meaning: 'Password of the connecting user.' },
      { key: 'DisplayNameAttribute', type: 's', inactive: R.USER_CORE, meaning: 'Optional attribute used as the listing name.' },
      {
        key: 'PasswordHashMethod',
        type: 's',
        allowed: ['SHA', 'SHA-1', 'SHA-256', 'MD5', 'PLAIN_TEXT'],
        meaning: 'Hash method of stored passwords.',
      },
      { key: 'UserNameListFilter', type: 's', inactive: R.USER_CORE, meaning: 'Filter for listing users.' },
      { key: 'UserNameSearchFilter', type: 's', meaning: 'Filter for finding a user.' },
      { key: 'UserEntryObjectClass', type: 's', defaultText: 'a vendor person object class', meaning: 'Object class of user entries.' },
      { key: 'UserSearchBase', type: 's', meaning: 'DN of the users container.' },
      { key: 'UserNameAttribute', type: 's', meaning: 'Attribute that uniquely identifies a user.' },
      { key: 'UserNameAtribute', type: 's', meaning: 'Spelling of UserNameAttribute used in one spec listing; same meaning.' },
      { key: 'PasswordJavaScriptRegEx', type: 's', inactive: R.USER_CORE, meaning: 'Front-end password validation pattern.' },
      { key: 'UsernameJavaScriptRegEx', type: 's', inactive: R.USER_CORE, meaning: 'Front-end user name validation pattern.' },
      {
        key: 'UsernameJavaRegEx',
        type: 's',
        default: '^[\\S]{5,30}$',
        defaultText: 'length 5 to 30, non-empty characters',
        meaning: 'User name validation pattern.',
      },
      {
        key: 'PasswordJavaRegEx',
        type: 's',
        default: '^[\\S]{5,30}$',
        defaultText: 'length 5 to 30, non-empty characters',
        meaning: 'Password validation pattern.',
      },
      {
        key: 'RolenameJavaRegEx',
        type: 's',
        default: '^[\\S]{5,30}$',
        defaultText: 'length 5 to 30, non-empty characters',
        inactive: R.USER_CORE,
        meaning: 'Role name validation pattern.',
      },
      { key: 'ReadGroups', type: 'b', meaning: 'Read groups; when false the group base, list filter and name attribute are not needed.' },
      { key: 'WriteGroups', type: 'b', meaning: 'Write groups.' },
      { key: 'GroupSearchBase', type: 's', meaning: 'DN of the groups container.' },
      { key: 'GroupNameListFilter', type: 's', inactive: R.USER_CORE, meaning: 'Filter for listing groups.' },
      { key: 'GroupEntryObjectClass', type: 's', meaning: 'Object class of group entries.' },
      { key: 'GroupNameSearchFilter', type: 's', inactive: R.USER_CORE, meaning: 'Filter for finding a group.' },
      { key: 'GroupNameAttribute', type: 's', meaning: 'Attribute holding the group name.' },
      { key: 'MembershipAttribute', type: 's', meaning: 'Attribute listing the members of a group.' },
      {
        key: 'MembershipAttributeRange',
        type: 'i',
        default: 1500,
        min: 1,
        inactive: R.USER_CORE,
        meaning: 'Range for directory servers that limit membership attributes.',
      },
      {
        key: 'UserRoleCacheEnabled',
        type: 'b',
        default: true,
        inactive: R.USER_CORE,
        meaning: 'Cache user roles; set false when roles change externally.',
      },
      { key: 'UserDNPattern', type: 's', meaning: 'LDAP user DN pattern; speeds lookups.' },
      {
        key: 'ReplaceEscapeCharactersAtUserLogin',
        type: 's',
        inactive: R.USER_CORE,
        meaning: 'Replace escape characters at login; only backslash and double backslash are escape characters.',
      },
      {
        key: 'MultiTenantRealmConfigBuilder',
        type: 's',
        format: 'class',
        inactive: R.JAVA_CLASS,
        meaning: 'Tenant manager realm configuration builder class.',
      },
      {
        key: 'LDAPConnectionTimeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        min: 0,
        meaning: 'Inactivity after which a directory connection ends.',
      },
      { key: 'ReadTimeout', type: 's', format: 'duration', unit: 'ms', meaning: 'Read timeout; zero or less waits forever.' },
      { key: 'RetryAttempts', type: 's', inactive: R.USER_CORE, meaning: 'Retries after a timeout.' },
      { key: 'SCIMEnabled', type: 'b', default: false, inactive: R.USER_CORE, meaning: 'SCIM provisioning.' },
      {
        key: 'kdcEnabled',
        type: 's',
        boolString: true,
        default: false,
        inactive: 'throughway is no key distribution centre: Kerberos is not built (see [oauth.grant_type.kerberos])',
        meaning: 'The store acts as a key distribution center.',
      },
      { key: 'ConnectionPoolingEnabled', type: 's', boolString: true, default: false, meaning: 'Pool directory connections.' },
      { key: 'BackLinksEnabled', type: 's', boolString: true, default: false, meaning: 'true when member-of attributes are used.' },
      { key: 'UserCoreCacheTimeOut', type: 's', default: '5', inactive: R.USER_CORE, meaning: 'Timeout of the user core cache.' },
      {
        key: 'CaseInsensitiveUsername',
        type: 's',
        inactive: R.USER_CORE,
        meaning: 'Case sensitivity of user names (set false for case-insensitive JDBC stores).',
      },
      { key: 'AnonymousBind', type: 's', inactive: R.USER_CORE, meaning: 'Bind anonymously (present in the sample only).' },
      { key: 'IsBulkImportSupported', type: 's', inactive: R.USER_CORE, meaning: 'Bulk user import (present in the sample only).' },
      { key: 'EmptyRolesAllowed', type: 's', inactive: R.USER_CORE, meaning: 'Roles without users allowed (present in the sample only).' },
      { key: 'StartTLSEnabled', type: 's', meaning: 'STARTTLS on the directory connection (present in the sample only).' },
      { key: 'defaultRealmName', type: 's', inactive: R.USER_CORE, meaning: 'Default realm name (present in the sample only).' },
      {
        key: 'ConnectionRetryDelay',
        type: 's',
        inactive: R.USER_CORE,
        meaning: 'Delay between connection retries (present in the sample only).',
      },
    ],
  },

  // ---------------------------------------------------------------- keystores, access log
  {
    path: 'custom_keystore.<keystore_name>',
    source: '001',
    title: 'Custom keystore',
    runs: true,
    keys: [
      { key: 'file_name', type: 's', format: 'store', meaning: 'Keystore file, placed in the security directory.' },
      { key: 'type', type: 's', allowed: STORE_TYPES, meaning: 'Keystore type.', differs: R.STORE_TYPE },
      { key: 'password', type: 's', secret: true, defaultText: '<KEYSTORE_PASSWORD>', meaning: 'Keystore password.' },
      { key: 'alias', type: 's', meaning: 'Alias of the private key.' },
      {
        key: 'key_password',
        type: 's',
        secret: true,
        defaultText: '<KEY_PASSWORD>',
        meaning: 'Private key password; keep equal to the keystore password.',
      },
    ],
  },
  {
    path: 'http_access_log',
    source: '001',
    title: 'HTTP access log',
    runs: true,
    enabledBy: 'http_access_log.enabled',
    keys: [
      { key: 'enabled', type: 'b', defaultText: 'in sample true', meaning: 'Write the HTTP access log.' },
      { key: 'useLogger', type: 'b', default: false, meaning: 'true writes access log lines into the server log and console.' },
    ],
  },

  // ---------------------------------------------------------------- registry handlers
  {
    path: 'registry_handler',
    repeatable: true,
    source: '001',
    title: 'Registry handler',
    runs: false,
    notRun: R.REGISTRY,
    keys: [
      { key: 'class', type: 's', required: true, format: 'class', meaning: 'Handler class.' },
      { key: 'filter_class', type: 's', required: true, format: 'class', meaning: 'Filter class, e.g. a media-type or URL matcher.' },
      { key: 'properties', type: 'map', meaning: 'Custom properties without nested elements ([registry_handler.properties]).' },
      {
        key: 'filter_properties',
        type: 'map',
        meaning: 'Properties of the filter element, e.g. mediaType ([registry_handler.filter_properties]).',
      },
    ],
  },
  {
    path: 'registry_handler.nested_property',
    repeatable: true,
    source: '001',
    title: 'Registry handler nested property',
    runs: false,
    notRun: R.REGISTRY,
    keys: [
      { key: 'enable', type: 'b', default: false, meaning: 'Emit this nested property.' },
      { key: 'name', type: 's', required: true, meaning: 'Parent property name.' },
      { key: 'type', type: 's', default: 'xml', allowed: ['xml', 'null'], meaning: 'Type attribute of the parent property.' },
    ],
  },
  {
    path: 'registry_handler.nested_property.<parent_property_name>',
    repeatable: true,
    source: '001',
    title: 'Registry handler nested element',
    runs: false,
    notRun: R.REGISTRY,
    keys: [
      { key: 'tag', type: 's', required: true, meaning: 'XML element name.' },
      { key: 'value', type: 's', required: true, meaning: 'Element text.' },
      { key: 'key', type: 's', meaning: 'Value of the additional key attribute.' },
    ],
  },

  // ---------------------------------------------------------------- transport headers
  {
    path: 'apim.transport_headers',
    source: '001',
    title: 'Transport header handler',
    runs: true,
    enabledBy: 'apim.transport_headers.enabled',
    keys: [
      { key: 'enabled', type: 'b', default: false, meaning: 'Enables the transport header handler (the sample writes enable).' },
      {
        key: 'removeRequestHeaders',
        type: 's',
        boolString: true,
        default: false,
        meaning: 'true removes request headers from the response on failure; always removed for OPTIONS calls.',
      },
      {
        key: 'preserveRequestHeaders',
        type: 's',
        format: 'list',
        default: [],
        defaultText: 'empty',
        meaning: 'Headers kept when removing; used only when removeRequestHeaders is true.',
      },
      { key: 'excludeRequestHeaders', type: 's', format: 'list', meaning: 'Request headers removed from the response to the client.' },
      { key: 'excludeResponseHeaders', type: 's', format: 'list', meaning: 'Response headers removed from the request to the backend.' },
    ],
  },
];
