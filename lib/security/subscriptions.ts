/**
 * The gateway's copy of what the key manager knows about applications, subscriptions and revoked
 * tokens (docs/events.md): filled from the key manager's snapshot, then kept current by its events, so
 * a blocked subscription or a revoked token takes effect on the next call, without a restart.
 *
 * Order (docs/events.md, "Starting from a snapshot"): subscribe first, read the snapshot, then apply the
 * events received meanwhile; every payload carries the whole record, so applying one twice is harmless.
 */
import type { AnyEvent, ApplicationPayload, EventBus, SubscriptionPayload } from '../events/bus';
import type { KeyType } from '../store/types';

export interface Snapshot {
  readonly applications: readonly ApplicationPayload[];
  readonly subscriptions: readonly SubscriptionPayload[];
  readonly revoked: readonly { readonly jti: string; readonly expiresAt: number }[];
}

export interface AppKey {
  readonly application: ApplicationPayload;
  readonly keyType: KeyType;
}

const subKey = (applicationId: string, context: string, version: string): string => `${applicationId}\u0000${context}\u0000${version}`;

export class SubscriptionStore {
  private readonly apps = new Map<string, ApplicationPayload>();
  private readonly byConsumerKey = new Map<string, AppKey>();
  private readonly subs = new Map<string, SubscriptionPayload>();
  private readonly subsById = new Map<string, string>();
  /** Revoked token ids -> until when (ms) they stay refused. */
  readonly revoked = new Map<string, number>();
  /** Bumped on every change: cached per-call decisions made under an older version are recomputed. */
  version = 0;
  private readonly revokedListeners: ((jti: string) => void)[] = [];

  application(consumerKey: string): AppKey | undefined {
    return this.byConsumerKey.get(consumerKey);
  }

  subscription(applicationId: string, context: string, version: string): SubscriptionPayload | undefined {
    return this.subs.get(subKey(applicationId, context, version));
  }

  isRevoked(jti: string, now: number): boolean {
    if (this.revoked.size === 0) return false;
    const until = this.revoked.get(jti);
    if (until === undefined) return false;
    if (until <= now) {
      this.revoked.delete(jti);
      return false;
    }
    return true;
  }

  onRevoked(listener: (jti: string) => void): void {
    this.revokedListeners.push(listener);
  }

  load(s: Snapshot): void {
    for (const a of s.applications) this.putApp(a);
    for (const sub of s.subscriptions) this.putSub(sub);
    for (const r of s.revoked) this.revoke(r.jti, r.expiresAt);
    this.version++;
  }

  apply(e: AnyEvent): void {
    switch (e.name) {
      case 'token.revoked':
        this.revoke(e.payload.jti, e.payload.expiresAt);
        break;
      case 'application.added':
      case 'application.changed':
        this.putApp(e.payload.application);
        break;
      case 'application.removed':
        this.removeApp(e.payload.application);
        break;
      case 'subscription.added':
      case 'subscription.changed':
        this.putSub(e.payload.subscription);
        break;
      case 'subscription.removed':
        this.removeSub(e.payload.subscription);
        break;
      default:
        return;
    }
    this.version++;
  }

  /** Follows `bus`; returns the unsubscribe function. */
  follow(bus: EventBus): () => void {
    return bus.subscribe((e) => this.apply(e));
  }

  private revoke(jti: string, expiresAt: number): void {
    this.revoked.set(jti, expiresAt);
    for (const l of this.revokedListeners) l(jti);
  }

  private putApp(a: ApplicationPayload): void {
    const old = this.apps.get(a.id);
    if (old !== undefined) for (const k of old.keys) this.byConsumerKey.delete(k.consumerKey);
    this.apps.set(a.id, a);
    for (const k of a.keys) this.byConsumerKey.set(k.consumerKey, { application: a, keyType: k.keyType });
  }

  private removeApp(a: ApplicationPayload): void {
    const old = this.apps.get(a.id) ?? a;
    for (const k of old.keys) this.byConsumerKey.delete(k.consumerKey);
    this.apps.delete(a.id);
    for (const [id, key] of this.subsById) {
      const s = this.subs.get(key);
      if (s?.applicationId === a.id) {
        this.subs.delete(key);
        this.subsById.delete(id);
      }
    }
  }

  private putSub(s: SubscriptionPayload): void {
    const old = this.subsById.get(s.id);
    if (old !== undefined) this.subs.delete(old);
    const key = subKey(s.applicationId, s.apiContext, s.apiVersion);
    this.subs.set(key, s);
    this.subsById.set(s.id, key);
  }

  private removeSub(s: SubscriptionPayload): void {
    const key = this.subsById.get(s.id) ?? subKey(s.applicationId, s.apiContext, s.apiVersion);
    this.subs.delete(key);
    this.subsById.delete(s.id);
  }
}
