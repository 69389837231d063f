/**
 * Backend endpoints at run time: the TargetEndpoint the transport pools by (parsed once per URL, never per
 * request) and the endpoint's suspension state (spec 002, part 7, rule 3: transport codes "are used in
 * endpoint advanced configuration").
 *
 * Suspension, as the reference's endpoints do it: a call that fails with one of the endpoint's suspend
 * codes suspends it for suspend_duration; while suspended, calls are answered 103007 (503, Retry-After)
 * without touching the backend. A failure after a suspension ended, with no successful call since (the
 * endpoint has not recovered), suspends it again for factor times as long, up to suspend_max_duration; a
 * successful call resets it.
 */
import type { TransportFault } from '../transport/codes';
import { targetFromUrl, type TargetEndpoint, type RetryPolicy } from '../transport/types';
import type { Outbound } from '../transport/outbound';
import type { EndpointDefinition } from './apis';
import { silentLogger, type Logger } from '../log';
import { BackendAuthorizer, BackendTokens } from '../security/backend-credentials';

export class EndpointRuntime {
  readonly target: TargetEndpoint;
  /** The endpoint's retry policy for the transport (retry_codes, retry_count), built once. */
  readonly retry: RetryPolicy | undefined;
  /** Whether any suspend code is configured (the send phase skips the clock otherwise). */
  readonly suspends: boolean;
  /** Date.now() until which calls are refused; 0 when the endpoint is available. */
  suspendedUntil = 0;
  /** The length of the last suspension; 0 once a call succeeded. */
  private lastDuration = 0;
  /** How often the endpoint was suspended (apis list, logs). */
  suspensions = 0;
  /** The credentials the backend requires (docs/apis.md, "Backend security"); undefined: none. */
  readonly auth: BackendAuthorizer | undefined;

  constructor(
    readonly def: EndpointDefinition,
    target: TargetEndpoint,
    auth?: BackendAuthorizer,
  ) {
    this.target = target;
    this.auth = auth;
    this.suspends = def.suspendCodes.length > 0;
    this.retry =
      def.retryCodes.length > 0 && def.retryCount > 0 ? Object.freeze({ codes: def.retryCodes, count: def.retryCount }) : undefined;
  }

  /** ms until the endpoint takes calls again; 0 when it takes them now. */
  remaining(now: number): number {
    const until = this.suspendedUntil;
    if (until === 0) return 0;
    if (now >= until) return 0;
    return until - now;
  }

  /** Whether a fault's code names one of the suspend codes: the combined code, or its base for every state. */
  matches(fault: TransportFault): boolean {
    const codes = this.def.suspendCodes;
    return fault.side === 'target' && (codes.includes(fault.code) || codes.includes(fault.base));
  }

  /** A call to this endpoint failed. Returns the suspension length in ms when it suspends the endpoint. */
  failed(fault: TransportFault, now: number): number {
    if (!this.suspends || !this.matches(fault)) return 0;
    // Calls that were already in flight when the endpoint got suspended fail too: one suspension for all.
    if (this.suspendedUntil !== 0 && now < this.suspendedUntil) return 0;
    const d = this.def;
    const duration =
      this.lastDuration === 0 ? d.suspendDuration : Math.min(Math.round(this.lastDuration * d.suspendFactor), d.suspendMaxDuration);
    this.lastDuration = duration;
    this.suspendedUntil = now + duration;
    this.suspensions++;
    return duration;
  }

  /**
   * The backend answered: the next failure starts again from suspend_duration. A suspension in force is
   * not lifted (a call sent before it began may still succeed late); it simply runs out.
   */
  succeeded(now: number): void {
    if (this.suspendedUntil !== 0 && now < this.suspendedUntil) return;
    this.lastDuration = 0;
    this.suspendedUntil = 0;
  }
}

/**
 * Endpoint runtimes shared across hot redeploys: an API file that changes keeps its endpoints' suspension
 * state when the endpoint's definition did not change, and TargetEndpoints are parsed once per URL.
 */
export class EndpointRegistry {
  /** Backend OAuth 2.0 tokens of every endpoint, kept across redeploys (lib/security/backend-credentials.ts). */
  readonly tokens: BackendTokens;

  /** `outbound`: TLS and proxies for the endpoints and token URLs (lib/tls/settings.ts outboundFrom). */
  constructor(
    private readonly outbound?: Outbound,
    logger: Logger = silentLogger,
    now: () => number = Date.now,
  ) {
    this.tokens = new BackendTokens(logger, now);
  }
  private readonly targets = new Map<string, TargetEndpoint>();
  private readonly runtimes = new Map<string, EndpointRuntime>();
  /** Suspending endpoints by pool key (host:port), for the success signal of finished exchanges. */
  readonly suspendingByKey = new Map<string, EndpointRuntime[]>();

  target(url: string): TargetEndpoint {
    let t = this.targets.get(url);
    if (t === undefined) {
      t = targetFromUrl(url, this.outbound);
      this.targets.set(url, t);
    }
    return t;
  }

  /** The runtime for an endpoint of one API ("name:version:production"). */
  runtime(owner: string, def: EndpointDefinition): EndpointRuntime {
    const key = `${owner}\u0000${JSON.stringify(def)}`;
    let r = this.runtimes.get(key);
    if (r === undefined) {
      const sec = def.security;
      // An https:// token URL uses the endpoints' outbound TLS (trust store, verifier): docs/tls.md.
      const tls = sec?.oauth !== undefined ? targetFromUrl(sec.oauth.tokenUrl, this.outbound).tls?.context : undefined;
      r = new EndpointRuntime(def, this.target(def.url), sec === undefined ? undefined : new BackendAuthorizer(sec, this.tokens, tls));
      this.runtimes.set(key, r);
    }
    return r;
  }

  /** Keeps only the runtimes still in use after a deploy, and reindexes the suspending ones. */
  retain(used: ReadonlySet<EndpointRuntime>): void {
    for (const [k, r] of this.runtimes) if (!used.has(r)) this.runtimes.delete(k);
    const tokenKeys = new Set<string>();
    for (const r of used) {
      const sec = r.def.security;
      if (sec?.oauth !== undefined) tokenKeys.add(BackendTokens.keyOf(sec.oauth, sec.username, sec.password));
    }
    this.tokens.retain(tokenKeys);
    const urls = new Set<string>();
    for (const r of used) urls.add(r.def.url);
    for (const u of this.targets.keys()) if (!urls.has(u)) this.targets.delete(u);
    this.suspendingByKey.clear();
    for (const r of used) {
      if (!r.suspends) continue;
      const list = this.suspendingByKey.get(r.target.key);
      if (list === undefined) this.suspendingByKey.set(r.target.key, [r]);
      else list.push(r);
    }
  }
}
