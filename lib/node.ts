/**
 * The boot entry point of a throughway node: `throughway start` loads deployment.toml and hands the
 * frozen result here. This is where the node for `server.server_role` (spec 000, part 1.1) is
 * assembled: listeners on the effective ports, the gateway phases, the key manager.
 *
 * For now it checks the configuration, reports the role and the effective ports, and returns a handle
 * whose close() has nothing to release. The transport replaces this body with the real start-up; the
 * signature stays: one LoadResult in, one closable node out.
 */
import type { LoadResult } from './config/load';
import { LISTENING_PORTS, portOpened } from './config/ports';

export interface RunningNode {
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where start-up lines go (default: process.stdout). */
  readonly log?: (line: string) => void;
}

export async function startNode(loaded: LoadResult, options: StartOptions = {}): Promise<RunningNode> {
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.level === 'error').length;
    throw new Error(`configuration has ${errors} error(s); run \`throughway config check\``);
  }
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  log(`throughway node: role ${loaded.config.server.server_role}, host ${loaded.config.server.hostname}, offset ${loaded.ports.offset}`);
  for (const spec of LISTENING_PORTS) {
    if (portOpened(loaded.config, spec)) log(`  ${spec.title.padEnd(18)} port ${loaded.ports[spec.name]}`);
  }
  return { close: async () => undefined };
}
