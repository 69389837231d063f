/**
 * The web consoles part of a node (docs/portal.md): the developer portal and the publisher mounted on
 * the key manager's management ports, where the role runs them (lib/scale/settings.ts ROLE_PARTS:
 * default both, api-devportal and api-publisher one each), with their OAuth clients registered.
 */
import { gatewayEnvironments } from '../gateway/environments';
import { gatewaySettingsFrom } from '../gateway/settings';
import { createPortal } from '../portal';
import { loadPolicies, policyNames } from '../throttle/policies';
import { policyOptionsOf, throttleSettingsFrom } from '../throttle/settings';
import type { Boot } from './boot';

/**
 * Gateway base URLs: the configured [[apim.gateway.environment]] entries with display_in_api_console
 * (lib/gateway/environments.ts resolves their URLs), HTTP first (try-it calls the first); none
 * configured: this node's gateway HTTP listener, as it listens.
 */
function gatewayUrls(b: Boot): { name: string; url: string }[] {
  const out: { name: string; url: string }[] = [];
  const shown = new Map(b.config.apim.gateway.environment.map((e) => [e.name, e.display_in_api_console]));
  const envs = gatewayEnvironments(b.config, b.ports).filter((e) => e.configured && shown.get(e.name) !== false);
  for (const e of envs) if (e.http !== undefined) out.push({ name: `${e.name} (HTTP)`, url: e.http });
  for (const e of envs) if (e.https !== undefined) out.push({ name: `${e.name} (HTTPS)`, url: e.https });
  if (out.length === 0 && b.listening.gateway !== undefined) out.push({ name: 'Gateway (HTTP)', url: `http://${b.eph ? '127.0.0.1' : b.config.server.hostname}:${b.listening.gateway}` });
  return out;
}

export async function startPortal(b: Boot): Promise<void> {
  const km = b.keyManager;
  const consoles = b.scale.parts.consoles;
  if (km === undefined || b.store === undefined || (!consoles.devportal && !consoles.publisher)) return;
  const { config, loaded } = b;
  const gw = gatewaySettingsFrom(config, loaded.dir, b.ports);
  const throttle = throttleSettingsFrom(config, loaded.dir);
  const dp = config.apim.devportal;
  const portal = createPortal({
    km,
    store: b.store,
    logger: b.logger,
    apisDir: gw.apisDir,
    vars: gw.vars,
    settings: { displayDeprecated: dp.display_deprecated_apis, displayMultipleVersions: dp.display_multiple_versions },
    tiers: () => [...(loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies?.subscription.keys() ?? [])],
    applicationTiers: () => [...(loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies?.application.keys() ?? [])],
    policyNames: () => {
      const p = loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies;
      return p !== undefined ? policyNames(p) : undefined;
    },
    gateways: () => gatewayUrls(b),
    consoles,
  });
  const a = km.addresses();
  const host = b.eph ? '127.0.0.1' : config.server.hostname;
  const origins = { http: a.http !== undefined ? km.settings.baseUrl : undefined, https: a.https !== undefined ? `https://${host}:${a.https.port}` : undefined };
  const clients = await portal.register(origins);
  km.mount(portal.handler, clients);
  const base = origins.https ?? origins.http;
  if (consoles.devportal) b.log(`  ${'developer portal'.padEnd(18)} ${base}/devportal${origins.https !== undefined && origins.http !== undefined ? ` (also ${origins.http}/devportal)` : ''}`);
  if (consoles.publisher) b.log(`  ${'publisher'.padEnd(18)} ${base}/publisher${origins.https !== undefined && origins.http !== undefined ? ` (also ${origins.http}/publisher)` : ''}`);
}
