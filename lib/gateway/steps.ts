/**
 * The chain's vocabulary below the call: the built-in phases' names in order, what a step answers, the gaps
 * between phases and the plugin steps an API file attaches there (docs/plugins.md). Imports nothing of the
 * gateway: the API definitions carry their plugins' steps (apis.ts), a call knows its compiled API
 * (phases/context.ts), and so a step here is generic in the call it runs on (docs/architecture.md, "Floors").
 */
import type { ForwardDecision, LocalResponse } from '../transport/types';
import type { FaultValue } from '../faults';

export type Stop = { readonly fault: FaultValue } | { readonly answer: LocalResponse } | { readonly forward: ForwardDecision };
export type Outcome = Stop | undefined;

export type PhaseName = 'route' | 'cors' | 'api-status' | 'authentication' | 'throttling' | 'mediation' | 'transport-headers' | 'send';

/**
 * A step run on a call of type C: phases/context.ts's ChainStep is Step<CallContext>. The steps the API
 * definitions hold are Step<unknown>: a definition does not know the call, and only the chain runs them,
 * on a CallContext (phases/index.ts, gapStep).
 */
export interface Step<C> {
  readonly name: string;
  run(ctx: C): Outcome | Promise<Outcome>;
}

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
export type GapSteps = readonly (readonly Step<unknown>[] | undefined)[];

/** One gap's steps of a plugin: `after: X` ones run before `before: Y` ones of the same gap. */
export interface PluginStep {
  readonly gap: number;
  readonly step: Step<unknown>;
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
  const at: Step<unknown>[][] = [];
  for (const s of steps) (at[s.gap] ??= []).push(s.step);
  return Object.freeze(Array.from({ length: GAPS }, (_, g) => (at[g] !== undefined ? Object.freeze(at[g]) : undefined)));
}
