/**
 * `apply` (docs/sync.md): each change of a plan made by one admin API call (docs/admin-api.md), in the
 * plan's order; the first call the node refuses stops the run, naming the entry, its file line and the
 * node's answer. New users and tenant admins get the initial password given to apply (environment or
 * standard input, never the file or an argument): a state file carries no passwords.
 */
import { RemoteError, type Remote } from './client';
import { formatChange, type Change } from './plan';
import { entryKey, type NodeState } from './state';

export interface ApplyResult {
  /** One line per change made, as `diff` prints it, with what the node said when it is not plain done. */
  readonly done: readonly string[];
  /** The change the node refused, and why; undefined when every change was made. */
  readonly failed?: string;
}

const seg = (s: string): string => encodeURIComponent(s);
const owned = (path: string, owner: unknown): string => `${path}?owner=${encodeURIComponent(String(owner))}`;

/** The admin call that makes one change. */
async function make(r: Remote, c: Change, node: NodeState, password: string | undefined): Promise<Record<string, unknown>> {
  const A = '/admin/v1';
  const id = (): string => {
    const found = node.ids.get(entryKey(c.kind, c.id));
    if (found === undefined) throw new RemoteError(0, 'not_found', `the node's id of ${c.kind} ${c.id} is not known`);
    return seg(found);
  };
  const needPassword = (): string => {
    if (password === undefined)
      throw new RemoteError(
        0,
        'no_password',
        'a new user or tenant admin needs the initial password (THROUGHWAY_SYNC_PASSWORD, or the next line of standard input)',
      );
    return password;
  };
  if (c.op === 'key') {
    return r.call('POST', owned(`${A}/applications/${seg(c.app.name)}/keys`, c.app.owner), {
      keyType: c.key.keyType,
      consumerKey: c.key.consumerKey,
      grantTypes: c.key.grantTypes,
      ...(c.key.callbackUrl !== '' ? { callbackUrl: c.key.callbackUrl } : {}),
    });
  }
  const x = c.entry as Record<string, unknown>;
  switch (`${c.op} ${c.kind}`) {
    case 'add tenants': {
      const t = await r.call('POST', `${A}/tenants`, {
        domain: x.domain,
        admin: x.admin,
        password: needPassword(),
        ...(x.package !== '' ? { package: x.package } : {}),
      });
      // A moderated platform adds tenants inactive ([multi_tenancy.platform] tenant_activation_moderated).
      if (t.active !== x.active)
        return r.call('POST', `${A}/tenants/${seg(String(x.domain))}/${x.active === true ? 'activate' : 'deactivate'}`);
      return t;
    }
    case 'change tenants':
      if (c.op === 'change' && c.field === 'package') return r.call('PUT', `${A}/tenants/${seg(c.id)}/package`, { package: c.to });
      return r.call('POST', `${A}/tenants/${seg(c.id)}/${c.op === 'change' && c.to === true ? 'activate' : 'deactivate'}`);
    case 'add users':
      return r.call('POST', `${A}/users`, { username: x.username, password: needPassword(), roles: x.roles });
    case 'change users':
      return r.call('PUT', `${A}/users/${seg(String(x.username))}/roles`, { roles: x.roles });
    case 'remove users':
      return r.call('DELETE', `${A}/users/${seg(String(x.username))}`);
    case 'add applications':
      return r.call('POST', `${A}/applications`, {
        name: x.name,
        owner: x.owner,
        tier: x.tier,
        ...(x.description !== '' ? { description: x.description } : {}),
      });
    case 'change applications':
      return r.call('PATCH', owned(`${A}/applications/${seg(String(x.name))}`, x.owner), c.op === 'change' ? { [c.field]: c.to } : {});
    case 'remove applications':
      return r.call('DELETE', owned(`${A}/applications/${seg(String(x.name))}`, x.owner));
    case 'add subscriptions':
      return r.call('POST', `${A}/subscriptions`, {
        application: x.application,
        owner: x.owner,
        api: x.api,
        version: x.version,
        tier: x.tier,
        state: x.state,
      });
    case 'change subscriptions':
      return r.call('PATCH', `${A}/subscriptions/${id()}`, c.op === 'change' ? { [c.field]: c.to } : {});
    case 'remove subscriptions':
      return r.call('DELETE', `${A}/subscriptions/${id()}`);
    case 'add blockingConditions':
      return r.call('POST', `${A}/blocking-conditions`, { type: x.type, value: x.value, invert: x.invert });
    case 'remove blockingConditions':
      return r.call('DELETE', `${A}/blocking-conditions/${id()}`);
    default:
      throw new RemoteError(0, 'no_route', `no admin route makes ${c.op} ${c.kind}`);
  }
}

/** Makes the changes in order; stops at the first the node refuses. */
export async function applyPlan(
  r: Remote,
  changes: readonly Change[],
  node: NodeState,
  o: { file: string; lines: ReadonlyMap<string, number>; password?: string },
): Promise<ApplyResult> {
  const done: string[] = [];
  for (const c of changes) {
    const line = formatChange(c, o.file, o.lines);
    let answer: Record<string, unknown>;
    try {
      answer = await make(r, c, node, o.password);
    } catch (err) {
      if (!(err instanceof RemoteError)) throw err;
      return { done, failed: `${line}: the node refused: ${err.message}` };
    }
    // An approval workflow keeps the change pending (docs/workflows.md): said, not hidden.
    const wf = answer.workflow as { status?: string; taskId?: string } | undefined;
    done.push(wf?.status === 'pending' ? `${line}: pending approval (task ${String(wf.taskId)})` : line);
  }
  return { done };
}
