/**
 * The loaded configuration, read for tracing and analytics: which deployment.toml keys feed them. Like the
 * gateway and the transport, tracing and analytics never read TOML or the environment.
 */
import type { DeploymentConfig } from '../config/types';

export interface TracingSettings {
  /** [apim.open_tracer] log_tracer.enable: one log line per span. */
  readonly logTracer: boolean;
  /** [apim.open_tracer] remote_tracer.enable: spans to a Zipkin-compatible collector. */
  readonly remote: boolean;
  /** remote_tracer.name (informative: spans are always Zipkin v2 JSON). */
  readonly remoteName: string | undefined;
  /** remote_tracer.properties.hostname / port: POST http://host:port/api/v2/spans. */
  readonly host: string;
  readonly port: number;
  /** [throughway.tracing]. */
  readonly serviceName: string;
  readonly batchSize: number;
  readonly flushInterval: number;
  readonly queueSize: number;
  readonly sendTimeout: number;
  /** [throughway.tracing] otlp.*: spans over OTLP/HTTP (docs/tracing.md, "OTLP"); undefined when off. */
  readonly otlp: { readonly url: string; readonly encoding: 'protobuf' | 'json' } | undefined;
}

export interface ReceiverGroupSettings {
  /** [[apim.analytics.url_group]] analytics_url, as written (tcp:// and ssl:// included). */
  readonly urls: readonly string[];
  /** type; unset: failover (the spec gives no default). */
  readonly type: 'loadbalance' | 'failover';
}

export interface AnalyticsSettings {
  /** [apim.analytics] enable. */
  readonly enabled: boolean;
  readonly groups: readonly ReceiverGroupSettings[];
  /** receiver_username / receiver_password: HTTP Basic credentials sent to the receivers. */
  readonly username: string;
  readonly password: string;
  /** publish_response_size. */
  readonly publishResponseSize: boolean;
  /** [throughway.analytics]: file (absolute), batch size, flush interval, buffer, timeouts. */
  readonly file: string | undefined;
  readonly batchSize: number;
  readonly flushInterval: number;
  readonly bufferSize: number;
  readonly sendTimeout: number;
  readonly retryInterval: number;
  /** [server] hostname: the gateway named in each event. */
  readonly gatewayHost: string;
}

/** [[apim.analytics.url_group]] analytics_url's default (spec 000). */
const DEFAULT_RECEIVERS: readonly string[] = ['tcp://localhost:7612'];

export function tracingSettingsFrom(c: DeploymentConfig): TracingSettings {
  const o = c.apim.open_tracer;
  const t = c.throughway.tracing;
  return Object.freeze({
    logTracer: o.log_tracer.enable,
    remote: o.remote_tracer.enable,
    remoteName: o.remote_tracer.name,
    host: o.remote_tracer.properties.hostname,
    port: o.remote_tracer.properties.port,
    serviceName: t.service_name,
    batchSize: t.batch_size,
    flushInterval: t.flush_interval,
    queueSize: t.queue_size,
    sendTimeout: t.send_timeout,
    otlp: t.otlp.enable
      ? Object.freeze({ url: t.otlp.endpoint, encoding: t.otlp.encoding === 'json' ? ('json' as const) : ('protobuf' as const) })
      : undefined,
  });
}

export function analyticsSettingsFrom(c: DeploymentConfig): AnalyticsSettings {
  const a = c.apim.analytics;
  const t = c.throughway.analytics;
  return Object.freeze({
    enabled: a.enable,
    // No [[apim.analytics.url_group]] written: the spec's default group (tcp://localhost:7612), which is
    // then named in the start-up warning about binary receivers rather than silently ignored.
    groups: Object.freeze(
      (a.url_group.length > 0 ? a.url_group : [{ analytics_url: DEFAULT_RECEIVERS, type: undefined }]).map((g) =>
        Object.freeze({ urls: Object.freeze([...g.analytics_url]), type: g.type ?? 'failover' }),
      ),
    ),
    username: a.receiver_username,
    password: a.receiver_password,
    publishResponseSize: a.publish_response_size,
    file: t.file === undefined || t.file === '' ? undefined : t.file,
    batchSize: t.batch_size,
    flushInterval: t.flush_interval,
    bufferSize: t.buffer_size,
    sendTimeout: t.send_timeout,
    retryInterval: t.retry_interval,
    gatewayHost: c.server.hostname,
  });
}
