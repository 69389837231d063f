/**
 * Plugin points of the chain (docs/plugins.md): when a node runs policy plugins, one step sits in each gap
 * of the built-in chain (before route, between each two phases, before send) and runs, in order, the
 * node's plugins placed there ([throughway] plugins, replaced whole on SIGHUP), then those the call's API
 * attaches, then those its resource attaches (the `plugins` field of API files, checked here with the
 * file's line). A gateway without plugins has none of these steps: its chain stays PHASES.
 */
import type { Outcome, PhaseName } from './phases/context';
import type { ChainStep } from './phases/context';
import type { CallContext } from './phases/context';

/** The built-in phases in chain order: gap g is the place just before PHASE_ORDER[g]. */
export const PHASE_ORDER: readonly PhaseName[] = [
  'route',
  'cors',
  'api-status',
  'authentication',
  'throttling',
  'mediation',
  'transport-headers',
  'send',
];

/** Gaps of the chain: 0 before route (no API known yet) to 7 before send. */
export const GAPS = PHASE_ORDER.length;

/** The gap of a placement `before: X` or `after: X` (after send: none, -1; an unknown phase: -1). */
export function gapOf(p: { readonly before?: string; readonly after?: string }): number {
  if (p.before !== undefined) return PHASE_ORDER.indexOf(p.before as PhaseName);
  const i = PHASE_ORDER.indexOf(p.after as PhaseName);
  return i < 0 || i === GAPS - 1 ? -1 : i + 1;
}

/** Steps per gap (GAPS entries; undefined: nothing there). */
export type GapSteps = readonly (readonly ChainStep[] | undefined)[];

/** One gap's steps of a plugin: `after: X` ones run before `before: Y` ones of the same gap. */
export interface PluginStep {
  readonly gap: number;
  readonly step: ChainStep;
}

/**
 * What API files may attach: the node's [throughway] api_plugins, loaded. Read again on SIGHUP; `generation`
 * changes each time, and every API file is validated again against it.
 */
export interface PluginCatalogue {
  readonly generation: number;
  readonly names: readonly string[];
  /** The plugin's steps for one attachment; `settings` undefined: its [throughway.plugin.<name>] table. A string: why it cannot be attached. */
  stepsOf(name: string, settings: Readonly<Record<string, unknown>> | undefined): readonly PluginStep[] | string;
}

/**
 * The catalogue of a gateway without plugins: an API file that attaches one is refused (API_PLUGIN), never
 * deployed without the policy it asks for.
 */
export const NO_PLUGINS: PluginCatalogue = Object.freeze({
  generation: 0,
  names: Object.freeze([]),
  stepsOf: () => 'no plugin is configured',
});

/** Steps by gap, in the order given. */
export function byGap(steps: readonly PluginStep[]): GapSteps {
  const at: ChainStep[][] = [];
  for (const s of steps) (at[s.gap] ??= []).push(s.step);
  return Object.freeze(Array.from({ length: GAPS }, (_, g) => (at[g] !== undefined ? Object.freeze(at[g]) : undefined)));
}

function isPromise(v: unknown): v is Promise<Outcome> {
  return v !== undefined && v !== null && typeof (v as Promise<Outcome>).then === 'function';
}

/** Runs lists[li][si..], then the following lists; stops at the first outcome; synchronous until a step returns a Promise. */
function runLists(
  ctx: CallContext,
  lists: readonly (readonly ChainStep[] | undefined)[],
  li: number,
  si: number,
): Outcome | Promise<Outcome> {
  for (; li < lists.length; li++, si = 0) {
    const list = lists[li];
    if (list === undefined) continue;
    for (; si < list.length; si++) {
      const o = (list[si] as ChainStep).run(ctx);
      if (o === undefined) continue;
      if (isPromise(o)) {
        const l = li;
        const s = si;
        return o.then((v) => (v === undefined ? runLists(ctx, lists, l, s + 1) : v));
      }
      return o;
    }
  }
  return undefined;
}

/** The node's own plugins, replaced whole by a reload; calls in flight keep the lists they read. */
export interface GlobalPlugins {
  at: GapSteps;
}

/**
 * The step of gap `gap`: the node's plugins there, then the API's, then the resource's. Placed before the
 * phase PHASE_ORDER[gap] by the node (lib/node/plugins.ts).
 */
export function gapStep(gap: number, global: GlobalPlugins): ChainStep {
  return {
    name: `plugins:${gap === 0 ? 'before-route' : `after-${PHASE_ORDER[gap - 1] as string}`}`,
    run(ctx) {
      const g = global.at[gap];
      const a = ctx.api?.def.plugins?.[gap];
      const r = ctx.resource?.def.plugins?.[gap];
      if (a === undefined && r === undefined) return g === undefined ? undefined : runLists(ctx, [g], 0, 0);
      return runLists(ctx, [g, a, r], 0, 0);
    },
  };
}
