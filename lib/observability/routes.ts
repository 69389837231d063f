/**
 * The operations routes of the management server (lib/keymanager/http.ts hands them every request first):
 *
 *   GET /health        the checkers' report when [server_health_check] enable (200 UP / 503 DOWN);
 *                      otherwise the readiness report (below)
 *   GET /health/live   liveness: 200 at once, no dependency touched
 *   GET /health/ready  readiness: what this role needs to serve (listeners up, store open, deployments
 *                      pulled, cluster workers ready), whatever [server_health_check] enable says
 *   GET /metrics       Prometheus text format when [throughway.operations] metrics
 *
 * docs/operations.md describes the answers.
 */
import type * as http from 'node:http';
import type { Health } from './health';
import type { Metrics } from './metrics';
import type { Logger } from '../log';
import type { OpsHandler } from '../events/observed';

export type { OpsHandler } from '../events/observed';

export interface OpsRouteOptions {
  /** Present when [server_health_check] enable is true. */
  readonly health?: Health;
  /** The role's readiness checks (lib/node/boot.ts registers them); absent: /health/ready answers the health report. */
  readonly readiness?: Health;
  readonly metrics?: Metrics;
  readonly logger?: Logger;
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  // Probes and scrapes must see the state now, never a cached copy.
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function opsRoutes(o: OpsRouteOptions): OpsHandler {
  return async (req, res, path) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (path === '/health/live') {
      send(res, 200, JSON_TYPE, JSON.stringify({ status: 'UP' }));
      return true;
    }
    // Without the detailed checkers, /health is the readiness probe (docs/operations.md presents it so).
    const checks = path === '/health' ? (o.health ?? o.readiness) : path === '/health/ready' ? (o.readiness ?? o.health) : undefined;
    if (checks !== undefined) {
      const report = await checks.run();
      if (report.status === 'DOWN')
        o.logger?.log(checks === o.health ? 'warn' : 'info', checks === o.health ? 'health_down' : 'not_ready', {
          failing: report.failing,
        });
      send(res, report.status === 'UP' ? 200 : 503, JSON_TYPE, JSON.stringify(report));
      return true;
    }
    if (path === '/metrics' && o.metrics !== undefined) {
      send(res, 200, o.metrics.contentType, await o.metrics.text());
      return true;
    }
    return false;
  };
}
