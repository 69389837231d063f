/**
 * The gateway process of the soak run (bench/soak.ts, test/transport/soak.test.ts): the full gateway
 * (createGateway from lib/embed: phase chain, throttling, transport) with one API, auth "none", in front
 * of the soak backend. Started with an IPC channel by bench/soak-core.ts; answers `{ type: 'stats' }` with
 * its memory (after a full GC: started with --expose-gc), transport connections and pool sizes.
 *
 *   BACKEND=http://127.0.0.1:PORT node --expose-gc dist/bench/soak-gateway.js
 *
 * Timeouts are short so injected stalls end in seconds (socket inactivity timeout SOCKET_TIMEOUT ms,
 * default 1500; docs/transport.md). Listens on 127.0.0.1, a free port, sent to the parent as `{ type: 'ready', port }`.
 */
import { loadConfig } from '../lib/config/load';
import { createGateway } from '../lib/embed';
import { silentLogger } from '../lib/log';

export interface SoakStats {
  readonly type: 'stats';
  readonly rss: number;
  readonly heapUsed: number;
  readonly connections: { sources: number; targets: number; idleTargets: number; inFlight: number; queued: number };
  readonly pools: { key: string; open: number; idle: number; waiting: number; max: number }[];
}

async function main(): Promise<void> {
  const backend = process.env.BACKEND ?? 'http://127.0.0.1:8100';
  const socketTimeout = Number(process.env.SOCKET_TIMEOUT ?? 1500);
  const text = '[server]\nhostname = "localhost"\n';
  const loaded = loadConfig({ text, file: '/nonexistent/deployment.toml', env: {} });
  if (!loaded.ok) throw new Error(`soak gateway configuration: ${JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error'))}`);
  const gateway = createGateway({
    loaded,
    logger: silentLogger,
    watch: false,
    apis: [
      {
        name: 'soak',
        context: '/soak',
        version: '1',
        auth: 'none',
        unauthenticated_policy: 'Unlimited',
        endpoints: { production: backend },
        resources: [{ path: '/*', methods: ['GET', 'POST'] }],
      },
    ],
    // 'http.socket.timeout' given as the transport setting it becomes (lib/gateway/transport-settings.ts).
    transport: { shutdownTimeout: 2000, socketTimeout },
  });
  if (gateway.deployed().length !== 1)
    throw new Error(`api not deployed: ${JSON.stringify(gateway.states().flatMap((s) => s.diagnostics))}`);
  const address = await gateway.listen({ port: 0, host: '127.0.0.1', backlog: 4096 });
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'stats') {
      (globalThis as { gc?: () => void }).gc?.();
      const mem = process.memoryUsage();
      const stats: SoakStats = {
        type: 'stats',
        rss: mem.rss,
        heapUsed: mem.heapUsed,
        connections: { ...gateway.transport.connections() },
        pools: gateway.transport.pools().map((p) => ({ ...p })),
      };
      process.send?.(stats);
    } else if (m?.type === 'close') {
      gateway.close().then(
        () => process.exit(0),
        () => process.exit(0),
      );
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready', port: address.port });
}

main().catch((err: unknown) => {
  process.stderr.write(`soak-gateway: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
