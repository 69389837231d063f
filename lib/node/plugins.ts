/**
 * Policy plugins of `throughway start` (docs/plugins.md): `[throughway] plugins` names modules, each a path
 * (`./` or `../`, from the configuration's directory) or a package (resolved from that directory's
 * node_modules). A module exports `phases` in the embedding API's placement type (lib/embed/phases.ts),
 * either as an array or as a function of the plugin's settings (`[throughway.plugin.<name>]`). Loaded once
 * at start; a module that cannot be loaded or exports no valid phases stops the start with PLUGIN_LOAD,
 * naming it. With no plugin configured nothing here runs and the chain stays PHASES (docs/plugins.md).
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type { PhasePlacement } from '../embed/phases';
import { PHASES, type CallContext, type Outcome } from '../gateway/phases';

/** A plugin that does not load, or whose exports are not phases; names the plugin as configured. */
export class PluginLoadError extends Error {
  override readonly name = 'PluginLoadError';
  readonly code = 'PLUGIN_LOAD';
  constructor(
    readonly plugin: string,
    reason: string,
  ) {
    super(`plugin "${plugin}" did not load: ${reason}`);
  }
}

/** The loaded plugins: their phases in configured order, and the failures counted per plugin. */
export interface Plugins {
  readonly names: readonly string[];
  readonly placements: readonly PhasePlacement[];
  /** Calls a plugin's phase threw or rejected on (each answered with fault 103142), by plugin name. */
  readonly failures: ReadonlyMap<string, number>;
}

/** The name a plugin goes by: its settings table and logs. A path's file name without extension, or the package name. */
export function pluginName(spec: string): string {
  if (spec.startsWith('./') || spec.startsWith('../') || path.isAbsolute(spec)) return path.basename(spec).replace(/\.(c|m)?js$/, '');
  return spec;
}

interface PluginModule {
  readonly phases?: readonly PhasePlacement[] | ((settings: Readonly<Record<string, unknown>>) => readonly PhasePlacement[]);
}

const MAX_PLUGINS = 64;

/** Loads the configured plugins (synchronously: require); throws PluginLoadError naming the first that fails. */
export function loadPlugins(specs: readonly string[], settings: Readonly<Record<string, unknown>> | undefined, configDir: string): Plugins {
  if (specs.length > MAX_PLUGINS) throw new PluginLoadError(specs[MAX_PLUGINS] as string, `at most ${MAX_PLUGINS} plugins`);
  // Packages resolve from the configuration's directory, as if required by a file there (its node_modules).
  const req = createRequire(path.join(path.resolve(configDir), 'deployment.toml'));
  const failures = new Map<string, number>();
  const placements: PhasePlacement[] = [];
  const names: string[] = [];
  for (const spec of specs) {
    const name = pluginName(spec);
    if (names.includes(name)) throw new PluginLoadError(spec, `a second plugin named "${name}"`);
    names.push(name);
    let mod: PluginModule;
    try {
      const local = spec.startsWith('./') || spec.startsWith('../');
      mod = req(local ? path.resolve(configDir, spec) : spec) as PluginModule;
    } catch (err) {
      throw new PluginLoadError(spec, (err as Error).message.split('\n')[0] ?? String(err));
    }
    const own = settings?.[name];
    const table = own !== null && typeof own === 'object' && !Array.isArray(own) ? Object.freeze({ ...(own as Record<string, unknown>) }) : Object.freeze({});
    let list: readonly PhasePlacement[] | undefined;
    try {
      list = typeof mod?.phases === 'function' ? mod.phases(table) : mod?.phases;
    } catch (err) {
      throw new PluginLoadError(spec, `its phases(settings) threw: ${(err as Error).message}`);
    }
    if (!Array.isArray(list) || list.length === 0) throw new PluginLoadError(spec, 'it exports no `phases` (an array of { before | after, phase: { name, run } }, or a function of its settings returning one)');
    for (const pl of list as PhasePlacement[]) {
      const phase = pl?.phase;
      if (phase === undefined || typeof phase.run !== 'function' || typeof phase.name !== 'string' || phase.name === '') throw new PluginLoadError(spec, 'a phase needs a name and a run(ctx) function');
      const point = (pl as { before?: string }).before ?? (pl as { after?: string }).after;
      if (!PHASES.some((p) => p.name === point) || (pl as { after?: string }).after === 'send') throw new PluginLoadError(spec, `its phase "${phase.name}" is placed at "${String(point)}": give before or after one of ${PHASES.map((p) => p.name).join(', ')} (nothing after send)`);
      placements.push({ ...pl, phase: counted(name, phase.name, phase.run.bind(phase), failures) } as PhasePlacement);
    }
  }
  return { names, placements, failures };
}

/** The phase, its throws and rejections counted for its plugin, then passed on (lib/embed/phases.ts answers 103142). */
function counted(plugin: string, phaseName: string, run: (ctx: CallContext) => Outcome | Promise<Outcome>, failures: Map<string, number>): PhasePlacement['phase'] {
  const fail = (err: unknown): never => {
    failures.set(plugin, (failures.get(plugin) ?? 0) + 1);
    throw err;
  };
  return {
    name: `${plugin}:${phaseName}`,
    run(ctx) {
      let r: Outcome | Promise<Outcome>;
      try {
        r = run(ctx);
      } catch (err) {
        return fail(err);
      }
      return r !== undefined && typeof (r as Promise<Outcome>).then === 'function' ? (r as Promise<Outcome>).then(undefined, fail) : r;
    },
  };
}
