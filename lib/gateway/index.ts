/**
 * The gateway: the API runtime over the pass-through transport. createGateway() wires the phase chain
 * (phases.ts) in as the transport's router, renders transport faults through the fault table and the
 * custom templates, feeds the access log and the endpoints' suspension state from the transport's
 * events, and hot-deploys the apis/ directory. The embedding surface (events, inject, the (req, res)
 * handler, handleUpgrade, custom phases) lives in lib/embed; this file only wires it in.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import type { Duplex } from 'node:stream';
import type * as tls from 'node:tls';
import { loadConfig, type LoadResult } from '../config/load';
import { formatDiagnostic } from '../config/diagnostics';
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import { transportSettingsFrom } from './transport-settings';
import { createTransport, type ListenOptions, type Transport } from '../transport';
import type { ConnectFn } from '../transport/core';
import type { TransportSettings } from '../transport/settings';
import type { TransportFault } from '../transport/codes';
import type { ExchangeRecord, LocalResponse, RouteDecision, RouteFn, SourceRequest, TransportEvents } from '../transport/types';
import { silentLogger, type Logger } from '../log';
import { Analytics } from '../observability/analytics';
import { analyticsSettingsFrom, tracingSettingsFrom } from '../observability/settings';
import { Tracer } from '../observability/tracing';
import { type ApiVars, defaultPath, validateApi, versionedPath } from './apis';
import { AccessLog } from './access-log';
import { CorsPolicy, corsRequest } from './cors';
import { ApiDirectory, ApiTexts, type ApiState, type ApiText, type Candidate, selectApis } from './deploy';
import { type ApiDiagnostic, formatApiDiagnostic } from './diagnostics';
import { EndpointRegistry, type EndpointRuntime } from './endpoints';
import { loadFaultTemplates, type FaultTemplates } from '../faults/templates';
import { fault, gatewayFacts, GatewayOwnCode, renderFacts, transportFacts } from '../faults';
import { CallContext, runChain, runChainObserved, PHASES, type ChainStep } from './phases';
import { GatewayEvents, gatewayFaultEvent, transportFaultEvent, type GatewayEventName, type GatewayListener } from '../embed/events';
import { requestListener } from '../embed/handler';
import { inject, type InjectOptions, type InjectResponse } from '../embed/inject';
import { chainWith, type PhasePlacement } from '../embed/phases';
import { replay } from '../embed/upgrade';
import { buildTable, GatewayRuntime } from './runtime';
import { gatewaySettingsFrom, type GatewaySettings } from './settings';
import { HeaderRules } from './transport-headers';
import type { EventBus } from '../events/bus';
import { Security, securitySettingsFrom, type KeyManagerLink } from '../security';
import { createThrottle, type BlockingCondition, type CounterStore, type Throttle } from '../throttle';
import { throttleSettingsFrom } from '../throttle/settings';
import { handshakeRequest, isWebSocketHandshake } from './websocket';
import { outboundFrom } from '../tls/settings';
import type { Outbound } from '../transport/outbound';
import { Mediation, mediationSettingsFrom } from '../mediation';

export interface GatewayOptions {
  /** The result of loadConfig(): configuration, effective ports and the directory of apis/. */
  readonly loaded?: LoadResult;
  /** Or the path of a deployment.toml to load (createGateway throws GatewayOptionsError when it is invalid). */
  readonly configFile?: string;
  /** Or a configuration object (defaults filled, as loadConfig returns it) and the directory it is from. */
  readonly config?: DeploymentConfig;
  readonly dir?: string;
  readonly ports?: EffectivePorts;
  /**
   * API definitions given in code, shaped like the TOML files (name, context, version, endpoints, ...).
   * When given, the apis/ directory is not read.
   */
  readonly apis?: readonly unknown[];
  /**
   * API definition files given as texts, e.g. pulled from the control plane by a gateway-worker
   * (docs/scale-out.md): parsed and deployed like the files of apis/ (this gateway's runtime tokens,
   * policy names and labels; diagnostics name each entry's `file`). When given, apis/ is not read;
   * `reload({ apiTexts })` replaces them. `origin` says where they come from (the start output).
   */
  readonly apiTexts?: { readonly origin: string; readonly entries: readonly ApiText[] };
  readonly logger?: Logger;
  /** Transport settings on top of those the configuration gives. */
  readonly transport?: Partial<TransportSettings>;
  /** Hot deploy: watch the apis/ directory (default true when it is read). */
  readonly watch?: boolean;
  /** Where the access log file is resolved (default: the working directory). */
  readonly cwd?: string;
  /** How backend sockets are opened (tests). */
  readonly connect?: ConnectFn;
  /**
   * Tracing and analytics (docs/tracing.md, docs/analytics.md); default: made from [apim.open_tracer] and
   * [apim.analytics] when they are on. The gateway flushes and closes them in close().
   */
  readonly tracer?: Tracer;
  readonly analytics?: Analytics;
  /** Also told of every fault and finished exchange (metrics and fault logs: lib/observability). */
  readonly observe?: TransportEvents;
  /**
   * The key manager in this process (lib/security keyManagerLink()): its public keys validate its tokens
   * directly, its snapshot fills the subscription store. Without it only [[apim.jwt.issuer]] tokens are valid.
   */
  readonly keyManager?: KeyManagerLink;
  /** Key manager events: token.revoked, applications, subscriptions (security); blocking.added / blocking.removed (throttling). */
  readonly events?: EventBus;
  /** The clock of token validation (epoch ms; tests). */
  readonly now?: () => number;
  /** Custom phases placed before or after built-in ones (lib/embed/phases.ts, docs/embedding.md). */
  readonly phases?: readonly PhasePlacement[];
  /** Throttling (docs/throttling.md): blocking conditions at start, a clock, a counter store of your own. */
  readonly throttling?: { readonly blocking?: readonly BlockingCondition[]; readonly now?: () => number; readonly counters?: CounterStore };
  /** TLS and proxies toward the backends (default: from the configuration, lib/tls/settings.ts). */
  readonly outbound?: Outbound;
}

