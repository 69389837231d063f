/**
 * Blocking conditions as data (spec 002 part 7: 900805 "blocked by user, IP, application or API context";
 * spec 000 [apim.throttling] enable_blacklist_condition): their types, their shape as stored and as carried
 * by the blocking.added and blocking.removed events (docs/events.md), and the check of a value against its
 * type. The key manager validates with it; the throttle engine enforces (lib/throttle/blocking.ts).
 */
import { ipMatcher } from './ip';

export const BLOCKING_TYPES = ['API', 'APPLICATION', 'USER', 'IP', 'IP_RANGE'] as const;
export type BlockingType = (typeof BLOCKING_TYPES)[number];

export interface BlockingCondition {
  readonly id: string;
  readonly type: BlockingType;
  /**
   * API: a context with or without its version ("/pizzashack/1.0.0" or "/pizzashack": every version);
   * APPLICATION: "owner:name" as in the reference, or the application's name or id;
   * USER: the end user; IP: an address; IP_RANGE: "start-end" or CIDR.
   */
  readonly value: string;
  /** IP and IP_RANGE only: block every address except these. */
  readonly invert: boolean;
  /**
   * The tenant whose condition it is (docs/tenants.md, "Blocking conditions"): it applies to calls of that
   * tenant's APIs only. Absent: the super tenant's (a condition from an older node, an embedder's).
   */
  readonly tenant?: string;
}

/** Why a value cannot be a condition of its type, or undefined when it can. */
export function checkBlockingCondition(type: string, value: string): string | undefined {
  if (!(BLOCKING_TYPES as readonly string[]).includes(type)) return `type must be one of ${BLOCKING_TYPES.join(', ')}`;
  if (value.trim() === '') return 'value is required';
  if (type === 'IP' && ipMatcher('ip', value) === undefined) return `${JSON.stringify(value)} is not an IP address`;
  if (type === 'IP_RANGE' && ipMatcher('ip_range', value) === undefined)
    return `${JSON.stringify(value)} is not an IP range ("10.0.0.1-10.0.0.9" or CIDR "10.0.0.0/8")`;
  if (type === 'API' && !value.startsWith('/')) return `${JSON.stringify(value)} is not an API context (e.g. "/pizzashack/1.0.0")`;
  return undefined;
}
