/**
 * The gateway: the API runtime over the pass-through transport. createGateway() wires the phase chain
 * (phases.ts) in as the transport's router, renders transport faults through the fault table and the
 * custom templates, feeds the access log and the endpoints' suspension state from the transport's
 * events, and hot-deploys the apis/ directory.
 */
import type * as net from 'node:net';
import type { LoadResult } from '../config/load';
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import { transportSettingsFrom } from '../config/transport-settings';
import { createTransport, type ListenOptions, type Transport } from '../transport';
import type { ConnectFn } from '../transport/core';
import type { TransportSettings } from '../transport/settings';
import type { TransportFault } from '../transport/codes';
import type { ExchangeRecord, LocalResponse, RouteDecision, RouteFn, SourceRequest } from '../transport/types';
import { silentLogger, type Logger } from '../observability/log';
import { type ApiVars, defaultPath, validateApi, versionedPath } from './apis';
import { AccessLog } from './access-log';
import { CorsPolicy, corsRequest } from './cors';
import { ApiDirectory, type ApiState, type Candidate, selectApis } from './deploy';
import { type ApiDiagnostic, formatApiDiagnostic } from './diagnostics';
import { EndpointRegistry, type EndpointRuntime } from './endpoints';
import { loadFaultTemplates, type FaultTemplates } from './fault-templates';
import { renderFacts, transportFacts } from './faults';
import { CallContext, runChain, PHASES, type Phase } from './phases';
import { buildTable, GatewayRuntime } from './runtime';
import { gatewaySettingsFrom, type GatewaySettings } from './settings';
import { HeaderRules } from './transport-headers';
import { Mediation, mediationSettingsFrom } from '../mediation';

