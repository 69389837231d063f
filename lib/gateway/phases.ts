/**
 * The gateway's phase chain: one explicit, ordered list, taken from the reference's handler chain
 * (docs/architecture.md, "The flow of one request"):
 *
 *   route -> cors -> api-status -> authentication -> throttling -> mediation -> transport-headers -> send
 *
 * Each phase returns CONTINUE (undefined) or a Stop: a fault value, a local answer (the CORS preflight), or
 * the forward decision (send, always last). As in pingora, the return value says whether the phase has
 * answered; nothing is signalled by mutating the request. No phase edits the request's fields: the
 * transport-headers phase builds the outgoing field array new, once, and only when a field changes.
 *
 * The chain runs by index and stays synchronous while every phase is (fastify's hooks): the pass-through
 * path allocates no Promise. A phase that returns a Promise (Steps 4–7 may) makes only the rest of that
 * request's chain asynchronous; the transport holds the body back meanwhile.
 *
 * Authentication (docs/security.md) runs lib/security; throttling (docs/throttling.md) is lib/throttle/phase.ts; mediation (docs/mediation.md,
 * lib/mediation) returns a Promise only for calls it has work for (docs/mediation.md).
 */
import type { ForwardDecision, LocalResponse, ResponseHook, RouteDecision, SourceRequest, WebSocketHooks } from '../transport/types';
import { isWebSocketHandshake } from './websocket';
import { ApiCode, GatewayOwnCode, fault, gatewayFacts, renderFacts, type FaultValue } from '../faults';
import { Match, matchResource, methodsFor, type CompiledApi, type CompiledResource, type MatchTarget } from './router';
import { corsRequest, type CorsRequest } from './cors';
import type { GatewayRuntime } from './runtime';
import type { EndpointRuntime } from './endpoints';
import type { AuthContext } from './auth-context';
import type { RequestTrace } from '../observability/tracing';
import { throttlingPhase } from '../throttle/phase';

export type KeyType = 'PRODUCTION' | 'SANDBOX';

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
  /** Set by the authentication phase (docs/security.md); read by throttling, mediation, logs and analytics. */
  auth: AuthContext | undefined = undefined;
  /** Which endpoint serves the call; authentication (docs/security.md) sets SANDBOX for sandbox keys. */
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
  /** The call's trace when tracing is on (lib/observability/tracing.ts); undefined otherwise. */
  trace: RequestTrace | undefined = undefined;
  /** Per-call data of an embedder's custom phases (lib/embed/phases.ts); the gateway never reads it. */
  locals: Record<string, unknown> | undefined = undefined;
  /** RateLimit-Limit/-Remaining/-Reset of the call (throttling phase), on its response and its faults. */
  rateLimitFields: readonly string[] | undefined = undefined;
  /**
   * WebSocket APIs: the tunnel's hooks. Throttling (docs/throttling.md) may set onClientFrame for per-frame limits
   * (the tunnel counts frames, docs/websocket.md); the send phase forwards it with the handshake.
   */
  websocket: WebSocketHooks | undefined = undefined;

  constructor(
    readonly req: SourceRequest,
    readonly rt: GatewayRuntime,
  ) {}
}

export type Stop = { readonly fault: FaultValue } | { readonly answer: LocalResponse } | { readonly forward: ForwardDecision };
export type Outcome = Stop | undefined;

export type PhaseName = 'route' | 'cors' | 'api-status' | 'authentication' | 'throttling' | 'mediation' | 'transport-headers' | 'send';

export interface Phase {
  readonly name: PhaseName;
  /** false: the phase has its place in the chain but enforces nothing yet (docs say so). */
  readonly enforced: boolean;
  run(ctx: CallContext): Outcome | Promise<Outcome>;
}

/** What the chain runs: a built-in Phase, or an embedder's phase placed between them (lib/embed/phases.ts). */
export interface ChainStep {
  readonly name: string;
  run(ctx: CallContext): Outcome | Promise<Outcome>;
}

const CONTINUE: Outcome = undefined;
const stop = (f: FaultValue): Stop => ({ fault: f });

// --- route --------------------------------------------------------------------------------------------

/** Index where the path of an absolute-form target starts (RFC 9112 §3.2.2), or -1. */
function absolutePathStart(url: string): number {
  const scheme = url.startsWith('http://') ? 7 : url.startsWith('https://') ? 8 : -1;
  if (scheme < 0) return -1;
  const slash = url.indexOf('/', scheme);
  return slash < 0 ? url.length : slash;
}

/**
 * A dot segment ('.' or '..', also percent-encoded) would let a backend that normalises paths resolve the
 * call outside the endpoint's base path (RFC 3986 §5.2.4): such targets are refused, not normalised.
 */