export interface DeployedApi {
  readonly name: string;
  readonly version: string;
  readonly context: string;
  /** The path it is invoked at: /<context>/<version>. */
  readonly path: string;
  readonly defaultPath: string | undefined;
  readonly state: string;
  readonly file: string;
}

export interface ReloadReport {
  readonly deployed: readonly DeployedApi[];
  readonly states: readonly ApiState[];
  /** Diagnostics of files that changed in this reload. */
  readonly diagnostics: readonly ApiDiagnostic[];
}

export interface Gateway {
  readonly transport: Transport;
  /** Payload validation, scripts and conversion; its worker pool starts on first use (docs/mediation.md). */
  readonly mediation: Mediation;
  readonly settings: GatewaySettings;
  /** Token validation, token cache, subscriptions (docs/security.md). */
  readonly security: Security;
  /** Throttling: the engine, its counters and the blocking conditions in force. */
  readonly throttle: Throttle;
  /** The phase chain as a router: what the transport calls per request head (another transport may too). */
  readonly route: RouteFn;
  /** Tracing when on (its stats(): spans sent, dropped, queued), else undefined. */
  readonly tracer: Tracer | undefined;
  /** Analytics events when on (its stats(): events sent, dropped, queued), else undefined. */
  readonly analytics: Analytics | undefined;
  /** Listen on the gateway HTTP port ([transport.passthru_http] listener port + offset) unless told otherwise. */
  listen(options?: Partial<ListenOptions>): Promise<net.AddressInfo>;
  /** Listen with TLS (HTTPS 8243, WSS 8099: docs/tls.md); the server can take new certificates. */
  listenTls(options: ListenOptions, tlsOptions: tls.TlsOptions): Promise<tls.Server>;
  handleConnection(socket: net.Socket, secure?: boolean): void;
  /**
   * For a node:http server's 'upgrade' event: the socket goes to the transport with the consumed request
   * head replayed; a WebSocket handshake to a WS API is tunnelled, any other upgrade answered as a plain call.
   */
  handleUpgrade(req: http.IncomingMessage, socket: Duplex, head?: Buffer): void;
  /** A (req, res) listener for node:http / Express / Fastify apps: the slower path (docs/embedding.md). */
  readonly handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  /** Runs one request through the whole chain without a client socket; the backend is real. */
  inject(options: InjectOptions): Promise<InjectResponse>;
  /** 'fault': every fault answered; 'request': every finished exchange. Costs nothing while nobody listens. */
  on<K extends GatewayEventName>(event: K, listener: GatewayListener<K>): this;
  off<K extends GatewayEventName>(event: K, listener: GatewayListener<K>): this;
  /**
   * Re-reads the apis/ directory (or re-validates the APIs given in code) and the fault templates.
   * `{ apis }` replaces the definitions of a gateway created with `apis` (programmatic hot deploy).
   */
  reload(options?: { readonly apis?: readonly unknown[]; readonly apiTexts?: readonly ApiText[] }): ReloadReport;
  /** Where the APIs come from: the apis/ directory, the origin of `apiTexts`, or "code" (`apis`). */
  readonly apiSource: string;
  /** What is deployed now. */
  deployed(): readonly DeployedApi[];
  /** Every API file or definition and what became of it. */
  states(): readonly ApiState[];
  /** The deployed API ("name:version") a request target belongs to, for metrics labels. */
  apiOf(url: string): string | undefined;
  close(): Promise<void>;
}

