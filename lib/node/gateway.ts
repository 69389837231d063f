/**
 * The gateway part of a node: the pass-through transport with the API router on the gateway HTTP port
 * (spec 002 part 4: 8280 + server.offset), then, with TLS (docs/tls.md), the management HTTPS port (9443),
 * the gateway HTTPS listener (8243) and, when enabled, WS (9099) and WSS (8099), from the
 * [transport.passthru_https] listener stores or the sample key pair.
 */
import * as https from 'node:https';
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import { createGateway, type Gateway } from '../embed';
import type { TokenEndpoints } from '../gateway';
import { keyManagerLink, type KeyManagerLink } from '../security';
import { gatewayObserver } from '../observability/observe';
import { listenerTlsSettings, reloadCertificates, serverOptions, watchCertificates, type ListenerTlsSettings } from '../tls/settings';
import { ensureSampleKeystore } from '../tls/sample';
import { SplitCounterStore } from '../scale/split-counters';
import { MemoryCounterStore } from '../throttle/counters';
import { DecisionCounterStore, redacted } from '../throttle/decisions';
import { observeGateway, opsRequestHandler } from './operations';
import type { Boot } from './boot';
import { serverConnections, type ListenerEntry } from './status';
import { createManagementServer } from '../keymanager/listener';
import { loadPlugins, type Plugins, type PluginSettings } from './plugins';
import type { DeploymentConfig } from '../config/types';
import { http2Handover, http2Settings, type Http2Handover } from '../http2';
import { GrpcSessions } from '../grpc';

/** The listeners' TLS: the [transport.passthru_https] listener stores; without a key store, the sample key pair (made once). */
export interface ListenerTls {
  readonly settings: ListenerTlsSettings;
  readonly sampleFile: string | undefined;
  readonly options: tls.TlsOptions;
}

export function listenerTls(b: Boot): ListenerTls {
  const settings = listenerTlsSettings(b.config, b.cwd);
  let sampleFile: string | undefined;
  if (settings.keyStore === undefined && settings.profileFile === undefined) {
    const sample = ensureSampleKeystore(b.cwd, b.config.server.hostname);
    sampleFile = sample.file;
    if (sample.created) b.log(`  generated the sample key pair ${sample.file} (self-signed; configure listener.key_store for real use)`);
  }
  return { settings, sampleFile, options: serverOptions(settings, sampleFile) };
}

/**
 * The key manager's management HTTPS port shares the listeners' key pair, without client certificates.
 * A console node with a remote key manager serves its operations routes and consoles there too
 * (docs/portal.md, "Server roles"); its certificates are read at start only.
 */
export async function startManagementHttps(b: Boot, t: ListenerTls): Promise<void> {
  const kmTlsOptions = { ...t.options, requestCert: false, rejectUnauthorized: false };
  if (b.keyManager === undefined) {
    if (b.scale.consoleBackend !== 'remote' || b.cl?.role === 'worker') return;
    // The management port's limits (lib/keymanager/listener.ts).
    const made = createManagementServer(b.config, opsRequestHandler(b), b.logger, kmTlsOptions);
    const srv = made.server as https.Server;
    b.consoleHttps = srv;
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(b.eph ? 0 : b.ports.managementHttps, b.eph ? '127.0.0.1' : undefined, made.limits.backlog, () => resolve());
    });
    const at = srv.address() as net.AddressInfo;
    b.listeners.push({
      name: 'management HTTPS',
      address: at.address,
      port: at.port,
      protocol: 'https',
      connections: serverConnections(srv),
    });
    b.log(`  ${'management HTTPS'.padEnd(18)} port ${at.port} (the consoles)`);
    return;
  }
  const kmTls = b.eph ? await b.keyManager.listenHttps(kmTlsOptions, 0, '127.0.0.1') : await b.keyManager.listenHttps(kmTlsOptions);
  const kmAt = kmTls.address() as net.AddressInfo;
  b.listeners.push({
    name: 'management HTTPS',
    address: kmAt.address,
    port: kmAt.port,
    protocol: 'https',
    connections: serverConnections(kmTls),
  });
  b.log(`  ${'management HTTPS'.padEnd(18)} port ${(kmTls.address() as { port: number }).port}`);
}

/**
 * The gateway's HTTP/2 handover ([throughway.http2], docs/http2.md), one per gateway for all its listeners;
 * undefined when neither ALPN h2 nor h2c is on.
 */
