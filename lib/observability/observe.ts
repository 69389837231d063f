/**
 * What the node hangs on the gateway's transport events (GatewayOptions.observe): metrics counting and
 * the fault log line for faults the gateway answers itself.
 *
 * Every fault is logged once (docs/operations.md): transport faults by the transport (`transport_fault`,
 * lib/transport/core.ts: code, base, state, requestId); faults the gateway's phases answer (no API, no
 * resource, API blocked, authentication, throttling, ...) here, as `gateway_fault`, from the finished
 * exchange. The gateway's own codes carry no protocol state (spec 002 part 7 computes base + state for
 * transport codes only): `base` is the code and `state` null.
 */
import type { ExchangeRecord, TransportEvents } from '../transport/types';
import type { Logger } from '../log';
import type { Metrics } from './metrics';
import type { FaultRing } from './fault-ring';

/**
 * `faults`: the runtime view's ring of the last faults (lib/observability/fault-ring.ts), written only for
 * an exchange that ended with a fault code.
 */
export function gatewayObserver(o: { readonly logger: Logger; readonly metrics?: Metrics; readonly faults?: FaultRing }): TransportEvents {
  const { logger, metrics, faults } = o;
  return {
    onExchange(r: ExchangeRecord): void {
      if (metrics !== undefined) metrics.onExchange(r);
      const code = r.faultCode;
      if (code === undefined && r.fault === undefined) return;
      if (faults !== undefined) faults.record(code ?? (r.fault as { code: number }).code, r.status, r.method, r.url);
      if (code === undefined || r.fault !== undefined) return;
      const level = r.status >= 500 ? 'warn' : 'info';
      if (!logger.enabled(level)) return;
      logger.log(level, 'gateway_fault', {
        code,
        base: code,
        state: null,
        status: r.status,
        method: r.method,
        url: r.url,
        connection: r.connectionId,
        requestId: r.connectionId + '.' + r.requestNumber,
      });
    },
  };
}