function describe(states: readonly ApiState[]): DeployedApi[] {
  const out: DeployedApi[] = [];
  for (const s of states) {
    if ((s.status !== 'deployed' && s.status !== 'kept-previous') || s.api === undefined) continue;
    const a = s.api;
    const p = versionedPath(a);
    out.push({ name: a.name, version: a.version, context: a.context, path: p, defaultPath: s.defaultRouting ? defaultPath(a) : undefined, state: a.state, file: s.file });
  }
  return out;
}

function logDiagnostic(logger: Logger, d: ApiDiagnostic): void {
  const level = d.level === 'error' ? 'error' : d.level === 'warning' ? 'warn' : 'info';
  if (logger.enabled(level)) logger.log(level, 'api_definition', { code: d.code, file: d.file, line: d.line, field: d.field, message: formatApiDiagnostic(d) });
}

/** createGateway options that cannot work: a configuration that does not load, apis for a directory gateway. */
export class GatewayOptionsError extends Error {
  override readonly name = 'GatewayOptionsError';
  readonly code = 'GATEWAY_OPTIONS';
}

function loadFile(file: string): LoadResult {
  const loaded = loadConfig({ file });
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').map((d) => formatDiagnostic(d));
    throw new GatewayOptionsError(`${file}: invalid configuration:\n${errors.join('\n')}`);
  }
  return loaded;
}

