/**
 * LDAP and Active Directory user stores (docs/user-stores.md), read through ldapts (an optional
 * dependency, loaded on first use: lib/config/packages.ts), configured by `[user_store.properties]`
 * (spec 001) as the reference's read-only LDAP, read-write LDAP and Active Directory stores are.
 *
 * A sign-in:
 * 1. Binds with ConnectionName/ConnectionPassword and searches UserSearchBase with UserNameSearchFilter,
 *    its `?` replaced by the user name escaped as an RFC 4515 §3 assertion value (so `*)(uid=*` matches
 *    only a user literally named so). With UserDNPattern the DN is built instead, `{0}` replaced by the
 *    name escaped as an RFC 4514 §2.4 attribute value. Exactly one entry must match.
 * 2. Binds as that entry's DN with the password, on a connection of its own (RFC 4513 §5.1.2: an empty
 *    password is an unauthenticated bind that servers accept, so it is refused before any bind).
 * 3. Reads the roles when ReadGroups: the groups under GroupSearchBase whose MembershipAttribute holds the
 *    user's DN (GroupNameAttribute of each), or with BackLinksEnabled, and always for Active Directory,
 *    the user entry's memberOf (the first RDN's value of each group DN under GroupSearchBase).
 *
 * `read_write_ldap` also adds users (the admin API): an entry `<UserNameAttribute>=<name>,<UserSearchBase>`
 * of UserEntryObjectClass (inetOrgPerson) with the password as `{SSHA}` (salted SHA-1, the scheme OpenLDAP
 * verifies without modules), and with WriteGroups (default true) the user's DN added to the
 * MembershipAttribute of each named group, which must exist under GroupSearchBase.
 *
 * Active Directory differs by its defaults only (sAMAccountName, objectClass user and group, memberOf)
 * and pages its searches (RFC 2696; AD answers at most 1000 entries a page): the same code path.
 *
 * Timeouts are bounded: LDAPConnectionTimeout (connect) and ReadTimeout (each operation), 5 s when unset,
 * and never more than MAX_TIMEOUT, also when ReadTimeout is 0 or less (the spec's "wait forever"). With
 * ConnectionPoolingEnabled the searching connection, bound with the connection credentials, is kept and
 * reused; without it each sign-in opens and closes its own. A directory that cannot be reached or fails
 * is USER_STORE_UNAVAILABLE (the key manager answers 503 server_error), never a crash.
 */
import { createHash, randomBytes } from 'node:crypto';
import type {
  Attribute as LdapAttribute,
  AttributeOptions,
  Change as LdapChange,
  ChangeOptions,
  Client as LdapClient,
  ClientOptions,
  Entry,
} from 'ldapts';
import { load } from '../config/packages';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { UserStoreError, type Identity, type UserStore } from './identities';

/** LDAP result codes (RFC 4511 Appendix A.1): invalidCredentials, entryAlreadyExists. */
const INVALID_CREDENTIALS = 49;
const ALREADY_EXISTS = 68;
/** Default connect and operation timeout, and the longest either may be. */
const DEFAULT_TIMEOUT = 5_000;
const MAX_TIMEOUT = 60_000;
/** Bounds of what a sign-in sends and reads. */
const MAX_NAME = 255;
const MAX_PASSWORD = 1024;
const MAX_GROUPS = 1000;
/** Active Directory pages searches (RFC 2696); its MaxPageSize is 1000. */
const AD_PAGE_SIZE = 500;

