/**
 * The loaded configuration, read for throttling: [apim.throttling] (spec 000) and [throughway.throttling].
 * The one place that maps those keys; the engine and the counter stores never read TOML.
 */
import * as path from 'node:path';
import type { DeploymentConfig } from '../config/types';
import { decisionHubUrl } from '../config/hub';
import { throttleChannels } from './decisions';
import type { CountingMode, PolicyOptions } from './policies';

export interface ThrottleSettings {
  /** [throughway.throttling] policies_file, resolved against the configuration's directory. */
  readonly policiesFile: string;
  readonly counterStore: CounterStoreKind;
  readonly redisUrl: string;
  /** counter_store = "traffic-manager": the decision hub's Redis (lib/config/hub.ts decisionHubUrl). */
  readonly decisionUrl: string | undefined;
  /** The throttle data and decision channels under [throughway.scale] channel. */
  readonly channels: { readonly data: string; readonly decisions: string };
  /** [throughway.throttling] counting: the mode of policies without their own. */
  readonly counting: CountingMode;
  /** [throughway.throttling] cluster_nodes: Redis Cluster of the exact and leased counters (empty: redisUrl). */
  readonly clusterNodes: readonly string[];
  /** [throughway.throttling] command_timeout, ms. */
  readonly commandTimeout: number;
  /** ms between two batches to Redis. */
  readonly syncInterval: number;
  readonly maxCounters: number;
  /** [apim.throttling] enable_unlimited_tier. */
  readonly enableUnlimitedTier: boolean;
  /** [apim.throttling] enable_header_based_throttling, enable_query_param_based_throttling, enable_jwt_claim_based_throttling. */
  readonly headerConditions: boolean;
  readonly queryConditions: boolean;
  readonly claimConditions: boolean;
  /** [apim.throttling] enable_blacklist_condition. */
  readonly blockingEnabled: boolean;
  /** [apim.throttling] enable_data_publishing: this node's counts are sent to the shared store (or the traffic manager). */
  readonly dataPublishing: boolean;
  /** [apim.throttling] enable_decision_connection: the other nodes' counts (or the traffic manager's decisions) are read back. */
  readonly decisionConnection: boolean;
  /** [apim.throttling] enable_persistence: shared counters outlive their window by one window (restarts resume). */
  readonly persistence: boolean;
}

export type CounterStoreKind = 'memory' | 'redis' | 'traffic-manager';

export function throttleSettingsFrom(c: DeploymentConfig, dir: string): ThrottleSettings {
  const a = c.apim.throttling;
  const t = c.throughway.throttling;
  return Object.freeze({
    policiesFile: path.resolve(dir, t.policies_file),
    counterStore: t.counter_store as CounterStoreKind,
    redisUrl: t.redis_url,
    decisionUrl: decisionHubUrl(c),
    channels: throttleChannels(c.throughway.scale.channel),
    counting: t.counting,
    clusterNodes: Object.freeze([...t.cluster_nodes]),
    commandTimeout: t.command_timeout,
    syncInterval: t.sync_interval,
    maxCounters: t.max_counters,
    enableUnlimitedTier: a.enable_unlimited_tier,
    headerConditions: a.enable_header_based_throttling,
    queryConditions: a.enable_query_param_based_throttling,
    claimConditions: a.enable_jwt_claim_based_throttling,
    blockingEnabled: a.enable_blacklist_condition,
    dataPublishing: a.enable_data_publishing,
    decisionConnection: a.enable_decision_connection,
    persistence: a.enable_persistence,
  });
}

/** The switches the policies are validated with (a gateway's engine, a control plane's served file). */
export function policyOptionsOf(s: ThrottleSettings): PolicyOptions {
  return {
    enableUnlimitedTier: s.enableUnlimitedTier,
    headerConditions: s.headerConditions,
    queryConditions: s.queryConditions,
    claimConditions: s.claimConditions,
  };
}