export function createGateway(options: GatewayOptions): Gateway {
  const loaded = options.loaded ?? (options.configFile !== undefined ? loadFile(options.configFile) : undefined);
  const config = loaded?.config ?? options.config;
  if (config === undefined) throw new GatewayOptionsError('createGateway needs `loaded` (from loadConfig), `configFile` or `config`');
  const dir = loaded?.dir ?? options.dir ?? process.cwd();
  const ports = loaded?.ports ?? options.ports;
  const logger = options.logger ?? silentLogger;
  const settings = gatewaySettingsFrom(config, dir, ports, options.cwd);
  // Throws CorsConfigError for allow_credentials with the origin * (spec 000, [apim.cors]).
  const globalCors = new CorsPolicy(settings.cors);
  const headers = new HeaderRules(settings.headerRules);
  // Paths in [transport.passthru_https] resolve like the store's: against the working directory.
  const registry = new EndpointRegistry(options.outbound ?? outboundFrom(config, options.cwd ?? process.cwd()));
  const tracked = new WeakMap<SourceRequest, EndpointRuntime>();
  const accessLog = settings.accessLog.enabled ? new AccessLog(settings.accessLog.useLogger ? { logger } : { file: settings.accessLog.file }) : undefined;
  const phases: readonly ChainStep[] = options.phases === undefined || options.phases.length === 0 ? PHASES : chainWith(PHASES, options.phases, logger);
  // Throws ThrottleConfigError for an invalid policies file: a gateway never runs with limits it cannot read.
  const throttle = createThrottle({ settings: throttleSettingsFrom(config, dir), logger, ...options.throttling });
  const unsubscribe: (() => void)[] = [];
  if (options.events !== undefined) {
    unsubscribe.push(options.events.on('blocking.added', (e) => throttle.blocking.add(e.payload.condition)));
    unsubscribe.push(options.events.on('blocking.removed', (e) => void throttle.blocking.remove(e.payload.condition.id)));
  }
  if (options.apis !== undefined && options.apiTexts !== undefined) throw new GatewayOptionsError('createGateway takes `apis` or `apiTexts`, not both');
  const texts = options.apiTexts !== undefined ? new ApiTexts(options.apiTexts.origin, options.apiTexts.entries, settings.vars, throttle.names()) : undefined;
  const directory = options.apis === undefined && texts === undefined ? new ApiDirectory(settings.apisDir, settings.vars, throttle.names()) : undefined;
  /** The files' source (directory or texts); undefined for definitions given in code. */
  const files = directory ?? texts;
  let policiesSeen = throttle.generation;
  let codeApis = options.apis;
  const tracing = tracingSettingsFrom(config);
  const tracer = options.tracer ?? (tracing.logTracer || tracing.remote ? new Tracer(tracing, { logger }) : undefined);
  const analyticsSettings = analyticsSettingsFrom(config);
  const analytics = options.analytics ?? (analyticsSettings.enabled ? new Analytics(analyticsSettings, { logger }) : undefined);
  /** The call behind each exchange, while tracing or analytics needs it at the exchange's end. */
  const calls = tracer !== undefined || analytics !== undefined ? new WeakMap<SourceRequest, CallContext>() : undefined;
  const security = new Security({
    settings: securitySettingsFrom(config),
    logger,
    ...(options.keyManager !== undefined ? { keyManager: options.keyManager } : {}),
    ...(options.events !== undefined ? { events: options.events } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  // Throws FormatConfigError for an unknown builder/formatter class (naming the alternatives). The worker
  // pool inside is created on the first call that needs it.
  const mediation = new Mediation(mediationSettingsFrom(config), logger);

  let templates: FaultTemplates | undefined;
  let states: readonly ApiState[] = [];
  let rt: GatewayRuntime;

  const loadTemplates = (): ApiDiagnostic[] => {
    const r = loadFaultTemplates(settings.faultTemplatesFile);
    // A broken templates file keeps the previous templates rather than dropping to none.
    if (r.templates !== undefined || !r.diagnostics.some((d) => d.level === 'error' && d.code === 'API_SYNTAX')) templates = r.templates;
    return [...r.diagnostics];
  };

  const candidatesFromCode = (vars: ApiVars): { candidates: Candidate[]; fresh: ApiDiagnostic[] } => {
    const candidates: Candidate[] = [];
    const fresh: ApiDiagnostic[] = [];
    for (const raw of codeApis ?? []) {
      const r = validateApi(raw, '', vars, undefined, throttle.names());
      candidates.push({ file: '', api: r.api, diagnostics: r.diagnostics, keptPrevious: false });
      fresh.push(...r.diagnostics);
    }
    return { candidates, fresh };
  };

  const deploy = (templateDiagnostics: ApiDiagnostic[]): ReloadReport => {
    const before = new Set(describe(states).map((d) => `${d.file}\u0000${d.path}`));
    let candidates: readonly Candidate[];
    let fresh: ApiDiagnostic[];
    let changed: ReadonlySet<string> | undefined;
    if (files !== undefined) {
      const read = files.read();
      if (read.missing && directory !== undefined) {
        // A watcher on a removed directory sees nothing of the one created in its place.
        directory.unwatch();
        logger.log('warn', 'apis_dir_missing', { dir: directory.dir, message: 'no API definitions directory: no API is deployed; create it, then reload (SIGHUP)' });
      }
      candidates = read.candidates;
      fresh = [...read.fresh];
      changed = new Set(read.changedFiles);
    } else {
      ({ candidates, fresh } = candidatesFromCode(settings.vars));
    }
    const selection = selectApis(candidates, settings.gatewayLabels, globalCors);
    files?.deployed(selection.states);
    // Selection-time diagnostics (duplicates, labels, default version, CORS) are logged when their file
    // changed, so a reload caused by another file does not repeat them.
    const known = new Set(fresh);
    for (const s of selection.states) {
      if (changed !== undefined && !changed.has(s.file)) continue;
      for (const d of s.diagnostics) if (!known.has(d) && d.code !== 'API_KEPT_PREVIOUS') fresh.push(d);
    }
    fresh.push(...templateDiagnostics);
    const table = buildTable(selection.deployables, registry);
    rt = new GatewayRuntime(table, globalCors, headers, templates, tracked, security, throttle, mediation);
    states = selection.states;
    for (const d of fresh) logDiagnostic(logger, d);
    const deployed = describe(states);
    const after = new Set(deployed.map((d) => `${d.file}\u0000${d.path}`));
    for (const d of deployed) if (!before.has(`${d.file}\u0000${d.path}`)) logger.log('info', 'api_deployed', { name: d.name, version: d.version, path: d.path, default: d.defaultPath, state: d.state, file: d.file });
    for (const k of before) if (!after.has(k)) logger.log('info', 'api_undeployed', { file: k.split('\u0000')[0], path: k.split('\u0000')[1] });
    return { deployed, states, diagnostics: fresh };
  };

  // An Upgrade request (rare) may carry its token as access_token (websocket.ts); others go straight in.
  const callOf = (req: SourceRequest): CallContext => new CallContext(req.upgrade === true && isWebSocketHandshake(req) ? handshakeRequest(req) : req, rt);
  // Three routers, chosen once: with tracing and analytics off the plain chain runs untouched.
  const route =
    calls === undefined
      ? (req: SourceRequest): RouteDecision | Promise<RouteDecision> => runChain(callOf(req), phases)
      : tracer === undefined
        ? (req: SourceRequest): RouteDecision | Promise<RouteDecision> => {
            const ctx = callOf(req);
            calls.set(req, ctx);
            return runChain(ctx, phases);
          }
        : (req: SourceRequest): RouteDecision | Promise<RouteDecision> => {
            const ctx = callOf(req);
            calls.set(req, ctx);
            tracer.start(ctx);
            return runChainObserved(ctx, phases, tracer);
          };

  /** Transport faults through the same table, templates and CORS fields as the gateway's own. */
  const renderFault = (f: TransportFault, req: SourceRequest | undefined): LocalResponse => {
    const current = rt;
    let extra: readonly string[] = [];
    if (req !== undefined) {
      const q = req.url.indexOf('?');
      const entry = current.table.lookup(q < 0 ? req.url : req.url.slice(0, q));
      const cors = (entry?.api.cors ?? current.cors).responseFields(corsRequest(req).origin);
      const echoed = current.headers.echoed(req.method, req.headers);
      extra = echoed.length === 0 ? cors : [...cors, ...echoed];
    }
    return renderFacts(transportFacts(f), extra, current.templates, current.headers.dropFromResponseSet);
  };

  const observe = options.observe;
  const onFault = (f: TransportFault, req: SourceRequest | undefined): void => {
    observe?.onFault?.(f, req);
    if (req !== undefined) {
      const ep = tracked.get(req);
      if (ep !== undefined) {
        const ms = ep.failed(f, Date.now());
        if (ms > 0) logger.log('warn', 'endpoint_suspended', { endpoint: ep.def.url, code: f.code, base: f.base, state: f.state, durationMs: ms });
      }
    }
    if (events.has('fault')) events.emit('fault', transportFaultEvent(f, req));
  };

  const onExchange = (r: ExchangeRecord): void => {
    if (registry.suspendingByKey.size > 0 && r.target !== undefined && r.fault === undefined && r.faultCode === undefined) {
      const list = registry.suspendingByKey.get(r.target);
      if (list !== undefined) {
        const now = Date.now();
        for (const ep of list) ep.succeeded(now);
      }
    }
    accessLog?.record(r);
    if (calls !== undefined) {
      const ctx = r.request !== undefined ? calls.get(r.request) : undefined;
      if (ctx !== undefined) {
        calls.delete(r.request as SourceRequest);
        tracer?.finish(ctx, r);
      }
      analytics?.record(ctx, r);
    }
    observe?.onExchange?.(r);
    if (events.has('request')) events.emit('request', r);
    // Transport faults were reported by onFault when they happened; a phase's fault shows here.
    if (r.faultCode !== undefined && r.fault === undefined && events.has('fault')) events.emit('fault', gatewayFaultEvent(r));
  };

  // Endpoint suspension learns of successes from exchange records: needed whenever APIs can be deployed.
  const needExchange = accessLog !== undefined || calls !== undefined || files !== undefined || options.apis !== undefined || observe?.onExchange !== undefined;
  const transportEvents: { onFault: typeof onFault; onExchange?: typeof onExchange } = needExchange ? { onFault, onExchange } : { onFault };
  // The transport reads events.onExchange per exchange, so a gateway that needed no records starts them
  // with its first listener (their timings then have the sweep's precision: the transport decides at
  // creation whether to read the clock per exchange).
  const events = new GatewayEvents(logger, () => {
    transportEvents.onExchange ??= onExchange;
  });
  const transport = createTransport({
    route,
    settings: { ...transportSettingsFrom(config), ...options.transport },
    logger,
    renderFault,
    events: transportEvents,
    ...(options.connect !== undefined ? { connect: options.connect } : {}),
  });

  deploy(loadTemplates());
  /** Starts hot deploy (idempotent): at creation, and again on reload for a directory created since. */
  const watch = (): boolean => directory !== undefined && options.watch !== false && directory.watch(() => deploy([]));
  if (directory !== undefined && options.watch !== false && !watch()) logger.log('warn', 'apis_dir_not_watched', { dir: directory.dir, message: 'hot deploy is off: the directory cannot be watched; `reload()` (SIGHUP) re-reads it' });

  /** A gateway fault answered outside the transport (embedding paths), rendered like all others. */
  const ownFault = (code: (typeof GatewayOwnCode)[keyof typeof GatewayOwnCode], req: http.IncomingMessage): LocalResponse => {
    const current = rt;
    const r = renderFacts(gatewayFacts(fault(code)), [], current.templates, current.headers.dropFromResponseSet);
    if (events.has('fault')) events.emit('fault', { code: r.faultCode ?? code, status: r.status, source: 'gateway', method: req.method, url: req.url, remoteAddress: req.socket?.remoteAddress, transportFault: undefined });
    return r;
  };

  const serve = (socket: net.Socket, secure: boolean): void => transport.handleConnection(socket, secure);
  const handler = requestListener(serve, (res, req, code) => {
    const f = ownFault(code, req);
    res.writeHead(f.status, f.headers as unknown as http.OutgoingHttpHeaders);
    res.end(f.body);
  });

  const gateway: Gateway = {
    transport,
    mediation,
    settings,
    security,
    throttle,
    route,
    tracer,
    analytics,
    apiSource: texts?.origin ?? directory?.dir ?? 'code',
    listen(opts = {}) {
      const port = opts.port ?? ports?.passthruHttp ?? 8280;
      const host = opts.host ?? config.transport.passthru_http.listener['bind-address'] ?? '0.0.0.0';
      return transport.listen({ port, host, backlog: opts.backlog ?? config.throughway.backlog });
    },
    listenTls: (opts, tlsOptions) => transport.listenTls({ ...opts, backlog: opts.backlog ?? config.throughway.backlog }, tlsOptions),
    handleConnection: (socket, secure) => transport.handleConnection(socket, secure),
    handleUpgrade(req, socket, head) {
      // The transport tunnels upgrades (Transport.tunnelsUpgrades): it reads the replayed head as if it had
      // accepted the socket, so a handshake to a WS API becomes a tunnel and any other upgrade a plain call.
      const secure = (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
      replay(req, socket, head);
      transport.handleConnection(socket as net.Socket, secure);
    },
    handler,
    inject: (o) => inject(serve, o),
    on(event, listener) {
      events.on(event, listener);
      return gateway;
    },
    off(event, listener) {
      events.off(event, listener);
      return gateway;
    },
    reload(o) {
      if (o?.apis !== undefined) {
        if (files !== undefined) throw new GatewayOptionsError(`reload({ apis }): this gateway reads its APIs from ${directory !== undefined ? 'the apis/ directory' : 'API texts (reload({ apiTexts }))'}; create it with \`apis\` to deploy definitions in code`);
        codeApis = o.apis;
      }
      if (o?.apiTexts !== undefined) {
        if (texts === undefined) throw new GatewayOptionsError('reload({ apiTexts }): this gateway was not created with `apiTexts`');
        texts.set(o.apiTexts);
      }
      // Policies re-read since the last deploy (SIGHUP): every API file is validated against the new names.
      if (throttle.generation !== policiesSeen) {
        policiesSeen = throttle.generation;
        files?.revalidate();
      }
      const report = deploy(loadTemplates());
      watch();
      return report;
    },
    deployed: () => describe(states),
    states: () => states,
    apiOf(url) {
      const q = url.indexOf('?');
      return rt.table.lookup(q < 0 ? url : url.slice(0, q))?.api.id;
    },
    async close() {
      directory?.unwatch();
      security.close();
      for (const u of unsubscribe) u();
      await transport.close();
      await throttle.close();
      await mediation.close();
      await accessLog?.close();
      // After the transport: every in-flight call's span and event is recorded before the last flush.
      await Promise.all([tracer?.close(), analytics?.close()]);
    },
  };
  return gateway;
}

export { type ApiDefinition } from './apis';
export type { GatewayEventMap, GatewayEventName, GatewayFaultEvent, GatewayListener } from '../embed/events';
export type { InjectOptions, InjectResponse } from '../embed/inject';
export type { CustomPhase, CustomFault, PhasePlacement } from '../embed/phases';
export type { ApiState, ApiText, FileStatus } from './deploy';
export type { ApiDiagnostic } from './diagnostics';
