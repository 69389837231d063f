/**
 * throughway's own settings: what a production gateway needs that the spec has no key for
 * (docs/configuration.md, "The [throughway] section": settings the spec has no key for live in one section).
 * Durations take a bare number in the stated unit or a string such as "30s"; sizes are bytes.
 */
import type { SectionDef } from '../schema-types';

export const THROUGHWAY_SECTIONS: readonly SectionDef[] = [
  {
    path: 'throughway',
    source: 'throughway',
    title: 'throughway process and proxy settings',
    runs: true,
    keys: [
      {
        key: 'log_level',
        type: 's',
        default: 'info',
        allowed: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
        meaning: 'Lowest level written to the server log.',
      },
      {
        key: 'connect_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 1,
        meaning: 'Backend TCP connect must complete within this.',
      },
      {
        key: 'header_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 1,
        meaning: 'A client must send a complete request head within this (slowloris defence).',
      },
      {
        key: 'keepalive_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 60000,
        min: 0,
        meaning: 'An idle client keep-alive connection is closed after this.',
      },
      {
        key: 'pool_idle_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 0,
        meaning:
          "Idle pooled backend sockets are evicted after this; the pool also stays below the backend's announced Keep-Alive timeout.",
      },
      {
        key: 'max_request_body',
        type: 'i',
        format: 'bytes',
        default: -1,
        min: -1,
        meaning: 'Largest request body accepted, -1 unlimited; a larger body gets 413.',
      },
      {
        key: 'high_water_mark',
        type: 'i',
        format: 'bytes',
        default: 1048576,
        min: 1,
        meaning: 'Bytes buffered per connection toward a slow peer before the other side is paused.',
      },
      {
        key: 'read_buffer_size',
        type: 'i',
        format: 'bytes',
        default: 262144,
        min: 1024,
        meaning:
          'Read buffer of a client or backend connection while a body streams through it; larger reads cost less CPU per byte (docs/transport.md).',
      },
      {
        key: 'shutdown_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 0,
        meaning: 'On shutdown, in-flight requests get this long to finish before connections are closed.',
      },
      {
        key: 'via',
        type: 's',
        default: '1.1 throughway',
        meaning: 'Value added to the Via header; an empty string disables the Via header.',
      },
      {
        key: 'x_forwarded',
        type: 'b',
        default: true,
        meaning: 'Add X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host to backend requests.',
      },
      {
        key: 'max_response_header_size',
        type: 'i',
        format: 'bytes',
        default: 65536,
        min: 1024,
        meaning: 'Largest backend status line + headers accepted; a larger one is a protocol fault (101506, 502).',
      },
      {
        key: 'retry_stale',
        type: 'b',
        default: true,
        meaning: 'Retry once on a fresh connection when a reused backend socket closes before any response byte.',
      },
      { key: 'backlog', type: 'i', default: 511, min: 1, meaning: 'Listen backlog of the gateway listeners (HTTP, HTTPS, WS, WSS).' },
      {
        key: 'plugins',
        type: 'a',
        default: [],
        meaning:
          "Policy plugins of `throughway start` (docs/plugins.md): each a path (./ or ../, from the configuration's directory) or a package name (from that directory's node_modules) of a module exporting phases placed before or after a built-in phase. A plugin that does not load is a start-up error naming it.",
      },
      {
        key: 'api_plugins',
        type: 'a',
        default: [],
        meaning:
          'Policy plugins that run only where an API file attaches them (the `plugins` of an API or of a resource, docs/plugins.md), named like `plugins` entries. A plugin that does not load is a start-up error naming it; a name in both lists is refused.',
      },
      {
        key: 'plugin',
        type: 'map',
        meaning: 'Settings of each plugin, [throughway.plugin.<name>], handed to the plugin as it is loaded (docs/plugins.md).',
      },
      { key: 'apis_dir', type: 's', format: 'path', default: 'apis', meaning: 'Directory of API definitions.' },
      {
        key: 'fault_templates_file',
        type: 's',
        format: 'path',
        default: 'fault-templates.toml',
        meaning: 'Fault response templates file.',
      },
      {
        key: 'access_log_file',
        type: 's',
        format: 'path',
        default: 'logs/http_access.log',
        meaning: 'HTTP access log file, written when http_access_log.enabled is true and useLogger is false.',
      },
      {
        key: 'trusted_proxies',
        type: 'a',
        format: 'cidr',
        default: [],
        meaning:
          'Addresses and CIDR ranges of proxies in front of the gateway (e.g. ["10.0.0.0/8", "::1"]). Only from these peers are X-Forwarded-For (appended to), X-Forwarded-Proto, X-Forwarded-Host, Forwarded and X-Real-IP kept, and the client address (throttling, blocking, logs) is the right-most X-Forwarded-For entry that is not a trusted proxy; from any other peer these fields are replaced (docs/security.md).',
      },
      {
        key: 'body_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 600000,
        min: 0,
        meaning:
          'A request body must arrive whole within this from the end of its head, however steadily it trickles (0: no deadline); else 408 with fault 103162 and the connection closes.',
      },
      {
        key: 'max_interim_responses',
        type: 'i',
        default: 10,
        min: 0,
        max: 1000,
        meaning:
          'Most 1xx interim responses (100 Continue, 102, 103 Early Hints) a backend may send before the final response to one request, each relayed to HTTP/1.1 clients. One more is fault 103163 (502): the backend connection is closed and the client gets the fault. Apache httpd stops at 10 as well.',
      },
    ],
  },
  {
    // HTTP/2 to clients (docs/http2.md): the spec has no key for it. Bounds as nginx's http2 module and
    // nghttp2 set them (each key's meaning names the source).
    path: 'throughway.http2',
    source: 'throughway',
    title: 'HTTP/2 to clients (docs/http2.md)',
    runs: true,
    keys: [
      {
        key: 'enabled',
        type: 'b',
        default: true,
        meaning:
          'The gateway HTTPS and WSS listeners offer `h2` before `http/1.1` by ALPN (RFC 7301); a client that picks HTTP/1.1, or sends no ALPN, is served as before. false offers no ALPN.',
      },
      {
        key: 'h2c',
        type: 'b',
        default: false,
        meaning:
          'The gateway HTTP listener also takes HTTP/2 with prior knowledge (RFC 9113 §3.3: a connection that starts with the client preface); no Upgrade: h2c. Off by default: the plain listener then reads no byte differently.',
      },
      {
        key: 'max_concurrent_streams',
        type: 'i',
        default: 100,
        min: 1,
        max: 1000,
        meaning:
          'SETTINGS_MAX_CONCURRENT_STREAMS announced to clients; a stream beyond it is refused (RST_STREAM REFUSED_STREAM). nginx http2_max_concurrent_streams defaults to 128, RFC 9113 §6.5.2 recommends at least 100.',
      },
      {
        key: 'max_header_list_size',
        type: 'i',
        format: 'bytes',
        default: 65536,
        min: 1024,
        max: 1048576,
        meaning:
          'SETTINGS_MAX_HEADER_LIST_SIZE: the decoded fields of one request (name + value + 32 per field, RFC 9113 §6.5.2) at most; a larger list resets the stream (ENHANCE_YOUR_CALM), whatever HPACK compressed it to (HPACK bombs).',
      },
      {
        key: 'initial_window_size',
        type: 'i',
        format: 'bytes',
        default: 1048576,
        min: 65535,
        max: 16777216,
        meaning:
          'SETTINGS_INITIAL_WINDOW_SIZE: request body bytes a client may send on a stream before the gateway read them (flow control, RFC 9113 §6.9.2); reads follow the backend, so a slow backend slows the upload.',
      },
      {
        key: 'idle_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 60000,
        min: 1,
        meaning:
          'A connection with no open stream and no frame for this long is closed with GOAWAY (NO_ERROR), as keepalive_timeout closes HTTP/1.1 connections.',
      },
      {
        key: 'stall_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 1,
        meaning:
          'A response that cannot be written for this long because the client grants no flow-control window (a zero-window stall) is reset (RST_STREAM CANCEL) and its backend connection released.',
      },
      {
        key: 'reset_burst',
        type: 'i',
        default: 1000,
        min: 1,
        max: 100000,
        meaning:
          "Rapid reset (CVE-2023-44487): streams a client may reset in a burst before the connection is closed with GOAWAY; nghttp2 1.57's limiter and its default.",
      },
      {
        key: 'reset_rate',
        type: 'i',
        default: 33,
        min: 1,
        max: 10000,
        meaning: "Rapid reset: resets per second the burst refills by (nghttp2 1.57's default 33).",
      },
      {
        key: 'max_control_frames',
        type: 'i',
        default: 100,
        min: 1,
        max: 100000,
        meaning:
          'SETTINGS and PING frames a client may send per flood_window; one more closes the connection with GOAWAY ENHANCE_YOUR_CALM (SETTINGS and PING floods, CVE-2019-9512 and CVE-2019-9515).',
      },
      {
        key: 'flood_window',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 100,
        max: 600000,
        meaning: 'The window max_control_frames counts in.',
      },
    ],
  },
  {
    // Bounds of mediation (docs/mediation.md) the spec has no key for.
    path: 'throughway.mediation',
    source: 'throughway',
    title: 'Mediation limits',
    runs: true,
    keys: [
      {
        key: 'max_body',
        type: 'i',
        format: 'bytes',
        default: 10485760,
        min: 0,
        meaning:
          'Largest request body gathered for mediation (validation, scripts, conversion); a larger one gets fault 103061 (413) and the connection closes.',
      },
      {
        key: 'inline_limit',
        type: 'i',
        format: 'bytes',
        default: 16384,
        min: 0,
        meaning:
          'Bodies up to this size are validated and converted on the main thread; larger ones in the worker pool, as transferred buffers (measured on a prototype: break-even 4-16 KiB).',
      },
      {
        key: 'script_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 1,
        meaning: 'A script call running longer is stopped (its worker thread is ended): fault 103066.',
      },
      {
        key: 'worker_heap_mb',
        type: 'i',
        default: 256,
        min: 32,
        meaning:
          'Heap limit (old generation, MiB) of each mediation worker thread; a script that allocates past it ends its worker: fault 103067.',
      },
      {
        key: 'thread_cap',
        type: 'i',
        default: 0,
        min: 0,
        meaning:
          'Most mediation worker threads, whatever [mediation] engine.max_threads and core_threads say (their defaults, 100 and 20, size a Java thread pool that also waits on I/O); 0: one per CPU core (os.availableParallelism()). The pool does CPU-bound work only, so threads beyond the cores add memory and contention, not throughput.',
      },
      {
        key: 'thread_idle_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 60000,
        min: 0,
        meaning:
          'A worker thread above engine.core_threads that has been idle this long is stopped; until then it is kept for the next burst (starting a thread costs tens of ms).',
      },
      {
        key: 'script_dirs',
        type: 'a',
        default: [],
        meaning:
          'Directories besides the configuration directory that API [mediation] scripts may be in (relative paths from the configuration directory). A script whose real path, links resolved, is in neither is refused at deploy with API_SCRIPT_PATH (docs/mediation.md).',
      },
    ],
  },
  {
    path: 'throughway.demo',
    source: 'throughway',
    title: 'Built-in demo backend',
    runs: true,
    enabledBy: 'throughway.demo.enable',
    keys: [
      { key: 'enable', type: 'b', default: false, meaning: 'Start the built-in demo backend with `npm start`.' },
      { key: 'port', type: 'i', format: 'port', default: 9000, meaning: 'Port of the demo backend (plus server.offset).' },
    ],
  },
  {
    path: 'throughway.operations',
    source: 'throughway',
    title: 'Operations: metrics and health (docs/operations.md)',
    runs: true,
    keys: [
      { key: 'metrics', type: 'b', default: true, meaning: 'Serve GET /metrics (Prometheus text format) on the management port.' },
      {
        key: 'health_check_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 1,
        meaning: 'A health checker that has not answered within this is reported DOWN (GET /health).',
      },
      {
        key: 'backend_pool_checker_order',
        type: 'i',
        default: 99,
        meaning: 'Order of the backend connection pool health checker among the checkers of [server_health_check].',
      },
      {
        key: 'backend_pool_usage_limit_percentage',
        type: 'i',
        default: 100,
        min: 1,
        max: 100,
        meaning:
          'The backend pool checker is DOWN when a route uses at least this percentage of http.max.connection.per.host.port and calls wait for a connection.',
      },
    ],
  },
  {
    // Cluster mode (docs/scale-out.md, "All cores"): node:cluster workers sharing the gateway ports.
    path: 'throughway.cluster',
    source: 'throughway',
    title: 'Cluster mode: gateway workers on all cores (docs/scale-out.md)',
    runs: true,
    keys: [
      {
        key: 'workers',
        type: 's',
        default: '1',
        meaning:
          'Gateway worker processes sharing the listening ports: a whole number, or "auto" for one per CPU core; 1 is a single process (no cluster).',
      },
      {
        key: 'restart_delay_min',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 100,
        min: 0,
        meaning: 'Wait before restarting a worker that died; doubled for each worker that dies within 5 s of its start.',
      },
      {
        key: 'restart_delay_max',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 0,
        meaning: 'Longest wait before restarting a worker that died.',
      },
    ],
  },
  {
    // Scale-out (docs/scale-out.md): the Redis event hub and the control plane link of a gateway-worker.
    path: 'throughway.scale',
    source: 'throughway',
    title: 'Scale-out: event hub over Redis (docs/scale-out.md)',
    runs: true,
    keys: [
      {
        key: 'channel',
        type: 's',
        default: 'throughway:events',
        meaning: 'Redis pub/sub channel of the control plane events (every node of one deployment uses the same).',
      },
      {
        key: 'reconnect_min',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 100,
        min: 10,
        meaning: 'First wait before reconnecting to the event hub Redis; doubled after each failure.',
      },
      {
        key: 'reconnect_max',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 10,
        meaning: 'Longest wait between two reconnect attempts to the event hub Redis.',
      },
      {
        key: 'deployment_check_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 100,
        meaning:
          "A gateway-worker: how often it compares the version of the API files and policies it runs with its control plane's (one request answered 304 when they agree); a difference, or the control plane answering again after it did not, makes it pull them again (docs/scale-out.md).",
      },
    ],
  },
  {
    path: 'throughway.throttling',
    source: 'throughway',
    title: 'Throttling: policies file and counters (docs/throttling.md)',
    runs: true,
    keys: [
      {
        key: 'policies_file',
        type: 's',
        format: 'path',
        default: 'policies.toml',
        meaning:
          "Throttling policies file (docs/throttling.md), resolved against the configuration's directory. Missing: the built-in defaults (the same as conf/policies.toml).",
      },
      {
        key: 'counter_store',
        type: 's',
        default: 'memory',
        allowed: ['memory', 'redis', 'traffic-manager'],
        meaning:
          'Where throttle counters live: memory (exact, one process), redis (shared by every node; counted locally and synchronised in batches) or traffic-manager (counted locally, counts published to a traffic-manager node that publishes decisions; needs a redis:// URL in [apim.throttling] throttle_decision_endpoints or the event hub keys).',
      },
      {
        key: 'redis_url',
        type: 's',
        format: 'url',
        default: 'redis://127.0.0.1:6379',
        meaning: 'Redis of the shared counters when counter_store = "redis".',
      },
      {
        key: 'sync_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 100,
        min: 10,
        meaning:
          'How often local counts are sent to Redis (and the shared totals read back) or to the traffic manager; it bounds the overshoot across nodes (docs/throttling.md).',
      },
      {
        key: 'max_counters',
        type: 'i',
        default: 100000,
        min: 100,
        meaning:
          'Most counters kept in memory; past it idle and then the oldest counters are evicted, so a flood of distinct keys cannot exhaust memory.',
      },
      {
        key: 'counting',
        type: 's',
        default: 'async',
        allowed: ['async', 'exact', 'leased'],
        meaning:
          'How policies without their own `counting` count across gateways (docs/throttling.md, "Counting modes"): async (through counter_store, no round trip per call, may overshoot across nodes), exact (one atomic script in Redis per call: exactly the limit) or leased (blocks of quota taken from Redis and spent locally: never past the limit, no round trip per call in the common case). exact and leased use redis_url, or cluster_nodes.',
      },
      {
        key: 'cluster_nodes',
        type: 'a',
        default: [],
        meaning:
          'Redis Cluster nodes ("host:port") carrying the exact and leased counters instead of the Redis at redis_url; a policy\'s counter lives on one shard (hash tag). Empty: redis_url.',
      },
      {
        key: 'command_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 1000,
        min: 1,
        max: 60000,
        meaning:
          'A command of the exact and leased counters must answer within this; else Redis counts as unreachable and each gateway admits its share of the limit (docs/throttling.md, "Redis unreachable"). exact admits exactly the limit only while Redis answers within it: an event loop stalled longer (a loaded machine) makes a spurious outage.',
      },
    ],
  },
  {
    path: 'throughway.key_manager',
    source: 'throughway',
    title: 'Key manager signing key',
    runs: true,
    keys: [
      {
        key: 'signing_keystore',
        type: 's',
        meaning:
          "Name of a [custom_keystore.<name>] of type PEM or PKCS12 (its alias picks the key) whose private key (RSA: RS256, EC P-256: ES256) signs the key manager's tokens. Unset: an RSA key generated on first start and kept in the store.",
      },
      {
        key: 'pkce_allow_plain',
        type: 'b',
        default: false,
        meaning:
          'Accept code_challenge_method=plain at /oauth2/authorize (RFC 7636 §4.2). Off: only S256; a request without a method (plain by RFC 7636 §4.3) is refused (docs/key-manager.md, "Authorization code with PKCE").',
      },
    ],
  },
  {
    path: 'throughway.tracing',
    source: 'throughway',
    title: 'Tracing: span export to the remote tracer and to an OTLP collector (docs/tracing.md)',
    runs: true,
    keys: [
      {
        key: 'service_name',
        type: 's',
        default: 'throughway',
        meaning: 'serviceName of the local endpoint in every span sent to the remote tracer, and service.name of the OTLP resource.',
      },
      { key: 'batch_size', type: 'i', default: 100, min: 1, meaning: 'Spans per POST to the remote tracer (and per OTLP request).' },
      {
        key: 'flush_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 1000,
        min: 10,
        meaning: 'Queued spans are sent at least this often.',
      },
      {
        key: 'queue_size',
        type: 'i',
        default: 10000,
        min: 1,
        meaning: 'Spans waiting to be sent at most, per exporter (Zipkin, OTLP); further spans are dropped and counted.',
      },
      {
        key: 'send_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 1,
        meaning: 'A POST to the remote tracer (or the OTLP collector) must complete within this; its spans are dropped otherwise.',
      },
      {
        key: 'otlp.enable',
        type: 'b',
        default: false,
        meaning:
          'Send spans over OTLP/HTTP (the OpenTelemetry protocol) to otlp.endpoint, beside or without the Zipkin remote tracer; same spans and sampling (docs/tracing.md).',
      },
      {
        key: 'otlp.endpoint',
        type: 's',
        format: 'url',
        default: 'http://localhost:4318/v1/traces',
        meaning: 'The OTLP/HTTP traces URL the export requests are POSTed to (a collector, Jaeger, Tempo, a vendor).',
      },
      {
        key: 'otlp.encoding',
        type: 's',
        allowed: ['protobuf', 'json'],
        default: 'protobuf',
        meaning: 'OTLP/HTTP body: binary protobuf (application/x-protobuf) or JSON (application/json).',
      },
    ],
  },
  {
    path: 'throughway.analytics',
    source: 'throughway',
    title: 'Analytics event publishing (docs/analytics.md)',
    runs: true,
    keys: [
      {
        key: 'file',
        type: 's',
        format: 'path',
        meaning: 'JSON-lines file the analytics events are appended to (besides any http(s):// receivers). Unset: no file.',
      },
      { key: 'batch_size', type: 'i', default: 200, min: 1, meaning: 'Events per POST to a receiver (and per write to the file).' },
      {
        key: 'flush_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 1000,
        min: 10,
        meaning: 'Buffered events are published at least this often.',
      },
      {
        key: 'buffer_size',
        type: 'i',
        default: 10000,
        min: 1,
        meaning: 'Events waiting per receiver group at most; further events are dropped and counted.',
      },
      {
        key: 'send_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 1,
        meaning: 'A POST to a receiver must complete within this; the next receiver is tried otherwise.',
      },
      {
        key: 'retry_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 0,
        meaning: 'A receiver that failed is not tried again before this has passed.',
      },
    ],
  },
  {
    path: 'throughway.security',
    source: 'throughway',
    title: 'Gateway security (token validation)',
    runs: true,
    keys: [
      {
        key: 'token_cache_max',
        type: 'i',
        default: 10000,
        min: 1,
        meaning: 'Most validated tokens kept by the gateway token cache (least recently used evicted first).',
      },
      {
        key: 'jwks_refetch_interval',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 10000,
        min: 0,
        meaning: "Shortest time between two fetches of an issuer's JWKS (a token with an unknown kid triggers one).",
      },
      {
        key: 'jwks_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 5000,
        min: 1,
        meaning: "A JWKS or introspection call must complete within this; longer counts as the issuer's key endpoint being down.",
      },
      {
        key: 'client_trust_store',
        type: 's',
        format: 'path',
        meaning:
          'PEM file of the CA (or client) certificates trusted for [apimgt.mutual_ssl] client certificates; unset: no client certificate is trusted.',
      },
    ],
  },
  {
    path: 'throughway.portal',
    source: 'throughway',
    title: 'Developer portal self-service: sign-up, account links (docs/self-service.md)',
    runs: true,
    keys: [
      {
        key: 'self_sign_up',
        type: 'b',
        default: true,
        meaning:
          "Visitors of the developer portal may create their own account (/devportal/signup) in the key manager's user store; false hides the page.",
      },
      {
        key: 'confirmation_link_validity',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 86400000,
        min: 1000,
        meaning:
          'How long the e-mail confirmation link of a sign-up stays valid ([multi_tenancy.platform] email_validation_mandatory_for_login).',
      },
      {
        key: 'recovery_link_validity',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 1800000,
        min: 1000,
        meaning: 'How long a password recovery link stays valid; each link works once.',
      },
    ],
  },
  {
    path: 'throughway.management',
    source: 'throughway',
    title: 'Management port defences: sign-in lockout, listener limits, secrets at rest (docs/security.md)',
    runs: true,
    keys: [
      {
        key: 'login_max_failures',
        type: 'i',
        default: 5,
        min: 1,
        meaning:
          'Failed sign-ins (admin API Basic, password grant, client secret, sign-in page) of one account from one client address before that pair is locked for login_lock_time.',
      },
      {
        key: 'address_max_failures',
        type: 'i',
        default: 50,
        min: 1,
        meaning: 'Failed sign-ins from one client address, whatever the account, before that address is locked for login_lock_time.',
      },
      {
        key: 'login_lock_time',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 900000,
        min: 1,
        meaning:
          'How long a locked (account, address) pair or address is refused; a lock expires on its own and failures older than this are forgotten.',
      },
      {
        key: 'login_delay',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 200,
        min: 0,
        meaning:
          'Each failed sign-in of an account (from any address) is answered this much later per recent failure of that account, at most 10 times this: guessing slows down everywhere without locking the account out for others.',
      },
      {
        key: 'header_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 20000,
        min: 1,
        meaning: 'A request head on a management listener must arrive within this, else the connection is closed (slowloris).',
      },
      {
        key: 'request_timeout',
        type: 's',
        format: 'duration',
        unit: 'ms',
        default: 30000,
        min: 1,
        meaning:
          'A whole request (head and body) on a management listener must arrive within this, else the connection is closed (408). [transport.http(s).properties] connectionUploadTimeout is not used: a body may not take two minutes.',
      },
      {
        key: 'max_connections',
        type: 'i',
        default: 1000,
        min: 1,
        meaning: 'Open connections per management listener at most; further connections are closed at once.',
      },
      {
        key: 'max_connections_per_address',
        type: 'i',
        min: 1,
        defaultText: 'a tenth of max_connections (at least 1)',
        meaning:
          'Open connections per management listener from one client address (an IPv6 client by its /64 prefix) at most; further connections from it are closed at once, so one client cannot fill max_connections. Loopback is not exempt. At most max_connections.',
      },
      {
        key: 'hsts_max_age',
        type: 'i',
        default: 31536000,
        min: 0,
        meaning:
          'Strict-Transport-Security max-age in seconds (RFC 6797 §6.1.1) on every answer of the HTTPS management listener (pages and APIs); 0 sends no header. Never sent over plain HTTP (RFC 6797 §7.2).',
      },
      {
        key: 'signing_key_secret',
        type: 's',
        secret: true,
        meaning:
          'Secret (write it as $env{NAME}) the generated token-signing private keys are encrypted with in the store (AES-256-GCM, key derived with scrypt). Unset: they are stored unencrypted, with a warning at start. Set on an existing store: unencrypted keys are encrypted at the next start.',
      },
    ],
  },
  {
    path: 'oauth.grant_type.saml_bearer.identity_provider',
    repeatable: true,
    source: 'throughway',
    title: 'Trusted SAML 2.0 identity provider of the saml_bearer grant',
    runs: true,
    // Not in the spec: the reference keeps identity providers in its registry; the grant needs them (docs/key-manager.md).
    keys: [
      { key: 'issuer', type: 's', meaning: 'The identity provider entity ID: the Issuer of its assertions (throughway addition).' },
      {
        key: 'certificate_file',
        type: 's',
        format: 'store',
        meaning:
          'PEM file of the certificate (or certificates, during a rollover) whose key signs its assertions: a bare name in the security directory (throughway addition).',
      },
      {
        key: 'audience',
        type: 's',
        meaning:
          "Another name of the token endpoint accepted as Audience and Recipient in its assertions (throughway addition); this server's token endpoint URLs always are.",
      },
    ],
  },
];
