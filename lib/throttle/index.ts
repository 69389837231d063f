/**
 * Throttling (docs/throttling.md): policies, the engine, counters, blocking conditions. The
 * gateway creates one Throttle at start and hands it to every runtime it deploys, so counters and
 * blocking conditions survive hot deploys; the gateway's throttling phase (lib/gateway/phases/throttling.ts) asks its engine per call.
 */
import type { Logger } from '../log';
import { BlockingConditions, type BlockingCondition } from './blocking';
import { MemoryCounterStore, type CounterStore } from './counters';
import { ThrottleEngine } from './engine';
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

export interface Throttle {
  readonly engine: ThrottleEngine;
  readonly blocking: BlockingConditions;
  readonly counters: CounterStore;
  /** The exact and leased counters (docs/throttling.md, "Counting modes"), once a call has used them. */
  readonly shared: SharedQuotas | undefined;
  readonly settings: ThrottleSettings;
  /** The clock of every decision (tests inject a fake one). */
  readonly now: () => number;
  /** Calls refused, by fault code (900800-900807): counted by the phase, read by the metrics at scrape time. */
  readonly refused: Map<number, number>;
  policies(): Policies;
  /** The names API definitions may use (`policy`, `unauthenticated_policy`); the same object after reloads. */
  names(): PolicyNames;
  /**
   * Reads the policies file again (SIGHUP). A file with errors is refused: each error is logged and the
   * running policies stay. Counters keep counting under the same keys.
   */
  reload(): PolicyReload;
  /**
   * Replaces the policies with a text (a gateway-worker's, pulled from its control plane: docs/scale-out.md),
   * validated as the file is: a text with errors is refused, each error logged, the running policies stay.
   * `source` names it in diagnostics and logs (e.g. the control plane's URL and file name).
   */
  loadText(text: string, source: string): PolicyReload;
  /** Where the running policies came from: the policies file, or the source of the last loadText. */
  readonly source: string;
  /** Incremented by each reload that replaced the policies (the gateway then revalidates its API files). */
  readonly generation: number;
  close(): Promise<void>;
}

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

/** Loads the policies (throws ThrottleConfigError when the file is invalid) and builds the engine. */
export function createThrottle(options: ThrottleOptions): Throttle {
  const { settings, logger } = options;
  const policyOptions = policyOptionsOf(settings);
  let source = options.policies?.source ?? settings.policiesFile;
  const first =
    options.policies !== undefined
      ? parsePolicies(options.policies.text, options.policies.source, policyOptions)
      : loadPolicies(settings.policiesFile, policyOptions);
  logDiagnostics(logger, first.diagnostics);
  if (first.policies === undefined) throw new ThrottleConfigError(first.diagnostics);
  let policies = first.policies;
  // One object, refilled on reload: the API directory validates `policy` names against it.
  const names = { api: new Set<string>(), subscription: new Set<string>() };
  const fillNames = (p: Policies): void => {
    const fresh = policyNames(p);
    names.api.clear();
    names.subscription.clear();
    for (const n of fresh.api) names.api.add(n);
    for (const n of fresh.subscription) names.subscription.add(n);
  };
  fillNames(policies);
  const now = options.now ?? Date.now;
  const counters = options.counters ?? counterStoreOf(settings, logger, now);
  const blocking = new BlockingConditions();
  if (options.blocking !== undefined) blocking.replace(options.blocking);
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
  const engine = new ThrottleEngine({
    policies,
    counters,
    blocking,
    switches: policyOptions,
    blockingEnabled: settings.blockingEnabled,
    counting: settings.counting,
    shared,
    onUnknownPolicy: (kind, name) =>
      logger.log('warn', 'throttle_unknown_policy', {
        kind,
        name,
        message: `${kind} policy "${name}" is not defined in ${source}: that level is not enforced for it`,
      }),
  });
  // A deployment that counts exact or leased joins the gateways' membership set at start (lib/throttle/quota-link.ts).
  if (settings.counting !== 'async' || usesShared(policies)) engine.startShared();
  let generation = 0;
  /** The file's or a text's result: refused with errors (the running policies stay), else swapped in. */
  const apply = (r: PoliciesResult, from: string): PolicyReload => {
    logDiagnostics(logger, r.diagnostics);
    if (r.policies === undefined) {
      const errors = r.diagnostics.filter((d) => d.level === 'error').map(formatPolicyDiagnostic);
      logger.log('error', 'throttle_policies_reload_refused', {
        file: from,
        errors: errors.length,
        message: `the policies ${from === settings.policiesFile ? 'file' : 'text'} has errors: the running policies stay`,
      });
      return { ok: false, errors };
    }
    policies = r.policies;
    source = from;
    engine.setPolicies(policies);
    fillNames(policies);
    generation++;
    logger.log('info', 'throttle_policies_reloaded', {
      file: from,
      subscription: policies.subscription.size,
      application: policies.application.size,
      api: policies.api.size,
      custom: policies.custom.length,
    });
    return { ok: true, errors: [] };
  };
  const throttle: Omit<Throttle, 'generation' | 'source' | 'shared'> = {
    engine,
    blocking,
    counters,
    settings,
    now,
    refused: new Map(),
    policies: () => policies,
    names: () => names,
    reload: () => apply(loadPolicies(settings.policiesFile, policyOptions), settings.policiesFile),
    loadText: (text, from) => apply(parsePolicies(text, from, policyOptions), from),
    close: async () => {
      await engine.shared?.close();
      await counters.close();
    },
  };
  // The two live values as accessors added after the object is made: an object literal with accessors is
  // made in dictionary mode, and the throttling phase's reads of `engine` and `now` on it were generic
  // property loads, about 80 instructions each per call under callgrind (docs/performance.md).
  return Object.defineProperties(throttle, {
    generation: { get: () => generation, enumerable: true },
    source: { get: () => source, enumerable: true },
    shared: { get: () => engine.shared, enumerable: true },
  }) as Throttle;
}

export { BlockingConditions, type BlockingCondition } from './blocking';
export { MemoryCounterStore, type CounterStore } from './counters';
export { ThrottleEngine, type ThrottleCall, type Verdict } from './engine';
export type { Policies } from './policies';
