/**
 * The admin console (/admin, docs/workflows.md "The admin console"): the reference's third web console,
 * built as the other two (server-rendered, no script, the same frame, CSP and CSRF check of every form,
 * labelled controls with their errors beside them). For the super admin and tenant admins:
 *
 *   /admin               workflow tasks, filtered by type and state; approve or reject with a comment
 *   /admin/applications  applications, and changing one's owner
 *   /admin/blocking      blocking conditions (API, application, user, IP, IP range), the tenant's own
 *   /admin/policies      throttling policies: advanced (with conditions), application,
 *                        subscription and custom ones, written through the policies validator  super admin
 *   /admin/tenants       tenants: add, activate, deactivate                                    super admin
 *
 * Every admin sees and decides its own tenant's tasks only (the super admin the super tenant's), and a
 * tenant admin its own tenant's applications and blocking conditions only: another tenant's is not found
 * (404), as in the admin API (docs/tenants.md, "Admins"; docs/workflows.md, "Who decides"). Every edit goes
 * through the validator the files, the admin API and the CLI use, and takes effect at once: blocking
 * conditions and owners as events, policies by reloading the gateway's throttling (`applyPolicies`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BLOCKING_TYPES, checkBlockingCondition } from '../events/blocking';
import { OAuthError } from '../keymanager/errors';
import { checkNewUser, type Manager } from '../keymanager/manage';
import { domainProblem, SUPER_TENANT, TenantError, type Tenants } from '../tenants';
import { CONDITION_TYPES, DEFAULT_POLICIES_TOML, parsePolicies, type PolicyOptions, TIME_UNITS } from '../throttle/policies';
import { WorkflowError, WORKFLOW_TYPES, type Workflows } from '../workflows';
import { type Call, problem, render, takeFlash } from './context';
import { buttonForm, csrfField, escapeHtml as h, field, seeOther, select } from './html';

/** What the admin console works on: this node's key manager, workflows, tenants and throttling policies file. */
export interface AdminParts {
  readonly manager: Manager;
  readonly workflows: Workflows;
  readonly tenants: Tenants;
  readonly policies: {
    /** `[throughway.throttling] policies_file`. */
    readonly file: string;
    /** `[apim.throttling] enable_*_based_throttling`: the condition types a policy may use. */
    readonly options: PolicyOptions;
    /** Applies the file just written to this node's gateway (its gateway-workers follow the file's change event). */
    apply(): void;
  };
  readonly userRules: { readonly username: RegExp; readonly password: RegExp };
}

export const ADMIN_ROLES: readonly string[] = ['admin', 'Internal/admin'];

type Errors = Record<string, string>;

const state = (s: string): string => `<span class="state">${h(s)}</span>`;
const when = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);

/** The tenant whose admin the signed-in user is. */
function tenantOf(c: Call, a: AdminParts): string {
  return a.tenants.tenantOf(c.session.user?.username ?? '');
}

const isSuper = (c: Call, a: AdminParts): boolean => tenantOf(c, a) === SUPER_TENANT;

function messageOf(err: unknown): string {
  if (err instanceof OAuthError || err instanceof WorkflowError || err instanceof TenantError) return err.message;
  throw err;
}

// ----------------------------------------------------------------------------------------- tasks