const handovers = new WeakMap<Gateway, Http2Handover>();
function http2Of(b: Boot, gw: Gateway): Http2Handover | undefined {
  const s = http2Settings(b.config);
  if (!s.enabled && !s.h2c) return undefined;
  let h = handovers.get(gw);
  if (h === undefined) {
    // gRPC calls are relayed to their backends over HTTP/2 sessions of this gateway (docs/grpc.md).
    // (the handover closes them when the gateway's transport closes its listeners).
    h = http2Handover((socket, secure, version) => gw.handleConnection(socket, secure, version), s, b.logger, {
      gateway: gw.grpc,
      sessions: new GrpcSessions(),
      logger: b.logger,
    });
    handovers.set(gw, h);
  }
  return h;
}

/** The gateway on its HTTP port, with the blocking conditions, counters and APIs of this role. */
export async function startGateway(b: Boot): Promise<void> {
  const config = b.config;
  if (!b.scale.parts.gateway || !config.transport.passthru_http.listener.enable) return;
  // Blocking conditions in force at start, then kept current by the key manager's events (900805).
  const link: KeyManagerLink = b.keyManager !== undefined ? keyManagerLink(b.keyManager) : (b.remoteLink as KeyManagerLink);
  const blocking = b.store !== undefined ? await b.store.listBlockingConditions() : [...(b.initialBlocking?.values() ?? [])];
  // Cluster workers without a shared counter store each admit 1/N of every limit (docs/scale-out.md).
  const cl = b.cl;
  const split = cl !== undefined && cl.workers > 1 && config.throughway.throttling.counter_store === 'memory';
  const counters = split
    ? { counters: new SplitCounterStore(new MemoryCounterStore(config.throughway.throttling.max_counters, 10_000), cl.workers) }
    : {};
  const follower = b.follower;
  const pulled = follower?.policiesText();
  const fromControlPlane =
    follower !== undefined ? { apiTexts: { origin: `the control plane ${follower.origin}`, entries: follower.entries() } } : {};
  // No plugin configured: no phases option, so the chain stays PHASES (nothing new per request).
  const plugins = loadPlugins(pluginSettingsOf(config, b.loaded.dir), b.logger);
  b.plugins = plugins;
  const gw = createGateway({
    loaded: b.loaded,
    ...(plugins !== undefined ? { phases: plugins.placements, plugins: plugins.catalogue } : {}),
    logger: b.logger,
    cwd: b.cwd,
    keyManager: link,
    ...(b.keyManager !== undefined ? { tenants: b.keyManager.tenants } : b.remoteTenants !== undefined ? { tenants: b.remoteTenants } : {}),
    tokenEndpoints: tokenEndpointsOf(b),
    events: b.events,
    ...fromControlPlane,
    throttling: { blocking, ...counters, ...(pulled !== undefined ? { policies: pulled } : {}) },
    observe: gatewayObserver({ logger: b.logger, faults: b.faults, ...(b.metrics !== undefined ? { metrics: b.metrics } : {}) }),
  });
  b.gateway = gw;
  follower?.attach(gw);
  b.stopCollecting();
  observeGateway(b, gw);
  const h2c = config.throughway.http2.h2c ? http2Of(b, gw) : undefined;
  const a = await gw.listen({ ...(b.eph ? { port: 0, host: '127.0.0.1' } : {}), ...(h2c !== undefined ? { handover: h2c } : {}) });
  b.listening.gateway = a.port;
  b.listeners.push(gatewayListener(gw, 'gateway HTTP', a.address, a.port, h2c !== undefined ? 'http, h2c' : 'http'));
  b.log(`  ${'gateway HTTP'.padEnd(18)} port ${a.port}${h2c !== undefined ? ' (and h2c)' : ''}`);
  if (plugins !== undefined) b.log(`  ${'plugins'.padEnd(18)} ${describePlugins(plugins)}`);
  describeGateway(b, gw);
}

/**
 * The gateway's /token and /revoke (spec 002 part 4; lib/gateway/token-route.ts): the key manager of this
 * process, else the control plane's ([apim.key_manager] service_url, or a cluster primary's management port).
 */
export function tokenEndpointsOf(b: Boot): TokenEndpoints {
  const km = b.keyManager;
  if (km !== undefined) return { kind: 'in-process', call: (c) => km.oauthCall(c) };
  return { kind: 'remote', url: b.scale.controlPlane };
}