export interface LdapSettings {
  readonly kind: 'ldap' | 'active_directory';
  /** `[user_store] type` as written, for messages. */
  readonly type: string;
  readonly url: string;
  readonly bindDn: string;
  readonly bindPassword: string;
  readonly userSearchBase: string;
  /** Filter with `?` where the escaped user name goes. */
  readonly userSearchFilter: string;
  readonly userNameAttribute: string;
  /** DN with `{0}` where the escaped user name goes; searched for when undefined. */
  readonly userDnPattern: string | undefined;
  readonly readGroups: boolean;
  readonly groupSearchBase: string;
  readonly groupObjectClass: string;
  readonly groupNameAttribute: string;
  readonly membershipAttribute: string;
  /** Roles from the user entry's memberOf instead of a group search. */
  readonly backLinks: boolean;
  readonly connectTimeout: number;
  readonly operationTimeout: number;
  readonly pooling: boolean;
  readonly startTls: boolean;
  /** `read_write_ldap`: the admin API adds users. */
  readonly writable: boolean;
  readonly writeGroups: boolean;
  /** Object class of entries the store adds. */
  readonly userEntryObjectClass: string;
}

/**
 * RFC 4515 §3: in an assertion value `*`, `(`, `)`, `\` and NUL are written as `\` and two hex digits.
 * Other octets, UTF-8 included, may stay as they are.
 */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * RFC 4514 §2.4: in an attribute value of a DN, `"`, `+`, `,`, `;`, `<`, `>` and `\` are escaped with a
 * backslash, as are a leading space or `#` and a trailing space; NUL as `\00`.
 */
