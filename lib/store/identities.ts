/**
 * What every user store is (docs/user-stores.md): a user as a store reports it (Identity), the store's
 * face (UserStore) and its errors (UserStoreError). The stores themselves (users.ts: the key manager's own
 * and the opener; ldap.ts: a directory) take these from here, so ldap.ts never imports users.ts.
 */
import { ThroughwayError } from '../errors';

/** A user as a user store reports it: its canonical name and the roles (groups) it holds. */
export interface Identity {
  readonly username: string;
  readonly roles: readonly string[];
}

export interface UserStore {
  /** `database`, `ldap` or `active_directory`. */
  readonly kind: 'database' | 'ldap' | 'active_directory';
  /** Where it is, for start-up lines (never credentials). */
  readonly description: string;
  /**
   * The user when the password is right; undefined for an unknown user or a wrong password. Rejects
   * with UserStoreError USER_STORE_UNAVAILABLE when the store cannot answer.
   */
  authenticate(username: string, password: string): Promise<Identity | undefined>;
  /** A user's roles without a password (an application owner's, userinfo); undefined when unknown. */
  lookup(username: string): Promise<Identity | undefined>;
  /**
   * Adds a user to a directory that throughway writes (`read_write_ldap`); absent on read-only stores.
   * The key manager's own store adds users through lib/keymanager/manage.ts.
   */
  addUser?(username: string, password: string, roles: readonly string[]): Promise<Identity>;
  close(): Promise<void>;
}

/**
 * Codes of user store errors: a configuration that cannot work (checked by `config check` without the
 * network), a directory start cannot bind to, a directory that fails during a sign-in (answered 503); a
 * user that exists already (409) and a change the directory refuses (400) when adding users.
 */
export type UserStoreErrorCode =
  'USER_STORE_CONFIG' | 'USER_STORE_CONNECT' | 'USER_STORE_UNAVAILABLE' | 'USER_STORE_CONFLICT' | 'USER_STORE_REFUSED';

export class UserStoreError extends ThroughwayError {
  readonly code: UserStoreErrorCode;
  constructor(code: UserStoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UserStoreError';
    this.code = code;
  }
}