export interface GatewayOptions {
  /** The result of loadConfig(): configuration, effective ports and the directory of apis/. */
  readonly loaded?: LoadResult;
  /** Or a configuration object (defaults filled, as loadConfig returns it) and the directory it is from. */
  readonly config?: DeploymentConfig;
  readonly dir?: string;
  readonly ports?: EffectivePorts;
  /**
   * API definitions given in code, shaped like the TOML files (name, context, version, endpoints, ...).
   * When given, the apis/ directory is not read.
   */
  readonly apis?: readonly unknown[];
  readonly logger?: Logger;
  /** Transport settings on top of those the configuration gives. */
  readonly transport?: Partial<TransportSettings>;
  /** Hot deploy: watch the apis/ directory (default true when it is read). */
  readonly watch?: boolean;
  /** Where the access log file is resolved (default: the working directory). */
  readonly cwd?: string;
  /** How backend sockets are opened (tests). */
  readonly connect?: ConnectFn;
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
  /** The phase chain as a router: what the transport calls per request head (another transport may too). */
  readonly route: RouteFn;
  /** Listen on the gateway HTTP port ([transport.passthru_http] listener port + offset) unless told otherwise. */
  listen(options?: Partial<ListenOptions>): Promise<net.AddressInfo>;
  handleConnection(socket: net.Socket, secure?: boolean): void;
  /** Re-reads the apis/ directory (or re-validates the APIs given in code) and the fault templates. */
  reload(): ReloadReport;
  /** What is deployed now. */
  deployed(): readonly DeployedApi[];
  /** Every API file or definition and what became of it. */
  states(): readonly ApiState[];
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

export function createGateway(options: GatewayOptions): Gateway {
  const config = options.loaded?.config ?? options.config;
  if (config === undefined) throw new Error('createGateway needs `loaded` (from loadConfig) or `config`');
  const dir = options.loaded?.dir ?? options.dir ?? process.cwd();
  const ports = options.loaded?.ports ?? options.ports;
  const logger = options.logger ?? silentLogger;
  const settings = gatewaySettingsFrom(config, dir, ports, options.cwd);
  // Throws CorsConfigError for allow_credentials with the origin * (spec 000, [apim.cors]).
  const globalCors = new CorsPolicy(settings.cors);
  const headers = new HeaderRules(settings.headerRules);
  const registry = new EndpointRegistry();
  const tracked = new WeakMap<SourceRequest, EndpointRuntime>();
  const directory = options.apis === undefined ? new ApiDirectory(settings.apisDir, settings.vars) : undefined;
  const accessLog = settings.accessLog.enabled ? new AccessLog(settings.accessLog.useLogger ? { logger } : { file: settings.accessLog.file }) : undefined;
  const phases: readonly Phase[] = PHASES;
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
    for (const raw of options.apis ?? []) {
      const r = validateApi(raw, '', vars);
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
    if (directory !== undefined) {
      const read = directory.read();
      if (read.missing) {
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
    directory?.deployed(selection.states);
    // Selection-time diagnostics (duplicates, labels, default version, CORS) are logged when their file
    // changed, so a reload caused by another file does not repeat them.
    const known = new Set(fresh);
    for (const s of selection.states) {
      if (changed !== undefined && !changed.has(s.file)) continue;
      for (const d of s.diagnostics) if (!known.has(d) && d.code !== 'API_KEPT_PREVIOUS') fresh.push(d);
    }
    fresh.push(...templateDiagnostics);
    const table = buildTable(selection.deployables, registry);
    rt = new GatewayRuntime(table, globalCors, headers, templates, tracked, mediation);
    states = selection.states;
    for (const d of fresh) logDiagnostic(logger, d);
    const deployed = describe(states);
    const after = new Set(deployed.map((d) => `${d.file}\u0000${d.path}`));
    for (const d of deployed) if (!before.has(`${d.file}\u0000${d.path}`)) logger.log('info', 'api_deployed', { name: d.name, version: d.version, path: d.path, default: d.defaultPath, state: d.state, file: d.file });
    for (const k of before) if (!after.has(k)) logger.log('info', 'api_undeployed', { file: k.split('\u0000')[0], path: k.split('\u0000')[1] });
    return { deployed, states, diagnostics: fresh };
  };

  const route = (req: SourceRequest): RouteDecision | Promise<RouteDecision> => runChain(new CallContext(req, rt), phases);

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

  const onFault = (f: TransportFault, req: SourceRequest | undefined): void => {
    if (req !== undefined) {
      const ep = tracked.get(req);
      if (ep !== undefined) {
        const ms = ep.failed(f, Date.now());
        if (ms > 0) logger.log('warn', 'endpoint_suspended', { endpoint: ep.def.url, code: f.code, base: f.base, state: f.state, durationMs: ms });
      }
    }
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
  };

  const needExchange = accessLog !== undefined || directory !== undefined || (options.apis?.length ?? 0) > 0;
  const transport = createTransport({
    route,
    settings: { ...transportSettingsFrom(config), ...options.transport },
    logger,
    renderFault,
    events: needExchange ? { onFault, onExchange } : { onFault },
    ...(options.connect !== undefined ? { connect: options.connect } : {}),
  });

  deploy(loadTemplates());
  /** Starts hot deploy (idempotent): at creation, and again on reload for a directory created since. */
  const watch = (): boolean => directory !== undefined && options.watch !== false && directory.watch(() => deploy([]));
  if (directory !== undefined && options.watch !== false && !watch()) logger.log('warn', 'apis_dir_not_watched', { dir: directory.dir, message: 'hot deploy is off: the directory cannot be watched; `reload()` (SIGHUP) re-reads it' });

  return {
    transport,
    mediation,
    settings,
    route,
    listen(opts = {}) {
      const port = opts.port ?? ports?.passthruHttp ?? 8280;
      const host = opts.host ?? config.transport.passthru_http.listener['bind-address'] ?? '0.0.0.0';
      return transport.listen({ port, host, backlog: opts.backlog ?? config.throughway.backlog });
    },
    handleConnection: (socket, secure) => transport.handleConnection(socket, secure),
    reload() {
      const report = deploy(loadTemplates());
      watch();
      return report;
    },
    deployed: () => describe(states),
    states: () => states,
    async close() {
      directory?.unwatch();
      await transport.close();
      await mediation.close();
      await accessLog?.close();
    },
  };
}

export { type ApiDefinition } from './apis';
export type { ApiState, FileStatus } from './deploy';
export type { ApiDiagnostic } from './diagnostics';