export function escapeDnValue(value: string): string {
  const leading = value.startsWith(' ') || value.startsWith('#');
  const trailing = value.length > 1 && value.endsWith(' ');
  let out = value.replace(/["+,;<>\\]/g, (c) => `\\${c}`).replace(/\u0000/g, '\\00');
  if (leading) out = `\\${out}`;
  if (trailing) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** The value of a DN's first RDN (RFC 4514 §3: `\` escapes one character or two hex digits), and its attribute. */
export function firstRdn(dn: string): { attribute: string; value: string } | undefined {
  const eq = dn.indexOf('=');
  if (eq <= 0) return undefined;
  const attribute = dn.slice(0, eq).trim();
  const bytes: number[] = [];
  for (let i = eq + 1; i < dn.length; i++) {
    const c = dn[i] as string;
    if (c === ',' || c === '+') break;
    if (c === '\\') {
      const hex = dn.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        bytes.push(parseInt(hex, 16));
        i += 2;
      } else if (i + 1 < dn.length) {
        bytes.push(...Buffer.from(dn[i + 1] as string, 'utf8'));
        i += 1;
      }
      continue;
    }
    bytes.push(...Buffer.from(c, 'utf8'));
  }
  return { attribute, value: Buffer.from(bytes).toString('utf8') };
}

const trimmed = (s: string | undefined): string | undefined => (s === undefined || s.trim() === '' ? undefined : s.trim());

function bounded(ms: number | undefined): number {
  if (ms === undefined) return DEFAULT_TIMEOUT;
  if (ms <= 0) return MAX_TIMEOUT;
  return Math.min(ms, MAX_TIMEOUT);
}

/** `[user_store.properties]` read for a directory; USER_STORE_CONFIG when they cannot work (no network needed). */
export function ldapSettings(config: DeploymentConfig): LdapSettings {
  const type = config.user_store.type;
  const p = config.user_store.properties;
  const ad = type.startsWith('active_directory');
  const bad = (what: string): never => {
    throw new UserStoreError('USER_STORE_CONFIG', `[user_store] type = "${type}": ${what} (docs/user-stores.md)`);
  };
  const url = trimmed(p.ConnectionURL) ?? bad('[user_store.properties] ConnectionURL is required, e.g. "ldap://127.0.0.1:389"');
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'ldap:' && parsed.protocol !== 'ldaps:') || parsed.hostname === '')
    bad(`[user_store.properties] ConnectionURL ${JSON.stringify(url)} is not an ldap:// or ldaps:// URL`);
  if ((parsed as URL).pathname !== '' && (parsed as URL).pathname !== '/')
    bad(
      `[user_store.properties] ConnectionURL ${JSON.stringify(url)}: give the search bases in UserSearchBase and GroupSearchBase, not in the URL`,
    );
  const bindDn = trimmed(p.ConnectionName) ?? bad('[user_store.properties] ConnectionName (the DN that searches users) is required');
  const bindPassword = p.ConnectionPassword ?? '';
  if (bindPassword === '')
    bad('[user_store.properties] ConnectionPassword is required (an empty password would be an unauthenticated bind, RFC 4513 §5.1.2)');
  const userNameAttribute = trimmed(p.UserNameAttribute) ?? trimmed(p.UserNameAtribute) ?? (ad ? 'sAMAccountName' : 'uid');
  const userObjectClass = trimmed(p.UserEntryObjectClass) ?? (ad ? 'user' : 'person');
  const userSearchFilter = trimmed(p.UserNameSearchFilter) ?? `(&(objectClass=${userObjectClass})(${userNameAttribute}=?))`;
  if (!userSearchFilter.includes('?'))
    bad(`[user_store.properties] UserNameSearchFilter ${JSON.stringify(userSearchFilter)} has no ? for the user name`);
  if (!userSearchFilter.startsWith('(') || !userSearchFilter.endsWith(')'))
    bad(`[user_store.properties] UserNameSearchFilter ${JSON.stringify(userSearchFilter)} is not an LDAP filter (RFC 4515)`);
  const userDnPattern = trimmed(p.UserDNPattern);
  if (userDnPattern !== undefined && !userDnPattern.includes('{0}'))
    bad(`[user_store.properties] UserDNPattern ${JSON.stringify(userDnPattern)} has no {0} for the user name`);
  const userSearchBase =
    trimmed(p.UserSearchBase) ?? (userDnPattern === undefined ? bad('[user_store.properties] UserSearchBase is required') : '');
  const readGroups = p.ReadGroups ?? true;
  const groupSearchBase =
    trimmed(p.GroupSearchBase) ??
    (readGroups && !ad && !p.BackLinksEnabled ? bad('[user_store.properties] GroupSearchBase is required when ReadGroups is true') : '');
  return {
    kind: ad ? 'active_directory' : 'ldap',
    type,
    url,
    bindDn,
    bindPassword,
    userSearchBase,
    userSearchFilter,
    userNameAttribute,
    userDnPattern,
    readGroups,
    groupSearchBase,
    groupObjectClass: trimmed(p.GroupEntryObjectClass) ?? (ad ? 'group' : 'groupOfNames'),
    groupNameAttribute: trimmed(p.GroupNameAttribute) ?? 'cn',
    membershipAttribute: trimmed(p.MembershipAttribute) ?? 'member',
    backLinks: ad || p.BackLinksEnabled,
    connectTimeout: bounded(p.LDAPConnectionTimeout),
    operationTimeout: bounded(p.ReadTimeout),
    pooling: p.ConnectionPoolingEnabled,
    startTls: /^true$/i.test(p.StartTLSEnabled ?? ''),
    writable: type.startsWith('read_write_ldap'),
    writeGroups: p.WriteGroups ?? true,
    userEntryObjectClass: trimmed(p.UserEntryObjectClass) ?? 'inetOrgPerson',
  };
}

type ClientClass = new (o: ClientOptions) => LdapClient;
/** The parts of ldapts the store uses (loaded on first use). */
export interface Ldapts {
  readonly Client: ClientClass;
  readonly Change: new (o: ChangeOptions) => LdapChange;
  readonly Attribute: new (o?: AttributeOptions) => LdapAttribute;
}

/** RFC 2307 `{SSHA}`: base64 of SHA-1(password + salt) followed by the 8-byte salt. */
export function sshaPassword(password: string, salt: Buffer = randomBytes(8)): string {
  return `{SSHA}${Buffer.concat([createHash('sha1').update(password, 'utf8').update(salt).digest(), salt]).toString('base64')}`;
}

