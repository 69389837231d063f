/**
 * The Redis URLs of the loaded configuration (docs/scale-out.md, docs/throttling.md): which of the event
 * hub and throttle decision keys name a Redis throughway can use. Read by the configuration check, the
 * throttle settings and the scale-out settings (lib/scale/settings.ts).
 *
 * Event hub endpoints: the spec's `[apim.event_hub] event_listening_endpoints`, `event_duplicate_url`
 * and `[apim.throttling] throttle_decision_endpoints` carry JMS URLs (`tcp://host:5672`) in real files.
 * throughway has no JMS broker: Redis pub/sub is the one hub. The first `redis://` (or `rediss://`) URL of
 * those keys, in that order, is the hub; `tcp://` URLs are kept out and named in one warning.
 */
import type { DeploymentConfig } from './types';

export const isRedisUrl = (u: string): boolean => /^rediss?:\/\//i.test(u.trim());

const redisIn = (list: unknown): string | undefined =>
  Array.isArray(list) ? (list as unknown[]).find((u): u is string => typeof u === 'string' && isRedisUrl(u))?.trim() : undefined;

/**
 * The Redis of throttle data and decisions (`[throughway.throttling] counter_store = "traffic-manager"`,
 * lib/throttle/decisions.ts): the first redis:// URL of `[apim.throttling] throttle_decision_endpoints`
 * (the spec's decision connection), else of the event hub keys in the order above. Not switched off by
 * `[apim.event_hub] enable = false`: decisions are their own channel. Reads the loaded document
 * defensively: the configuration check calls it on a file that may have type errors elsewhere.
 */
export function decisionHubUrl(c: DeploymentConfig): string | undefined {
  const hub = c.apim?.event_hub;
  return (
    redisIn(c.apim?.throttling?.throttle_decision_endpoints) ?? redisIn(hub?.event_listening_endpoints) ?? redisIn(hub?.event_duplicate_url)
  );
}
