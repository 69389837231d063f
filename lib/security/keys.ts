/**
 * Where token signature keys come from: the built-in key manager's key ring (in the same process: read
 * directly, no HTTP) and each [[apim.jwt.issuer]]'s JWKS endpoint (RFC 7517), fetched once, kept, and
 * fetched again when a token names a `kid` not in it (key rotation), at most once per
 * [throughway.security] jwks_refetch_interval so a flood of tokens with made-up kids cannot turn the
 * gateway into a load generator against the issuer.
 *
 * When the endpoint is down, keys already fetched keep serving. A token whose key was never fetched
 * cannot be judged: that is the spec's 900900 (500), never a false 401.
 */
import type { CryptoKey, JWK, KeyObject } from 'jose';
import { jose } from './jose';
import type { Logger } from '../log';

export type VerifyKey = CryptoKey | KeyObject | Uint8Array;

/** What a key look-up found. */
export type KeyLookup =
  | { readonly key: VerifyKey; readonly jwk: JWK }
  /** The set is known and has no such key: the token is invalid (900901). */
  | { readonly unknown: true }
  /** The key set could not be read: the token cannot be judged (900900). */
  | { readonly unavailable: string };

/** Imports JWKs once per (kid, alg). */
class KeyCache {
  private readonly imported = new Map<string, VerifyKey>();

  async get(jwk: JWK, alg: string): Promise<VerifyKey> {
    const id = `${jwk.kid ?? ''}\u0000${alg}\u0000${jwk.n ?? jwk.x ?? ''}`;
    let k = this.imported.get(id);
    if (k === undefined) {
      k = await jose().importJWK(jwk, alg);
      if (this.imported.size > 256) this.imported.clear();
      this.imported.set(id, k);
    }
    return k;
  }
}

/** Finds the JWK for a token header: by kid, or the only key when the token names none. */
export function pick(keys: readonly JWK[], kid: string | undefined): JWK | undefined {
  const usable = keys.filter((k) => k.use === undefined || k.use === 'sig');
  if (kid === undefined) return usable.length === 1 ? usable[0] : undefined;
  return usable.find((k) => k.kid === kid);
}

/** A published key of a tenant's ring (docs/tenants.md, "Signing keys"; lib/keymanager/keys.ts holds the rings): whose it is and its public JWK. */
export interface TenantKey {
  readonly tenant: string;
  readonly jwk: JWK;
}

/**
 * The built-in key manager's published keys, read live from its key ring: the super tenant's (lookup) and,
 * when the link gives them, each tenant's by kid (lookupTenant), the key manager's or the control plane's
 * bounded re-read on an unknown kid included.
 */
export class LocalKeySource {
  private readonly cache = new KeyCache();

  constructor(
    private readonly publicJwks: () => JWK[],
    private readonly tenantKey?: (kid: string) => Promise<TenantKey | undefined>,
  ) {}

  async lookup(kid: string | undefined, alg: string): Promise<KeyLookup> {
    const jwk = pick(this.publicJwks(), kid);
    if (jwk === undefined) return { unknown: true };
    return { key: await this.cache.get(jwk, alg), jwk };
  }

  /** A key of `tenant`'s ring by kid (a tenant's tokens always name one); unknown for another tenant's. */
  async lookupTenant(kid: string | undefined, alg: string, tenant: string): Promise<KeyLookup> {
    const found = kid === undefined || this.tenantKey === undefined ? undefined : await this.tenantKey(kid);
    if (found === undefined || found.tenant !== tenant || (found.jwk.use !== undefined && found.jwk.use !== 'sig'))
      return { unknown: true };
    return { key: await this.cache.get(found.jwk, alg), jwk: found.jwk };
  }
}

export interface RemoteKeyState {
  readonly url: string;
  /** Keys held (from the last good fetch). */
  readonly keys: number;
  readonly lastFetchAt: number | undefined;
  readonly lastSuccessAt: number | undefined;
  /** Why the last fetch failed; undefined when it succeeded. */
  readonly error: string | undefined;
}

/** One issuer's JWKS endpoint. */
export class RemoteKeySource {
  private keys: JWK[] = [];
  private lastFetchAt: number | undefined;
  private lastSuccessAt: number | undefined;
  private error: string | undefined;
  private inflight: Promise<void> | undefined;
  private readonly cache = new KeyCache();

  constructor(
    readonly url: string,
    private readonly o: {
      readonly refetchInterval: number;
      readonly timeout: number;
      readonly now: () => number;
      readonly logger: Logger;
      readonly issuer: string;
    },
  ) {}

  state(): RemoteKeyState {
    return { url: this.url, keys: this.keys.length, lastFetchAt: this.lastFetchAt, lastSuccessAt: this.lastSuccessAt, error: this.error };
  }

  async lookup(kid: string | undefined, alg: string): Promise<KeyLookup> {
    let jwk = pick(this.keys, kid);
    if (jwk === undefined) {
      const now = this.o.now();
      const mayFetch = this.lastFetchAt === undefined || now - this.lastFetchAt >= this.o.refetchInterval;
      if (mayFetch) await this.refresh();
      jwk = pick(this.keys, kid);
      if (jwk === undefined) {
        // Known set without that kid: invalid. A set never read, or a failed last read: cannot judge.
        if (this.error !== undefined) return { unavailable: `the JWKS of issuer ${this.o.issuer} cannot be read: ${this.error}` };
        return { unknown: true };
      }
    }
    return { key: await this.cache.get(jwk, alg), jwk };
  }

  /** Fetches the set now (one fetch at a time; callers during a fetch share it). */
  refresh(): Promise<void> {
    this.inflight ??= this.fetchOnce().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async fetchOnce(): Promise<void> {
    this.lastFetchAt = this.o.now();
    try {
      const res = await fetch(this.url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.o.timeout),
        redirect: 'error',
      });
      // eslint-disable-next-line no-restricted-syntax -- caught below: the key set's fetch error, kept as its state
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      const body = (await res.json()) as { keys?: unknown };
      // eslint-disable-next-line no-restricted-syntax -- caught below: the key set's fetch error, kept as its state
      if (!Array.isArray(body.keys)) throw new Error('the answer has no "keys" array (RFC 7517 §5)');
      const was = this.error;
      this.keys = body.keys.filter((k): k is JWK => typeof k === 'object' && k !== null && typeof (k as JWK).kty === 'string');
      this.lastSuccessAt = this.lastFetchAt;
      this.error = undefined;
      this.o.logger.log(was !== undefined ? 'warn' : 'info', was !== undefined ? 'jwks_recovered' : 'jwks_fetched', {
        issuer: this.o.issuer,
        url: this.url,
        keys: this.keys.length,
      });
    } catch (err) {
      const e = err as Error;
      this.error =
        e.name === 'TimeoutError' ? `no answer within ${this.o.timeout} ms` : ((e.cause as Error | undefined)?.message ?? e.message);
      this.o.logger.log('warn', 'jwks_unreachable', {
        issuer: this.o.issuer,
        url: this.url,
        message: this.error,
        cachedKeys: this.keys.length,
      });
    }
  }
}
