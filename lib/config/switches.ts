/**
 * Process switches that are environment variables, not deployment.toml keys, read here so that no module
 * below the configuration reads process.env (docs/configuration.md):
 *  - THROUGHWAY_DIRECT_WRITES=0: the transport writes through the socket's stream instead of the direct
 *    write binding (docs/transport.md, "Behaviour"), for comparing the two;
 *  - NODE_PENDING_DEPRECATION=1: Node prints DEP0111 for process.binding, which the direct writes use;
 *    they are off so that the user's output stays clean (as with --pending-deprecation).
 */
export interface ProcessSwitches {
  readonly directWrites: boolean;
}

export function processSwitches(env: NodeJS.ProcessEnv = process.env): ProcessSwitches {
  return { directWrites: env.THROUGHWAY_DIRECT_WRITES !== '0' && env.NODE_PENDING_DEPRECATION !== '1' };
}

/**
 * The process's environment, for the readers of `$env{NAME}` outside deployment.toml (API files'
 * endpoint credentials) and the CLI's face: read here, the one module that reads process.env.
 */
export function environment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
