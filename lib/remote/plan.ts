/**
 * What `diff` shows and `apply` does (docs/sync.md): the changes that make a node's state the file's, each
 * naming its entry and field. Entries are matched by identity (lib/remote/state.ts); a field of a matched
 * entry that differs is one change. Without `prune` an entry the file does not hold is kept; with it, an
 * entry of a kind the file names (`users: []` included) is removed, and kinds the file leaves out are kept.
 */
import type { Refusal } from './file';
import { entryKey, identity, type ApplicationEntry, type Kind, type KeyEntry, type State } from './state';

export type Change =
  | { readonly op: 'add'; readonly kind: Kind; readonly id: string; readonly entry: Readonly<Record<string, unknown>> }
  | {
      readonly op: 'change';
      readonly kind: Kind;
      readonly id: string;
      readonly field: string;
      readonly from: unknown;
      readonly to: unknown;
      readonly entry: Readonly<Record<string, unknown>>;
    }
  | {
      readonly op: 'key';
      readonly kind: 'applications';
      readonly id: string;
      readonly app: ApplicationEntry;
      readonly key: KeyEntry;
      readonly replaces: KeyEntry | undefined;
    }
  | { readonly op: 'remove'; readonly kind: Kind; readonly id: string; readonly entry: Readonly<Record<string, unknown>> };

/** Fields compared per kind (the identity's fields are not: they name the entry). */
const COMPARED: Readonly<Record<Kind, readonly string[]>> = {
  tenants: ['admin', 'package', 'active'],
  users: ['roles'],
  applications: ['tier', 'description'],
  subscriptions: ['tier', 'state'],
  blockingConditions: [],
};

/** Fields no admin route changes once the entry exists: a difference is refused, naming it. */
const FIXED: Readonly<Partial<Record<Kind, readonly string[]>>> = { tenants: ['admin'] };

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export interface Plan {
  readonly changes: readonly Change[];
  readonly refusals: readonly Refusal[];
  /** What prune leaves alone, with the reason (the caller; a key the file drops). */
  readonly kept: readonly string[];
}

/**
 * The changes from `current` to `desired`, in the order apply makes them: removals first (subscriptions
 * before their applications), then tenants, users, applications, their keys, subscriptions, blocking.
 */
export function plan(
  desired: State,
  current: State,
  o: { prune: boolean; kinds: ReadonlySet<Kind>; file: string; lines: ReadonlyMap<string, number>; caller: string },
): Plan {
  const changes: Change[] = [];
  const refusals: Refusal[] = [];
  const kept: string[] = [];
  const removals: Change[] = [];
  for (const kind of ['tenants', 'users', 'applications', 'subscriptions', 'blockingConditions'] as const) {
    const have = new Map((current[kind] as unknown as readonly Record<string, unknown>[]).map((e) => [identity(kind, e), e]));
    const want = new Map((desired[kind] as unknown as readonly Record<string, unknown>[]).map((e) => [identity(kind, e), e]));
    for (const [id, e] of want) {
      const h = have.get(id);
      if (h === undefined) {
        changes.push({ op: 'add', kind, id, entry: e });
        if (kind === 'applications')
          for (const key of (e as unknown as ApplicationEntry).keys)
            changes.push({ op: 'key', kind, id, app: e as unknown as ApplicationEntry, key, replaces: undefined });
        continue;
      }
      for (const field of COMPARED[kind]) {
        if (same(e[field], h[field])) continue;
        const why =
          FIXED[kind]?.includes(field) === true
            ? `no admin route changes a tenant's ${field}`
            : // A tenant's package is changed to another (PUT /admin/v1/tenants/{domain}/package), never removed.
              kind === 'tenants' && field === 'package' && e[field] === ''
              ? "a tenant's package is changed to another (demo, smb, custom), not removed"
              : undefined;
        if (why !== undefined) {
          refusals.push({
            code: 'SYNC_FIELD',
            file: o.file,
            line: o.lines.get(entryKey(kind, id)) ?? 0,
            entry: `${kind} (${id})`,
            field,
            message: `the node has ${JSON.stringify(h[field])}: ${why}`,
          });
          continue;
        }
        changes.push({ op: 'change', kind, id, field, from: h[field], to: e[field], entry: e });
      }
      if (kind === 'applications') {
        const app = e as unknown as ApplicationEntry;
        const hk = new Map((h as unknown as ApplicationEntry).keys.map((k) => [k.keyType, k]));
        for (const key of app.keys) {
          const old = hk.get(key.keyType);
          if (old === undefined || !same(old, key)) changes.push({ op: 'key', kind, id, app, key, replaces: old });
          hk.delete(key.keyType);
        }
        for (const k of hk.values())
          kept.push(
            `applications ${id}: ${k.keyType} key ${k.consumerKey} (no admin route removes one key; delete the application to drop it)`,
          );
      }
    }
    for (const [id, e] of have) {
      if (want.has(id)) continue;
      if (!o.prune || !o.kinds.has(kind)) continue;
      if (kind === 'users' && id === o.caller) {
        kept.push(`users ${id}: the admin apply signs in as`);
        continue;
      }
      if (kind === 'tenants') {
        // Tenants are never deleted (docs/tenants.md): pruning one deactivates it.
        if (e.active === true) changes.push({ op: 'change', kind, id, field: 'active', from: true, to: false, entry: e });
        continue;
      }
      removals.push({ op: 'remove', kind, id, entry: e });
    }
  }
  const order: Kind[] = ['subscriptions', 'applications', 'users', 'blockingConditions', 'tenants'];
  removals.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
  return { changes: [...removals, ...changes], refusals, kept };
}

const show = (v: unknown): string => (Array.isArray(v) ? `[${v.join(', ')}]` : typeof v === 'string' ? JSON.stringify(v) : String(v));

/** One line a change: `+` added, `~` changed (field from → to), `-` removed; the file's line where it has one. */
export function formatChange(c: Change, file: string, lines: ReadonlyMap<string, number>): string {
  const at = lines.get(entryKey(c.kind, c.id));
  const where = at !== undefined ? `  (${file}:${at})` : '';
  switch (c.op) {
    case 'add':
      return `+ ${c.kind} ${c.id}${where}`;
    case 'change':
      return `~ ${c.kind} ${c.id}: ${c.field} ${show(c.from)} → ${show(c.to)}${where}`;
    case 'key':
      return c.replaces === undefined
        ? `+ ${c.kind} ${c.id}: ${c.key.keyType} key ${c.key.consumerKey}${where}`
        : `~ ${c.kind} ${c.id}: ${c.key.keyType} key ${c.replaces.consumerKey} [${c.replaces.grantTypes.join(' ')}] ${JSON.stringify(c.replaces.callbackUrl)} → ${c.key.consumerKey} [${c.key.grantTypes.join(' ')}] ${JSON.stringify(c.key.callbackUrl)} (a new client: its secret changes)${where}`;
    case 'remove':
      return `- ${c.kind} ${c.id}`;
  }
}
