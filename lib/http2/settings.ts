/**
 * [throughway.http2] read once (docs/http2.md): the HTTP/2 limits of the gateway's client side, each
 * field naming its key. Bounds are the schema's (lib/config/schema/throughway.ts).
 */
import type { DeploymentConfig } from '../config/types';

export interface Http2Settings {
  /** enabled: offer h2 by ALPN on the HTTPS and WSS listeners. */
  readonly enabled: boolean;
  /** h2c: HTTP/2 with prior knowledge on the plain listener. */
  readonly h2c: boolean;
  /** max_concurrent_streams. */
  readonly maxConcurrentStreams: number;
  /** max_header_list_size (bytes). */
  readonly maxHeaderListSize: number;
  /** initial_window_size (bytes). */
  readonly initialWindowSize: number;
  /** idle_timeout (ms). */
  readonly idleTimeout: number;
  /** stall_timeout (ms). */
  readonly stallTimeout: number;
  /** reset_burst and reset_rate: nghttp2's RST_STREAM limiter (CVE-2023-44487). */
  readonly resetBurst: number;
  readonly resetRate: number;
  /** max_control_frames per flood_window (ms). */
  readonly maxControlFrames: number;
  readonly floodWindow: number;
}

export const DEFAULT_HTTP2_SETTINGS: Http2Settings = {
  enabled: true,
  h2c: false,
  maxConcurrentStreams: 100,
  maxHeaderListSize: 65536,
  initialWindowSize: 1048576,
  idleTimeout: 60000,
  stallTimeout: 30000,
  resetBurst: 1000,
  resetRate: 33,
  maxControlFrames: 100,
  floodWindow: 10000,
};

export function http2Settings(config: DeploymentConfig): Http2Settings {
  const h = config.throughway.http2;
  return {
    enabled: h.enabled,
    h2c: h.h2c,
    maxConcurrentStreams: h.max_concurrent_streams,
    maxHeaderListSize: h.max_header_list_size,
    initialWindowSize: h.initial_window_size,
    idleTimeout: h.idle_timeout,
    stallTimeout: h.stall_timeout,
    resetBurst: h.reset_burst,
    resetRate: h.reset_rate,
    maxControlFrames: h.max_control_frames,
    floodWindow: h.flood_window,
  };
}
