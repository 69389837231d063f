/**
 * Why a key or section is accepted and not acted on: one line each, shown by docs/migrating.md's key table
 * and by `config check` beside each such key a file writes (lib/config/key-status.ts `inactiveReason`).
 * Reasons several keys share live here; a reason of one key is written at the key.
 */

/** Keys naming a class of the reference's Java runtime (format 'class'). */
export const JAVA_CLASS =
  'names a Java class of the reference; throughway loads no Java classes: the behaviour is built in, extended by plugins (docs/plugins.md)';

/** Tomcat connector attributes of the reference's servlet transports (spec 001, [transport.http(s).properties]). */
export const TOMCAT =
  "a Tomcat connector attribute of the reference's servlet transport; the management listener is Node's HTTP server, which has no such setting (docs/transport.md)";

/** The reference's traffic manager wire protocols (spec 002, part 6). */
export const TM_WIRE =
  "the reference's Binary/Thrift and JMS links to its traffic manager; throughway's gateways share counts and decisions through Redis (docs/throttling.md)";

/** The analytics node of the reference and its store REST API. */
export const ANALYTICS_NODE =
  "the reference's analytics node (a separate server with its own store API); throughway publishes its events as docs/analytics.md says and calls no store";

/** Publishing to gateways from the control plane. */
export const PULLED =
  'the control plane does not push to gateways: each gateway pulls its deployments and events (docs/scale-out.md), so no publishing URL or credential is used';

/** The event hub's JMS and binary streaming links. */
export const HUB_LINKS =
  "the event hub is Redis (docs/scale-out.md: a redis:// URL of event_listening_endpoints), with its credentials in that URL; the reference's JMS and binary streaming links are not opened";

/** The user store settings of the reference's user core (listing, caching, front-end patterns, retries). */
export const USER_CORE =
  "a setting of the reference's user core (listing, caching, console patterns, retries) that throughway's user store readers have no counterpart for (docs/user-stores.md)";

/** The reference's cloud billing and tenant-management services. */
export const CLOUD =
  "the reference's hosted cloud services (billing, usage metering, tenant manager service); throughway runs none (tenants: docs/tenants.md)";

/** The reference's registry (governance, indexing, handlers). */
export const REGISTRY =
  "the reference's registry (its resource repository, handlers and indexer); throughway keeps APIs in its store and API files (docs/apis.md), with no registry";

/** The blocking (Axis2 servlet) transports and their message builders and formatters. */
export const BLOCKING =
  "the reference's blocking Axis2 transport (used by its admin services); throughway has one non-blocking transport, whose settings are [transport.passthru_*] (docs/transport.md)";

/** The caches of the reference's developer portal and publisher, filled from its registry. */
export const PORTAL_CACHE =
  "a cache of the reference's registry-backed portal; throughway's portal reads its store on each page (docs/portal.md), with nothing cached to switch or expire";

/** Mutable Synapse engine handlers (spec 001, [[engine_handlers]]). */
export const HANDLERS =
  "the reference's Axis2 engine handlers (Java classes in its message flow); throughway's phases are fixed and extended by plugins (docs/plugins.md)";

/** The reference's key-value store for revoked tokens. */
export const PERSISTENT_NOTIFIER =
  'an external key-value store of revoked tokens; throughway keeps revoked ids in its store and, scaled out, in Redis (docs/scale-out.md, "Revoked ids read back")';

/** The reference's key manager client pool (Java clients to its admin services). */
export const KM_POOL =
  'the gateway checks tokens in-process (self-contained JWTs, docs/key-manager.md): there is no pool of key manager clients to size';

/** NTLM and Kerberos grants (spec 001, [oauth.grant_type.iwa_ntlm], [oauth.grant_type.kerberos]). */
export const NTLM_KERBEROS =
  "NTLM and Kerberos are not built: NTLM's handshake binds one TCP connection (MS-NLMP), which proxies and pooled clients break, and Node's only GSS-API binding (kerberos) compiles native code";

/** The hosted API security audit service of [security_audit] (spec 000). */
export const EXTERNAL_AUDIT = 'the external audit service is not called; the audit runs locally, in the publisher (docs/security-audit.md)';

/** How every key store's and trust store's `type` acts ("acts differently"; lib/tls/keystore.ts detectFormat). */
export const STORE_TYPE =
  "the store's format is read from its bytes (JKS, JCEKS, PKCS#12 or PEM; docs/tls.md), whatever this says: the value is checked against the allowed ones only";
