/**
 * What the transport needs from the configuration, as one flat typed object. The transport never sees
 * deployment.toml: lib/node.ts maps the loaded configuration onto this (transportSettingsFrom), and
 * embedders may pass a partial object to createTransport(). Each field names the key it comes from.
 */
export interface TransportSettings {
  /** [passthru_http] 'http.socket.timeout': ms of maximum inactivity between two data packets (both sides). */
  readonly socketTimeout: number;
  /** [throughway] connect_timeout: ms for a backend TCP connect (101508 when exceeded). */
  readonly connectTimeout: number;
  /** [throughway] header_timeout: ms for a client to send a complete request head (slowloris defence). */
  readonly headerTimeout: number;
  /** [throughway] keepalive_timeout: ms an idle client keep-alive connection is kept. */
  readonly keepAliveTimeout: number;
  /** [transport.http.properties] maxHttpHeaderSize: bytes of request line + headers (431 above). */
  readonly maxHeaderSize: number;
  /** [throughway] max_response_header_size: bytes of a backend's status line + headers (502 above). */
  readonly maxResponseHeaderSize: number;
  /** [throughway] max_request_body: bytes; -1 unlimited (413 above). */
  readonly maxRequestBody: number;
  /** [passthru_http] 'http.max.connection.per.host.port': connections per backend host:port. */
  readonly maxConnectionsPerRoute: number;
  /** [throughway] pool_idle_timeout: ms an idle pooled backend socket is kept. */
  readonly poolIdleTimeout: number;
  /** [passthru_http] disable_connection_keepalive: one backend connection per request. */
  readonly disableKeepAlive: boolean;
  /** [passthru_http] max_open_connections: client connections; -1 unlimited. */
  readonly maxOpenConnections: number;
  /** [passthru_http] worker_pool_size_max: requests proxied at once (the Node reading of "worker threads"). */
  readonly maxInFlight: number;
  /** [passthru_http] worker_pool_queue_length: requests waiting for an in-flight slot; -1 unbounded. */
  readonly queueLength: number;
  /** [throughway] high_water_mark: bytes buffered toward a slow peer before the other side is paused. */
  readonly highWaterMark: number;
  /**
   * [throughway] read_buffer_size and [passthru_http] io_buffer_size (the larger): the read buffer of a
   * connection while a body streams through it, client or backend (docs/transport.md, "Read buffers").
   */
  readonly readBufferSize: number;
  /** [throughway] retry_stale: retry once when a reused backend socket closes before any response byte. */
  readonly retryStale: boolean;
  /** [passthru_http] 'http.user.agent.preserve': keep the client's User-Agent (else the gateway's). */
  readonly preserveUserAgent: boolean;
  /** [passthru_http] 'http.server.preserve': keep the backend's Server header (else the gateway's). */
  readonly preserveServer: boolean;
  /** [passthru_http] 'http.headers.preserve': lower-case names whose incoming value wins over the gateway's. */
  readonly preserveHeaders: readonly string[];
  /** [throughway] via: the Via value added both ways ('' disables). */
  readonly via: string;
  /** [throughway] x_forwarded: add X-Forwarded-For/-Proto/-Host. */
  readonly xForwarded: boolean;
  /** [transport.passthru_http] sender.enable. */
  readonly senderEnabled: boolean;
  /** [throughway] shutdown_timeout: ms graceful close waits for in-flight requests. */
  readonly shutdownTimeout: number;
  /**
   * [mediation] engine.global_timeout_interval: ms from the hand-off to a backend connection until the
   * response head must have arrived (0: none). Exceeded: fault 103064 (504), the late response is dropped.
   */
  readonly globalTimeout: number;
  /** The product token used where the gateway sets User-Agent or Server. */
  readonly productToken: string;
  /**
   * [throughway] trusted_proxies: addresses and CIDR ranges of proxies in front of the gateway. Only
   * their X-Forwarded-*, Forwarded and X-Real-IP fields are kept; the client address is then the
   * right-most untrusted X-Forwarded-For entry (trusted.ts, docs/security.md).
   */
  readonly trustedProxies: readonly string[];
  /** [throughway] body_timeout: ms from a complete request head to its last body byte (0: none; 408, 103162). */
  readonly bodyTimeout: number;
  /**
   * [throughway] max_interim_responses: 1xx interim responses (RFC 9110 §15.2) accepted from a backend for
   * one request; one more is fault 103163 (502) and the backend connection is closed.
   */
  readonly maxInterimResponses: number;
  /**
   * Writes straight to a plain socket's libuv handle where the process offers it (direct-write.ts); false:
   * every write takes socket.write(). Not a deployment.toml key: the embedder's (or the environment's,
   * THROUGHWAY_DIRECT_WRITES=0, read by the configuration, never by the transport).
   */
  readonly directWrites: boolean;
}

export const DEFAULT_TRANSPORT_SETTINGS: TransportSettings = Object.freeze({
  socketTimeout: 180_000,
  connectTimeout: 10_000,
  headerTimeout: 30_000,
  keepAliveTimeout: 60_000,
  maxHeaderSize: 8192,
  maxResponseHeaderSize: 65536,
  maxRequestBody: -1,
  maxConnectionsPerRoute: 32767,
  poolIdleTimeout: 30_000,
  disableKeepAlive: false,
  maxOpenConnections: -1,
  maxInFlight: 400,
  queueLength: -1,
  highWaterMark: 1024 * 1024,
  // 256 KiB: a 1 MiB upload from 16 clients took 6 reads instead of 10 and 0.90-0.95x the CPU of 128 KiB
  // (docs/performance.md, "Changes that moved the figures").
  readBufferSize: 256 * 1024,
  retryStale: true,
  // The spec shows no default for these two flags; a pass-through proxy is transparent by default
  // (docs/transport.md, "Headers").
  preserveUserAgent: true,
  preserveServer: true,
  preserveHeaders: Object.freeze(['content-type']),
  via: '1.1 throughway',
  xForwarded: true,
  senderEnabled: true,
  shutdownTimeout: 30_000,
  // The raw transport has no mediation engine; the gateway passes the spec's 120000 ms.
  globalTimeout: 0,
  productToken: 'throughway',
  trustedProxies: Object.freeze([]),
  bodyTimeout: 600_000,
  // Apache httpd's mod_proxy_http stops at 10 (AP_MAX_INTERIM_RESPONSES) and answers 502: nothing needs
  // more (one 100 Continue, a 102 Processing now and then, a few 103 Early Hints).
  maxInterimResponses: 10,
  directWrites: true,
});

export function resolveSettings(partial?: Partial<TransportSettings>): TransportSettings {
  if (partial === undefined) return DEFAULT_TRANSPORT_SETTINGS;
  const merged = { ...DEFAULT_TRANSPORT_SETTINGS, ...partial };
  merged.preserveHeaders = Object.freeze(merged.preserveHeaders.map((h) => h.trim().toLowerCase()).filter((h) => h !== ''));
  return Object.freeze(merged);
}
