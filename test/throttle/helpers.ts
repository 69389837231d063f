/** Engine fixtures: policies from TOML text, AuthContext values, calls, a fake clock. */
import type { AuthContext } from '../../lib/security/auth-context';
import { BlockingConditions } from '../../lib/throttle/blocking';
import { MemoryCounterStore } from '../../lib/throttle/counters';
import { ThrottleEngine, type ThrottleCall } from '../../lib/throttle/engine';
import { parsePolicies, DEFAULT_POLICIES_TOML, type PolicyOptions, DEFAULT_POLICY_OPTIONS } from '../../lib/throttle/policies';

export function auth(over: Partial<AuthContext> = {}): AuthContext {
  return {
    kind: 'oauth2',
    tokenId: 'jti-1',
    issuer: 'https://localhost:9443/oauth2/token',
    consumerKey: 'ck-1',
    applicationId: 'app-1',
    applicationName: 'App1',
    applicationTier: 'Unlimited',
    subscriber: 'alice',
    subscriptionTier: 'Unlimited',
    keyType: 'PRODUCTION',
    userType: 'APPLICATION',
    endUser: 'alice',
    scopes: [],
    claims: {},
    expiresAt: Date.now() + 3_600_000,
    ...over,
  };
}

export function call(over: Partial<ThrottleCall> = {}): ThrottleCall {
  return {
    ip: '10.0.0.1',
    apiPath: '/pizzashack/1.0.0',
    apiContext: '/pizzashack',
    apiVersion: '1.0.0',
    apiName: 'PizzaShack',
    resourceKey: '/menu',
    apiPolicy: undefined,
    resourcePolicy: undefined,
    unauthenticatedPolicy: 'Unauthenticated',
    auth: undefined,
    headers: [],
    query: '',
    bytes: 0,
    endpointKey: undefined,
    maxTps: undefined,
    ...over,
  };
}

export interface Rig {
  readonly engine: ThrottleEngine;
  readonly counters: MemoryCounterStore;
  readonly blocking: BlockingConditions;
  readonly unknown: string[];
}

/** An engine over the default policies plus `extra` TOML; switches as given; counters in `counters`. */
export function rig(
  extra = '',
  options: Partial<PolicyOptions> = {},
  blockingEnabled = true,
  counters = new MemoryCounterStore(100_000, 0),
): Rig {
  const o = { ...DEFAULT_POLICY_OPTIONS, ...options };
  const r = parsePolicies(DEFAULT_POLICIES_TOML + '\n' + extra, 'test.toml', o);
  if (r.policies === undefined) throw new Error(JSON.stringify(r.diagnostics));
  const blocking = new BlockingConditions();
  const unknown: string[] = [];
  const engine = new ThrottleEngine({
    policies: r.policies,
    counters,
    blocking,
    switches: o,
    blockingEnabled,
    onUnknownPolicy: (k, n) => unknown.push(`${k}:${n}`),
  });
  return { engine, counters, blocking, unknown };
}

/** Calls `n` times at `now`; returns the codes. */
export function run(r: Rig, c: ThrottleCall, n: number, now: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(r.engine.check(c, now).code);
  return out;
}

/** [allowed, first refused code] of `n` calls. */
export function tally(codes: readonly number[]): { allowed: number; refused: number[] } {
  return { allowed: codes.filter((c) => c === 0).length, refused: [...new Set(codes.filter((c) => c !== 0))] };
}
