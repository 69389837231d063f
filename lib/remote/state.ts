/**
 * A node's declarative state (docs/sync.md): what `throughway dump` writes and `diff`/`apply` compare. Each
 * kind has its entries' identity (the fields that name an entry) and the fields a change may touch. Read
 * from the admin API (docs/admin-api.md) of a running node: as the super admin, the super tenant's
 * applications, subscriptions and users, the blocking conditions and the tenants; as a tenant's admin,
 * that tenant's applications, subscriptions and users. Never a password; a
 * client secret is not kept by the node in clear, so no dump can carry one (docs/key-manager.md).
 */
import { stringify } from 'yaml';
import { RemoteError, type Remote } from './client';

export interface TenantEntry {
  readonly domain: string;
  /** The tenant admin's name without `@<domain>`. */
  readonly admin: string;
  readonly package: string;
  readonly active: boolean;
}

export interface UserEntry {
  readonly username: string;
  readonly roles: readonly string[];
}

export interface KeyEntry {
  readonly keyType: 'PRODUCTION' | 'SANDBOX';
  readonly consumerKey: string;
  readonly grantTypes: readonly string[];
  readonly callbackUrl: string;
}

export interface ApplicationEntry {
  readonly name: string;
  readonly owner: string;
  readonly tier: string;
  readonly description: string;
  readonly keys: readonly KeyEntry[];
}

export interface SubscriptionEntry {
  readonly application: string;
  readonly owner: string;
  readonly api: string;
  readonly version: string;
  readonly tier: string;
  readonly state: string;
}

export interface BlockingEntry {
  readonly type: string;
  readonly value: string;
  readonly invert: boolean;
}

/** The state, each list sorted by its entries' identity so that two dumps of one state are the same text. */
export interface State {
  readonly tenants: readonly TenantEntry[];
  readonly users: readonly UserEntry[];
  readonly applications: readonly ApplicationEntry[];
  readonly subscriptions: readonly SubscriptionEntry[];
  readonly blockingConditions: readonly BlockingEntry[];
}

export type Kind = keyof State;
export const KINDS: readonly Kind[] = ['tenants', 'users', 'applications', 'subscriptions', 'blockingConditions'];

/** An entry's identity as text (how a diff names it): what two entries of one kind never share. */
export function identity(kind: Kind, e: unknown): string {
  const r = e as Record<string, unknown>;
  switch (kind) {
    case 'tenants':
      return String(r.domain);
    case 'users':
      return String(r.username);
    case 'applications':
      return `${String(r.name)} of ${String(r.owner)}`;
    case 'subscriptions':
      return `${String(r.application)} of ${String(r.owner)} → ${String(r.api)} ${String(r.version)}`;
    case 'blockingConditions':
      return `${String(r.type)} ${String(r.value)}${r.invert === true ? ' (inverted)' : ''}`;
  }
}

const byIdentity = <T>(kind: Kind, list: readonly T[]): T[] =>
  [...list].sort((a, b) => (identity(kind, a) < identity(kind, b) ? -1 : identity(kind, a) > identity(kind, b) ? 1 : 0));

export function sorted(s: State): State {
  return {
    tenants: byIdentity('tenants', s.tenants),
    users: byIdentity(
      'users',
      s.users.map((u) => ({ ...u, roles: [...u.roles].sort() })),
    ),
    applications: byIdentity(
      'applications',
      s.applications.map((a) => ({
        ...a,
        keys: [...a.keys].sort((x, y) => (x.keyType < y.keyType ? -1 : 1)).map((k) => ({ ...k, grantTypes: [...k.grantTypes].sort() })),
      })),
    ),
    subscriptions: byIdentity('subscriptions', s.subscriptions),
    blockingConditions: byIdentity('blockingConditions', s.blockingConditions),
  };
}

const list = (answer: Record<string, unknown>): Record<string, unknown>[] =>
  Array.isArray(answer.list) ? (answer.list as Record<string, unknown>[]) : [];
const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const texts = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The super tenant's name, whose row GET /tenants lists first: not a tenant a file creates. */
export const SUPER_TENANT = 'carbon.super';

