/**
 * Throttling (docs/throttling.md): policies, the engine, counters, blocking conditions. The
 * gateway creates one Throttle at start and hands it to every runtime it deploys, so counters and
 * blocking conditions survive hot deploys; the gateway's throttling phase (lib/gateway/phases/throttling.ts) asks it per call.
 */
import type { Logger } from '../log';
import { BlockingConditions, type BlockingCondition } from './blocking';
import { MemoryCounterStore, type CounterStore } from './counters';
import { ThrottleEngine, type ThrottleCall, type Verdict } from './engine';
import {
  formatPolicyDiagnostic,
  loadPolicies,
  parsePolicies,
  policyNames,
  type Policies,
  type PoliciesResult,
  type PolicyDiagnostic,
  type PolicyNames,
} from './policies';
import { RedisCounterStore } from './redis';
import { DecisionCounterStore } from './decisions';
import { QuotaLink } from './quota-link';
import { SharedQuotas } from './shared';
import { policyOptionsOf, type ThrottleSettings } from './settings';
import { ThroughwayError } from '../errors';

export interface PolicyReload {
  readonly ok: boolean;
  /** The errors of a refused file, formatted (file:line: message). */
  readonly errors: readonly string[];
}

export class ThrottleConfigError extends ThroughwayError {
  readonly code = 'THROTTLE_POLICIES_INVALID';
  constructor(readonly diagnostics: readonly PolicyDiagnostic[]) {
    super(
      `throttling policies are invalid:\n${diagnostics
        .filter((d) => d.level === 'error')
        .map(formatPolicyDiagnostic)
        .join('\n')}`,
    );
    this.name = 'ThrottleConfigError';
  }
}

export interface ThrottleOptions {
  readonly settings: ThrottleSettings;
  readonly logger: Logger;
  /** Blocking conditions in force at start (the store's list; events keep it current). */
  readonly blocking?: readonly BlockingCondition[];
  readonly now?: () => number;
  /** A counter store of the embedder's (default: from settings.counterStore). */
  readonly counters?: CounterStore;
  /** The policies as a text instead of settings.policiesFile (a gateway-worker's, from its control plane). */
  readonly policies?: { readonly text: string; readonly source: string };
  /** Key prefix of the exact and leased counters in Redis (default `tw:q:`; tests isolate themselves with their own). */
  readonly quotaPrefix?: string;
}

function logDiagnostics(logger: Logger, list: readonly PolicyDiagnostic[]): void {
  for (const d of list) {
    const level = d.level === 'error' ? 'error' : d.level === 'warning' ? 'warn' : 'info';
    if (logger.enabled(level))
      logger.log(level, 'throttle_policy', {
        code: d.code,
        file: d.file,
        line: d.line,
        field: d.field,
        message: formatPolicyDiagnostic(d),
      });
  }
}

/** The store `[throughway.throttling] counter_store` names (docs/throttling.md, "Counting"). */
function counterStoreOf(settings: ThrottleSettings, logger: Logger, now: () => number): CounterStore {
  switch (settings.counterStore) {
    case 'redis':
      return new RedisCounterStore({
        url: settings.redisUrl,
        syncInterval: settings.syncInterval,
        maxCounters: settings.maxCounters,
        publish: settings.dataPublishing,
        read: settings.decisionConnection,
        persistence: settings.persistence,
        logger,
        clock: now,
      });
    case 'traffic-manager': {
      // The configuration check refuses this store without a redis:// URL (lib/config/load.ts); an
      // embedder's settings without one count locally.
      const url = settings.decisionUrl;
      const link =
        url === undefined
          ? undefined
          : {
              url,
              channels: settings.channels,
              publish: settings.dataPublishing,
              subscribe: settings.decisionConnection,
              syncInterval: settings.syncInterval,
              logger,
            };
      return new DecisionCounterStore({ maxCounters: settings.maxCounters, clock: now, ...(link !== undefined ? { link } : {}) });
    }
    default:
      return new MemoryCounterStore(settings.maxCounters, 10_000, now);
  }
}

/** Whether a policy counts exact or leased (its own `counting`). */
function usesShared(p: Policies): boolean {
  const quotas = [
    ...[...p.subscription.values()].flatMap((s) => [s.quota, s.burst]),
    ...[...p.application.values()].map((a) => a.quota),
    ...[...p.api.values()].flatMap((a) => [a.quota, ...a.groups.map((g) => g.quota)]),
    ...p.custom.map((c) => c.quota),
  ];
  return quotas.some((q) => q !== undefined && (q.counting === 'exact' || q.counting === 'leased'));
}

