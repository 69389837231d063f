/**
 * The key manager's signing keys (docs/key-manager.md, "Signing keys": generated on first start when none
 * is configured, and kept). Keys are RSA 2048 / RS256 JWKs kept in the store, so every node on a shared database signs
 * and publishes the same set. The newest unretired key signs; `rotate()` adds a new one and retires the
 * old, which stays in the JWKS (RFC 7517) until every token it signed has expired, then cleanup removes it.
 * `kid` is the RFC 7638 thumbprint.
 *
 * Each tenant has a key ring of its own (docs/tenants.md, "Signing keys"; the reference gives every tenant
 * its own keystore): its rows of tw_signing_key name it, its first key is made when the tenant is created
 * (or when it first needs one: a tenant made by the CLI's local mode, or before tenants had keys), and it
 * is rotated and retired as the super tenant's. The super tenant's ring is the one of before: its keys,
 * its kid and `/oauth2/jwks` do not change.
 *
 * With `[throughway.key_manager] signing_keystore` the signing key is instead the private key of that
 * `[custom_keystore.<name>]` (a PEM or PKCS#12 file, keystore.ts; RSA signs RS256, EC P-256 ES256): generated keys still in the
 * store are retired, and stay published until their tokens expire. Rotation is then replacing the file.
 *
 * With `[throughway.management] signing_key_secret` the generated private keys are kept encrypted in the
 * store (AES-256-GCM, NIST SP 800-38D; the key derived from the secret with scrypt, RFC 7914; the kid
 * authenticated with it), so a copy of the database file does not sign tokens. Keys stored unencrypted
 * before the secret was set are encrypted when the key ring opens (docs/security.md, "Secrets at rest").
 */
import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, randomBytes, scryptSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { SUPER_TENANT, type SigningKey, type Store } from '../store/types';
import { ThroughwayError } from '../errors';
import type { TenantKey } from '../security/keys';

export const SIGNING_ALG = 'RS256';

export interface ActiveKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  /** The DER certificate of a keystore's key (PEM or PKCS#12 with one): backend JWTs name its thumbprint. */
  readonly certificate?: Buffer;
}

/** A signing key from a keystore file (lib/keymanager/keystore.ts reads it). */
export interface ExternalKey {
  /** Where it came from, for messages: `[custom_keystore.<name>] <file>`. */
  readonly source: string;
  readonly privateKey: KeyObject;
  /** The key's certificate (DER) when the file holds one that matches it. */
  readonly certificate?: Buffer;
}

export class KeyRingError extends ThroughwayError {
  readonly code = 'KEY_RING';
}

function algOf(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  throw new KeyRingError(
    `a ${key.asymmetricKeyType ?? 'symmetric'}${key.asymmetricKeyDetails?.namedCurve !== undefined ? ` ${key.asymmetricKeyDetails.namedCurve}` : ''} key cannot sign tokens here: use RSA (RS256) or EC P-256 (ES256)`,
  );
}

export async function externalActiveKey(ext: ExternalKey): Promise<{ active: ActiveKey; publicJwk: JWK }> {
  const alg = algOf(ext.privateKey);
  const pub = createPublicKey(ext.privateKey).export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(pub);
  const privateKey = (await importJWK({ ...(ext.privateKey.export({ format: 'jwk' }) as JWK), alg }, alg)) as CryptoKey;
  return {
    active: { kid, alg, privateKey, ...(ext.certificate !== undefined ? { certificate: ext.certificate } : {}) },
    publicJwk: { ...pub, kid, alg, use: 'sig' },
  };
}

/** Reads a PEM private key (PKCS#8, PKCS#1 or SEC1; encrypted ones with the passphrase). */
export function readPemKey(pem: string | Buffer, passphrase: string | undefined, source: string): ExternalKey {
  try {
    return { source, privateKey: createPrivateKey({ key: pem, format: 'pem', ...(passphrase !== undefined ? { passphrase } : {}) }) };
  } catch (err) {
    throw new KeyRingError(`${source}: no readable private key: ${(err as Error).message}`);
  }
}