async function tasksPage(c: Call, a: AdminParts, errors: Errors = {}, status = 200): Promise<void> {
  const tenant = tenantOf(c, a);
  const type = c.query.get('type') ?? '';
  const wanted = c.query.get('status') ?? 'CREATED';
  const typeOk = type === '' || (WORKFLOW_TYPES as readonly string[]).includes(type);
  const list = typeOk
    ? (
        await a.workflows.list({
          tenant,
          ...(type !== '' ? { type } : {}),
          ...(wanted !== 'ALL' ? { pending: wanted === 'CREATED' } : {}),
        })
      ).filter((t) => wanted === 'ALL' || wanted === 'CREATED' || t.status === wanted)
    : [];
  const rows = list
    .map((t) => {
      const delivery =
        t.delivery !== null && t.delivery.deliveredAt === null && t.delivery.lastError !== ''
          ? `<br><span class="error">Engine: ${h(t.delivery.lastError)} (${t.delivery.attempts} attempt${t.delivery.attempts === 1 ? '' : 's'})</span>`
          : '';
      const decided =
        t.decision !== null
          ? `${state(t.decision.status)} by ${h(t.decision.by)} at ${h(when(t.decision.at))}${t.decision.comment !== '' ? `: <q>${h(t.decision.comment)}</q>` : ''}`
          : '';
      const err = errors[t.id];
      const form =
        t.decision === null
          ? `<form method="post" action="/admin/tasks/${encodeURIComponent(t.id)}">${csrfField(c.session.csrf)}${field({ id: `comment-${t.id}`, label: 'Comment', type: 'textarea', value: err !== undefined ? (c.form.get('comment') ?? '') : '', ...(err !== undefined ? { error: err } : {}) }).replace(`name="comment-${t.id}"`, 'name="comment"')}
<button type="submit" name="decision" value="APPROVED" aria-label="Approve ${h(t.description)}">Approve</button><button type="submit" name="decision" value="REJECTED" aria-label="Reject ${h(t.description)}">Reject</button></form>`
          : decided;
      return `<tr><td>${h(t.type)}<br><span class="hint">${h(t.tenant)}</span></td><td>${h(t.description)}${delivery}</td><td>${h(t.requester)}<br><span class="hint">${h(when(t.createdAt))}</span></td><td>${form}</td></tr>`;
    })
    .join('\n');
  const typeOptions: [string, string][] = [['', 'All types'], ...WORKFLOW_TYPES.map((x) => [x, x] as [string, string])];
  const statusOptions: [string, string][] = [
    ['CREATED', 'Waiting'],
    ['APPROVED', 'Approved'],
    ['REJECTED', 'Rejected'],
    ['ALL', 'All'],
  ];
  render(
    c,
    'admin',
    'Workflow tasks',
    `${takeFlash(c)}
<form method="get" action="/admin">
${select({ id: 'type', label: 'Type', options: typeOptions, value: type, ...(typeOk ? {} : { error: `type must be one of ${WORKFLOW_TYPES.join(', ')}` }) })}
${select({ id: 'status', label: 'State', options: statusOptions, value: wanted })}
<button type="submit">Filter</button>
</form>
${list.length === 0 ? '<p>No tasks.</p>' : `<div class="table"><table><thead><tr><th scope="col">Type</th><th scope="col">Task</th><th scope="col">Requested by</th><th scope="col">Decision</th></tr></thead><tbody>${rows}</tbody></table></div>`}`,
    status,
  );
}

async function decide(c: Call, a: AdminParts, id: string): Promise<void> {
  const decision = c.form.get('decision');
  const tenant = tenantOf(c, a);
  if (decision !== 'APPROVED' && decision !== 'REJECTED') return tasksPage(c, a, { [id]: 'Choose Approve or Reject' }, 400);
  try {
    const t = await a.workflows.decide(id, {
      status: decision,
      by: c.session.user?.username ?? '',
      comment: c.form.get('comment') ?? '',
      tenant,
    });
    c.parts.logger.log('info', 'admin_task_decided', { id, status: decision, by: c.session.user?.username });
    c.session.flash = `<p class="notice" role="status">${h(t.description)}: ${decision === 'APPROVED' ? 'approved' : 'rejected'}.</p>`;
  } catch (err) {
    if (err instanceof WorkflowError && err.code === 'WORKFLOW_TASK_NOT_FOUND')
      return problem(c, 'admin', 404, 'No such task', `No workflow task ${id} of your tenant.`);
    if (err instanceof WorkflowError && err.code === 'WORKFLOW_TASK_DECIDED')
      return problem(c, 'admin', 409, 'Already decided', err.message);
    return tasksPage(c, a, { [id]: messageOf(err) }, 400);
  }
  return seeOther(c.res, '/admin');
}

// ----------------------------------------------------------------------------------------- applications