const first = (v: Entry[string] | undefined): string | undefined => {
  const x = Array.isArray(v) ? v[0] : v;
  return x === undefined ? undefined : Buffer.isBuffer(x) ? x.toString('utf8') : String(x);
};
const all = (v: Entry[string] | undefined): string[] =>
  v === undefined ? [] : (Array.isArray(v) ? v : [v]).map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));

/** Case-insensitive "DN is at or under base" (RFC 4517 distinguishedNameMatch, simplified to spacing and case). */
function under(dn: string, base: string): boolean {
  if (base === '') return true;
  const norm = (s: string): string => s.replace(/\s*([,=+])\s*/g, '$1').toLowerCase();
  const d = norm(dn);
  const b = norm(base);
  return d === b || d.endsWith(`,${b}`);
}

export class LdapUserStore implements UserStore {
  readonly kind: 'ldap' | 'active_directory';
  readonly description: string;
  private pooled: Promise<LdapClient> | undefined;
  private closed = false;

  readonly addUser?: (username: string, password: string, roles: readonly string[]) => Promise<Identity>;

  constructor(
    readonly settings: LdapSettings,
    private readonly ldap: Ldapts,
  ) {
    this.kind = settings.kind;
    const u = new URL(settings.url);
    this.description = `${settings.kind === 'active_directory' ? 'Active Directory' : 'LDAP'} ${u.protocol}//${u.host} (${settings.type}${settings.writable ? '' : ', read only'})`;
    if (settings.writable) this.addUser = (username, password, roles) => this.add(username, password, roles);
  }

  /** `rebind`: a kept connection that ldapts re-opens binds again as ConnectionName, not anonymously. */
  private client(rebind = false): LdapClient {
    const s = this.settings;
    return new this.ldap.Client({
      url: s.url,
      connectTimeout: s.connectTimeout,
      timeout: s.operationTimeout,
      strictDN: true,
      autoRebind: rebind && !s.startTls,
    });
  }

  /** A connection bound with the connection credentials (USER_STORE_UNAVAILABLE when it cannot be had). */
  private async bound(): Promise<LdapClient> {
    const c = this.client(this.settings.pooling);
    try {
      if (this.settings.startTls) await c.startTLS();
      await c.bind(this.settings.bindDn, this.settings.bindPassword);
      return c;
    } catch (err) {
      await c.unbind().catch(() => undefined);
      throw this.unavailable('bind with ConnectionName', err);
    }
  }

  private unavailable(what: string, err: unknown): UserStoreError {
    if (err instanceof UserStoreError) return err;
    const e = err as { message?: unknown; code?: unknown };
    return new UserStoreError(
      'USER_STORE_UNAVAILABLE',
      `${this.description}: ${what} failed: ${String(e.message ?? err)}${typeof e.code === 'number' ? ` (LDAP result ${e.code})` : ''}`,
      { cause: err },
    );
  }

  /** Runs `fn` on a searching connection: the pooled one, or one of its own closed afterwards. */
  private async searching<T>(fn: (c: LdapClient) => Promise<T>): Promise<T> {
    if (this.closed) throw new UserStoreError('USER_STORE_UNAVAILABLE', `${this.description}: closed`);
    if (!this.settings.pooling) {
      const c = await this.bound();
      try {
        return await fn(c);
      } catch (err) {
        throw this.unavailable('search', err);
      } finally {
        await c.unbind().catch(() => undefined);
      }
    }
    this.pooled ??= this.bound();
    const p = this.pooled;
    let c: LdapClient;
    try {
      c = await p;
    } catch (err) {
      if (this.pooled === p) this.pooled = undefined;
      throw err;
    }
    try {
      return await fn(c);
    } catch (err) {
      // A refusal leaves the connection as it was.
      if (err instanceof UserStoreError && err.code !== 'USER_STORE_UNAVAILABLE') throw err;
      // A broken pooled connection is dropped; the next sign-in binds a new one.
      if (this.pooled === p) this.pooled = undefined;
      await c.unbind().catch(() => undefined);
      throw this.unavailable('search', err);
    }
  }

