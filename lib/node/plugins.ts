/**
 * Policy plugins of `throughway start` (docs/plugins.md): `[throughway] plugins` names modules run on every
 * call, `[throughway] api_plugins` modules that run only where an API file attaches them (`plugins` of an
 * API or a resource). Each entry is a path (`./` or `../`, from the configuration's directory) or a package
 * (resolved from that directory's node_modules). A module exports `phases` in the embedding API's
 * placement type (lib/embed/phases.ts), either as an array or as a function of the plugin's settings
 * (`[throughway.plugin.<name>]`, or the attachment's own `settings`). A module that cannot be loaded or
 * exports no valid phases stops the start with PLUGIN_LOAD, naming it; on SIGHUP (reload()) the modules
 * are loaded again and such a failure keeps the running plugins. The chain gets one step per gap
 * (lib/gateway/phases/index.ts, gapStep) only when a plugin is configured at start: with none, it stays PHASES.
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { guarded, type PhasePlacement } from '../embed/phases';
import { gapStep, type CallContext, type GlobalPlugins, type Outcome, type PhaseName } from '../gateway/phases';
import { byGap, gapOf, GAPS, PHASE_ORDER, type PluginCatalogue, type PluginStep } from '../gateway/steps';
import type { Logger } from '../log';
import { ThroughwayError } from '../errors';

/** A plugin that does not load, or whose exports are not phases; names the plugin as configured. */
export class PluginLoadError extends ThroughwayError {
  override readonly name = 'PluginLoadError';
  readonly code = 'PLUGIN_LOAD';
  constructor(
    readonly plugin: string,
    readonly reason: string,
  ) {
    super(`plugin "${plugin}" did not load: ${reason}`);
  }
}

/** What the node's configuration says about plugins ([throughway] plugins, api_plugins, plugin). */
export interface PluginSettings {
  readonly plugins: readonly string[];
  readonly apiPlugins: readonly string[];
  readonly settings: Readonly<Record<string, unknown>> | undefined;
  /** The configuration's directory: where paths and node_modules are resolved from. */
  readonly dir: string;
}

/** The loaded plugins: the chain's steps for them, what API files may attach, the failures counted per plugin. */
export interface Plugins {
  /** The plugins run on every call, in configured order. */
  readonly names: readonly string[];
  /** The plugins API files may attach. */
  readonly attachable: readonly string[];
  /** One step per gap of the chain, placed before each built-in phase (given to createGateway as `phases`). */
  readonly placements: readonly PhasePlacement[];
  readonly catalogue: PluginCatalogue;
  /** Calls a plugin's phase threw or rejected on (each answered with fault 103142), by plugin name; kept across reloads. */
  readonly failures: ReadonlyMap<string, number>;
  /** Loads every module again (SIGHUP); throws PluginLoadError and leaves the running plugins in place. */
  reload(s: PluginSettings): void;
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

interface Loaded {
  readonly spec: string;
  readonly name: string;
  readonly mod: PluginModule;
}

/**
 * Requires one module. `fresh`: its own file is read again (a reload after an edit); modules it requires
 * stay cached (docs/plugins.md, "Reloading").
 */
function requireModule(spec: string, dir: string, fresh: boolean): PluginModule {
  const req = createRequire(path.join(path.resolve(dir), 'deployment.toml'));
  const local = spec.startsWith('./') || spec.startsWith('../');
  const id = local ? path.resolve(dir, spec) : spec;
  try {
    if (fresh) delete req.cache[req.resolve(id)];
    return req(id) as PluginModule;
  } catch (err) {
    throw new PluginLoadError(spec, (err as Error).message.split('\n')[0] ?? String(err));
  }
}

function settingsTable(v: unknown): Readonly<Record<string, unknown>> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
    ? Object.freeze({ ...(v as Record<string, unknown>) })
    : Object.freeze({});
}