async function applicationsPage(c: Call, a: AdminParts, errors: Errors = {}, status = 200): Promise<void> {
  const m = a.manager.forTenant(tenantOf(c, a));
  const apps = await m.listApplications();
  const rows = apps
    .map((app) => {
      const err = errors[app.id];
      return `<tr><td>${h(app.name)}<br><span class="hint">${h(app.tenant)}</span></td><td>${state(app.status)}</td><td>${h(app.tier)}</td><td><form method="post" action="/admin/applications/${encodeURIComponent(app.id)}/owner">${csrfField(c.session.csrf)}${field({ id: `owner-${app.id}`, label: `Owner of ${app.name}`, value: err !== undefined ? (c.form.get('owner') ?? '') : app.owner, ...(err !== undefined ? { error: err } : {}) }).replace(`name="owner-${app.id}"`, 'name="owner"')}<button type="submit">Change owner</button></form></td></tr>`;
    })
    .join('\n');
  render(
    c,
    'admin',
    'Applications',
    `${takeFlash(c)}${apps.length === 0 ? '<p>No applications.</p>' : `<div class="table"><table><thead><tr><th scope="col">Application</th><th scope="col">Status</th><th scope="col">Tier</th><th scope="col">Owner</th></tr></thead><tbody>${rows}</tbody></table></div>`}`,
    status,
  );
}

async function changeOwner(c: Call, a: AdminParts, id: string): Promise<void> {
  const m = a.manager.forTenant(tenantOf(c, a));
  const owner = (c.form.get('owner') ?? '').trim();
  try {
    const app = await m.changeOwner(id, owner);
    c.session.flash = `<p class="notice" role="status">${h(app.name)} now belongs to ${h(app.owner)}.</p>`;
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'not_found')
      return problem(c, 'admin', 404, 'No such application', `No application ${id} of your tenant.`);
    return applicationsPage(c, a, { [id]: messageOf(err) }, 400);
  }
  return seeOther(c.res, '/admin/applications');
}

// ----------------------------------------------------------------------------------------- blocking conditions

async function blockingPage(c: Call, a: AdminParts, errors: Errors = {}, status = 200): Promise<void> {
  const list = await a.manager.forTenant(tenantOf(c, a)).listBlockingConditions();
  const rows = list
    .map(
      (b) =>
        `<tr><td>${h(b.type)}</td><td><code>${h(b.value)}</code></td><td>${b.invert ? 'yes' : ''}</td><td>${buttonForm(`/admin/blocking/${encodeURIComponent(b.id)}/remove`, 'Remove', c.session.csrf, {}, `Remove ${b.type} ${b.value}`)}</td></tr>`,
    )
    .join('\n');
  const f = c.form;
  const err = (k: string): { error?: string } => (errors[k] !== undefined ? { error: errors[k] as string } : {});
  render(
    c,
    'admin',
    'Blocking conditions',
    `${takeFlash(c)}
<p class="hint">Calls to the APIs of ${h(tenantOf(c, a))} that a condition matches are refused with 900805 from the next call on (docs/throttling.md).</p>
${list.length === 0 ? '<p>No blocking conditions.</p>' : `<div class="table"><table><thead><tr><th scope="col">Type</th><th scope="col">Value</th><th scope="col">Inverted</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>${rows}</tbody></table></div>`}
<h2>Add a condition</h2>
<form method="post" action="/admin/blocking" novalidate>${csrfField(c.session.csrf)}
${select({ id: 'type', label: 'Type', options: BLOCKING_TYPES.map((t) => [t, t]), value: f.get('type') ?? 'API', ...err('type') })}
${field({ id: 'value', label: 'Value', value: f.get('value') ?? '', hint: 'API: its context (/pizza); APPLICATION: owner:name; USER: the user name; IP: an address; IP_RANGE: start-end or CIDR', ...err('value') })}
${select({
  id: 'invert',
  label: 'Invert (IP and IP range: block every address but these)',
  options: [
    ['false', 'No'],
    ['true', 'Yes'],
  ],
  value: f.get('invert') ?? 'false',
  ...err('invert'),
})}
<button type="submit">Add condition</button>
</form>`,
    status,
  );
}

