/**
 * Failed sign-ins slowed, then locked (docs/security.md, "Guessing passwords"): the admin API's Basic
 * credentials, the password grant, client secrets at the token endpoint, and the sign-in page (through
 * `attempt`). Settings: `[throughway.management]` login_max_failures, address_max_failures,
 * login_lock_time, login_delay.
 *
 * - An (account, client address) pair is locked after login_max_failures failures: while locked every
 *   sign-in of that account from that address is refused (429, the right password too) without being
 *   checked.
 * - A client address is locked after address_max_failures failures, whatever the accounts (spraying one
 *   password over many accounts).
 * - An account's failures from every address slow its failed answers down (login_delay per recent failure,
 *   at most 10 of them), never lock it: an attacker elsewhere cannot lock the owner out, only his own
 *   address; a right password is answered at once.
 * - Locks expire login_lock_time after they were set and are not extended by attempts while locked;
 *   failures older than login_lock_time are forgotten. At most MAX_ENTRIES records are kept (the oldest
 *   dropped first), so a flood of addresses cannot exhaust memory.
 *
 * - Accounts are counted under one key for every spelling a user store would take as the same name
 *   (accountKey): case and trailing-space variants of a user name share its delay and its locks, so
 *   "Alice", "alice " and "ALICE" cannot each be guessed at the full rate, nor the right password typed
 *   in another case slip past a lock.
 *
 * Each failure and each lock is a log event (`login_failed`, `login_locked`: kind, account, address, never
 * the password) and counted in `throughway_login_failures_total` (docs/operations.md).
 */
import type { Logger } from '../log';
import { OAuthError } from './errors';

/** What was signed in to: users (admin API, password grant, sign-in page) and clients are separate accounts. */
export type LoginKind = 'admin' | 'password' | 'client' | 'signin';

export interface LockoutSettings {
  readonly maxFailures: number;
  readonly addressMaxFailures: number;
  readonly lockTime: number;
  readonly delay: number;
}

interface Record_ {
  failures: number;
  last: number;
  lockedUntil: number;
}

const MAX_ENTRIES = 20_000;
const MAX_DELAY_STEPS = 10;

const namespace = (kind: LoginKind): string => (kind === 'client' ? 'client' : 'user');

/**
 * RFC 4518 §2.2 characters mapped to nothing (soft hyphens, joiners, variation selectors, zero width
 * space, object replacement) and controls other than the spaces; §2.2 maps the other spaces to SPACE.
 */
