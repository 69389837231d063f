/**
 * The access log, tracing and analytics as the gateway's call observer (lib/gateway/hooks.ts): a line per
 * finished exchange ([http_access_log]), a span per call and per phase, an analytics event per exchange
 * (docs/operations.md, docs/tracing.md, docs/analytics.md). Tracing and analytics are made from
 * [apim.open_tracer] and [apim.analytics] when they are on, unless the embedder gives its own.
 */
import type { DeploymentConfig } from '../config/types';
import type { CallObserver } from '../gateway/hooks';
import type { GatewaySettings } from '../gateway/settings';
import type { Logger } from '../log';
import { AccessLog } from './access-log';
import { Analytics } from './analytics';
import { analyticsSettingsFrom, tracingSettingsFrom } from './settings';
import { callTenant } from './tenant';
import { Tracer } from './tracing';

export interface CallObservers {
  readonly tracer: Tracer | undefined;
  readonly analytics: Analytics | undefined;
  /** Undefined when neither is on: the gateway then keeps no call per exchange. */
  readonly observer: CallObserver | undefined;
}

export function callObservers(
  config: DeploymentConfig,
  settings: GatewaySettings,
  o: { readonly tracer?: Tracer; readonly analytics?: Analytics; readonly logger: Logger },
): CallObservers {
  const logger = o.logger;
  const accessLog = settings.accessLog.enabled
    ? new AccessLog(settings.accessLog.useLogger ? { logger } : { file: settings.accessLog.file })
    : undefined;
  const tracing = tracingSettingsFrom(config);
  const tracer =
    o.tracer ?? (tracing.logTracer || tracing.remote || tracing.otlp !== undefined ? new Tracer(tracing, { logger }) : undefined);
  const analyticsSettings = analyticsSettingsFrom(config);
  const analytics = o.analytics ?? (analyticsSettings.enabled ? new Analytics(analyticsSettings, { logger }) : undefined);
  if (accessLog === undefined && tracer === undefined && analytics === undefined) return { tracer, analytics, observer: undefined };
  const observer: CallObserver = {
    ...(tracer !== undefined ? { chain: tracer } : {}),
    // The access log reads the call too: a GraphQL call's line names its operation (docs/graphql.md).
    calls: true,
    ended(ctx, r) {
      accessLog?.record(r, ctx?.graphql?.operation, callTenant(ctx, r.url) ?? '-');
      if (ctx !== undefined) tracer?.finish(ctx, r);
      analytics?.record(ctx, r);
    },
    async close() {
      await accessLog?.close();
      await Promise.all([tracer?.close(), analytics?.close()]);
    },
  };
  return { tracer, analytics, observer };
}
