/**
 * What the phases of one call share: the call context, the Stop/Outcome a phase answers, and finish(),
 * which turns a stop into the transport's decision (faults rendered once, with the call's CORS fields,
 * echoed fields, rate-limit fields and templates). The chain itself is index.ts.
 */
import type { ResponseHook, RouteDecision, SourceRequest, WebSocketHooks } from '../../transport/types';
import { gatewayFacts, renderFacts, type FaultValue } from '../../faults';
import type { CompiledApi, CompiledResource, MatchTarget } from '../router';
import { corsRequest, type CorsRequest } from '../cors';
import type { GatewayRuntime } from '../runtime';
import type { EndpointRuntime } from '../endpoints';
import type { AuthContext, KeyType } from '../../security/auth-context';
import type { Operation, OperationRule } from '../../graphql';
import type { Outcome, PhaseName, Step, Stop } from '../steps';

export type { KeyType };

/**
 * What a call observer keeps on its call (`ctx.trace`): lib/observability/tracing.ts's RequestTrace. The
 * gateway only carries it.
 */
export interface CallTrace {
  readonly traceId: string;
}

/** What the phases of one call know. One object per request; phases fill it in order. */
export class CallContext implements MatchTarget {
  /** Path without the query, and the query with its '?' ('' for none): passed through untouched. */
  path = '';
  query = '';
  api: CompiledApi | undefined = undefined;
  /** The path after the context: '' or '/...'. */
  rest = '';
  resource: CompiledResource | undefined = undefined;
  /** URI template variables, raw (percent-encoded as sent). */
  params: Record<string, string> | undefined = undefined;
  /** Methods of the matched path, when an OPTIONS call matched no OPTIONS resource. */
  pathMethods: string[] | undefined = undefined;
  cors: CorsRequest | undefined = undefined;
  /** CORS response fields of this call (also put on its faults). */
  corsFields: readonly string[] | undefined = undefined;
  /** Set by the authentication phase; read by throttling, mediation, logs and analytics. */
  auth: AuthContext | undefined = undefined;
  /** Which endpoint serves the call; authentication sets SANDBOX for sandbox keys. */
  keyType: KeyType = 'PRODUCTION';
  /** Fields earlier phases add toward the backend (flat pairs; e.g. the backend JWT, docs/security.md). */
  addRequestHeaders: string[] | undefined = undefined;
  /** Set by mediation: the request's fields after scripts and conversion (undefined: the client's). */
  requestHeaders: readonly string[] | undefined = undefined;
  /** Set by mediation: the body to forward instead of relaying the client's (ForwardDecision.body). */
  body: Buffer | undefined = undefined;
  /** Set by mediation: the backend's response is gathered and mediated (ForwardDecision.bufferResponse). */
  responseHook: ResponseHook | undefined = undefined;
  /** The fields for the backend (undefined: the client's, unchanged). */
  outHeaders: readonly string[] | undefined = undefined;
  endpoint: EndpointRuntime | undefined = undefined;
  /** GraphQL APIs: the operation the query runs and its fields' rules (the route phase, docs/graphql.md). */
  graphql: { readonly operation: Operation; readonly rules: readonly OperationRule[] } | undefined = undefined;
  /** The call's trace when tracing is on (an observer's, docs/tracing.md); undefined otherwise. */
  trace: CallTrace | undefined = undefined;
  /**
   * Called by the send phase just before it builds the forward decision, to adjust outHeaders at the last
   * moment (tracing sets it: the traceparent the backend sees, whether or not the call is sampled).
   */
  beforeSend: ((ctx: CallContext) => void) | undefined = undefined;
  /**
   * Set by custom phases and plugins (lib/embed/phases.ts): fields added to, and lower-case names removed
   * from, the backend's response head. Read only in a chain that has custom phases (docs/plugins.md).
   */
  addResponseHeaders: string[] | undefined = undefined;
  dropResponseHeaders: string[] | undefined = undefined;
  /** Per-call data of an embedder's custom phases (lib/embed/phases.ts); the gateway never reads it. */
  locals: Record<string, unknown> | undefined = undefined;
  /** RateLimit-Limit/-Remaining/-Reset of the call (throttling phase), on its response and its faults. */
  rateLimitFields: readonly string[] | undefined = undefined;
  /**
   * WebSocket APIs: the tunnel's hooks. Throttling may set onClientFrame for per-frame limits
   * (the tunnel counts frames, docs/websocket.md); the send phase forwards it with the handshake.
   */
  websocket: WebSocketHooks | undefined = undefined;

  constructor(
    readonly req: SourceRequest,
    readonly rt: GatewayRuntime,
  ) {}
}

export type { Outcome, PhaseName, Stop };

export interface Phase {
  readonly name: PhaseName;
  /** false: the phase has its place in the chain but enforces nothing yet (docs say so). */
  readonly enforced: boolean;
  run(ctx: CallContext): Outcome | Promise<Outcome>;
}

/** What the chain runs: a built-in Phase, or an embedder's or a plugin's phase placed between them (lib/embed/phases.ts, docs/plugins.md). */
export type ChainStep = Step<CallContext>;

/** Called around every phase by runChainObserved (tracing: one span per phase). */
export interface PhaseObserver {
  /** Before the phase runs; returns its start stamp. */
  begin(ctx: CallContext, phase: ChainStep): number;
  /** After it answered (its Promise settled): the outcome, or the error it threw or rejected with. */
  end(ctx: CallContext, phase: ChainStep, started: number, outcome: Outcome, error?: unknown): void;
}

export const CONTINUE: Outcome = undefined;
export const stop = (f: FaultValue): Stop => ({ fault: f });

/** The CORS fields of a call, also for faults raised before the CORS phase ran. */
export function corsFieldsOf(ctx: CallContext): readonly string[] {
  if (ctx.corsFields !== undefined) return ctx.corsFields;
  const cr = ctx.cors ?? corsRequest(ctx.req);
  return (ctx.api?.cors ?? ctx.rt.cors).responseFields(cr.origin);
}

/** A phase's stop as the transport's decision: faults rendered with the call's CORS fields and templates. */
export function finish(ctx: CallContext, o: Stop): RouteDecision {
  if ('forward' in o) return o.forward;
  const rt = ctx.rt;
  if ('answer' in o) {
    const drop = rt.headers.dropFromResponseSet;
    const a = o.answer;
    if (drop === undefined || a.headers === undefined) return a;
    const headers: string[] = [];
    for (let i = 0; i < a.headers.length; i += 2)
      if (!drop.has((a.headers[i] as string).toLowerCase())) headers.push(a.headers[i] as string, a.headers[i + 1] as string);
    return { ...a, headers };
  }
  const cors = corsFieldsOf(ctx);
  const echoed = rt.headers.echoed(ctx.req.method, ctx.req.headers);
  let extra = echoed.length === 0 ? cors : [...cors, ...echoed];
  if (ctx.rateLimitFields !== undefined) extra = [...extra, ...ctx.rateLimitFields];
  // nextAccessTime on the throttling clock (the one its windows were counted on).
  return renderFacts(
    gatewayFacts(o.fault, rt.throttle !== undefined ? rt.throttle.now() : Date.now()),
    extra,
    rt.templates,
    rt.headers.dropFromResponseSet,
  );
}