export function hasDotSegment(path: string): boolean {
  let i = path.indexOf('/.');
  while (i >= 0) {
    const a = path.charCodeAt(i + 2);
    if (Number.isNaN(a) || a === 47) return true; // "/." then end or "/"
    if (a === 46) {
      const b = path.charCodeAt(i + 3);
      if (Number.isNaN(b) || b === 47) return true; // "/.." then end or "/"
    }
    i = path.indexOf('/.', i + 2);
  }
  if (path.indexOf('%2') >= 0) {
    const lower = path.toLowerCase();
    if (lower.includes('%2e')) {
      const decoded = lower.replace(/%2e/g, '.');
      if (decoded !== lower) return hasDotSegment(decoded);
    }
  }
  return false;
}

function routePhase(ctx: CallContext): Outcome {
  let url = ctx.req.url;
  if (url.charCodeAt(0) !== 47) {
    const start = absolutePathStart(url);
    if (start < 0) return stop(fault(GatewayOwnCode.INVALID_PATH));
    url = start === url.length ? '/' : url.slice(start);
  }
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  ctx.path = path;
  ctx.query = q < 0 ? '' : url.slice(q);
  if (hasDotSegment(path)) return stop(fault(GatewayOwnCode.INVALID_PATH));
  const entry = ctx.rt.table.lookup(path);
  if (entry === undefined) return stop(fault(GatewayOwnCode.API_NOT_FOUND));
  const api = entry.api;
  ctx.api = api;
  ctx.rest = path.length === entry.path.length ? '' : path.slice(entry.path.length);
  const method = ctx.req.method;
  switch (matchResource(api, ctx.rest, method, ctx)) {
    case Match.OK:
      return CONTINUE;
    case Match.METHOD:
      if (method === 'OPTIONS') {
        // Answered by the CORS phase (preflight) or with the Allow list: OPTIONS asks what is allowed.
        ctx.pathMethods = methodsFor(api, ctx.rest);
        return CONTINUE;
      }
      return stop(fault(GatewayOwnCode.METHOD_NOT_ALLOWED, { allow: methodsFor(api, ctx.rest).join(', ') }));
    default:
      return stop(fault(ApiCode.NO_MATCHING_RESOURCE));
  }
}

// --- cors ---------------------------------------------------------------------------------------------

function corsPhase(ctx: CallContext): Outcome {
  const api = ctx.api as CompiledApi;
  const cr = corsRequest(ctx.req);
  ctx.cors = cr;
  const policy = api.cors;
  ctx.corsFields = policy.responseFields(cr.origin);
  if (ctx.req.method !== 'OPTIONS') return CONTINUE;
  if (cr.preflight && policy.enabled) {
    const methods = ctx.pathMethods ?? methodsFor(api, ctx.rest);
    return { answer: { status: 204, headers: policy.preflightFields(cr.origin, methods) } };
  }
  if (ctx.resource === undefined) {
    // A plain OPTIONS call on a path without an OPTIONS resource: the gateway says what is allowed
    // (RFC 9110 §9.3.7) rather than 405 for the very method that asks.
    const methods = ctx.pathMethods ?? [];
    if (!methods.includes('OPTIONS')) methods.push('OPTIONS');
    return { answer: { status: 204, headers: ['Allow', methods.join(', '), ...ctx.corsFields] } };
  }
  return CONTINUE;
}

// --- api status ---------------------------------------------------------------------------------------

function apiStatusPhase(ctx: CallContext): Outcome {
  switch ((ctx.api as CompiledApi).def.state) {
    case 'BLOCKED':
      return stop(fault(ApiCode.API_BLOCKED)); // spec 002 part 3: 700700, HTTP 503
    case 'RETIRED':
      return stop(fault(GatewayOwnCode.API_RETIRED));
    default:
      // PUBLISHED, PROTOTYPED and DEPRECATED are served.
      return CONTINUE;
  }
}

// --- authentication -----------------------------------------------------------------------------------

/**
 * Bearer tokens, subscriptions, scopes, backend JWT, mutual TLS (spec 002 parts 3, 5, 7): lib/security.
 * Synchronous for auth = "none" and for a token in the cache; asynchronous only to validate a new token.
 */
function authenticationPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const security = ctx.rt.security;
  if (security !== undefined) return security.authenticate(ctx);
  // No security runtime (a runtime built by hand): only open resources are served.
  const res = ctx.resource;
  if (res === undefined || res.def.auth === 'none') return CONTINUE;
  return stop(fault(ApiCode.AUTH_GENERAL_ERROR, { description: 'no token validation is configured' }));
}

// --- mediation ----------------------------------------------------------------------------------------