async function addBlocking(c: Call, a: AdminParts): Promise<void> {
  const type = c.form.get('type') ?? '';
  const value = (c.form.get('value') ?? '').trim();
  const invert = c.form.get('invert') === 'true';
  const errors: Errors = {};
  if (!(BLOCKING_TYPES as readonly string[]).includes(type)) errors.type = `type must be one of ${BLOCKING_TYPES.join(', ')}`;
  else {
    const why = value === '' ? 'a value is required' : checkBlockingCondition(type, value);
    if (why !== undefined) errors.value = why;
    if (invert && type !== 'IP' && type !== 'IP_RANGE') errors.invert = 'invert applies to IP and IP_RANGE conditions only';
  }
  if (Object.keys(errors).length > 0) return blockingPage(c, a, errors, 400);
  try {
    const b = await a.manager.forTenant(tenantOf(c, a)).addBlockingCondition({ type, value, invert });
    c.session.flash = `<p class="notice" role="status">Blocking condition added: ${h(b.type)} ${b.invert ? 'not ' : ''}${h(b.value)}.</p>`;
  } catch (err) {
    return blockingPage(c, a, { value: messageOf(err) }, 400);
  }
  return seeOther(c.res, '/admin/blocking');
}

async function removeBlocking(c: Call, a: AdminParts, id: string): Promise<void> {
  try {
    const b = await a.manager.forTenant(tenantOf(c, a)).removeBlockingCondition(id);
    c.session.flash = `<p class="notice" role="status">Blocking condition removed: ${h(b.type)} ${h(b.value)}.</p>`;
  } catch (err) {
    return problem(c, 'admin', 404, 'No such condition', messageOf(err));
  }
  return seeOther(c.res, '/admin/blocking');
}

// ----------------------------------------------------------------------------------------- throttling policies

const POLICY_KINDS = ['api', 'application', 'subscription', 'custom'] as const;
type PolicyKind = (typeof POLICY_KINDS)[number];
const KIND_LABELS: Record<PolicyKind, string> = {
  api: 'Advanced (API or resource, with conditions)',
  application: 'Application',
  subscription: 'Subscription',
  custom: 'Custom',
};

/** The condition types `[apim.throttling]` lets a policy use: IP always, header, query and claim when their key is on. */
function conditionTypes(o: PolicyOptions): string[] {
  return CONDITION_TYPES.filter((t) =>
    t === 'header' ? o.headerConditions : t === 'query' ? o.queryConditions : t === 'claim' ? o.claimConditions : true,
  );
}

