/**
 * The web consoles part of a node (docs/portal.md): the developer portal and the publisher where the
 * role runs them (lib/scale/settings.ts ROLE_PARTS: default both, api-devportal and api-publisher one
 * each), with their OAuth clients registered. Two ways (ScaleSettings.consoleBackend):
 *
 *   local   mounted on the key manager's management ports, over this node's key manager, store and
 *           apis_dir (lib/portal/backend.ts localKeyManager, lib/portal/catalogue.ts)
 *   remote  an api-devportal or api-publisher node whose deployment.toml writes [apim.key_manager]
 *           service_url: served on its management HTTP port (the operations server), calling that key
 *           manager's admin API and OAuth endpoints and its API file routes with [apim.key_manager]
 *           username and password (lib/portal/backend.ts remoteKeyManager, lib/portal/remote-catalogue.ts)
 *
 * A remote key manager that does not answer within the deployment retry stops the start with
 * PORTAL_REMOTE_UNREACHABLE; one that refuses the credentials or serves no console routes with
 * PORTAL_REMOTE_REFUSED (docs/operations.md, "Start-up errors").
 */
import { gatewayEnvironments } from '../gateway/environments';
import { gatewaySettingsFrom } from '../gateway/settings';
import { OAuthError } from '../keymanager/errors';
import { createPortal, type Portal, type PortalOptions } from '../portal';
import type { AdminParts } from '../portal/admin';
import { localKeyManager, PortalRemoteError, remoteKeyManager } from '../portal/backend';
import { Catalogue } from '../portal/catalogue';
import { RemoteCatalogue } from '../portal/remote-catalogue';
import { ControlPlane, ControlPlaneError } from '../scale/control-plane';
import { RemoteTenants } from '../scale/remote-tenants';
import { loadPolicies, policyNames } from '../throttle/policies';
import { policyOptionsOf, throttleSettingsFrom } from '../throttle/settings';
import { userRules } from '../keymanager';
import { Mailer } from '../mail/outbox';
import { mailSettings } from '../mail/settings';
import { localSelfService, selfServiceSettings } from '../portal/selfservice';
import { Auditor } from '../audit';
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
  if (out.length === 0 && b.listening.gateway !== undefined)
    out.push({ name: 'Gateway (HTTP)', url: `http://${b.eph ? '127.0.0.1' : b.config.server.hostname}:${b.listening.gateway}` });
  return out;
}

/** The options both ways share: settings, tiers of this node's policies file, gateway URLs. */
function commonOptions(b: Boot): Omit<PortalOptions, 'keys' | 'catalogue'> {
  const throttle = throttleSettingsFrom(b.config, b.loaded.dir);
  const dp = b.config.apim.devportal;
  return {
    logger: b.logger,
    settings: { displayDeprecated: dp.display_deprecated_apis, displayMultipleVersions: dp.display_multiple_versions },
    tiers: () => [...(loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies?.subscription.keys() ?? [])],
    applicationTiers: () => [...(loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies?.application.keys() ?? [])],
    policyNames: () => {
      const p = loadPolicies(throttle.policiesFile, policyOptionsOf(throttle)).policies;
      return p !== undefined ? policyNames(p) : undefined;
    },
    gateways: () => gatewayUrls(b),
    consoles: b.scale.parts.consoles,
    // [security_audit] written turns on the publisher's local audit; global = false turns it off (docs/security-audit.md).
    ...(b.loaded.tables.has('security_audit') && b.config.security_audit.global ? { audit: new Auditor() } : {}),
  };
}

function announce(b: Boot, origins: { http: string | undefined; https: string | undefined }): void {
  const consoles = b.scale.parts.consoles;
  const base = origins.https ?? origins.http;
  const also = (p: string): string => (origins.https !== undefined && origins.http !== undefined ? ` (also ${origins.http}${p})` : '');
  if (consoles.devportal) b.log(`  ${'developer portal'.padEnd(18)} ${base}/devportal${also('/devportal')}`);
  if (consoles.publisher) b.log(`  ${'publisher'.padEnd(18)} ${base}/publisher${also('/publisher')}`);
  if (b.scale.consoleBackend !== 'remote') b.log(`  ${'admin console'.padEnd(18)} ${base}/admin${also('/admin')}`);
}

/** A start-up failure of the remote way, with its code. */
function remoteStartError(err: unknown, origin: string): Error {
  if (err instanceof PortalRemoteError) return err;
  if (err instanceof OAuthError)
    return new PortalRemoteError(
      'PORTAL_REMOTE_REFUSED',
      `the key manager ${origin} refused this console node (${err.error}: ${err.message}): check [apim.key_manager] service_url, username and password (a super admin of that key manager)`,
    );
  if (err instanceof ControlPlaneError)
    return new PortalRemoteError(
      'PORTAL_REMOTE_UNREACHABLE',
      `the key manager ${origin} ([apim.key_manager] service_url) did not answer: ${err.message}`,
    );
  return err as Error;
}

