/**
 * The loaded configuration, read for the gateway: which deployment.toml keys feed the gateway runtime.
 * Like the transport, the gateway never reads TOML or the environment; this is the one mapping.
 */
import * as path from 'node:path';
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';
import type { CorsSettings } from './cors';
import type { HeaderRuleSettings } from './transport-headers';
import { MANAGEMENT_PORTS_VAR, type ApiVars } from './apis';

export interface AccessLogSettings {
  /** [http_access_log] enabled (the spec shows no default; off unless written). */
  readonly enabled: boolean;
  /** [http_access_log] useLogger: lines go to the server log instead of the file. */
  readonly useLogger: boolean;
  /** [throughway] access_log_file, resolved against the working directory. */
  readonly file: string;
}

export interface GatewaySettings {
  readonly cors: CorsSettings;
  readonly headerRules: HeaderRuleSettings;
  /** [apim.sync_runtime_artifacts.gateway] gateway_labels. */
  readonly gatewayLabels: readonly string[];
  /** [throughway] apis_dir, resolved against the configuration's directory. */
  readonly apisDir: string;
  /** [throughway] fault_templates_file, resolved against the configuration's directory. */
  readonly faultTemplatesFile: string;
  readonly accessLog: AccessLogSettings;
  /** Runtime tokens of API endpoint URLs. */
  readonly vars: ApiVars;
  /**
   * Where API [mediation] scripts may be (docs/mediation.md): the configuration's directory, then
   * [throughway.mediation] script_dirs resolved against it.
   */
  readonly scriptDirs: readonly string[];
}

/**
 * `dir`: the configuration file's directory (LoadResult.dir); `cwd`: where the access log goes (the
 * reference writes it under the server's home); `ports`: for the ${demo_port} and ${http_port} tokens.
 */
export function gatewaySettingsFrom(
  c: DeploymentConfig,
  dir: string,
  ports: EffectivePorts | undefined,
  cwd: string = process.cwd(),
): GatewaySettings {
  const cors = c.apim.cors;
  const th = c.apim.transport_headers;
  const oauth = c.apim.oauth_config;
  const vars: Record<string, string> = { hostname: c.server.hostname };
  if (ports !== undefined) {
    vars.demo_port = String(ports.demo);
    vars.http_port = String(ports.passthruHttp);
    vars[MANAGEMENT_PORTS_VAR] = `${ports.managementHttps},${ports.managementHttp}`;
  }
  return {
    cors: {
      enable: cors.enable,
      allowOrigins: cors.allow_origins,
      allowMethods: cors.allow_methods,
      allowHeaders: cors.allow_headers,
      allowCredentials: cors.allow_credentials,
    },
    headerRules: {
      enabled: th.enabled,
      removeRequestHeaders: th.removeRequestHeaders,
      preserveRequestHeaders: th.preserveRequestHeaders,
      excludeRequestHeaders: th.excludeRequestHeaders ?? [],
      excludeResponseHeaders: th.excludeResponseHeaders ?? [],
      outboundAuthHeader: oauth.enable_outbound_auth_header,
      authHeader: oauth.auth_header,
    },
    gatewayLabels: c.apim.sync_runtime_artifacts.gateway.gateway_labels,
    apisDir: path.resolve(dir, c.throughway.apis_dir),
    faultTemplatesFile: path.resolve(dir, c.throughway.fault_templates_file),
    accessLog: {
      enabled: c.http_access_log.enabled === true,
      useLogger: c.http_access_log.useLogger,
      file: path.resolve(cwd, c.throughway.access_log_file),
    },
    vars: Object.freeze(vars),
    scriptDirs: Object.freeze([path.resolve(dir), ...c.throughway.mediation.script_dirs.map((d) => path.resolve(dir, d))]),
  };
}