  private async search(
    c: LdapClient,
    base: string,
    filter: string,
    attributes: string[],
    sizeLimit: number,
    scope: 'sub' | 'base' = 'sub',
  ): Promise<Entry[]> {
    const paged = this.settings.kind === 'active_directory' ? { pageSize: Math.min(AD_PAGE_SIZE, sizeLimit) } : false;
    const r = await c.search(base, {
      scope,
      filter,
      attributes,
      sizeLimit,
      paged,
      timeLimit: Math.ceil(this.settings.operationTimeout / 1000),
    });
    return r.searchEntries;
  }

  /** The user's entry: its DN, canonical name and memberOf; undefined when no single entry matches. */
  private async findUser(c: LdapClient, username: string): Promise<{ dn: string; name: string; memberOf: string[] } | undefined> {
    const s = this.settings;
    const attributes = [s.userNameAttribute, 'memberOf'];
    if (s.userDnPattern !== undefined) {
      const dn = s.userDnPattern.replace('{0}', escapeDnValue(username));
      let entries: Entry[];
      try {
        entries = await this.search(c, dn, '(objectClass=*)', attributes, 1, 'base');
      } catch (err) {
        // noSuchObject (RFC 4511 §4.1.9, result 32): no such user.
        if ((err as { code?: unknown }).code === 32) return undefined;
        throw err;
      }
      const e = entries[0];
      return e === undefined ? undefined : { dn: e.dn, name: first(e[s.userNameAttribute]) ?? username, memberOf: all(e.memberOf) };
    }
    const filter = s.userSearchFilter.split('?').join(escapeFilterValue(username));
    const entries = await this.search(c, s.userSearchBase, filter, attributes, 2);
    if (entries.length !== 1) return undefined;
    const e = entries[0] as Entry;
    return { dn: e.dn, name: first(e[s.userNameAttribute]) ?? username, memberOf: all(e.memberOf) };
  }

  private async roles(c: LdapClient, user: { dn: string; memberOf: string[] }): Promise<string[]> {
    const s = this.settings;
    if (!s.readGroups) return [];
    if (s.backLinks) {
      const names = user.memberOf
        .filter((dn) => under(dn, s.groupSearchBase))
        .map((dn) => firstRdn(dn)?.value)
        .filter((v): v is string => v !== undefined && v !== '');
      return [...new Set(names)].slice(0, MAX_GROUPS);
    }
    const filter = `(&(objectClass=${escapeFilterValue(s.groupObjectClass)})(${s.membershipAttribute}=${escapeFilterValue(user.dn)}))`;
    const entries = await this.search(c, s.groupSearchBase, filter, [s.groupNameAttribute], MAX_GROUPS);
    return [...new Set(entries.map((e) => first(e[s.groupNameAttribute])).filter((v): v is string => v !== undefined && v !== ''))];
  }

  async lookup(username: string): Promise<Identity | undefined> {
    if (username === '' || username.length > MAX_NAME) return undefined;
    return this.searching(async (c) => {
      const u = await this.findUser(c, username);
      return u === undefined ? undefined : { username: u.name, roles: await this.roles(c, u) };
    });
  }

  async authenticate(username: string, password: string): Promise<Identity | undefined> {
    // RFC 4513 §5.1.2: a bind with a DN and an empty password is unauthenticated and succeeds.
    if (username === '' || username.length > MAX_NAME || password === '' || password.length > MAX_PASSWORD) return undefined;
    const found = await this.searching(async (c) => {
      const u = await this.findUser(c, username);
      return u === undefined ? undefined : { ...u, roles: await this.roles(c, u) };
    });
    if (found === undefined) return undefined;
    // The password is checked by the directory: a bind as the user on a connection of its own.
    const c = this.client();
    try {
      if (this.settings.startTls) await c.startTLS();
      await c.bind(found.dn, password);
    } catch (err) {
      if ((err as { code?: unknown }).code === INVALID_CREDENTIALS) return undefined;
      throw this.unavailable('bind as the user', err);
    } finally {
      await c.unbind().catch(() => undefined);
    }
    return { username: found.name, roles: found.roles };
  }

