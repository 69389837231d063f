/**
 * User stores (docs/user-stores.md): where the users who sign in (password grant, the code flow's sign-in
 * page) and their roles live. `[user_store] type` picks one:
 * - `database_unique_id` / `database` (the default): the key manager's own store (lib/store/types.ts),
 *   passwords as scrypt (lib/store/passwords.ts);
 * - `read_only_ldap`, `read_write_ldap`, `active_directory` (and their `_unique_id` forms): an LDAP
 *   directory or Active Directory read through `[user_store.properties]` (lib/store/ldap.ts); the admin
 *   API adds users to a `read_write_ldap` directory only.
 *
 * The super admin of the admin API always lives in the key manager's store (`[super_admin]`, spec 000).
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { checkUserPassword } from './passwords';
import type { Store } from './types';
import { ThroughwayError } from '../errors';
import { UserStoreError, type Identity, type UserStore } from './identities';

export { UserStoreError, type Identity, type UserStore, type UserStoreErrorCode } from './identities';

/**
 * Codes of a sign-in refused although the password was right (docs/self-service.md, "Sign-in of a held
 * account"): a self-signed-up account whose e-mail address is not confirmed yet, or whose sign-up waits
 * for an approver. Raised only after the password was verified, so an anonymous caller learns nothing
 * of an account it does not hold the password of.
 */
export type SignInHeldErrorCode = 'SIGN_IN_UNCONFIRMED' | 'SIGN_IN_AWAITING_APPROVAL';

export class SignInHeldError extends ThroughwayError {
  readonly code: SignInHeldErrorCode;
  constructor(code: SignInHeldErrorCode, message: string) {
    super(message);
    this.name = 'SignInHeldError';
    this.code = code;
  }
}

/**
 * `users` whose sign-ins also pass `allowed` (a tenant active, a sign-up approved and confirmed): a user
 * it refuses is answered as an unknown user would be; `allowed` may instead throw SignInHeldError, which
 * the sign-in page and the password grant answer with its message. Look-ups and additions are the
 * store's own.
 */
export function withSignInCheck(users: UserStore, allowed: (id: Identity) => boolean | Promise<boolean>): UserStore {
  const add = users.addUser;
  return {
    kind: users.kind,
    description: users.description,
    async authenticate(username, password) {
      const id = await users.authenticate(username, password);
      return id !== undefined && (await allowed(id)) ? id : undefined;
    },
    lookup: (username) => users.lookup(username),
    ...(add !== undefined
      ? { addUser: (username: string, password: string, roles: readonly string[]) => add.call(users, username, password, roles) }
      : {}),
    close: () => users.close(),
  };
}

/**
 * The key manager's store as the user store (the default). `ignoreCase`: `[apim.devportal]
 * login_username_case_insensitive`, a sign-in name matching its user in any letter case (lib/store/passwords.ts findSignInUser).
 */
export function databaseUserStore(store: Store, ignoreCase = false): UserStore {
  return {
    kind: 'database',
    description: `the key manager's store (${store.kind})`,
    async authenticate(username, password) {
      const u = await checkUserPassword(store, username, password, ignoreCase);
      return u === undefined ? undefined : { username: u.username, roles: u.roles };
    },
    async lookup(username) {
      const u = await store.getUser(username);
      return u === undefined ? undefined : { username: u.username, roles: u.roles };
    },
    close: async () => undefined,
  };
}

/**
 * A user by name without a password (an application owner's roles, userinfo, backend JWT claims): the
 * user store's, else the key manager's store's, where the super admin lives whatever the user store.
 */
export async function findIdentity(users: UserStore, store: Store, username: string): Promise<Identity | undefined> {
  const found = await users.lookup(username);
  if (found !== undefined || users.kind === 'database') return found;
  const u = await store.getUser(username);
  return u === undefined ? undefined : { username: u.username, roles: u.roles };
}

/** Whether `[user_store] type` names a directory (LDAP or Active Directory). */
export function isDirectory(config: DeploymentConfig): boolean {
  return !config.user_store.type.startsWith('database');
}

/**
 * The user store `[user_store] type` names. A directory is bound to with the connection credentials
 * before this resolves (USER_STORE_CONNECT otherwise), so a wrong URL or password stops the start.
 */
export async function openUserStore(config: DeploymentConfig, store: Store): Promise<UserStore> {
  if (!isDirectory(config)) return databaseUserStore(store, config.apim.devportal.login_username_case_insensitive);
  const { ldapSettings, openLdapUserStore } = await import('./ldap');
  return openLdapUserStore(ldapSettings(config));
}

/** What `config check` can say of the user store without the network: the settings' errors. */
export function checkUserStore(config: DeploymentConfig): UserStoreError[] {
  if (!isDirectory(config)) return [];
  const { ldapSettings } = require('./ldap') as typeof import('./ldap');
  try {
    ldapSettings(config);
    return [];
  } catch (err) {
    if (err instanceof UserStoreError) return [err];
    throw err;
  }
}
