/**
 * The gateway's phase chain: one explicit, ordered list, taken from the reference's handler chain
 * (docs/architecture.md, "The flow of one request"):
 *
 *   route -> cors -> api-status -> authentication -> throttling -> mediation -> transport-headers -> send
 *
 * Each phase is a small adapter (one file each in this folder): it turns the call context into a service's
 * plain inputs (lib/security, lib/throttle, lib/mediation, held by the call's runtime) and the service's
 * answer into CONTINUE (undefined) or a Stop: a fault value, a local answer (the CORS preflight), or the
 * forward decision (send, always last). As in pingora, the return value says whether the phase has
 * answered; nothing is signalled by mutating the request. No phase edits the request's fields: the
 * transport-headers phase builds the outgoing field array new, once, and only when a field changes.
 *
 * The chain runs by index and stays synchronous while every phase is (fastify's hooks): the pass-through
 * path allocates no Promise. A phase that returns a Promise (authentication validating a new token,
 * mediation with work to do: docs/mediation.md) makes only the rest of that request's chain asynchronous;
 * the transport holds the body back meanwhile.
 */
import type { RouteDecision } from '../../transport/types';
import { ApiCode, fault } from '../../faults';
import { PHASE_ORDER, type GapSteps } from '../steps';
import {
  CallContext as Call,
  corsFieldsOf as corsFieldsOfCall,
  finish as finishCall,
  stop,
  type ChainStep,
  type Outcome,
  type Phase,
  type PhaseObserver,
} from './context';
import { hasDotSegment as dotSegmentIn, routePhase } from './route';
import { corsPhase } from './cors';
import { apiStatusPhase } from './api-status';
import { authenticationPhase } from './authentication';
import { throttlingPhase } from './throttling';
import { mediationPhase } from './mediation';
import { transportHeadersPhase } from './transport-headers';
import { sendPhase } from './send';

export type { ChainStep, KeyType, Outcome, Phase, PhaseName, PhaseObserver, Stop } from './context';

/*
 * Values of other modules exported as plain data properties, not with `export { ... } from`: TypeScript's
 * CommonJS output sets such a name to undefined, then redefines it as an accessor, and V8 keeps an exports
 * object so changed in dictionary mode, where every read of any of its names (runChain on each call) was a
 * generic property load, about 100 instructions under callgrind (docs/performance.md). Neither module
 * imports this one, so both are complete when these lines run.
 */
export const CallContext = Call;
export type CallContext = Call;
export const finish = finishCall;
export const corsFieldsOf = corsFieldsOfCall;
export const hasDotSegment = dotSegmentIn;

/** The chain, in the reference's order; every phase enforced. */
export const PHASES: readonly Phase[] = Object.freeze([
  { name: 'route', enforced: true, run: routePhase },
  { name: 'cors', enforced: true, run: corsPhase },
  { name: 'api-status', enforced: true, run: apiStatusPhase },
  { name: 'authentication', enforced: true, run: authenticationPhase },
  { name: 'throttling', enforced: true, run: throttlingPhase },
  { name: 'mediation', enforced: true, run: mediationPhase },
  { name: 'transport-headers', enforced: true, run: transportHeadersPhase },
  { name: 'send', enforced: true, run: sendPhase },
] satisfies Phase[]);

// --- running the chain --------------------------------------------------------------------------------

function isPromise(v: unknown): v is Promise<Outcome> {
  return v !== undefined && typeof (v as Promise<Outcome>).then === 'function';
}

/** Runs the chain from phase `from`; synchronous until a phase returns a Promise. */
export function runChain(ctx: CallContext, phases: readonly ChainStep[] = PHASES, from = 0): RouteDecision | Promise<RouteDecision> {
  for (let i = from; i < phases.length; i++) {
    const r = (phases[i] as ChainStep).run(ctx);
    if (r === undefined) continue;
    if (isPromise(r)) return r.then((o) => (o === undefined ? runChain(ctx, phases, i + 1) : finish(ctx, o)));
    return finish(ctx, r);
  }
  // Every phase continued and none sent: a chain without `send` (tests, embedders) has nothing to do.
  return finish(ctx, stop(fault(ApiCode.NO_MATCHING_RESOURCE)));
}

/**
 * runChain with an observer around each phase. A separate function so that the chain without observers
 * (tracing off) stays exactly runChain: no stamps, no extra calls on the pass-through path.
 */
export function runChainObserved(
  ctx: CallContext,
  phases: readonly ChainStep[],
  obs: PhaseObserver,
  from = 0,
): RouteDecision | Promise<RouteDecision> {
  for (let i = from; i < phases.length; i++) {
    const phase = phases[i] as ChainStep;
    const started = obs.begin(ctx, phase);
    let r: Outcome | Promise<Outcome>;
    try {
      r = phase.run(ctx);
    } catch (err) {
      obs.end(ctx, phase, started, undefined, err);
      throw err;
    }
    if (r === undefined) {
      obs.end(ctx, phase, started, undefined);
      continue;
    }
    if (isPromise(r)) {
      return r.then(
        (o) => {
          obs.end(ctx, phase, started, o);
          return o === undefined ? runChainObserved(ctx, phases, obs, i + 1) : finish(ctx, o);
        },
        (err: unknown) => {
          obs.end(ctx, phase, started, undefined, err);
          throw err;
        },
      );
    }
    obs.end(ctx, phase, started, r);
    return finish(ctx, r);
  }
  return finish(ctx, stop(fault(ApiCode.NO_MATCHING_RESOURCE)));
}

// --- plugin points (docs/plugins.md) ------------------------------------------------------------------
// When a node runs policy plugins, one step sits in each gap of the built-in chain (before route, between
// each two phases, before send) and runs, in order, the node's plugins placed there ([throughway] plugins,
// replaced whole on SIGHUP), then those the call's API attaches, then those its resource attaches (the
// `plugins` field of API files, checked by apis.ts with the file's line). A gateway without plugins has
// none of these steps: its chain stays PHASES.

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
      if (o !== null && isPromise(o)) {
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
 * phase PHASE_ORDER[gap] by the node (lib/node/plugins.ts) when it runs plugins (docs/plugins.md).
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
