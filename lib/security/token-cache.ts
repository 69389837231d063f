/**
 * The gateway token cache ([apim.cache.gateway_token], or [apim.cache.km_token] for introspected tokens):
 * a validated token's identity, kept for `expiry_time` but never past the token's own `exp`, in an LRU
 * with a fixed `max` (lru-cache's documented behaviour: a `ttl` without `max` only warns, `ttlAutopurge` arms a timer
 * per entry, `allowStale` would serve an expired entry once: none of them here). Expiry is checked on
 * read against the injected clock, so a cached token is never accepted one millisecond past its `exp`.
 *
 * Entries are indexed by `jti`, so the key manager's `token.revoked` event evicts the token at once.
 *
 * The LRU's key is the token's last KEY_TAIL characters (the whole token when shorter), and the entry
 * holds the whole token, compared on every hit. Keying by the whole token made V8 hash every call's fresh
 * header string end to end (a JWT of the built-in key manager is about 900 characters): 4.4 % of the
 * full gateway's CPU under load (perf, docs/performance.md). A JWT ends with its signature, so the tail
 * tells tokens apart; two tokens with the same tail share one slot, and the second one in is a miss
 * for the first (validated again), never a hit.
 *
 * The entry of the last hit is kept apart: a call carrying the same token again (one client's keep-alive
 * connection, or many clients of one application) is answered by comparing the whole token with it,
 * without slicing and hashing its tail or the LRU's bookkeeping (docs/performance.md, "Counting
 * instructions"). It is dropped whenever the LRU lets the entry go (dispose: evicted, deleted, replaced,
 * cleared), and moved to the LRU's most recent place before every insert, so that the LRU never evicts
 * the entry hits skip it for.
 */
import { LRUCache } from 'lru-cache';
import type { TokenIdentity } from './auth-context';

export interface CacheEntry {
  /** The token itself: a hit needs the whole of it to match. */
  readonly token: string;
  readonly identity: TokenIdentity;
  /** Epoch ms after which the entry is dead: min(now + expiry_time, exp). */
  readonly until: number;
  /** Per deployed API (its compiled object): the authentication context and backend JWT built for it. */
  readonly perApi: Map<object, unknown>;
}

/** Characters of the token's end that key the LRU (43 base64url characters are an RS256/HS256 signature's last 32 bytes). */
const KEY_TAIL = 43;

/** The LRU key of a token: its tail (a sliced string of the header value, hashed over 43 characters). */
function keyOf(token: string): string {
  return token.length <= KEY_TAIL ? token : token.slice(token.length - KEY_TAIL);
}

export class TokenCache {
  private readonly lru: LRUCache<string, CacheEntry>;
  private readonly byJti = new Map<string, string>();
  /** Lookups answered from the cache, and those that were not (absent or expired): read at scrape time. */
  hits = 0;
  misses = 0;
  /** The entry of the last hit, while the LRU holds it. */
  private last: CacheEntry | undefined;

  constructor(private readonly o: { readonly max: number; readonly expiry: number }) {
    this.lru = new LRUCache<string, CacheEntry>({
      max: o.max,
      dispose: (v, _k, reason) => {
        if (v === this.last) this.last = undefined;
        if (reason !== 'set') this.byJti.delete(v.identity.tokenId);
      },
    });
  }

  get size(): number {
    return this.lru.size;
  }

  get(token: string, now: number): CacheEntry | undefined {
    const last = this.last;
    if (last !== undefined && now < last.until && last.token === token) {
      this.hits++;
      return last;
    }
    const key = keyOf(token);
    const e = this.lru.get(key);
    if (e === undefined || e.token !== token) {
      this.misses++;
      return undefined;
    }
    if (now >= e.until) {
      this.lru.delete(key);
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.last = e;
    return e;
  }

  set(token: string, identity: TokenIdentity, now: number): CacheEntry {
    const entry: CacheEntry = { token, identity, until: Math.min(now + this.o.expiry, identity.expiresAt), perApi: new Map() };
    if (entry.until > now) {
      // The last hit's entry was used more recently than the LRU knows: tell it before it evicts.
      if (this.last !== undefined) this.lru.get(keyOf(this.last.token));
      const key = keyOf(token);
      // Another token with the same tail gives up its slot and its jti index.
      const old = this.lru.peek(key);
      if (old !== undefined && old.token !== token && this.byJti.get(old.identity.tokenId) === old.token)
        this.byJti.delete(old.identity.tokenId);
      this.lru.set(key, entry);
      if (identity.tokenId !== '') this.byJti.set(identity.tokenId, token);
    }
    return entry;
  }

  /** Drops the entry of the token with this id (revocation). */
  evict(jti: string): boolean {
    const token = this.byJti.get(jti);
    if (token === undefined) return false;
    this.byJti.delete(jti);
    const key = keyOf(token);
    if (this.lru.peek(key)?.token !== token) return false;
    return this.lru.delete(key);
  }

  clear(): void {
    this.lru.clear();
    this.byJti.clear();
  }
}
