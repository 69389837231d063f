/**
 * The boot entry point of a throughway node: `throughway start` loads deployment.toml and hands the
 * frozen result here. This is where the node for `server.server_role` (spec 000, part 1.1) is assembled
 * from its parts, in this order:
 *
 *   demo.ts           the demo backend when [throughway.demo] enable is true
 *   control-plane.ts  the event hub; a gateway-worker's control plane; the key manager over the store
 *                     [database.apim_db] on the management HTTP port (9763 + offset); the throttle
 *                     decision service
 *   operations.ts     GET /metrics, /health, /health/live on the management port, the parts' checkers
 *   gateway.ts        the gateway on its HTTP port (8280 + offset; spec 002 part 4), the management HTTPS
 *                     port and the gateway's HTTPS, WS and WSS listeners (docs/tls.md)
 *   portal.ts         the developer portal and the publisher on the management ports (docs/portal.md)
 *   signals.ts        SIGHUP (reload) and close()
 *   summary.ts        the start-up summary
 *
 * Roles (docs/scale-out.md, lib/scale/settings.ts ROLE_PARTS): `default` runs both the gateway and the key
 * manager; `api-key-manager` and `traffic-manager` the key manager and store only, `traffic-manager` with
 * the throttle decision service (so does a `default` node whose counter_store is "traffic-manager");
 * `api-devportal` and `api-publisher` the key manager and store with their web console (`default` serves
 * both consoles; lib/portal); `gateway-worker` the gateway only, linked to the control plane over HTTP ([apim.key_manager]
 * service_url) and, with a redis:// event hub, its events. API deployments (lib/scale/deployments.ts): a
 * node with the key manager part serves its apis/ and policies file to gateway-workers (GET
 * /admin/v1/deployments, api.* and policies.updated events); a gateway-worker deploys those, for its
 * gateway_labels, instead of its own apis/ and policies file. The key manager's events reach the gateway
 * through `events` (and Redis across nodes). Cluster mode: lib/scale/cluster.ts runs startNode in the
 * primary and in each worker (StartOptions.cluster).
 */
import type { LoadResult } from '../config/load';
import { createBoot, type RunningNode, type StartOptions } from './boot';
import { startDemo } from './demo';
import { pullControlPlane, pullsDeployments, startDecisionService, startEventHub, startKeyManager, warnJmsUrls } from './control-plane';
import { registerReadiness, startOpsServer } from './operations';
import { listenerTls, startGateway, startGatewayTls, startManagementHttps } from './gateway';
import { startPortal } from './portal';
import { signals } from './signals';
import { summarise } from './summary';

export { RoleNotBuiltError, type RunningNode, type StartOptions } from './boot';
export type { ClusterPart } from '../scale/cluster';

export async function startNode(loaded: LoadResult, options: StartOptions = {}): Promise<RunningNode> {
  const b = createBoot(loaded, options);
  const { reload, close, onHup } = signals(b);
  registerReadiness(b, pullsDeployments(b));
  try {
    await startDemo(b);
    warnJmsUrls(b);
    // The key manager before the gateway: once the gateway says it listens, tokens can be had.
    // The operations port first: a gateway-worker retrying its control plane answers /health/live (and 503 on /health/ready).
    await startOpsServer(b);
    await startEventHub(b);
    await pullControlPlane(b);
    await startKeyManager(b);
    await startDecisionService(b);
    const t = listenerTls(b);
    await startManagementHttps(b, t);
    await startPortal(b);
    await startGateway(b);
    if (b.gateway !== undefined) await startGatewayTls(b, b.gateway, t);
    else
      b.log(
        `  the gateway does not run for role ${b.config.server.server_role}${b.scale.parts.gateway ? ' (transport.passthru_http.listener.enable = false)' : ''}`,
      );
    process.on('SIGHUP', onHup);
  } catch (err) {
    await close();
    throw err;
  }
  summarise(b);
  b.started = true;
  return {
    gateway: b.gateway,
    plugins: b.plugins,
    keyManager: b.keyManager,
    events: b.events,
    metrics: b.metrics,
    health: b.health,
    readiness: b.readiness,
    reload,
    ports: b.listening,
    close,
  };
}
