/**
 * Operations (lib/observability, docs/operations.md): `GET /metrics`, `GET /health` (the checkers of
 * [server_health_check]), `GET /health/live` and `GET /health/ready` on the management port, served by the
 * key manager when the role runs one, else by a server of their own; the role's readiness checks; and the
 * checkers and metrics of the parts that started.
 */
import * as http from 'node:http';
import { backendPoolChecker, dataSourceChecker, userStoreChecker } from '../observability/health';
import { hasRemoteIssuers, jwksChecker, redisChecker, registerComponentMetrics, workerPoolChecker } from '../observability/components';
import { RedisCounterStore } from '../throttle/redis';
import { DecisionCounterStore } from '../throttle/decisions';
import type { HealthChecker } from '../events/observed';
import type { Gateway } from '../embed';
import type { Store } from '../store/types';
import type { Boot } from './boot';
import { createManagementServer } from '../keymanager/listener';
import { serverConnections } from './status';

const backendPool = (b: Boot): ReturnType<typeof backendPoolChecker> => {
  const o = b.config.throughway.operations;
  return backendPoolChecker(() => b.gateway?.transport, {
    order: o.backend_pool_checker_order,
    limitPercentage: o.backend_pool_usage_limit_percentage,
  });
};

/** The start-up line that says where the probes and the scrape are. */
export function logOperations(b: Boot, port: number): void {
  b.log(
    `  ${'operations'.padEnd(18)} port ${port}: /health/live, /health/ready, /health${b.metrics !== undefined ? ', /metrics' : ''} (docs/operations.md)`,
  );
}

/** Checks that a part answers: DOWN with `waiting` until `ready()` gives its details. */
function readyWhen(
  name: string,
  order: number,
  waiting: string,
  ready: () => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>,
): HealthChecker {
  return {
    name,
    order,
    async check() {
      const details = await ready();
      return details !== undefined ? { healthy: true, details } : { healthy: false, message: waiting };
    },
  };
}

/**
 * What this role needs before it serves (docs/operations.md, "Probes"): every listener up (the end of the
 * start); the key manager's store open and answering a query; a gateway-worker's snapshot (and, when it
 * deploys its control plane's APIs, those APIs) pulled. A cluster primary adds `cluster_workers`
 * (lib/scale/cluster.ts), a traffic-manager its decision service's Redis (startDecisionService).
 */
export function registerReadiness(b: Boot, pullsDeployments: boolean): void {
  const r = b.readiness;
  r.register(
    readyWhen('listeners', 0, 'starting: not every listener is up yet', () =>
      b.started ? { management: b.listening.management ?? null, gateway: b.listening.gateway ?? null } : undefined,
    ),
  );
  if (b.scale.parts.keyManager) {
    r.register(
      readyWhen('store', 1, 'the store is not open yet', async () => {
        const store = b.store;
        return store === undefined ? undefined : { database: store.kind, schemaVersion: await store.schemaVersion() };
      }),
    );
  } else if (b.scale.consoleBackend === 'remote') {
    r.register(
      readyWhen('remote_key_manager', 2, `the consoles are not registered yet with the key manager ${b.scale.controlPlane}`, () =>
        b.portalRemote !== undefined ? { origin: b.portalRemote } : undefined,
      ),
    );
  } else {
    r.register(
      readyWhen(
        'control_plane',
        2,
        `no snapshot pulled yet from the control plane ${b.scale.controlPlane}${pullsDeployments ? ' (keys, APIs and policies)' : ''}`,
        () => {
          if (b.remoteLink === undefined || (pullsDeployments && b.follower === undefined)) return undefined;
          return { origin: b.scale.controlPlane, ...(b.follower !== undefined ? { apis: b.follower.entries().length } : {}) };
        },
      ),
    );
  }
}

/**
 * The operations port of a node without the key manager. A cluster worker has none: the primary's
 * management port is the node's (it shows the workers' metrics and health: lib/scale/cluster-ops.ts),
 * also when the primary runs no key manager.
 */
/** The operations routes, then the consoles of a console node with a remote key manager (lib/node/portal.ts). */
export function opsRequestHandler(b: Boot): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const p = url.pathname.replace(/\/+$/, '') || '/';
    // A console node with a remote key manager serves its consoles here too (lib/node/portal.ts).
    const site = b.site;
    b.ops(req, res, p)
      .then(async (done) => done || (site !== undefined && (await site(req, res, p, url))))
      .then(
        (done) => {
          if (!done) res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not_found"}');
        },
        () => res.writeHead(500).end(),
      );
  };
}

export async function startOpsServer(b: Boot): Promise<void> {
  if (b.scale.parts.keyManager || b.cl?.role === 'worker') return;
  // The management port's limits (lib/keymanager/listener.ts): it serves consoles on a console node.
  const { server: srv, limits } = createManagementServer(b.config, opsRequestHandler(b), b.logger);
  b.opsServer = srv;
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(b.eph ? 0 : b.ports.managementHttp, b.eph ? '127.0.0.1' : undefined, limits.backlog, () => resolve());
  });
  const at = srv.address() as { address: string; port: number };
  b.listening.management = at.port;
  b.listeners.push({ name: 'management', address: at.address, port: at.port, protocol: 'http', connections: serverConnections(srv) });
  logOperations(b, b.listening.management);
  b.health?.register(backendPool(b));
}

/** The store's checkers ([server_health_check.health_checker]) and the backend pool's. */
export function registerStoreCheckers(b: Boot, store: Store): void {
  const health = b.health;
  if (health === undefined) return;
  const checkers = b.config.server_health_check.health_checker;
  if (checkers.data_source_health_checker.enable) {
    health.register(
      dataSourceChecker(store, {
        order: checkers.data_source_health_checker.order,
        limitPercentage: checkers.data_source_health_checker.properties.pool_usage_limit_percentage,
      }),
    );
  }
  if (checkers.super_tenant_health_checker.enable)
    health.register(
      userStoreChecker(store, { order: checkers.super_tenant_health_checker.order, username: b.config.super_admin.username }),
    );
  health.register(backendPool(b));
}

/** The gateway's metrics and its components' checkers. */
export function observeGateway(b: Boot, gw: Gateway): void {
  b.metrics?.attach({ transport: gw.transport, apiOf: (url) => gw.apiOf(url) });
  if (b.metrics !== undefined) registerComponentMetrics(b.metrics, () => b.gateway);
  const health = b.health;
  if (health === undefined) return;
  // The components' checkers share the backend pool checker's order (equal orders keep this order).
  const order = b.config.throughway.operations.backend_pool_checker_order;
  health.register(workerPoolChecker(() => b.gateway, { order, queueLimit: gw.mediation.pool.settings.maxThreads }));
  if (hasRemoteIssuers(gw)) health.register(jwksChecker(() => b.gateway, { order }));
  if (gw.throttle.counters instanceof RedisCounterStore) health.register(redisChecker(() => b.gateway, { order }));
  if (gw.throttle.counters instanceof DecisionCounterStore) health.register(gw.throttle.counters.checker(order));
}
