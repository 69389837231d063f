/** Gateways built in code for the embedding tests: no configuration file, APIs given as objects. */
import { createGateway, type Gateway, type GatewayOptions } from '../../lib/embed';
import { loadConfig } from '../../lib/config/load';
import { memoryLogger } from '../gateway/helpers';

export { echoBackend, closedPort, memoryLogger, HOST, type EchoBackend } from '../gateway/helpers';

/** An API definition object, as a file would say it. */
export function api(
  name: string,
  context: string,
  endpoint: string,
  resources: { path: string; methods: string[] }[] = [{ path: '/*', methods: ['GET', 'POST', 'PUT', 'HEAD'] }],
): Record<string, unknown> {
  return { name, context, version: 'v1', auth: 'none', endpoints: { production: endpoint }, resources };
}

export interface EmbeddedGateway {
  readonly gw: Gateway;
  readonly logger: ReturnType<typeof memoryLogger>;
}

export function embedded(apis: readonly unknown[], options: Partial<GatewayOptions> = {}, toml = ''): EmbeddedGateway {
  const loaded = loadConfig({ text: `[server]\nhostname = "localhost"\n${toml}`, file: '/nonexistent/deployment.toml' });
  if (!loaded.ok) throw new Error(`test configuration invalid: ${JSON.stringify(loaded.diagnostics)}`);
  const logger = memoryLogger();
  const gw = createGateway({ loaded, logger, apis, ...options });
  return { gw, logger };
}

/** The raw field value the backend saw (first match, case-insensitive). */
export function field(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if ((headers[i] as string).toLowerCase() === name.toLowerCase()) return headers[i + 1];
  return undefined;
}