  /** Adds a user (read_write_ldap): its entry, then its DN to each named group (WriteGroups). */
  private async add(username: string, password: string, roles: readonly string[]): Promise<Identity> {
    const s = this.settings;
    if (username === '' || username.length > MAX_NAME || password === '' || password.length > MAX_PASSWORD)
      throw new UserStoreError('USER_STORE_REFUSED', `user names of 1 to ${MAX_NAME} and passwords of 1 to ${MAX_PASSWORD} characters`);
    const base =
      s.userDnPattern === undefined
        ? `${s.userNameAttribute}=${escapeDnValue(username)},${s.userSearchBase}`
        : s.userDnPattern.replace('{0}', escapeDnValue(username));
    const groups = s.writeGroups ? [...new Set(roles)] : [];
    return this.searching(async (c) => {
      const groupDns: string[] = [];
      for (const role of groups) {
        const filter = `(&(objectClass=${escapeFilterValue(s.groupObjectClass)})(${s.groupNameAttribute}=${escapeFilterValue(role)}))`;
        const found = await this.search(c, s.groupSearchBase, filter, ['1.1'], 2);
        if (found.length !== 1)
          throw new UserStoreError(
            'USER_STORE_REFUSED',
            `no single group ${JSON.stringify(role)} of class ${s.groupObjectClass} under GroupSearchBase: create it in the directory first`,
          );
        groupDns.push((found[0] as Entry).dn);
      }
      try {
        await c.add(base, {
          objectClass: s.userEntryObjectClass,
          cn: username,
          sn: username,
          [s.userNameAttribute]: username,
          userPassword: sshaPassword(password),
        });
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code === ALREADY_EXISTS) throw new UserStoreError('USER_STORE_CONFLICT', `user ${username} exists in the directory`);
        // Other result codes of an add are the directory refusing it (schema, access: RFC 4511 §4.7).
        if (typeof code === 'number')
          throw new UserStoreError(
            'USER_STORE_REFUSED',
            `the directory refused the entry ${base}: ${(err as Error).message} (LDAP result ${code})`,
          );
        throw err;
      }
      for (const dn of groupDns) {
        await c.modify(
          dn,
          new this.ldap.Change({
            operation: 'add',
            modification: new this.ldap.Attribute({ type: s.membershipAttribute, values: [base] }),
          }),
        );
      }
      return { username, roles: groups };
    });
  }

  /** Binds with the connection credentials once (the start's check). */
  async ping(): Promise<void> {
    await this.searching(async () => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    const p = this.pooled;
    this.pooled = undefined;
    if (p !== undefined) await p.then((c) => c.unbind()).catch(() => undefined);
  }
}

/**
 * An LDAP user store, checked once by binding with the connection credentials (USER_STORE_CONNECT when
 * the directory cannot be reached or refuses them). Loads ldapts (PACKAGE_MISSING when not installed).
 */
export async function openLdapUserStore(settings: LdapSettings): Promise<LdapUserStore> {
  const ldap = load<Ldapts>('ldapts', `[user_store] type = "${settings.type}"`);
  const store = new LdapUserStore(settings, ldap);
  try {
    await store.ping();
  } catch (err) {
    await store.close();
    throw new UserStoreError(
      'USER_STORE_CONNECT',
      `${(err as Error).message} ([user_store.properties] ConnectionURL, ConnectionName and ConnectionPassword)`,
      { cause: err },
    );
  }
  return store;
}