/**
 * A WebSocket tunnel's per-frame throttle (Throttle.frameGuard): the transport's WebSocketHooks member
 * it fills (lib/transport/types.ts). False: the frame is refused and the tunnel closed.
 */
export interface FrameGuard {
  onClientFrame(): boolean;
}

/**
 * The throttling service: its settings, policies, engine, counters and blocking conditions, and the
 * count of the calls it refused. The gateway makes one at start and hands it to every runtime it
 * deploys, so counters and blocking conditions survive hot deploys; the gateway's throttling phase
 * (lib/gateway/phases/throttling.ts) asks its engine per call with the call's plain facts.
 */
export class Throttle {
  readonly settings: ThrottleSettings;
  readonly engine: ThrottleEngine;
  readonly blocking: BlockingConditions;
  readonly counters: CounterStore;
  /** The clock of every decision (tests inject a fake one). */
  readonly now: () => number;
  /** Calls refused, by fault code (900800-900807): counted by countRefusal, read by the metrics at scrape time. */
  readonly refused = new Map<number, number>();
  private current: Policies;
  private from: string;
  private count = 0;
  /** One object, refilled on reload: the API directory validates `policy` names against it. */
  private readonly known: { readonly api: Set<string>; readonly subscription: Set<string> } = {
    api: new Set<string>(),
    subscription: new Set<string>(),
  };
  private readonly logger: Logger;
  private readonly policyOptions: ReturnType<typeof policyOptionsOf>;

  /** Loads the policies (throws ThrottleConfigError when the file is invalid) and builds the engine. */
  constructor(options: ThrottleOptions) {
    const { settings, logger } = options;
    this.settings = settings;
    this.logger = logger;
    const policyOptions = policyOptionsOf(settings);
    this.policyOptions = policyOptions;
    this.from = options.policies?.source ?? settings.policiesFile;
    const first =
      options.policies !== undefined
        ? parsePolicies(options.policies.text, options.policies.source, policyOptions)
        : loadPolicies(settings.policiesFile, policyOptions);
    logDiagnostics(logger, first.diagnostics);
    if (first.policies === undefined) throw new ThrottleConfigError(first.diagnostics);
    this.current = first.policies;
    this.fillNames(this.current);
    const now = options.now ?? Date.now;
    this.now = now;
    this.counters = options.counters ?? counterStoreOf(settings, logger, now);
    this.blocking = new BlockingConditions();
    if (options.blocking !== undefined) this.blocking.replace(options.blocking);
    // The Redis link of exact and leased policies: made by the first call that counts one (lib/throttle/shared.ts).
    const shared = (): SharedQuotas => {
      const link = new QuotaLink({
        url: settings.redisUrl,
        clusterNodes: settings.clusterNodes,
        commandTimeout: settings.commandTimeout,
        logger,
        ...(options.quotaPrefix !== undefined ? { prefix: options.quotaPrefix } : {}),
      });
      return new SharedQuotas({ link, maxCounters: settings.maxCounters, clock: now });
    };
    this.engine = new ThrottleEngine({
      policies: this.current,
      counters: this.counters,
      blocking: this.blocking,
      switches: policyOptions,
      blockingEnabled: settings.blockingEnabled,
      counting: settings.counting,
      shared,
      onUnknownPolicy: (kind, name) =>
        logger.log('warn', 'throttle_unknown_policy', {
          kind,
          name,
          message: `${kind} policy "${name}" is not defined in ${this.from}: that level is not enforced for it`,
        }),
    });
    // A deployment that counts exact or leased joins the gateways' membership set at start (lib/throttle/quota-link.ts).
    if (settings.counting !== 'async' || usesShared(this.current)) this.engine.startShared();
  }

  /** The exact and leased counters (docs/throttling.md, "Counting modes"), once a call has used them. */
  get shared(): SharedQuotas | undefined {
    return this.engine.shared;
  }

  /** Where the running policies came from: the policies file, or the source of the last loadText. */
  get source(): string {
    return this.from;
  }

  /** Incremented by each reload that replaced the policies (the gateway then revalidates its API files). */
  get generation(): number {
    return this.count;
  }

  policies(): Policies {
    return this.current;
  }

  /** The names API definitions may use (`policy`, `unauthenticated_policy`); the same object after reloads. */
  names(): PolicyNames {
    return this.known;
  }

  /** One call (or frame, or subscribe message) refused with `code`: the metrics' count of it. */
  countRefusal(code: number): void {
    this.refused.set(code, (this.refused.get(code) ?? 0) + 1);
  }