const NOTHING =
  /[\u00ad\u1806\u034f\u180b-\u180d\ufe00-\ufe0f\ufffc\u200b-\u200d\u2060\ufeff\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g;
const SPACES = /[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;

/**
 * The key an account name is counted under: at least as coarse as every user store's comparison, so no
 * spelling the store accepts for a name gets counts of its own.
 * - LDAP (uid, cn, sAMAccountName: caseIgnoreMatch, RFC 4517 §4.2.11) prepares both sides by RFC 4518:
 *   characters mapped to nothing or to a space (§2.2), NFKC (§2.3), case folded (§2.2), leading and
 *   trailing spaces dropped and inner runs of spaces made one (§2.6.1).
 * - MariaDB / MySQL compare the SQL store's names in the server's default collation: case- and (the
 *   `_ai_ci` ones) accent-insensitive, with trailing spaces ignored (PAD SPACE).
 * - SQLite and PostgreSQL compare exactly: a coarser key only lets a guesser's variants count together.
 * Hence: map and drop as RFC 4518, decompose (NFKD) and drop combining marks, fold case (upper then
 * lower case: "ß" and "SS" become "ss"), trim, one space for each run.
 */
export function accountKey(account: string): string {
  return account
    .slice(0, 1024)
    .replace(NOTHING, '')
    .replace(SPACES, ' ')
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .toLowerCase()
    .normalize('NFKC')
    .trim()
    .replace(/ +/g, ' ');
}
/** Account names in log lines: bounded, without control characters. */
const printable = (s: string): string => s.slice(0, 128).replace(/[\u0000-\u001f\u007f]/g, '?');

export class LoginGuard {
  private readonly records = new Map<string, Record_>();
  /** Failed sign-ins by kind, and refusals of a locked pair or address (the metric). */
  readonly failures = new Map<LoginKind, number>();
  readonly locked = new Map<LoginKind, number>();

  constructor(
    readonly settings: LockoutSettings,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms).unref()),
  ) {}

  private get(key: string, now: number): Record_ | undefined {
    const r = this.records.get(key);
    if (r === undefined) return undefined;
    if (r.lockedUntil <= now && now - r.last >= this.settings.lockTime) {
      this.records.delete(key);
      return undefined;
    }
    return r;
  }

  private bump(key: string, now: number, max: number): Record_ {
    const r = this.get(key, now) ?? { failures: 0, last: now, lockedUntil: 0 };
    if (r.lockedUntil <= now && r.lockedUntil !== 0) {
      // An expired lock starts a fresh count.
      r.failures = 0;
      r.lockedUntil = 0;
    }
    r.failures += 1;
    r.last = now;
    if (max > 0 && r.failures >= max && r.lockedUntil <= now) r.lockedUntil = now + this.settings.lockTime;
    this.records.delete(key);
    if (this.records.size >= MAX_ENTRIES) this.records.delete(this.records.keys().next().value as string);
    this.records.set(key, r);
    return r;
  }

  /** Throws 429 when the (account, address) pair or the address is locked now. */
  check(kind: LoginKind, account: string, address: string): void {
    const now = this.clock();
    const pair = this.get(`p\0${namespace(kind)}\0${accountKey(account)}\0${address}`, now);
    const addr = this.get(`a\0${address}`, now);
    const until = Math.max(
      pair !== undefined && pair.lockedUntil > now ? pair.lockedUntil : 0,
      addr !== undefined && addr.lockedUntil > now ? addr.lockedUntil : 0,
    );
    if (until === 0) return;
    this.locked.set(kind, (this.locked.get(kind) ?? 0) + 1);
    const seconds = Math.max(1, Math.ceil((until - now) / 1000));
    this.logger.log('warn', 'login_refused_locked', { kind, account: printable(account), address, retry_after: seconds });
    throw new OAuthError(
      'access_denied',
      `too many failed sign-ins from this address: locked for ${seconds} s more ([throughway.management] login_lock_time)`,
      { status: 429, headers: { 'Retry-After': String(seconds) } },
    );
  }

  /** A failed sign-in: counted, logged, and answered after the account's delay. */
  async failed(kind: LoginKind, account: string, address: string): Promise<void> {
    const now = this.clock();
    const s = this.settings;
    const pair = this.bump(`p\0${namespace(kind)}\0${accountKey(account)}\0${address}`, now, s.maxFailures);
    const addr = this.bump(`a\0${address}`, now, s.addressMaxFailures);
    const acct = this.bump(`u\0${namespace(kind)}\0${accountKey(account)}`, now, 0);
    this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
    this.logger.log('warn', 'login_failed', {
      kind,
      account: printable(account),
      address,
      failures: pair.failures,
      account_failures: acct.failures,
    });
    if (pair.lockedUntil > now && pair.failures === s.maxFailures)
      this.logger.log('warn', 'login_locked', {
        kind,
        account: printable(account),
        address,
        until: new Date(pair.lockedUntil).toISOString(),
      });
    if (addr.lockedUntil > now && addr.failures === s.addressMaxFailures)
      this.logger.log('warn', 'login_locked', { kind, address, until: new Date(addr.lockedUntil).toISOString() });
    const delay = s.delay * Math.min(acct.failures, MAX_DELAY_STEPS);
    if (delay > 0) await this.sleep(delay);
  }

  /** A successful sign-in forgets the failures of that (account, address) pair. */
  succeeded(kind: LoginKind, account: string, address: string): void {
    this.records.delete(`p\0${namespace(kind)}\0${accountKey(account)}\0${address}`);
  }

  /**
   * One guarded sign-in (the sign-in page's hook): refused while locked, `verify` otherwise; its failure is
   * recorded (and delayed), its success clears the pair. Resolves to what `verify` said.
   */
  async attempt(kind: LoginKind, account: string, address: string, verify: () => Promise<boolean>): Promise<boolean> {
    this.check(kind, account, address);
    const ok = await verify();
    if (ok) this.succeeded(kind, account, address);
    else await this.failed(kind, account, address);
    return ok;
  }
}

export function lockoutSettings(m: {
  login_max_failures: number;
  address_max_failures: number;
  login_lock_time: number | string;
  login_delay: number | string;
}): LockoutSettings {
  return {
    maxFailures: m.login_max_failures,
    addressMaxFailures: m.address_max_failures,
    lockTime: Number(m.login_lock_time),
    delay: Number(m.login_delay),
  };
}
