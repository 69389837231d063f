/**
 * The loaded configuration, read for the transport: which key feeds which TransportSettings field. The
 * transport never sees deployment.toml (lib/transport/settings.ts documents each field's key).
 */
import { processSwitches } from '../config/switches';
import type { DeploymentConfig } from '../config/types';
import type { TransportSettings } from '../transport/settings';

export function transportSettingsFrom(c: DeploymentConfig): Partial<TransportSettings> {
  const p = c.passthru_http;
  const t = c.throughway;
  return {
    directWrites: processSwitches().directWrites,
    socketTimeout: p.http.socket.timeout,
    connectTimeout: t.connect_timeout,
    headerTimeout: t.header_timeout,
    keepAliveTimeout: t.keepalive_timeout,
    // The spec puts the head limit on the servlet transport ([transport.http.properties]); the
    // pass-through listener has none, so it shares that one (docs/transport.md).
    maxHeaderSize: c.transport.http.properties.maxHttpHeaderSize,
    maxResponseHeaderSize: t.max_response_header_size,
    maxRequestBody: t.max_request_body,
    maxConnectionsPerRoute: p.http.max.connection.per.host.port,
    poolIdleTimeout: t.pool_idle_timeout,
    disableKeepAlive: p.disable_connection_keepalive,
    maxOpenConnections: p.max_open_connections,
    maxInFlight: p.worker_pool_size_max,
    queueLength: p.worker_pool_queue_length,
    highWaterMark: t.high_water_mark,
    // io_buffer_size (16384) would force small reads; larger ones cost less (docs/transport.md, "Read buffers").
    readBufferSize: Math.max(t.read_buffer_size, p.io_buffer_size),
    retryStale: t.retry_stale,
    preserveUserAgent: p.http.user?.agent?.preserve ?? true,
    preserveServer: p.http.server?.preserve ?? true,
    preserveHeaders: p.http.headers.preserve,
    via: t.via,
    xForwarded: t.x_forwarded,
    senderEnabled: c.transport.passthru_http.sender.enable,
    shutdownTimeout: t.shutdown_timeout,
    globalTimeout: c.mediation.engine.global_timeout_interval,
    trustedProxies: t.trusted_proxies,
    bodyTimeout: t.body_timeout,
    maxInterimResponses: t.max_interim_responses,
  };
}