/** Start-up lines: where throttle decisions, traces and analytics events go. */
function describeGateway(b: Boot, gw: Gateway): void {
  const ts = gw.throttle.settings;
  if (gw.throttle.counters instanceof DecisionCounterStore && ts.decisionUrl !== undefined)
    b.log(
      `  ${'throttle decisions'.padEnd(18)} ${redacted(ts.decisionUrl)}: ${ts.dataPublishing ? `data to ${ts.channels.data} every ${ts.syncInterval} ms` : 'no data published'}, ${ts.decisionConnection ? `decisions from ${ts.channels.decisions}` : 'no decisions received'}`,
    );
  const tr = gw.tracer?.settings;
  if (tr !== undefined)
    b.log(
      `  ${'tracing'.padEnd(18)} ${[tr.logTracer ? 'log' : '', tr.remote ? `Zipkin http://${tr.host}:${tr.port}/api/v2/spans` : '', tr.otlp !== undefined ? `OTLP ${tr.otlp.url} (${tr.otlp.encoding})` : ''].filter((x) => x !== '').join(', ')}`,
    );
  if (gw.analytics !== undefined) b.log(`  ${'analytics'.padEnd(18)} ${gw.analytics.describe()}`);
}

/** A gateway listener in the runtime view: its open connections are the transport's client sockets on its port. */
function gatewayListener(gw: Gateway, name: string, address: string, port: number, protocol: string): ListenerEntry {
  return { name, address, port, protocol, connections: () => gw.transport.sourcesByPort().get(port) ?? 0 };
}

/** The gateway's HTTPS, WS and WSS listeners; their certificates are watched and read again on SIGHUP. */
export async function startGatewayTls(b: Boot, gateway: Gateway, t: ListenerTls): Promise<void> {
  const { config, ports, eph } = b;
  const tlsServers: tls.Server[] = [];
  const bind = eph
    ? '127.0.0.1'
    : (config.transport.passthru_https.listener.parameters['bind-address'] ??
      config.transport.passthru_http.listener['bind-address'] ??
      '0.0.0.0');
  // ALPN h2 on both TLS listeners (a WebSocket client asks for http/1.1 and gets it).
  const h2 = config.throughway.http2.enabled ? http2Of(b, gateway) : undefined;
  const handover = h2 !== undefined ? { handover: h2 } : {};
  if (config.transport.passthru_https.listener.enable) {
    const s = await gateway.listenTls({ port: eph ? 0 : ports.passthruHttps, host: bind, ...handover }, t.options);
    tlsServers.push(s);
    const at = s.address() as net.AddressInfo;
    // TLS sockets are served as accepted (not adopted): the server counts them.
    b.listeners.push({
      name: 'gateway HTTPS',
      address: at.address,
      port: at.port,
      protocol: h2 !== undefined ? 'https (h2, http/1.1)' : 'https',
      connections: serverConnections(s),
    });
    b.log(
      `  ${'gateway HTTPS'.padEnd(18)} port ${(s.address() as { port: number }).port}${t.settings.verifyClient === 'require' ? ' (mutual TLS)' : ''}${h2 !== undefined ? ' (h2, http/1.1)' : ''}`,
    );
  }
  if (config.transport.ws.sender.enable) {
    const w = await gateway.listen(eph ? { port: 0, host: bind } : { port: ports.ws });
    b.listeners.push(gatewayListener(gateway, 'gateway WS', w.address, w.port, 'ws'));
    b.log(`  ${'gateway WS'.padEnd(18)} port ${w.port}`);
  }
  if (config.transport.wss.sender.enable) {
    const w = await gateway.listenTls({ port: eph ? 0 : ports.wss, host: bind, ...handover }, t.options);
    tlsServers.push(w);
    const at = w.address() as net.AddressInfo;
    b.listeners.push({ name: 'gateway WSS', address: at.address, port: at.port, protocol: 'wss', connections: serverConnections(w) });
    b.log(`  ${'gateway WSS'.padEnd(18)} port ${(w.address() as { port: number }).port}`);
  }
  b.stopWatching = watchCertificates(tlsServers, t.settings, t.sampleFile, b.logger);
  b.reloadTls = () => reloadCertificates(tlsServers, t.settings, t.sampleFile, b.logger);
}

/** [throughway] plugins, api_plugins and plugin.<name>, resolved from the configuration's directory. */
export function pluginSettingsOf(config: DeploymentConfig, dir: string): PluginSettings {
  const t = config.throughway;
  return { plugins: t.plugins, apiPlugins: t.api_plugins, settings: t.plugin, dir };
}

/** The start-up and reload line: the plugins run on every call, and those API files may attach. */
export function describePlugins(p: Plugins): string {
  const parts = [p.names.length > 0 ? p.names.join(', ') : 'none on every call'];
  if (p.attachable.length > 0) parts.push(`attachable in API files: ${p.attachable.join(', ')}`);
  return parts.join('; ');
}