function readPolicies(a: AdminParts): string {
  try {
    return fs.readFileSync(a.policies.file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return DEFAULT_POLICIES_TOML;
    throw err;
  }
}

function policiesPage(c: Call, a: AdminParts, errors: Errors = {}, status = 200): void {
  const parsed = parsePolicies(readPolicies(a), a.policies.file, a.policies.options).policies;
  const f = c.form;
  const err = (k: string): { error?: string } => (errors[k] !== undefined ? { error: errors[k] as string } : {});
  const lines =
    parsed === undefined
      ? '<p class="error" role="alert">The policies file has errors: fix it in an editor (throughway config check shows them).</p>'
      : `<div class="table"><table><thead><tr><th scope="col">Kind</th><th scope="col">Policies</th></tr></thead><tbody>
<tr><th scope="row">Advanced</th><td>${h([...parsed.api.values()].map((p) => `${p.name}${p.groups.length > 0 ? ` (${p.groups.length} condition group${p.groups.length === 1 ? '' : 's'})` : ''}`).join(', '))}</td></tr>
<tr><th scope="row">Application</th><td>${h([...parsed.application.keys()].join(', '))}</td></tr>
<tr><th scope="row">Subscription</th><td>${h([...parsed.subscription.keys()].join(', '))}</td></tr>
<tr><th scope="row">Custom</th><td>${h(parsed.custom.map((p) => `${p.name} (${p.keyTemplate})`).join(', '))}</td></tr>
</tbody></table></div>`;
  const units: [string, string][] = Object.keys(TIME_UNITS).map((u) => [u, u]);
  const ctypes = conditionTypes(a.policies.options);
  render(
    c,
    'admin',
    'Throttling policies',
    `${takeFlash(c)}${lines}
<h2>Add a policy</h2>
<form method="post" action="/admin/policies" novalidate>${csrfField(c.session.csrf)}
${select({ id: 'kind', label: 'Kind', options: POLICY_KINDS.map((k) => [k, KIND_LABELS[k]]), value: f.get('kind') ?? 'api', ...err('kind') })}
${field({ id: 'name', label: 'Name', value: f.get('name') ?? '', required: true, ...err('name') })}
${field({ id: 'description', label: 'Description', value: f.get('description') ?? '', ...err('description') })}
${field({ id: 'request_count', label: 'Requests allowed', value: f.get('request_count') ?? '', hint: 'Per unit of time (the default quota of an advanced policy)', ...err('request_count') })}
${field({ id: 'unit_time', label: 'Unit time', value: f.get('unit_time') ?? '1', ...err('unit_time') })}
${select({ id: 'time_unit', label: 'Time unit', options: units, value: f.get('time_unit') ?? 'min', ...err('time_unit') })}
${field({ id: 'key_template', label: 'Key template (custom policies)', value: f.get('key_template') ?? '', hint: 'e.g. $userId:$apiContext', ...err('key_template') })}
<fieldset><legend>Condition group (advanced policies, optional)</legend>
${select({ id: 'condition_type', label: 'Condition type', options: [['', 'None'], ...ctypes.map((t) => [t, t] as [string, string])], value: f.get('condition_type') ?? '', ...err('condition_type') })}
<span class="hint">Header, query parameter and JWT claim conditions are offered when [apim.throttling] enable_header_based_throttling, enable_query_param_based_throttling and enable_jwt_claim_based_throttling are on.</span>
${field({ id: 'condition_name', label: 'Header, query parameter or claim name', value: f.get('condition_name') ?? '', ...err('condition_name') })}
${field({ id: 'condition_value', label: 'Value (IP, range, or a regular expression)', value: f.get('condition_value') ?? '', ...err('condition_value') })}
${field({ id: 'group_request_count', label: 'Requests allowed when the condition holds', value: f.get('group_request_count') ?? '', ...err('group_request_count') })}
</fieldset>
<button type="submit">Add policy</button>
</form>`,
    status,
  );
}

const tomlString = (s: string): string => JSON.stringify(s);

/** The form's policy as TOML text, and where each form field lands in the file (the validator's field paths). */
function policyToml(f: URLSearchParams, kind: PolicyKind, errors: Errors): string {
  const lines = [`[[${kind}]]`, `name = ${tomlString(f.get('name') ?? '')}`, `description = ${tomlString(f.get('description') ?? '')}`];
  const num = (k: string, out: string): void => {
    const v = (f.get(k) ?? '').trim();
    if (v === '') return;
    if (!/^\d{1,12}$/.test(v)) errors[k] = 'expected a whole number';
    else lines.push(`${out} = ${v}`);
  };
  num('request_count', 'request_count');
  num('unit_time', 'unit_time');
  lines.push(`time_unit = ${tomlString(f.get('time_unit') ?? 'min')}`);
  if (kind === 'custom') lines.push(`key_template = ${tomlString(f.get('key_template') ?? '')}`);
  const ctype = f.get('condition_type') ?? '';
  if (kind === 'api' && ctype !== '') {
    lines.push(`[[${kind}.condition_group]]`);
    const before = lines.length;
    num('group_request_count', 'request_count');
    if (lines.length === before) errors.group_request_count ??= 'a condition group needs its own number of requests';
    lines.push(`[[${kind}.condition_group.condition]]`, `type = ${tomlString(ctype)}`);
    if ((f.get('condition_name') ?? '') !== '') lines.push(`name = ${tomlString(f.get('condition_name') ?? '')}`);
    lines.push(`value = ${tomlString(f.get('condition_value') ?? '')}`);
  }
  return `\n${lines.join('\n')}\n`;
}

/** A validator field path of the new entry (`api[4].condition_group[0].condition[0].value`) as the form field it came from. */
function formField(rest: string): string {
  if (rest.startsWith('.condition_group[0].condition[0]')) {
    const k = rest.slice('.condition_group[0].condition[0]'.length).replace(/^\./, '');
    return k === 'name' ? 'condition_name' : k === 'type' ? 'condition_type' : 'condition_value';
  }
  if (rest.startsWith('.condition_group[0]')) return 'group_request_count';
  const k = rest.replace(/^\./, '');
  return ['name', 'description', 'request_count', 'unit_time', 'time_unit', 'key_template'].includes(k) ? k : 'request_count';
}

function addPolicy(c: Call, a: AdminParts): void {
  const f = c.form;
  const kind = f.get('kind') as PolicyKind;
  if (!(POLICY_KINDS as readonly string[]).includes(kind))
    return policiesPage(c, a, { kind: `kind must be one of ${POLICY_KINDS.join(', ')}` }, 400);
  const errors: Errors = {};
  if ((f.get('name') ?? '').trim() === '') errors.name = 'a policy needs a name';
  const ctype = f.get('condition_type') ?? '';
  if (ctype !== '' && kind === 'api' && !conditionTypes(a.policies.options).includes(ctype))
    errors.condition_type = `${ctype} conditions are off: [apim.throttling] enable_${ctype === 'query' ? 'query_param' : ctype === 'claim' ? 'jwt_claim' : ctype}_based_throttling`;
  const before = readPolicies(a);
  const text = `${before.replace(/\s*$/, '\n')}${policyToml(f, kind, errors)}`;
  if (Object.keys(errors).length > 0) return policiesPage(c, a, errors, 400);
  const r = parsePolicies(text, a.policies.file, a.policies.options);
  const index = parsePolicies(before, a.policies.file, a.policies.options).policies?.[kind === 'custom' ? 'custom' : kind] as
    { size?: number; length?: number } | undefined;
  const n = index === undefined ? 0 : (index.size ?? index.length ?? 0);
  const prefix = `${kind}[${n}]`;
  for (const d of r.diagnostics) {
    if (d.level !== 'error') continue;
    const at = d.field.startsWith(prefix) ? formField(d.field.slice(prefix.length)) : 'name';
    errors[at] ??= d.message;
  }
  if (r.policies === undefined || Object.keys(errors).length > 0) {
    if (Object.keys(errors).length === 0) errors.name = 'the policies file does not validate with this policy';
    return policiesPage(c, a, errors, 400);
  }
  const file = a.policies.file;
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
  a.policies.apply();
  c.parts.logger.log('info', 'admin_policy_added', { kind, name: f.get('name'), by: c.session.user?.username });
  c.session.flash = `<p class="notice" role="status">Policy ${h(f.get('name') ?? '')} added; the gateways count by it from now on.</p>`;
  return seeOther(c.res, '/admin/policies');
}

// ----------------------------------------------------------------------------------------- tenants

function tenantsPage(c: Call, a: AdminParts, errors: Errors = {}, status = 200): void {
  const rows = a.tenants
    .list()
    .filter((t) => t.domain !== SUPER_TENANT)
    .map(
      (t) =>
        `<tr><td>${h(t.domain)}</td><td>${h(t.admin)}</td><td>${state(t.active ? 'active' : 'inactive')}</td><td>${buttonForm(`/admin/tenants/${encodeURIComponent(t.domain)}/${t.active ? 'deactivate' : 'activate'}`, t.active ? 'Deactivate' : 'Activate', c.session.csrf, {}, `${t.active ? 'Deactivate' : 'Activate'} ${t.domain}`)}</td></tr>`,
    )
    .join('\n');
  const f = c.form;
  const err = (k: string): { error?: string } => (errors[k] !== undefined ? { error: errors[k] as string } : {});
  render(
    c,
    'admin',
    'Tenants',
    `${takeFlash(c)}${rows === '' ? '<p>No tenants besides the super tenant.</p>' : `<div class="table"><table><thead><tr><th scope="col">Domain</th><th scope="col">Admin</th><th scope="col">State</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>${rows}</tbody></table></div>`}
<h2>Add a tenant</h2>
<form method="post" action="/admin/tenants" novalidate>${csrfField(c.session.csrf)}
${field({ id: 'domain', label: 'Domain', value: f.get('domain') ?? '', hint: 'Lower-case DNS labels, e.g. acme.test', ...err('domain') })}
${field({ id: 'admin', label: 'Admin user name', value: f.get('admin') ?? '', hint: 'Becomes <name>@<domain>', ...err('admin') })}
${field({ id: 'password', label: 'Admin password', type: 'password', value: '', ...err('password') })}
${select({
  id: 'package',
  label: 'Package',
  options: [
    ['', 'None'],
    ['demo', 'demo'],
    ['smb', 'smb'],
    ['custom', 'custom'],
  ],
  value: f.get('package') ?? '',
  ...err('package'),
})}
<button type="submit">Add tenant</button>
</form>`,
    status,
  );
}

async function addTenant(c: Call, a: AdminParts): Promise<void> {
  const f = c.form;
  const input = {
    domain: (f.get('domain') ?? '').trim(),
    admin: (f.get('admin') ?? '').trim(),
    password: f.get('password') ?? '',
    ...((f.get('package') ?? '') !== '' ? { package: f.get('package') as string } : {}),
  };
  const errors: Errors = {};
  const bad = domainProblem(input.domain);
  if (bad !== undefined) errors.domain = `the domain ${bad}`;
  if (input.admin === '') errors.admin = 'an admin user name is required';
  if (input.password === '') errors.password = 'a password is required';
  if (errors.admin === undefined && errors.password === undefined) {
    try {
      checkNewUser({ username: input.admin, password: input.password }, a.userRules);
    } catch (err) {
      const m = messageOf(err);
      errors[m.startsWith('password') ? 'password' : 'admin'] = m;
    }
  }
  if (Object.keys(errors).length > 0) return tenantsPage(c, a, errors, 400);
  try {
    const t = await a.tenants.add(input);
    c.parts.logger.log('info', 'tenant_added', { domain: t.domain, admin: t.admin, by: c.session.user?.username });
    c.session.flash = `<p class="notice" role="status">Tenant ${h(t.domain)} added with its admin ${h(t.admin)}.</p>`;
  } catch (err) {
    if (!(err instanceof TenantError)) throw err;
    const at = err.code === 'TENANT_PACKAGE_UNKNOWN' ? 'package' : err.code === 'TENANT_ADMIN_INVALID' ? 'admin' : 'domain';
    return tenantsPage(c, a, { [at]: err.message }, err.code === 'TENANT_EXISTS' ? 409 : 400);
  }
  return seeOther(c.res, '/admin/tenants');
}

async function setTenant(c: Call, a: AdminParts, domain: string, active: boolean): Promise<void> {
  try {
    await a.tenants.setActive(domain, active);
  } catch (err) {
    if (!(err instanceof TenantError)) throw err;
    return problem(c, 'admin', err.code === 'TENANT_NOT_FOUND' ? 404 : 400, 'Not allowed', err.message);
  }
  c.session.flash = `<p class="notice" role="status">Tenant ${h(domain)} ${active ? 'activated' : 'deactivated'}.</p>`;
  return seeOther(c.res, '/admin/tenants');
}

// ----------------------------------------------------------------------------------------- routes

export function canAdminister(c: Call): boolean {
  return c.session.user !== undefined && c.session.user.roles.some((r) => ADMIN_ROLES.includes(r));
}

/** Routes under /admin (`segs` after it) for a signed-in admin. */
export async function admin(c: Call, a: AdminParts): Promise<void> {
  const [page, id, action] = c.segs;
  const superOnly = (): boolean => {
    if (isSuper(c, a)) return false;
    problem(
      c,
      'admin',
      403,
      'Not allowed',
      `This page is the super tenant's admins'; ${c.session.user?.username ?? ''} is an admin of tenant ${tenantOf(c, a)}.`,
    );
    return true;
  };
  if (page === undefined && c.method === 'GET') return tasksPage(c, a);
  if (page === 'tasks' && id !== undefined && action === undefined && c.method === 'POST') return decide(c, a, id);
  if (page === 'applications' && id === undefined && c.method === 'GET') return applicationsPage(c, a);
  if (page === 'applications' && id !== undefined && action === 'owner' && c.method === 'POST') return changeOwner(c, a, id);
  if (page === 'blocking') {
    if (id === undefined) return c.method === 'POST' ? addBlocking(c, a) : blockingPage(c, a);
    if (action === 'remove' && c.method === 'POST') return removeBlocking(c, a, id);
  }
  if (page === 'policies' && id === undefined) {
    if (superOnly()) return;
    return c.method === 'POST' ? addPolicy(c, a) : policiesPage(c, a);
  }
  if (page === 'tenants') {
    if (superOnly()) return;
    if (id === undefined) return c.method === 'POST' ? addTenant(c, a) : tenantsPage(c, a);
    if ((action === 'activate' || action === 'deactivate') && c.method === 'POST') return setTenant(c, a, id, action === 'activate');
  }
  return problem(c, 'admin', 404, 'Not found', 'No such page in the admin console.');
}