async function startRemote(b: Boot): Promise<void> {
  const scale = b.scale;
  const origin = scale.controlPlane;
  const cp = new ControlPlane({
    url: origin,
    user: scale.controlPlaneUser,
    password: scale.controlPlanePassword,
    retry: scale.retry,
    logger: b.logger,
  });
  const keys = remoteKeyManager(cp, origin);
  const gw = gatewaySettingsFrom(b.config, b.loaded.dir, b.ports);
  const catalogue = new RemoteCatalogue(cp, origin, gw.vars, policyOptionsOf(throttleSettingsFrom(b.config, b.loaded.dir)));
  const common = commonOptions(b);
  // The control plane's tenants: a tenant's user signing in here is that tenant's, never the super tenant's,
  // and publishes through the catalogue of that tenant's files only (remote-catalogue.ts forTenant;
  // docs/tenants.md, "Console nodes").
  const tenants = (b.remoteTenants ??= await RemoteTenants.open(cp, b.logger));
  // The control plane's tiers; this node's own policies file while the control plane serves none valid.
  const portal = createPortal({
    ...common,
    keys,
    catalogue,
    tenants,
    tiers: () => catalogue.tiers?.subscription ?? common.tiers(),
    applicationTiers: () => catalogue.tiers?.application ?? common.applicationTiers(),
  });
  const port = b.listening.management;
  const host = b.eph ? '127.0.0.1' : b.config.server.hostname;
  const secure = b.consoleHttps?.address() as { port: number } | null | undefined;
  const origins = {
    http: `http://${host}:${port ?? b.ports.managementHttp}`,
    https: secure != null ? `https://${host}:${secure.port}` : undefined,
  };
  try {
    // A key manager still starting is waited for (the deployment retry); a refusal is final.
    const refusal = await cp.withRetry('consoles', async () => {
      try {
        await portal.register(origins);
        await catalogue.refresh();
        return undefined;
      } catch (err) {
        if (err instanceof OAuthError || (err instanceof PortalRemoteError && err.code === 'PORTAL_REMOTE_REFUSED')) return err;
        if (err instanceof PortalRemoteError) throw new ControlPlaneError(err.message);
        throw err;
      }
    });
    if (refusal !== undefined) throw refusal;
  } catch (err) {
    throw remoteStartError(err, origin);
  }
  b.site = portal.handler;
  b.portalRemote = origin;
  b.log(`  ${'key manager'.padEnd(18)} ${origin} (remote: applications, subscriptions, sign-in; API files of its control plane)`);
  announce(b, origins);
}

export async function startPortal(b: Boot): Promise<void> {
  const consoles = b.scale.parts.consoles;
  if (!consoles.devportal && !consoles.publisher) return;
  // Remote: the process with the operations port serves the consoles (a cluster worker has none).
  if (b.scale.consoleBackend === 'remote') return b.cl?.role === 'worker' ? undefined : startRemote(b);
  const km = b.keyManager;
  if (km === undefined || b.store === undefined) return;
  const { config, loaded } = b;
  const gw = gatewaySettingsFrom(config, loaded.dir, b.ports);
  const throttle = throttleSettingsFrom(config, loaded.dir);
  // The admin console (/admin): this node's key manager, workflows, tenants and policies file; a policy
  // added there is applied to this node's gateway at once (gateway-workers follow the file's change event).
  const admin: AdminParts = {
    manager: km.manager,
    workflows: km.workflows,
    tenants: km.tenants,
    userRules: km.userRules,
    policies: {
      file: throttle.policiesFile,
      options: policyOptionsOf(throttle),
      apply: () => void b.gateway?.throttle.reload(),
    },
  };
  const a = km.addresses();
  const host = b.eph ? '127.0.0.1' : config.server.hostname;
  const origins = {
    http: a.http !== undefined ? km.settings.baseUrl : undefined,
    https: a.https !== undefined ? `https://${host}:${a.https.port}` : undefined,
  };
  // Self-service (docs/self-service.md): the outbox sends through [output_adapter.email] and [apim.notifications].
  const mailer = new Mailer({
    store: b.store.selfService,
    settings: mailSettings(config),
    logger: b.logger,
    ...(b.metrics !== undefined ? { metrics: b.metrics } : {}),
  });
  // The outbox is read once a second only where a mail server is configured: no query otherwise.
  if (mailer.configured('account') || mailer.configured('notification')) mailer.start();
  b.mailer = mailer;
  const settings = selfServiceSettings(config, origins.https ?? origins.http ?? km.settings.baseUrl, km.users.kind === 'database');
  if (settings.emailValidation && !mailer.configured('account'))
    b.logger.log('warn', 'mail_not_configured', {
      message:
        '[multi_tenancy.platform] email_validation_mandatory_for_login is true but no mail server is configured ([output_adapter.email] hostname): the developer portal refuses sign-ups',
    });
  const selfService = localSelfService({ km, store: b.store, mailer, settings, rules: userRules(config), logger: b.logger });
  const portal: Portal = createPortal({
    ...commonOptions(b),
    keys: localKeyManager(km, b.store),
    // A tenant admin's publisher writes its tenant's files within its package's resource_volume.limit (docs/tenants.md).
    catalogue: new Catalogue(gw.apisDir, gw.vars, { apiLimit: (d) => km.tenants.apiLimit(d) }),
    selfService,
    admin,
    tenants: km.tenants,
  });
  const clients = await portal.register(origins);
  km.mount(portal.handler, clients);
  announce(b, origins);
}