export interface KeyRing {
  /** The key that signs the super tenant's tokens now. */
  current(): ActiveKey;
  /** The super tenant's public keys to publish (JWKS `keys`, `/oauth2/jwks`): the signing key and retired keys still inside their grace period. */
  publicJwks(now?: number): JWK[];
  /** Reloads every tenant's keys from the store (another node may have rotated, or made a tenant's first key). */
  reload(): Promise<void>;
  /** Adds a new signing key of `tenant` (the super tenant's when not given) and retires its current one; resolves to the new kid. */
  rotate(tenant?: string): Promise<string>;
  /**
   * The key that signs `tenant`'s tokens (docs/tenants.md, "Signing keys"): current() for the super tenant;
   * a tenant's newest unretired key, made when the tenant has none yet.
   */
  signingKey(tenant: string): Promise<ActiveKey>;
  /** A tenant's public keys (`/t/<domain>/oauth2/jwks`), its first key made when it has none; the super tenant's are publicJwks(). */
  tenantJwks(tenant: string, now?: number): Promise<JWK[]>;
  /** The published key of a tenant other than the super tenant with this kid (inside its grace period), from memory. */
  tenantKey(kid: string, now?: number): TenantKey | undefined;
  /**
   * tenantKey(), and on a miss the tenants' keys read again from the store (another node on the same store
   * may have made or rotated a tenant's key), at most once per TENANT_KEY_RELOAD_MS however many unknown
   * kids are asked for, so made-up kids do not query the store on each token.
   */
  findTenantKey(kid: string): Promise<TenantKey | undefined>;
  /** Every tenant but the super tenant that has published keys, with them (a gateway-worker's pull). */
  tenantKeySets(now?: number): { readonly tenant: string; readonly keys: JWK[] }[];
}

/** Prefix of an encrypted private JWK in the store: `enc:v1:<iv>.<ciphertext>.<tag>` (base64url). */
const SEALED = 'enc:v1:';

/** Encrypts and decrypts stored private JWKs with the key derived from signing_key_secret. */
export class KeySealer {
  private readonly key: Buffer;
  constructor(secret: string) {
    if (secret === '') throw new KeyRingError('[throughway.management] signing_key_secret is empty');
    // A fixed salt: one key per secret, so every node sharing the store derives the same one.
    this.key = scryptSync(secret, 'throughway signing key v1', 32, { N: 2 ** 14, r: 8, p: 1 });
  }
  static isSealed(stored: string): boolean {
    return stored.startsWith(SEALED);
  }
  seal(privateJwk: string, kid: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(kid, 'utf8'));
    const ct = Buffer.concat([c.update(privateJwk, 'utf8'), c.final()]);
    return `${SEALED}${iv.toString('base64url')}.${ct.toString('base64url')}.${c.getAuthTag().toString('base64url')}`;
  }
  open(stored: string, kid: string): string {
    const [iv, ct, tag] = stored.slice(SEALED.length).split('.');
    try {
      const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv ?? '', 'base64url')).setAAD(Buffer.from(kid, 'utf8'));
      d.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct ?? '', 'base64url')), d.final()]).toString('utf8');
    } catch {
      throw new KeyRingError(
        `signing key ${kid} cannot be decrypted: [throughway.management] signing_key_secret is not the secret it was encrypted with`,
      );
    }
  }
}

/** The private JWK of a stored key, decrypted when it is encrypted. */
function privateJwkOf(k: SigningKey, sealer: KeySealer | undefined): string {
  if (!KeySealer.isSealed(k.privateJwk)) return k.privateJwk;
  if (sealer === undefined)
    throw new KeyRingError(
      `signing key ${k.kid} is stored encrypted: set [throughway.management] signing_key_secret to the secret it was encrypted with`,
    );
  return sealer.open(k.privateJwk, k.kid);
}