/** A node's state, with the ids the admin API names subscriptions and blocking conditions by (by kind and identity). */
export interface NodeState {
  readonly state: State;
  readonly ids: ReadonlyMap<string, string>;
  /**
   * The kinds the caller may not read: a tenant admin's (tenants are the super admin's routes,
   * docs/admin-api.md), whose entries a file's plan leaves alone.
   */
  readonly unreadable: ReadonlySet<Kind>;
}

/** The key of an entry in a map by kind and identity. */
export const entryKey = (kind: Kind, id: string): string => `${kind}\u0000${id}`;

/** The super admin's kinds, which a tenant admin's call of GET /admin/v1/tenants (403 access_denied) tells it cannot read. */
const SUPER_KINDS: readonly Kind[] = ['tenants'];

/**
 * The node's state over its admin API, each list read once: the caller's tenant's users, applications,
 * subscriptions and blocking conditions (docs/tenants.md); as a tenant admin (GET /admin/v1/tenants
 * answers 403), no tenants.
 */
export async function readNodeState(r: Remote): Promise<NodeState> {
  const tenants = await r.call('GET', '/admin/v1/tenants').catch((err: unknown) => {
    if (err instanceof RemoteError && err.status === 403) return undefined;
    throw err;
  });
  const [users, apps, subs, blocking] = await Promise.all([
    r.call('GET', '/admin/v1/users'),
    r.call('GET', '/admin/v1/applications'),
    r.call('GET', '/admin/v1/subscriptions'),
    r.call('GET', '/admin/v1/blocking-conditions'),
  ]);
  const appsById = new Map(list(apps).map((a) => [text(a.id), a]));
  const ids = new Map<string, string>();
  const subscriptions = list(subs).map((s) => {
    const entry = {
      application: text(s.application),
      owner: text(appsById.get(text(s.applicationId))?.owner),
      api: text(s.apiContext),
      version: text(s.apiVersion),
      tier: text(s.tier),
      state: text(s.state),
    };
    ids.set(entryKey('subscriptions', identity('subscriptions', entry)), text(s.id));
    return entry;
  });
  const blockingConditions = list(blocking).map((b) => {
    const entry = { type: text(b.type), value: text(b.value), invert: b.invert === true };
    ids.set(entryKey('blockingConditions', identity('blockingConditions', entry)), text(b.id));
    return entry;
  });
  const state = sorted({
    tenants: list(tenants ?? { list: [] })
      .filter((t) => t.domain !== SUPER_TENANT)
      .map((t) => ({
        domain: text(t.domain),
        admin: text(t.admin).replace(new RegExp(`@${text(t.domain).replace(/\./g, '\\.')}$`), ''),
        package: text(t.package),
        active: t.active === true,
      })),
    users: list(users).map((u) => ({ username: text(u.username), roles: texts(u.roles) })),
    applications: list(apps).map((a) => ({
      name: text(a.name),
      owner: text(a.owner),
      tier: text(a.tier),
      description: text(a.description),
      keys: (Array.isArray(a.keys) ? (a.keys as Record<string, unknown>[]) : []).map((k) => ({
        keyType: k.keyType === 'SANDBOX' ? ('SANDBOX' as const) : ('PRODUCTION' as const),
        consumerKey: text(k.consumerKey),
        grantTypes: texts(k.grantTypes),
        callbackUrl: text(k.callbackUrl),
      })),
    })),
    subscriptions,
    blockingConditions,
  });
  return { state, ids, unreadable: new Set(tenants === undefined ? SUPER_KINDS : []) };
}

/** The node's state over its admin API (what `dump` writes). */
export async function readState(r: Remote): Promise<State> {
  return (await readNodeState(r)).state;
}

/** The state as the YAML file `dump` writes: a comment line, then each kind in KINDS order. */
export function renderState(s: State, origin: string): string {
  const body = stringify(sorted(s), { lineWidth: 0, indentSeq: true });
  return `# throughway state of ${origin} (throughway dump; docs/sync.md): no passwords, no client secrets\n${body}`;
}
