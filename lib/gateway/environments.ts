/**
 * The gateway's URLs as clients are told them: `[[apim.gateway.environment]]` (spec 000, "Gateway
 * environment": name, type, http_endpoint, https_endpoint, ws_endpoint, show_as_token_endpoint_url; wss_endpoint
 * as the reference's own files write it). `npm start`'s summary (lib/node/summary.ts), `throughway apis
 * list` (list.ts) and the key manager's `GET /admin/v1/environments` print them.
 *
 * The reference's files write runtime tokens in these URLs (`http://localhost:${http.nio.port}`): the
 * gateway's ports are put in (`${http.nio.port}` the HTTP listener, `${https.nio.port}` the HTTPS one,
 * `${mgt.transport.https.port}` the management HTTPS port, each with server.offset); other tokens stay as
 * written. With no environment configured there is one, `Default` (hybrid), made of `[server] hostname`
 * and the listeners this node opens: what the summary printed before environments were read.
 */
import type { DeploymentConfig } from '../config/types';
import type { EffectivePorts } from '../config/ports';

export interface GatewayEnvironment {
  readonly name: string;
  readonly type: 'production' | 'sandbox' | 'hybrid';
  readonly description: string;
  /** Origins (with an optional path), no trailing slash; undefined when neither configured nor opened. */
  readonly http: string | undefined;
  readonly https: string | undefined;
  readonly ws: string | undefined;
  readonly wss: string | undefined;
  /** show_as_token_endpoint_url: the gateway's `<https>/token` is the token endpoint shown to clients. */
  readonly showAsTokenEndpoint: boolean;
  /** Written in deployment.toml (false: the one made from the listeners). */
  readonly configured: boolean;
}

/** Runtime tokens of the reference's environment URLs, by the port they stand for. */
const TOKENS: Readonly<Record<string, keyof EffectivePorts>> = {
  'http.nio.port': 'passthruHttp',
  'https.nio.port': 'passthruHttps',
  'mgt.transport.https.port': 'managementHttps',
};

function url(value: string | undefined, ports: EffectivePorts): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return value
    .trim()
    .replace(/\$\{([^}]+)\}/g, (all, name: string) => {
      const port = TOKENS[name];
      return port !== undefined ? String(ports[port]) : all;
    })
    .replace(/\/+$/, '');
}

export function gatewayEnvironments(config: DeploymentConfig, ports: EffectivePorts): readonly GatewayEnvironment[] {
  const written = config.apim.gateway.environment;
  if (written.length > 0) {
    return Object.freeze(
      written.map((e) =>
        Object.freeze({
          name: e.name,
          type: e.type,
          description: e.description,
          http: url(e.http_endpoint, ports),
          https: url(e.https_endpoint, ports),
          ws: url(e.ws_endpoint, ports),
          wss: url(e.wss_endpoint, ports),
          showAsTokenEndpoint: e.show_as_token_endpoint_url,
          configured: true,
        }),
      ),
    );
  }
  const host = config.server.hostname;
  const t = config.transport;
  return Object.freeze([
    Object.freeze({
      name: 'Default',
      type: 'hybrid' as const,
      description: 'the gateway listeners of this node',
      http: t.passthru_http.listener.enable ? `http://${host}:${ports.passthruHttp}` : undefined,
      https: t.passthru_https.listener.enable ? `https://${host}:${ports.passthruHttps}` : undefined,
      ws: t.ws.sender.enable ? `ws://${host}:${ports.ws}` : undefined,
      wss: t.wss.sender.enable ? `wss://${host}:${ports.wss}` : undefined,
      showAsTokenEndpoint: true,
      configured: false,
    }),
  ]);
}

/** The gateway's token endpoint shown to clients (spec 002 part 4: /token on the gateway HTTPS address). */
export function tokenUrl(envs: readonly GatewayEnvironment[]): string | undefined {
  const e = envs.find((x) => x.showAsTokenEndpoint && x.https !== undefined) ?? envs.find((x) => x.https !== undefined);
  return e?.https === undefined ? undefined : `${e.https}/token`;
}