async function newKey(): Promise<Omit<SigningKey, 'retiredAt' | 'tenant'>> {
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

interface Published {
  readonly jwk: JWK;
  readonly retiredAt: number | null;
}

/** One tenant's ring in memory: its signing key (imported when it first signs) and its published keys. */
interface TenantRing {
  readonly signing: SigningKey | undefined;
  active: ActiveKey | undefined;
  readonly published: readonly Published[];
}

/** The shortest time between two reloads of the tenants' keys on an unknown kid (findTenantKey). */
export const TENANT_KEY_RELOAD_MS = 10_000;

const inGrace = (k: Published, graceMs: number, now: number): boolean => k.retiredAt === null || k.retiredAt + graceMs > now;

/**
 * @param graceMs how long a retired key stays published: the longest validity of a token it signed
 *   (access, ID) plus the allowed clock skew.
 */
export async function openKeyRing(store: Store, graceMs: number, external?: ExternalKey, sealer?: KeySealer): Promise<KeyRing> {
  let active: ActiveKey | undefined;
  // Migration: keys stored before signing_key_secret was set are encrypted now (every tenant's).
  if (sealer !== undefined) {
    for (const k of await store.listSigningKeys())
      if (!KeySealer.isSealed(k.privateJwk)) await store.setSigningKeyPrivate(k.kid, sealer.seal(k.privateJwk, k.kid));
  }
  const sealed = async (): Promise<Omit<SigningKey, 'retiredAt' | 'tenant'>> => {
    const k = await newKey();
    return sealer === undefined ? k : { ...k, privateJwk: sealer.seal(k.privateJwk, k.kid) };
  };
  const importActive = async (k: SigningKey): Promise<ActiveKey> => ({
    kid: k.kid,
    alg: k.alg,
    privateKey: (await importJWK(JSON.parse(privateJwkOf(k, sealer)) as JWK, k.alg)) as CryptoKey,
  });
  let published: Published[] = [];

  const ext = external === undefined ? undefined : await externalActiveKey(external);
  const loadExternal = async (e: { active: ActiveKey; publicJwk: JWK }): Promise<void> => {
    const at = Date.now();
    let keys = await store.listSigningKeys(SUPER_TENANT);
    for (const k of keys) if (k.retiredAt === null) await store.retireSigningKey(k.kid, at);
    keys = await store.listSigningKeys(SUPER_TENANT);
    active = e.active;
    published = [
      { jwk: e.publicJwk, retiredAt: null },
      ...keys.filter((k) => k.kid !== e.active.kid).map((k) => ({ jwk: JSON.parse(k.publicJwk) as JWK, retiredAt: k.retiredAt })),
    ];
  };

  const load = async (): Promise<void> => {
    if (ext !== undefined) return loadExternal(ext);
    let keys = await store.listSigningKeys(SUPER_TENANT);
    if (!keys.some((k) => k.retiredAt === null)) {
      await store.addSigningKey(await sealed());
      keys = await store.listSigningKeys(SUPER_TENANT);
    }
    // listSigningKeys is newest first; two nodes generating at once both insert, the newest wins everywhere.
    const signing = keys.find((k) => k.retiredAt === null);
    if (signing === undefined) throw new KeyRingError('no signing key after generating one');
    if (active?.kid !== signing.kid) active = await importActive(signing);
    published = keys.map((k) => ({ jwk: JSON.parse(k.publicJwk) as JWK, retiredAt: k.retiredAt }));
  };

  // The tenants' rings (docs/tenants.md, "Signing keys"): generated keys only, whatever signing_keystore
  // says (that keystore is the super tenant's), encrypted with the same secret. A tenant's private key is
  // imported when it first signs, so a deployment of many tenants does not import every key at start.
  let tenants = new Map<string, TenantRing>();
  let byKid = new Map<string, { readonly tenant: string; readonly key: Published }>();
  const ringOf = (keys: readonly SigningKey[], was: TenantRing | undefined): TenantRing => {
    const signing = keys.find((k) => k.retiredAt === null);
    return {
      signing,
      active: signing !== undefined && was?.active?.kid === signing.kid ? was.active : undefined,
      published: keys.map((k) => ({ jwk: JSON.parse(k.publicJwk) as JWK, retiredAt: k.retiredAt })),
    };
  };
  const index = (): void => {
    const next = new Map<string, { tenant: string; key: Published }>();
    for (const [tenant, r] of tenants) for (const key of r.published) if (key.jwk.kid !== undefined) next.set(key.jwk.kid, { tenant, key });
    byKid = next;
  };
  const loadTenants = async (): Promise<void> => {
    const grouped = new Map<string, SigningKey[]>();
    for (const k of await store.listSigningKeys()) {
      if (k.tenant === SUPER_TENANT) continue;
      let g = grouped.get(k.tenant);
      if (g === undefined) grouped.set(k.tenant, (g = []));
      g.push(k);
    }
    const next = new Map<string, TenantRing>();
    for (const [tenant, keys] of grouped) next.set(tenant, ringOf(keys, tenants.get(tenant)));
    tenants = next;
    index();
  };
  const loadTenant = async (tenant: string): Promise<TenantRing> => {
    const r = ringOf(await store.listSigningKeys(tenant), tenants.get(tenant));
    tenants.set(tenant, r);
    index();
    return r;
  };
  // One first key per tenant from this process, however many tokens ask at once.
  const making = new Map<string, Promise<TenantRing>>();
  const withKey = async (tenant: string): Promise<TenantRing> => {
    const had = tenants.get(tenant);
    if (had?.signing !== undefined) return had;
    let p = making.get(tenant);
    if (p === undefined) {
      p = (async () => {
        // Another node on the same store may have made it.
        let r = await loadTenant(tenant);
        if (r.signing === undefined) {
          await store.addSigningKey({ ...(await sealed()), tenant });
          r = await loadTenant(tenant);
        }
        if (r.signing === undefined) throw new KeyRingError(`tenant ${tenant} has no signing key after generating one`);
        return r;
      })().finally(() => making.delete(tenant));
      making.set(tenant, p);
    }
    return p;
  };

  await load();
  await loadTenants();
  let reloadedAt = Date.now();
  let reloading: Promise<void> | undefined;

  const ring: KeyRing = {
    current() {
      if (active === undefined) throw new KeyRingError('key ring not loaded');
      return active;
    },
    publicJwks(now = Date.now()) {
      return published.filter((k) => inGrace(k, graceMs, now)).map((k) => k.jwk);
    },
    async reload() {
      await load();
      await loadTenants();
    },
    async rotate(tenant = SUPER_TENANT) {
      if (tenant === SUPER_TENANT && external !== undefined)
        throw new KeyRingError(`the signing key comes from ${external.source}: replace that file and restart to rotate`);
      const before = (await store.listSigningKeys(tenant)).filter((k) => k.retiredAt === null);
      const next = await sealed();
      await store.addSigningKey({ ...next, tenant });
      const at = Date.now();
      for (const k of before) await store.retireSigningKey(k.kid, at);
      if (tenant === SUPER_TENANT) await load();
      else await loadTenant(tenant);
      return next.kid;
    },
    async signingKey(tenant) {
      if (tenant === SUPER_TENANT) return ring.current();
      const r = await withKey(tenant);
      const signing = r.signing as SigningKey;
      if (r.active?.kid !== signing.kid) r.active = await importActive(signing);
      return r.active;
    },
    async tenantJwks(tenant, now = Date.now()) {
      if (tenant === SUPER_TENANT) return ring.publicJwks(now);
      return (await withKey(tenant)).published.filter((k) => inGrace(k, graceMs, now)).map((k) => k.jwk);
    },
    tenantKey(kid, now = Date.now()) {
      const k = byKid.get(kid);
      return k === undefined || !inGrace(k.key, graceMs, now) ? undefined : { tenant: k.tenant, jwk: k.key.jwk };
    },
    async findTenantKey(kid) {
      const had = ring.tenantKey(kid);
      if (had !== undefined || byKid.has(kid)) return had;
      if (reloading === undefined && Date.now() - reloadedAt >= TENANT_KEY_RELOAD_MS) {
        reloadedAt = Date.now();
        reloading = loadTenants().finally(() => {
          reloading = undefined;
        });
      }
      if (reloading !== undefined) await reloading;
      return ring.tenantKey(kid);
    },
    tenantKeySets(now = Date.now()) {
      const out: { tenant: string; keys: JWK[] }[] = [];
      for (const [tenant, r] of tenants) {
        const keys = r.published.filter((k) => inGrace(k, graceMs, now)).map((k) => k.jwk);
        if (keys.length > 0) out.push({ tenant, keys });
      }
      return out;
    },
  };
  return ring;
}
