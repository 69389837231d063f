/**
 * The key manager's signing keys (issue 5: "key ... generated on first start when none is configured,
 * and kept"). Keys are RSA 2048 / RS256 JWKs kept in the store, so every node on a shared database signs
 * and publishes the same set. The newest unretired key signs; `rotate()` adds a new one and retires the
 * old, which stays in the JWKS (RFC 7517) until every token it signed has expired, then cleanup removes it.
 * `kid` is the RFC 7638 thumbprint.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { SigningKey, Store } from '../store/types';

export const SIGNING_ALG = 'RS256';

export interface ActiveKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
}

export interface KeyRing {
  /** The key that signs now. */
  current(): ActiveKey;
  /** Public keys to publish (JWKS `keys`): the signing key and retired keys still inside their grace period. */
  publicJwks(now?: number): JWK[];
  /** Reloads from the store (another node may have rotated). */
  reload(): Promise<void>;
  /** Adds a new signing key and retires the current one; resolves to the new kid. */
  rotate(): Promise<string>;
}

async function newKey(): Promise<Omit<SigningKey, 'retiredAt'>> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { modulusLength: 2048, extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  const priv = await exportJWK(privateKey);
  return {
    kid,
    alg: SIGNING_ALG,
    privateJwk: JSON.stringify({ ...priv, kid, alg: SIGNING_ALG }),
    publicJwk: JSON.stringify({ ...pub, kid, alg: SIGNING_ALG, use: 'sig' }),
    createdAt: Date.now(),
  };
}

/**
 * @param graceMs how long a retired key stays published: the longest validity of a token it signed
 *   (access, ID) plus the allowed clock skew.
 */
export async function openKeyRing(store: Store, graceMs: number): Promise<KeyRing> {
  let active: ActiveKey | undefined;
  let published: { jwk: JWK; retiredAt: number | null }[] = [];

  const load = async (): Promise<void> => {
    let keys = await store.listSigningKeys();
    if (!keys.some((k) => k.retiredAt === null)) {
      await store.addSigningKey(await newKey());
      keys = await store.listSigningKeys();
    }
    // listSigningKeys is newest first; two nodes generating at once both insert, the newest wins everywhere.
    const signing = keys.find((k) => k.retiredAt === null);
    if (signing === undefined) throw new Error('no signing key after generating one');
    if (active?.kid !== signing.kid) {
      const privateKey = (await importJWK(JSON.parse(signing.privateJwk) as JWK, signing.alg)) as CryptoKey;
      active = { kid: signing.kid, alg: signing.alg, privateKey };
    }
    published = keys.map((k) => ({ jwk: JSON.parse(k.publicJwk) as JWK, retiredAt: k.retiredAt }));
  };
  await load();

  return {
    current() {
      if (active === undefined) throw new Error('key ring not loaded');
      return active;
    },
    publicJwks(now = Date.now()) {
      return published.filter((k) => k.retiredAt === null || k.retiredAt + graceMs > now).map((k) => k.jwk);
    },
    reload: load,
    async rotate() {
      const before = (await store.listSigningKeys()).filter((k) => k.retiredAt === null);
      const next = await newKey();
      await store.addSigningKey(next);
      const at = Date.now();
      for (const k of before) await store.retireSigningKey(k.kid, at);
      await load();
      return next.kid;
    },
  };
}
