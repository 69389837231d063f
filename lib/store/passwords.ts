/**
 * Password and secret digests.
 *
 * User passwords: `[user_store.properties] PasswordHashMethod` (spec 001: SHA, SHA-1, SHA-256, MD5,
 * PLAIN_TEXT) over salt + password, base64, as the reference's JDBC user store keeps them; SHA-256 when
 * the key is unset. The method is stored per user, so changing the setting affects new passwords only.
 * Comparison is constant-time.
 *
 * Client secrets and refresh tokens: random 256-bit values, kept as their SHA-256 (hex).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PasswordHashMethod } from './types';

const ALGORITHMS: Readonly<Record<Exclude<PasswordHashMethod, 'PLAIN_TEXT'>, string>> = { SHA: 'sha1', 'SHA-1': 'sha1', 'SHA-256': 'sha256', MD5: 'md5' };

export function hashPassword(password: string, method: PasswordHashMethod, salt: string): string {
  if (method === 'PLAIN_TEXT') return password;
  return createHash(ALGORITHMS[method]).update(salt + password, 'utf8').digest('base64');
}

export function newSalt(): string {
  return randomBytes(16).toString('base64url');
}

export function verifyPassword(password: string, stored: { passwordHash: string; salt: string; hashMethod: PasswordHashMethod }): boolean {
  const a = Buffer.from(hashPassword(password, stored.hashMethod, stored.salt), 'utf8');
  const b = Buffer.from(stored.passwordHash, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

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
