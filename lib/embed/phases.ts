/**
 * Custom phases: an embedder's own steps placed at named points of the chain (lib/gateway/phases.ts),
 * e.g. `phases: [{ after: 'authentication', phase: { name: 'audit', run(ctx) { ... } } }]`.
 *
 * The chain is built once, at createGateway: PHASES stays the default and is never modified; a custom
 * phase runs by index like the built-in ones, synchronously unless it returns a Promise. It answers the way
 * built-in phases do, by its return value: undefined continues; `{ fault }` answers a fault (rendered with
 * the fault templates, CORS and echoed fields like every other); `{ answer }` a local response. A phase
 * that throws or rejects is answered with fault 103142 (500) and logged, so one bad phase cannot take the
 * connection down with a transport-level 500.
 */
import type { LocalResponse } from '../transport/types';
import { fault as tableFault, type FaultValue, type GatewayCode, type GatewayFaultDef } from '../faults';
import { GatewayOwnCode } from '../faults';
import type { CallContext, ChainStep, Outcome, Phase, PhaseName } from '../gateway/phases';
import type { Logger } from '../log';
import { ThroughwayError } from '../errors';

/** An embedder's phase. `name` appears in logs and in the 103142 fault of a phase that fails. */
export interface CustomPhase {
  readonly name: string;
  run(ctx: CallContext): Outcome | Promise<Outcome>;
}

/**
 * Where a custom phase goes: before or after a built-in phase. Nothing goes after 'send' (it always
 * answers); before 'route' a phase sees no API yet (ctx.api is undefined).
 */
export type PhasePlacement =
  { readonly before: PhaseName; readonly phase: CustomPhase } | { readonly after: Exclude<PhaseName, 'send'>; readonly phase: CustomPhase };

export class PhaseOptionsError extends ThroughwayError {
  override readonly name = 'PhaseOptionsError';
  readonly code = 'GATEWAY_PHASES';
}

/** A fault of the gateway's table (docs/faults.md), for a custom phase to return as `{ fault }`. */
export function gatewayFault(code: GatewayCode, extra?: Omit<FaultValue, 'def'>): FaultValue {
  return tableFault(code, extra);
}

export interface CustomFault {
  /** Your own code, shown in the fault body (stay clear of the spec's and throughway's: docs/faults.md). */
  readonly code: number;
  readonly status: number;
  readonly message: string;
  readonly description?: string;
  /** Retry-After in ms (sent as whole seconds). */
  readonly retryAfterMs?: number;
}

/** A fault of your own, rendered like the table's: the spec's JSON body or your fault template. */
export function customFault(f: CustomFault): FaultValue {
  if (!Number.isInteger(f.status) || f.status < 400 || f.status > 599)
    throw new PhaseOptionsError(`customFault: status ${f.status} is not an HTTP error status (400-599)`);
  const def: GatewayFaultDef = {
    code: f.code,
    httpStatus: f.status,
    statusFrom: 'throughway',
    message: f.message,
    description: f.description ?? f.message,
    origin: 'throughway',
    phase: 'embedding',
    sent: true,
  };
  return f.retryAfterMs !== undefined ? { def, retryAfterMs: f.retryAfterMs } : { def };
}

/** A local answer, for a custom phase to return as `{ answer }`. */
export function localAnswer(status: number, headers: readonly string[] = [], body?: string | Buffer): { readonly answer: LocalResponse } {
  return { answer: body === undefined ? { status, headers } : { status, headers, body } };
}

function isPromise(v: unknown): v is Promise<Outcome> {
  return v !== undefined && v !== null && typeof (v as Promise<Outcome>).then === 'function';
}

/** The phase, with its exceptions turned into fault 103142 (also the node's plugins', lib/node/plugins.ts). */
export function guarded(p: CustomPhase, logger: Logger): ChainStep {
  const failed = (err: unknown): Outcome => {
    logger.log('error', 'custom_phase_failed', { phase: p.name, message: err instanceof Error ? err.message : String(err) });
    return { fault: tableFault(GatewayOwnCode.CUSTOM_PHASE_FAILED, { description: `The custom phase "${p.name}" failed` }) };
  };
  return {
    name: p.name,
    run(ctx) {
      let r: Outcome | Promise<Outcome>;
      try {
        r = p.run(ctx);
      } catch (err) {
        return failed(err);
      }
      return isPromise(r) ? r.then(undefined, failed) : r;
    },
  };
}

/** A forward decision with the response fields custom phases set on the call (ctx.addResponseHeaders, ctx.dropResponseHeaders). */
function edited(ctx: CallContext, o: Outcome): Outcome {
  if (o === undefined || !('forward' in o) || (ctx.addResponseHeaders === undefined && ctx.dropResponseHeaders === undefined)) return o;
  const f = o.forward;
  const add = ctx.addResponseHeaders === undefined ? f.responseHeaders : [...(f.responseHeaders ?? []), ...ctx.addResponseHeaders];
  const drop =
    ctx.dropResponseHeaders === undefined
      ? f.dropResponseHeaders
      : [...(f.dropResponseHeaders ?? []), ...ctx.dropResponseHeaders.map((n) => n.toLowerCase())];
  return {
    forward: { ...f, ...(add !== undefined ? { responseHeaders: add } : {}), ...(drop !== undefined ? { dropResponseHeaders: drop } : {}) },
  };
}

/** The send phase of a chain with custom phases: its forward decision carries their response edits. Only such chains have it. */
function withResponseEdits(send: Phase): ChainStep {
  return {
    name: send.name,
    run(ctx) {
      const r = send.run(ctx);
      return isPromise(r) ? r.then((o) => edited(ctx, o)) : edited(ctx, r);
    },
  };
}

/** The built-in chain with the custom phases in place; `base` itself unchanged. */
export function chainWith(base: readonly Phase[], placements: readonly PhasePlacement[], logger: Logger): readonly ChainStep[] {
  const names = new Set<string>(base.map((p) => p.name));
  const before = new Map<string, ChainStep[]>();
  const after = new Map<string, ChainStep[]>();
  for (const [i, pl] of placements.entries()) {
    const phase = pl.phase as CustomPhase | undefined;
    if (phase === undefined || typeof phase.run !== 'function' || typeof phase.name !== 'string' || phase.name === '')
      throw new PhaseOptionsError(`phases[${i}]: a phase needs a name and a run(ctx) function`);
    if (names.has(phase.name))
      throw new PhaseOptionsError(`phases[${i}]: the name "${phase.name}" is taken (built-in phases and custom phases have unique names)`);
    names.add(phase.name);
    const b = (pl as { before?: string }).before;
    const a = (pl as { after?: string }).after;
    if ((b === undefined) === (a === undefined))
      throw new PhaseOptionsError(`phases[${i}] ("${phase.name}"): give exactly one of before and after`);
    const point = (b ?? a) as string;
    if (!base.some((p) => p.name === point))
      throw new PhaseOptionsError(
        `phases[${i}] ("${phase.name}"): no built-in phase "${point}" (one of ${base.map((p) => p.name).join(', ')})`,
      );
    if (a === 'send')
      throw new PhaseOptionsError(`phases[${i}] ("${phase.name}"): nothing runs after "send" (it always answers): place it before "send"`);
    const map = b !== undefined ? before : after;
    const list = map.get(point) ?? [];
    list.push(guarded(phase, logger));
    map.set(point, list);
  }
  const chain: ChainStep[] = [];
  for (const p of base) {
    chain.push(...(before.get(p.name) ?? []), p.name === 'send' ? withResponseEdits(p) : p, ...(after.get(p.name) ?? []));
  }
  return Object.freeze(chain);
}
