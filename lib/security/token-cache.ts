/**
 * The gateway token cache ([apim.cache.gateway_token], or [apim.cache.km_token] for introspected tokens):
 * a validated token's identity, kept for `expiry_time` but never past the token's own `exp`, in an LRU
 * with a fixed `max` (lru-cache's documented behaviour: a `ttl` without `max` only warns, `ttlAutopurge` arms a timer
 * per entry, `allowStale` would serve an expired entry once: none of them here). Expiry is checked on
 * read against the injected clock, so a cached token is never accepted one millisecond past its `exp`.
 *
 * Entries are keyed by the token itself and indexed by `jti`, so the key manager's `token.revoked`
 * event evicts the token at once.
 */
import { LRUCache } from 'lru-cache';
import type { TokenIdentity } from './auth-context';

export interface CacheEntry {
  readonly identity: TokenIdentity;
  /** Epoch ms after which the entry is dead: min(now + expiry_time, exp). */
  readonly until: number;
  /** Per deployed API (its compiled object): the authentication context and backend JWT built for it. */
  readonly perApi: Map<object, unknown>;
}

export class TokenCache {
  private readonly lru: LRUCache<string, CacheEntry>;
  private readonly byJti = new Map<string, string>();
  /** Lookups answered from the cache, and those that were not (absent or expired): read at scrape time. */
  hits = 0;
  misses = 0;

  constructor(
    private readonly o: { readonly max: number; readonly expiry: number },
  ) {
    this.lru = new LRUCache<string, CacheEntry>({
      max: o.max,
      dispose: (v, _k, reason) => {
        if (reason !== 'set') this.byJti.delete(v.identity.tokenId);
      },
    });
  }

  get size(): number {
    return this.lru.size;
  }

  get(token: string, now: number): CacheEntry | undefined {
    const e = this.lru.get(token);
    if (e === undefined) {
      this.misses++;
      return undefined;
    }
    if (now >= e.until) {
      this.lru.delete(token);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return e;
  }

  set(token: string, identity: TokenIdentity, now: number): CacheEntry {
    const entry: CacheEntry = { identity, until: Math.min(now + this.o.expiry, identity.expiresAt), perApi: new Map() };
    if (entry.until > now) {
      this.lru.set(token, entry);
      if (identity.tokenId !== '') this.byJti.set(identity.tokenId, token);
    }
    return entry;
  }

  /** Drops the entry of the token with this id (revocation). */
  evict(jti: string): boolean {
    const token = this.byJti.get(jti);
    if (token === undefined) return false;
    this.byJti.delete(jti);
    return this.lru.delete(token);
  }

  clear(): void {
    this.lru.clear();
    this.byJti.clear();
  }
}
