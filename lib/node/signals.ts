/**
 * Signals. SIGHUP re-reads deployment.toml (when the CLI says how: StartOptions.reload; a configuration
 * with errors is refused and the running one stays), then the throttling policies file (refused with
 * errors, the running policies stay), the TLS listeners' certificates (likewise), the API definitions and
 * fault templates; a gateway-worker pulls its APIs and policies from the control plane again.
 * SIGTERM and SIGINT (handled by the CLI) call close(), which turns /health and /health/ready DOWN, stops accepting, lets
 * in-flight calls finish within [throughway] shutdown_timeout and drains keep-alive connections (a request
 * arriving on one is served with Connection: close; idle ones close after the transport's drain window,
 * docs/transport.md, "Graceful close"); the
 * gateway's close then flushes the queued spans and analytics events (docs/tracing.md, docs/analytics.md).
 */
import { applyReload, type ReloadResult } from '../observability/reload';
import type { LoadResult } from '../config/load';
import { resyncDeployments } from './control-plane';
import type { Gateway } from '../embed';
import type { Boot } from './boot';
import { describePlugins, pluginSettingsOf } from './gateway';
import type { PluginLoadError } from './plugins';

export interface Signals {
  readonly reload: () => ReloadResult | undefined;
  readonly close: () => Promise<void>;
  /** SIGHUP's handler: registered once the node has started, removed by close(). */
  readonly onHup: () => void;
}

export function signals(b: Boot): Signals {
  let current: LoadResult = b.loaded;
  const reload = (): ReloadResult | undefined => {
    let r: ReloadResult | undefined;
    if (b.options.reload !== undefined) {
      r = applyReload(current, b.options.reload(), b.logger);
      if (!r.ok) {
        b.log(`reload refused: the configuration has ${r.errors.length} error(s); the running configuration stays`);
        for (const e of r.errors) b.log(`  ${e}`);
        return r;
      }
      current = r.loaded;
      b.log(
        `reloaded configuration${r.applied.length > 0 ? `: applied ${r.applied.join(', ')}` : ''}${r.restartNeeded.length > 0 ? `; at the next start: ${r.restartNeeded.join(', ')}` : ''}`,
      );
    }
    reloadParts(b, current);
    return r;
  };
  const onHup = (): void => {
    try {
      reload();
    } catch (err) {
      b.logger.log('error', 'reload_failed', { message: (err as Error).message });
    }
  };
  let closing: Promise<void> | undefined;
  // Twice (a second signal during shutdown) waits for the same shutdown.
  const close = (): Promise<void> => (closing ??= closeParts(b, onHup));
  return { reload, close, onHup };
}

/** SIGHUP after the configuration: what gateway-workers deploy, the policies, certificates and APIs. */
function reloadParts(b: Boot, loaded: LoadResult): void {
  const { deploymentSource, gateway, follower } = b;
  if (deploymentSource !== undefined) {
    // What gateway-workers deploy: changes are published as events (lib/scale/deployments.ts).
    deploymentSource.refresh();
    const d = deploymentSource.snapshot();
    b.log(`reloaded deployments served to gateway-workers: ${d.apis.length} API file(s)${d.policies !== null ? ', policies' : ''}`);
  }
  if (gateway !== undefined && follower !== undefined) {
    // A gateway-worker's APIs and policies are its control plane's: pulled again, applied when they arrive.
    resyncDeployments(b).catch((err: unknown) => b.logger.log('error', 'control_plane_pull_failed', { message: (err as Error).message }));
    b.log(`pulling APIs and throttling policies from the control plane ${follower.origin} again`);
  } else if (gateway !== undefined) {
    reloadGateway(b, gateway, loaded);
  }
}

/**
 * The plugins loaded again from the configuration now in force (docs/plugins.md, "Reloading"): a module
 * that does not load keeps the running plugins. A node started without plugins has no plugin points in
 * its chain: plugins configured since take effect at the next start.
 */
function reloadPlugins(b: Boot, loaded: LoadResult): void {
  const s = pluginSettingsOf(loaded.config, loaded.dir);
  const plugins = b.plugins;
  if (plugins === undefined) {
    if (s.plugins.length > 0 || s.apiPlugins.length > 0)
      b.log('plugins: at the next start (this node started without plugins, so its chain has no plugin points)');
    return;
  }
  try {
    plugins.reload(s);
    b.log(`reloaded plugins: ${describePlugins(plugins)}`);
  } catch (err) {
    const e = err as PluginLoadError;
    b.logger.log('error', 'plugins_reload_refused', { code: e.code, plugin: e.plugin, message: e.message });
    b.log(`plugins refused: ${e.message}; the running plugins stay`);
  }
}

function reloadGateway(b: Boot, gateway: Gateway, loaded: LoadResult): void {
  reloadPlugins(b, loaded);
  // The policies before the APIs: an API file may name a policy the new file defines.
  const p = gateway.throttle.reload();
  if (p.ok) b.log(`reloaded throttling policies from ${gateway.throttle.settings.policiesFile}`);
  else {
    b.log(`throttling policies refused: ${p.errors.length} error(s); the running policies stay`);
    for (const e of p.errors) b.log(`  ${e}`);
  }
  const c = b.reloadTls();
  if (!c.ok) b.log(`TLS certificates refused (${c.error ?? ''}); the running ones stay`);
  const g = gateway.reload();
  b.log(`reloaded: ${g.deployed.length} API(s) deployed`);
}

async function closeParts(b: Boot, onHup: () => void): Promise<void> {
  b.stopWatching();
  b.deploymentSource?.close();
  b.follower?.close();
  b.deploymentCheck?.close();
  process.removeListener('SIGHUP', onHup);
  b.health?.shuttingDown();
  b.readiness.shuttingDown();
  b.logger.log('info', 'shutdown_started', {
    inFlight: b.gateway?.transport.connections().inFlight ?? 0,
    timeoutMs: b.config.throughway.shutdown_timeout,
  });
  await b.gateway?.close();
  // After the gateway: the bytes of its last exchanges are sent (docs/tenants.md, "Billing packages").
  await b.remoteTenants?.close();
  await b.keyManager?.close();
  await b.hub?.close();
  await b.trafficManager?.close();
  const opsServer = b.opsServer;
  if (opsServer !== undefined) await new Promise<void>((resolve) => opsServer.close(() => resolve()));
  const consoleHttps = b.consoleHttps;
  if (consoleHttps !== undefined) await new Promise<void>((resolve) => consoleHttps.close(() => resolve()));
  await b.mailer?.close();
  await b.store?.close();
  await b.demo?.close();
  b.metrics?.attach(undefined);
  b.logger.log('info', 'shutdown_complete');
}