/** Payload validation, scripts, conversion (lib/mediation); synchronous and free when a call needs none. */
function mediationPhase(ctx: CallContext): Outcome | Promise<Outcome> {
  const m = ctx.rt.mediation;
  return m === undefined ? CONTINUE : m.phase(ctx, (ctx.api as CompiledApi).def.mediation);
}

// --- transport headers --------------------------------------------------------------------------------

function transportHeadersPhase(ctx: CallContext): Outcome {
  const fields = ctx.requestHeaders;
  ctx.outHeaders = fields === undefined ? ctx.rt.headers.outgoing(ctx.req.headers, ctx.addRequestHeaders) : (ctx.rt.headers.outgoing(fields, ctx.addRequestHeaders) ?? fields);
  return CONTINUE;
}

// --- send ---------------------------------------------------------------------------------------------

function sendPhase(ctx: CallContext): Outcome {
  const api = ctx.api as CompiledApi;
  const ep = ctx.keyType === 'SANDBOX' ? api.sandbox : api.production;
  if (ep === undefined) {
    // spec 002 part 7: 900901 also for "production or sandbox key without matching endpoint".
    return stop(fault(ApiCode.INVALID_CREDENTIALS, { description: `The API has no ${ctx.keyType === 'SANDBOX' ? 'sandbox' : 'production'} endpoint` }));
  }
  ctx.endpoint = ep;
  if (ep.suspends) {
    const left = ep.remaining(Date.now());
    if (left > 0) return stop(fault(GatewayOwnCode.ENDPOINT_SUSPENDED, { retryAfterMs: left }));
    ctx.rt.track(ctx.req, ep);
  }
  const base = ep.target.basePath;
  const path = base + ctx.rest;
  const forward: ForwardDecision = {
    target: ep.target,
    path: (path === '' ? '/' : path) + ctx.query,
    headers: ctx.outHeaders,
    responseHeaders: responseFields(ctx),
    dropResponseHeaders: ctx.rt.headers.dropFromResponse,
    timeout: ep.def.timeout,
    retry: ep.retry,
    body: ctx.body,
    bufferResponse: ctx.responseHook,
  };
  if (api.def.type === 'WS') {
    // A WebSocket API is reached only by handshakes (RFC 6455 §4.1); 103083 otherwise.
    if (!isWebSocketHandshake(ctx.req)) return stop(fault(GatewayOwnCode.WEBSOCKET_UPGRADE_REQUIRED));
    return { forward: { ...forward, websocket: ctx.websocket ?? NO_HOOKS } };
  }
  return { forward };
}

const NO_HOOKS: WebSocketHooks = Object.freeze({});

/** CORS and rate-limit fields of a forwarded call (undefined: none, the pass-through path allocates nothing). */
function responseFields(ctx: CallContext): readonly string[] | undefined {
  const cors = ctx.corsFields !== undefined && ctx.corsFields.length > 0 ? ctx.corsFields : undefined;
  const rl = ctx.rateLimitFields;
  if (rl === undefined) return cors;
  return cors === undefined ? rl : [...cors, ...rl];
}

/** The chain, in the reference's order; every phase enforced (Steps 4–7 gave each its `run`). */
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

/** Called around every phase by runChainObserved (tracing: one span per phase). */
export interface PhaseObserver {
  /** Before the phase runs; returns its start stamp. */
  begin(ctx: CallContext, phase: ChainStep): number;
  /** After it answered (its Promise settled): the outcome, or the error it threw or rejected with. */
  end(ctx: CallContext, phase: ChainStep, started: number, outcome: Outcome, error?: unknown): void;
}

/**
 * runChain with an observer around each phase. A separate function so that the chain without observers
 * (tracing off) stays exactly runChain: no stamps, no extra calls on the pass-through path.
 */
export function runChainObserved(ctx: CallContext, phases: readonly ChainStep[], obs: PhaseObserver, from = 0): RouteDecision | Promise<RouteDecision> {
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
    for (let i = 0; i < a.headers.length; i += 2) if (!drop.has((a.headers[i] as string).toLowerCase())) headers.push(a.headers[i] as string, a.headers[i + 1] as string);
    return { ...a, headers };
  }
  const cors = corsFieldsOf(ctx);
  const echoed = rt.headers.echoed(ctx.req.method, ctx.req.headers);
  let extra = echoed.length === 0 ? cors : [...cors, ...echoed];
  if (ctx.rateLimitFields !== undefined) extra = [...extra, ...ctx.rateLimitFields];
  // nextAccessTime on the throttling clock (the one its windows were counted on).
  return renderFacts(gatewayFacts(o.fault, rt.throttle !== undefined ? rt.throttle.now() : Date.now()), extra, rt.templates, rt.headers.dropFromResponseSet);
}
