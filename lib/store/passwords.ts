/**
 * Password and secret digests.
 *
 * User passwords are kept as scrypt (RFC 7914) of the password with a random 128-bit salt, N = 2^14,
 * r = 8, p = 1, 32 bytes (hash method `SCRYPT`, 16 MiB; 284 ms measured on the loaded 2-core build machine,
 * 30-50 ms on an idle core), computed off the event loop. A successful check is remembered for 60 s (an
 * HMAC under a key of this process, not the password), so the admin API's Basic credentials on every
 * request cost one scrypt a minute, not one a request. Hashes of `[user_store.properties] PasswordHashMethod` (spec 001: SHA, SHA-1, SHA-256,
 * MD5, PLAIN_TEXT over salt + password, base64, as the reference's JDBC user store keeps them; throughway
 * kept SHA-256 ones before scrypt) are still verified, and `needsUpgrade` tells the caller to store the
 * password again as scrypt after a successful sign-in (docs/security.md, "Secrets at rest").
 * Comparison is constant-time.
 *
 * Client secrets and refresh tokens: random 256-bit values, kept as their SHA-256 (hex): a slow KDF adds
 * nothing to a value with 256 bits of entropy.
 */
import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { PasswordHashMethod, Store, StoredHashMethod, User } from './types';

const ALGORITHMS: Readonly<Record<Exclude<PasswordHashMethod, 'PLAIN_TEXT'>, string>> = {
  SHA: 'sha1',
  'SHA-1': 'sha1',
  'SHA-256': 'sha256',
  MD5: 'md5',
};

/** scrypt cost (RFC 7914 §2): N = 2^14 uses 16 MiB (128 * N * r bytes). */
const SCRYPT = { N: 2 ** 14, r: 8, p: 1, keylen: 32, maxmem: 64 * 1024 * 1024 } as const;
/** Stored form: `<log2 N>:<r>:<p>:<base64 key>`, so a later cost change still verifies old hashes. */
const SCRYPT_FORM = /^(\d{1,2}):(\d{1,2}):(\d{1,2}):([A-Za-z0-9+/=]{1,200})$/;

/** A digest of `PasswordHashMethod` (the reference's JDBC user store form), for hashes imported from it. */
export function hashPassword(password: string, method: PasswordHashMethod, salt: string): string {
  if (method === 'PLAIN_TEXT') return password;
  return createHash(ALGORITHMS[method])
    .update(salt + password, 'utf8')
    .digest('base64');
}

export function newSalt(): string {
  return randomBytes(16).toString('base64url');
}

function scryptKey(password: string, salt: string, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, SCRYPT.keylen, { N, r, p, maxmem: SCRYPT.maxmem }, (err, key) =>
      err === null ? resolve(key) : reject(err),
    );
  });
}

export interface PasswordHash {
  readonly passwordHash: string;
  readonly salt: string;
  readonly hashMethod: StoredHashMethod;
}

/** A new password's stored form: scrypt with a fresh salt. */
export async function newPasswordHash(password: string): Promise<PasswordHash> {
  const salt = newSalt();
  const key = await scryptKey(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p);
  return { passwordHash: `${Math.log2(SCRYPT.N)}:${SCRYPT.r}:${SCRYPT.p}:${key.toString('base64')}`, salt, hashMethod: 'SCRYPT' };
}

const equal = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

/** Successful scrypt checks of the last VERIFIED_TTL ms: HMAC(process key, hash, salt, password) → expiry. */
const VERIFIED_TTL = 60_000;
const VERIFIED_MAX = 1000;
const verifiedKey = randomBytes(32);
const verified = new Map<string, number>();

export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  if (stored.hashMethod === 'SCRYPT') {
    const m = SCRYPT_FORM.exec(stored.passwordHash);
    if (m === null) return false;
    const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (ln < 10 || ln > 20 || r < 1 || p < 1 || 128 * 2 ** ln * r > SCRYPT.maxmem) return false;
    const mark = createHmac('sha256', verifiedKey)
      .update(`${stored.passwordHash}\0${stored.salt}\0`)
      .update(password, 'utf8')
      .digest('base64');
    const now = Date.now();
    const until = verified.get(mark);
    if (until !== undefined && until > now) return true;
    const ok = equal(await scryptKey(password, stored.salt, 2 ** ln, r, p), Buffer.from(m[4] as string, 'base64'));
    if (ok) {
      verified.delete(mark);
      if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value as string);
      verified.set(mark, now + VERIFIED_TTL);
    }
    return ok;
  }
  return equal(Buffer.from(hashPassword(password, stored.hashMethod, stored.salt), 'utf8'), Buffer.from(stored.passwordHash, 'utf8'));
}

/** True when a verified password should be stored again as scrypt (an older method or a lower cost). */
export function needsUpgrade(stored: PasswordHash): boolean {
  return stored.hashMethod !== 'SCRYPT' || !stored.passwordHash.startsWith(`${Math.log2(SCRYPT.N)}:${SCRYPT.r}:${SCRYPT.p}:`);
}

/**
 * The stored user a name typed at sign-in means (docs/user-stores.md, "Letter case of user names"): the
 * user of exactly that name; with `ignoreCase` (`[apim.devportal] login_username_case_insensitive`, true
 * by default as in the reference), else the one user whose name differs from it in letter case only, the
 * domain of a tenant user's name included (`JANE@Acme.Test` is `jane@acme.test`, so the match stays in
 * the tenant the name names). Two such users: none (the name is ambiguous). Without `ignoreCase` a
 * database whose collation ignores case (MariaDB's default) is held to the exact name too.
 */
export async function findSignInUser(store: Store, typed: string, ignoreCase: boolean): Promise<User | undefined> {
  const found = await store.getUser(typed);
  if (found !== undefined && (found.username === typed || ignoreCase)) return found;
  if (!ignoreCase) return undefined;
  const alike = await store.getUsersIgnoringCase(typed);
  return alike.length === 1 ? alike[0] : undefined;
}

/**
 * A user's password checked against the store; an older hash is stored again as scrypt once the password
 * is known to be right (docs/security.md, "Secrets at rest"). undefined: unknown user or wrong password.
 * The user is found as findSignInUser finds it; the stored user (its own name) is what is returned.
 */
export async function checkUserPassword(store: Store, username: string, password: string, ignoreCase = false): Promise<User | undefined> {
  const user = await findSignInUser(store, username, ignoreCase);
  // An unknown user costs a scrypt too, so timing does not tell which users exist.
  if (user === undefined) {
    await verifyPassword(password, DUMMY);
    return undefined;
  }
  if (!(await verifyPassword(password, user))) return undefined;
  if (needsUpgrade(user)) await store.setUserPassword(user.username, await newPasswordHash(password));
  return user;
}

const DUMMY: PasswordHash = { passwordHash: `14:8:1:${Buffer.alloc(32).toString('base64')}`, salt: 'no-such-user', hashMethod: 'SCRYPT' };

export function digest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function verifyDigest(secret: string, hex: string): boolean {
  const a = Buffer.from(digest(secret), 'hex');
  const b = Buffer.from(hex, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A random token value (refresh tokens, client secrets): 256 bits, base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
