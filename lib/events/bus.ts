/**
 * The in-process event bus: every change a gateway must know about (spec 002, part 6: token revocation
 * notifications, control plane events) is published here by the key manager, and the gateway in the
 * same process subscribes (docs/events.md). Across processes the same envelopes travel over Redis pub/sub
 * (docs/scale-out.md), which is why an event is plain JSON: `{ name, id, time, payload }`. docs/events.md
 * describes each name and payload.
 *
 * Delivery is synchronous and in publication order; a subscriber that throws does not stop the others
 * or the publisher (its error goes to `onError`).
 */
import { randomUUID } from 'node:crypto';
import type { BlockingCondition } from './blocking';
import type { ApplicationPayload, SubscriptionPayload, SubscriptionState } from './payloads';

export type { ApplicationPayload, SubscriptionPayload } from './payloads';

export interface EventPayloads {
  /** A token was revoked: refuse any JWT with this `jti` until `expiresAt` ([apim.token.revocation] realtime notifier). */
  'token.revoked': { readonly jti: string; readonly expiresAt: number; readonly consumerKey: string; readonly revokedAt: number };
  'application.added': { readonly application: ApplicationPayload };
  /** Tier, owner or keys changed (keys generated or removed). */
  'application.changed': { readonly application: ApplicationPayload };
  'application.removed': { readonly application: ApplicationPayload };
  'subscription.added': { readonly subscription: SubscriptionPayload };
  /** Its state (UNBLOCKED, BLOCKED, PROD_ONLY_BLOCKED, ON_HOLD) or tier changed. */
  'subscription.changed': { readonly subscription: SubscriptionPayload; readonly previousState: SubscriptionState };
  'subscription.removed': { readonly subscription: SubscriptionPayload };
  /** A throttling policy was added, changed or removed. */
  'policy.changed': {
    readonly kind: 'application' | 'subscription' | 'api' | 'global';
    readonly name: string;
    readonly change: 'added' | 'changed' | 'removed';
  };
  /** A blocking condition was added: calls it matches get 900805 (docs/throttling.md). */
  'blocking.added': { readonly condition: BlockingCondition };
  'blocking.removed': { readonly condition: BlockingCondition };
  /**
   * An API definition file in the control plane's apis/ directory was added or changed (API deploy
   * and undeploy, docs/scale-out.md): its whole text, so a gateway-worker needs no second call to deploy it.
   */
  'api.deployed': ApiDeploymentPayload;
  /** It was removed (or no longer parses, never having parsed: see docs/scale-out.md). */
  'api.undeployed': { readonly file: string; readonly labels: readonly string[] };
  /** The control plane's throttling policies file changed (SIGHUP or a change seen in its directory). */
  'policies.updated': { readonly text: string; readonly revision: string };
}

/** One API definition file as the control plane serves it (GET /admin/v1/deployments, `api.deployed`). */
export interface ApiDeploymentPayload {
  /** The file's name in the control plane's apis/ directory (e.g. `shop.toml`). */
  readonly file: string;
  readonly text: string;
  /** Its `labels` (default ["Default"]): which gateways deploy it ([apim.sync_runtime_artifacts.gateway]). */
  readonly labels: readonly string[];
  /**
   * A GraphQL API's SDL schema file (docs/graphql.md), read beside the API file: `file` is its
   * `[graphql] schema` value. Absent when the API has none or it could not be read.
   */
  readonly schema?: { readonly file: string; readonly text: string };
  /**
   * A gRPC API's .proto files (docs/grpc.md), those its `[grpc] proto` names and their imports, by name
   * relative to the API file's directory. Absent when it has none or they could not be served.
   */
  readonly protos?: readonly { readonly file: string; readonly text: string }[];
  /** sha256 of the text (and of the schema's and .proto files', when served), hex: what changed is told from what did not. */
  readonly revision: string;
}

export type EventName = keyof EventPayloads;

export const EVENT_NAMES: readonly EventName[] = [
  'token.revoked',
  'application.added',
  'application.changed',
  'application.removed',
  'subscription.added',
  'subscription.changed',
  'subscription.removed',
  'policy.changed',
  'blocking.added',
  'blocking.removed',
  'api.deployed',
  'api.undeployed',
  'policies.updated',
];

export interface Event<N extends EventName = EventName> {
  readonly name: N;
  /** Unique per event (a Redis subscriber that also published it skips its own). */
  readonly id: string;
  /** Epoch milliseconds. */
  readonly time: number;
  readonly payload: EventPayloads[N];
}

export type AnyEvent = { [N in EventName]: Event<N> }[EventName];

export interface EventBus {
  publish<N extends EventName>(name: N, payload: EventPayloads[N]): Event<N>;
  /** Delivers an event that arrived from elsewhere (Redis) to the local subscribers, unchanged. */
  deliver(event: AnyEvent): void;
  /** Every event; returns the unsubscribe function. */
  subscribe(handler: (event: AnyEvent) => void): () => void;
  /** One event name; returns the unsubscribe function. */
  on<N extends EventName>(name: N, handler: (event: Event<N>) => void): () => void;
}

export function createEventBus(onError: (err: unknown, event: AnyEvent) => void = () => undefined): EventBus {
  const all = new Set<(event: AnyEvent) => void>();
  const deliver = (event: AnyEvent): void => {
    for (const h of [...all]) {
      try {
        h(event);
      } catch (err) {
        onError(err, event);
      }
    }
  };
  return {
    publish(name, payload) {
      const event = { name, id: randomUUID(), time: Date.now(), payload } as Event<typeof name>;
      deliver(event as unknown as AnyEvent);
      return event;
    },
    deliver,
    subscribe(handler) {
      all.add(handler);
      return () => void all.delete(handler);
    },
    on(name, handler) {
      const h = (event: AnyEvent): void => {
        if (event.name === name) handler(event as unknown as Event<typeof name>);
      };
      all.add(h);
      return () => void all.delete(h);
    },
  };
}