  /**
   * The fields of a GraphQL `subscribe` message counted against their policies (engine.checkFields): the
   * refusing verdict, or undefined. A message is answered at once: a field policy that has to wait for
   * Redis lets this message through, and its refusal is counted when it comes.
   */
  refuseFields(call: ThrottleCall): Verdict | undefined {
    const v = this.engine.checkFields(call, this.now());
    if (v.pending !== undefined) {
      void v.pending.then((w) => {
        if (w.code !== 0) this.countRefusal(w.code);
      });
      return undefined;
    }
    if (v.code === 0) return undefined;
    this.countRefusal(v.code);
    return v;
  }

  /**
   * Per-frame throttling of a WebSocket tunnel (docs/websocket.md, docs/throttling.md): like the reference,
   * each frame the client sends counts as one call against the same quotas as its handshake (API or
   * resource policy, subscription and its burst, application, custom policies, the endpoint's hard limit,
   * blocking conditions), with the handshake's identity, IP and fields; bandwidth quotas are not charged
   * for frames. The first frame a level refuses closes the tunnel with 1008 (the tunnel's fault 103082) and
   * is counted as throttled by its level's code. One guard per opened tunnel, made at the handshake: plain HTTP calls never get here.
   */
  frameGuard(handshake: ThrottleCall): FrameGuard {
    const frame: ThrottleCall = { ...handshake, bytes: 0 };
    // A frame is answered at once: one whose exact or leased level has to wait for Redis passes, and when
    // that wait ends in a refusal the tunnel's next frame is refused (closing it with 1008).
    let refusedLater = false;
    return {
      onClientFrame: (): boolean => {
        if (refusedLater) return false;
        const v = this.engine.check(frame, this.now());
        if (v.pending !== undefined) {
          void v.pending.then((w) => {
            if (w.code === 0) return;
            refusedLater = true;
            this.countRefusal(w.code);
          });
          return true;
        }
        if (v.code === 0) return true;
        this.countRefusal(v.code);
        return false;
      },
    };
  }

  /**
   * Reads the policies file again (SIGHUP). A file with errors is refused: each error is logged and the
   * running policies stay. Counters keep counting under the same keys.
   */
  reload(): PolicyReload {
    return this.apply(loadPolicies(this.settings.policiesFile, this.policyOptions), this.settings.policiesFile);
  }

  /**
   * Replaces the policies with a text (a gateway-worker's, pulled from its control plane: docs/scale-out.md),
   * validated as the file is: a text with errors is refused, each error logged, the running policies stay.
   * `source` names it in diagnostics and logs (e.g. the control plane's URL and file name).
   */
  loadText(text: string, source: string): PolicyReload {
    return this.apply(parsePolicies(text, source, this.policyOptions), source);
  }

  async close(): Promise<void> {
    await this.engine.shared?.close();
    await this.counters.close();
  }

  private fillNames(p: Policies): void {
    const fresh = policyNames(p);
    this.known.api.clear();
    this.known.subscription.clear();
    for (const n of fresh.api) this.known.api.add(n);
    for (const n of fresh.subscription) this.known.subscription.add(n);
  }

  /** The file's or a text's result: refused with errors (the running policies stay), else swapped in. */
  private apply(r: PoliciesResult, from: string): PolicyReload {
    const logger = this.logger;
    logDiagnostics(logger, r.diagnostics);
    if (r.policies === undefined) {
      const errors = r.diagnostics.filter((d) => d.level === 'error').map(formatPolicyDiagnostic);
      logger.log('error', 'throttle_policies_reload_refused', {
        file: from,
        errors: errors.length,
        message: `the policies ${from === this.settings.policiesFile ? 'file' : 'text'} has errors: the running policies stay`,
      });
      return { ok: false, errors };
    }
    const policies = r.policies;
    this.current = policies;
    this.from = from;
    this.engine.setPolicies(policies);
    this.fillNames(policies);
    this.count++;
    logger.log('info', 'throttle_policies_reloaded', {
      file: from,
      subscription: policies.subscription.size,
      application: policies.application.size,
      api: policies.api.size,
      custom: policies.custom.length,
    });
    return { ok: true, errors: [] };
  }
}

/** The throttling service of `options` (new Throttle): throws ThrottleConfigError when the policies are invalid. */
export function createThrottle(options: ThrottleOptions): Throttle {
  return new Throttle(options);
}

export { BlockingConditions, type BlockingCondition } from './blocking';
export { MemoryCounterStore, type CounterStore } from './counters';
export { ThrottleEngine, type ThrottleCall, type Verdict } from './engine';
export type { Policies } from './policies';