/** The module's phases for these settings, each guarded (103142) and counted for its plugin; PluginLoadError when they are not phases. */
function stepsFor(p: Loaded, settings: Readonly<Record<string, unknown>>, failures: Map<string, number>, logger: Logger): PluginStep[] {
  let list: readonly PhasePlacement[] | undefined;
  try {
    list = typeof p.mod?.phases === 'function' ? p.mod.phases(settings) : p.mod?.phases;
  } catch (err) {
    throw new PluginLoadError(p.spec, `its phases(settings) threw: ${(err as Error).message}`);
  }
  if (!Array.isArray(list) || list.length === 0)
    throw new PluginLoadError(
      p.spec,
      'it exports no `phases` (an array of { before | after, phase: { name, run } }, or a function of its settings returning one)',
    );
  const out: PluginStep[] = [];
  for (const pl of list as PhasePlacement[]) {
    const phase = pl?.phase;
    if (phase === undefined || typeof phase.run !== 'function' || typeof phase.name !== 'string' || phase.name === '')
      throw new PluginLoadError(p.spec, 'a phase needs a name and a run(ctx) function');
    const where = pl as { before?: string; after?: string };
    const gap = (where.before === undefined) === (where.after === undefined) ? -1 : gapOf(where);
    if (gap < 0)
      throw new PluginLoadError(
        p.spec,
        `its phase "${phase.name}" is placed at "${String(where.before ?? where.after)}": give one of before and after, naming one of ${PHASE_ORDER.join(', ')} (nothing after send)`,
      );
    out.push({ gap, step: guarded(counted(p.name, phase.name, phase.run.bind(phase), failures), logger) });
  }
  return out;
}

/** Loads every module of both lists; PluginLoadError for the first that fails. */
function loadAll(
  s: PluginSettings,
  fresh: boolean,
): { readonly global: readonly Loaded[]; readonly attachable: ReadonlyMap<string, Loaded> } {
  const all = [...s.plugins, ...s.apiPlugins];
  if (all.length > MAX_PLUGINS) throw new PluginLoadError(all[MAX_PLUGINS] as string, `at most ${MAX_PLUGINS} plugins`);
  const names = new Set<string>();
  const global: Loaded[] = [];
  const attachable = new Map<string, Loaded>();
  for (const [i, spec] of all.entries()) {
    const name = pluginName(spec);
    if (names.has(name)) throw new PluginLoadError(spec, `a second plugin named "${name}" (in plugins or api_plugins)`);
    names.add(name);
    const p: Loaded = { spec, name, mod: requireModule(spec, s.dir, fresh) };
    if (i < s.plugins.length) global.push(p);
    else attachable.set(name, p);
  }
  return { global, attachable };
}

/**
 * Loads the configured plugins (synchronously: require); throws PluginLoadError naming the first that
 * fails. Undefined when neither list names one: nothing is added to the chain.
 */
export function loadPlugins(s: PluginSettings, logger: Logger): Plugins | undefined {
  if (s.plugins.length === 0 && s.apiPlugins.length === 0) return undefined;
  const failures = new Map<string, number>();
  const build = (fresh: boolean) => {
    const { global, attachable } = loadAll(s, fresh);
    const steps: PluginStep[] = [];
    for (const p of global) steps.push(...stepsFor(p, settingsTable(s.settings?.[p.name]), failures, logger));
    const nodeSettings = s.settings;
    const catalogue: PluginCatalogue = {
      generation: 0,
      names: [...attachable.keys()],
      stepsOf(name, own) {
        const p = attachable.get(name);
        if (p === undefined) return `no plugin "${name}" in api_plugins`;
        try {
          return stepsFor(p, own !== undefined ? settingsTable(own) : settingsTable(nodeSettings?.[name]), failures, logger);
        } catch (err) {
          return err instanceof PluginLoadError ? err.reason : (err as Error).message;
        }
      },
    };
    return { names: global.map((p) => p.name), at: byGap(steps), catalogue };
  };
  let current = build(false);
  let generation = 0;
  const holder: GlobalPlugins = { at: current.at };
  // The catalogue the gateway keeps: the current one's answers, with a generation that moves on each reload.
  const catalogue: PluginCatalogue = {
    get generation() {
      return generation;
    },
    get names() {
      return current.catalogue.names;
    },
    stepsOf: (name, own) => current.catalogue.stepsOf(name, own),
  };
  const placements: PhasePlacement[] = [];
  for (let g = 0; g < GAPS; g++) placements.push({ before: PHASE_ORDER[g] as PhaseName, phase: gapStep(g, holder) });
  return {
    get names() {
      return current.names;
    },
    get attachable() {
      return current.catalogue.names;
    },
    placements,
    catalogue,
    failures,
    reload(next) {
      s = next;
      current = build(true);
      holder.at = current.at;
      generation++;
    },
  };
}

/** The phase, its throws and rejections counted for its plugin, then passed on (lib/embed/phases.ts answers 103142). */
function counted(
  plugin: string,
  phaseName: string,
  run: (ctx: CallContext) => Outcome | Promise<Outcome>,
  failures: Map<string, number>,
): PhasePlacement['phase'] {
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
