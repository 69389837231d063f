/**
 * `throughway apps|keys|subscriptions|users ...`: manage the key manager's store (docs/key-manager.md).
 *
 * Local mode (default) opens the store `[database.apim_db]` of the configuration names, directly. A node
 * running on the same store does not hear about local changes (events are in-process unless the Redis event hub is on, docs/scale-out.md), so
 * use `--url` against a running node when its gateway must see the change at once: that goes through the
 * admin API (docs/admin-api.md) with the super admin's credentials (`--admin-user`/`--admin-password`,
 * by default `[super_admin]` of the configuration).
 */
import * as path from 'node:path';
import { loadConfig } from '../config/load';
import { ConfigInvalidError, formatDiagnostic } from '../config/diagnostics';
import { createEventBus } from '../events/bus';
import { openStore } from '../store/open';
import { SUBSCRIPTION_STATES, SUPER_TENANT, type SubscriptionState } from '../store/types';
import { isDirectory, UserStoreError } from '../store/users';
import { OAuthError } from './errors';
import { signingKeystore } from './index';
import { openKeyRing } from './keys';
import { withoutInternalApps } from './console-clients';
import { checkNewUser, CONTROL_CHARS, Manager, tenantRefusal } from './manage';
import { PACKAGES, Tenants, tenantSettings } from '../tenants';
import { Workflows, workflowSettings } from '../workflows';
import { silentLogger } from '../log';
import { Mailer } from '../mail/outbox';
import { mailSettings } from '../mail/settings';
import { issueRegistrationToken, revokeRegistrationToken } from './registration';
import { keyManagerSettings } from './settings';
import { InternalError, UsageError } from '../errors';
import { signUpEffect } from './signup-effect';

export const ADMIN_USAGE = `Managing applications, keys, subscriptions and users:
  apps create NAME [--owner USER] [--tier TIER] [--description TEXT]
  apps list [--owner USER]
  apps delete NAME [--owner USER]
  keys generate --app NAME [--sandbox] [--grant-types a,b] [--callback URL]
  subscriptions add --app NAME --api CONTEXT --api-version V [--tier TIER] [--state STATE]
  subscriptions list [--app NAME] [--api CONTEXT]
  subscriptions block --app NAME --api CONTEXT [--api-version V] [--prod-only]
  subscriptions unblock --app NAME --api CONTEXT [--api-version V]
  users add NAME --password PASSWORD [--roles a,b]
  users list
  blocking add --type API|APPLICATION|USER|IP|IP_RANGE --value VALUE [--invert]
  blocking list
  blocking remove ID
  registration token [--owner USER] [--expires-in SECONDS]
  registration revoke JTI
  tenants add DOMAIN --admin NAME [--package demo|smb|custom]
  tenants list
  tenants activate DOMAIN
  tenants deactivate DOMAIN
  tenants package DOMAIN demo|smb|custom
  tasks list [--type TYPE] [--status CREATED|APPROVED|REJECTED]
  tasks approve ID [--comment TEXT]
  tasks reject ID [--comment TEXT]
Options: --config FILE (local store of that configuration), --url URL (a running node's management
port, e.g. http://localhost:9763) with --admin-user/--admin-password (default: [super_admin]), --json.
tenants add reads the admin's password from THROUGHWAY_TENANT_ADMIN_PASSWORD, else from standard
input: never from an argument.
`;

export const ADMIN_COMMANDS = new Set(['apps', 'keys', 'subscriptions', 'users', 'blocking', 'registration', 'tenants', 'tasks']);

/** The environment variable `tenants add` reads the new tenant admin's password from (docs/tenants.md). */
export const TENANT_PASSWORD_ENV = 'THROUGHWAY_TENANT_ADMIN_PASSWORD';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly cwd: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly stdin?: () => Promise<string>;
}

/** The tenant admin's password: the environment variable, else standard input (its first line). */
async function tenantPassword(io: Io): Promise<string> {
  const fromEnv = io.env?.[TENANT_PASSWORD_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const text = io.stdin === undefined ? '' : await io.stdin();
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '')
    throw new UsageError(`tenants add needs the admin's password in ${TENANT_PASSWORD_ENV} or on standard input (never as an argument)`);
  return line;
}

const FLAGS = new Set(['--sandbox', '--prod-only', '--json', '--invert']);
const VALUED = new Set([
  '--config',
  '--url',
  '--admin-user',
  '--admin-password',
  '--admin',
  '--package',
  '--owner',
  '--tier',
  '--description',
  '--app',
  '--grant-types',
  '--callback',
  '--api',
  '--api-version',
  '--state',
  '--password',
  '--roles',
  '--sys',
  '--type',
  '--value',
  '--expires-in',
  '--status',
  '--comment',
]);

function parse(argv: readonly string[]): { words: string[]; opts: Map<string, string> } {
  const words: string[] = [];
  const opts = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.has(name)) opts.set(name, 'true');
    else if (VALUED.has(name)) {
      const v = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : argv[++i];
      if (v === undefined) throw new UsageError(`${name} needs a value`);
      opts.set(name, v);
    } else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`);
    else words.push(arg);
  }
  return { words, opts };
}

/** The operations, locally over the store or remotely over the admin API. */
interface Ops {
  call(method: string, route: string, body?: Record<string, unknown>): Promise<unknown>;
  close(): Promise<void>;
}

function remoteOps(base: string, user: string, password: string): Ops {
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return {
    async call(method, route, body) {
      const r = await fetch(`${base.replace(/\/+$/, '')}/admin/v1${route}`, {
        method,
        headers: { Authorization: auth, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await r.text();
      const json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
      // eslint-disable-next-line no-restricted-syntax -- the remote admin API's refusal, printed by this command's catch as it came
      if (!r.ok) throw new Error(`${r.status} ${String(json.error ?? '')}: ${String(json.error_description ?? text)}`);
      return json;
    },
    close: () => Promise.resolve(),
  };
}

async function localOps(configFile: string, cwd: string, io: Io): Promise<Ops> {
  const loaded = loadConfig({ file: configFile });
  for (const d of loaded.diagnostics) if (d.level === 'error') io.err(`${formatDiagnostic(d)}\n`);
  if (!loaded.ok) throw new ConfigInvalidError('configuration has errors; run `throughway config check`');
  const store = await openStore(loaded.config, cwd);
  const props = loaded.config.user_store.properties;
  const rules = { username: new RegExp(props.UsernameJavaRegEx), password: new RegExp(props.PasswordJavaRegEx) };
  const tenants = await Tenants.open(store, tenantSettings(loaded.config), 0);
  // Decisions made here run the key manager's effects on this store (docs/workflows.md); an external task is never posted from here.
  const workflows = new Workflows(store, silentLogger, { ...workflowSettings(loaded.config), engineEnabled: false }, () => '');
  const m = new Manager(store, createEventBus(), undefined, tenants, undefined, workflows);
  m.registerWorkflowEffects(workflows);
  // A decided sign-up removes or frees its account here too; its mail is stored in the outbox and tried from here (a node retries it).
  const mailer = new Mailer({ store: store.selfService, settings: mailSettings(loaded.config), logger: silentLogger });
  workflows.register('AM_USER_SIGNUP', signUpEffect({ store, logger: silentLogger, mail: (x) => mailer.send(x) }));
  const admin = loaded.config.super_admin.username;
  const q = (route: string): { parts: string[]; query: URLSearchParams } => {
    const u = new URL(route, 'http://x');
    return {
      parts: u.pathname
        .split('/')
        .filter((s) => s !== '')
        .map(decodeURIComponent),
      query: u.searchParams,
    };
  };
  return {
    async call(method, route, body = {}) {
      const { parts, query } = q(route);
      const owner = query.get('owner') ?? undefined;
      const s = (k: string): string | undefined => (typeof body[k] === 'string' ? (body[k] as string) : undefined);
      const [c, id, sub] = parts;
      if (c === 'tenants') return localTenants(tenants, method, id, sub, body, rules);
      if (c === 'tasks' && id === undefined && method === 'GET') {
        const type = query.get('type') ?? undefined;
        const st = query.get('status') ?? undefined;
        const list = await workflows.list({
          ...(type !== undefined ? { type } : {}),
          ...(st !== undefined ? { pending: st === 'CREATED' } : {}),
        });
        return { list: st === undefined || st === 'CREATED' ? list : list.filter((x) => x.status === st) };
      }
      if (c === 'tasks' && id !== undefined && (sub === 'approve' || sub === 'reject') && method === 'POST') {
        return workflows.decide(id, { status: sub === 'approve' ? 'APPROVED' : 'REJECTED', by: admin, comment: s('comment') ?? '' });
      }
      if (c === 'applications' && id === undefined && method === 'GET')
        return { list: withoutInternalApps(await m.listApplications(owner), admin) };
      if (c === 'applications' && id === undefined && method === 'POST')
        return m.createApplication({
          name: s('name') ?? '',
          owner: s('owner') ?? admin,
          ...(s('tier') !== undefined ? { tier: s('tier') as string } : {}),
          ...(s('description') !== undefined ? { description: s('description') as string } : {}),
        });
      if (c === 'applications' && id !== undefined && sub === undefined && method === 'DELETE') return m.deleteApplication(id, owner);
      if (c === 'applications' && id !== undefined && sub === 'keys') {
        return m.generateKeys(id, {
          keyType: body.keyType === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION',
          ...(Array.isArray(body.grantTypes) ? { grantTypes: body.grantTypes as string[] } : {}),
          ...(s('callbackUrl') !== undefined ? { callbackUrl: s('callbackUrl') as string } : {}),
          ...(owner !== undefined ? { owner } : {}),
        });
      }
      if (c === 'subscriptions' && method === 'GET') {
        const app = query.get('application') ?? undefined;
        const api = query.get('api') ?? undefined;
        return {
          list: await m.listSubscriptions({
            ...(app !== undefined ? { application: app } : {}),
            ...(api !== undefined ? { apiContext: api } : {}),
          }),
        };
      }
      if (c === 'subscriptions' && method === 'POST') {
        return m.addSubscription({
          application: s('application') ?? '',
          apiContext: s('api') ?? '',
          apiVersion: s('version') ?? '',
          ...(s('tier') !== undefined ? { tier: s('tier') as string } : {}),
          ...(s('state') !== undefined ? { state: s('state') as SubscriptionState } : {}),
        });
      }
      if (c === 'subscriptions' && method === 'PATCH') {
        return m.setSubscriptionState(
          {
            application: s('application') ?? '',
            apiContext: s('api') ?? '',
            ...(s('version') !== undefined ? { apiVersion: s('version') as string } : {}),
          },
          s('state') as SubscriptionState,
        );
      }
      if (c === 'users' && method === 'GET') return { list: await m.listUsers() };
      if (c === 'blocking-conditions' && method === 'GET') return { list: await m.listBlockingConditions() };
      if (c === 'blocking-conditions' && method === 'POST')
        return m.addBlockingCondition({ type: s('type') ?? '', value: s('value') ?? '', invert: body.invert === true });
      if (c === 'blocking-conditions' && id !== undefined && method === 'DELETE') return m.removeBlockingCondition(id);
      if (c === 'registration-tokens' && method === 'POST') {
        const settings = keyManagerSettings(loaded.config, loaded.ports);
        const keys = await openKeyRing(
          store,
          Math.max(settings.appTokenValidity, settings.userTokenValidity, settings.idTokenValidity) + settings.skew,
          signingKeystore(loaded.config),
        );
        return issueRegistrationToken(keys, settings.issuer, {
          issuedBy: admin,
          ...(s('owner') !== undefined ? { owner: s('owner') as string } : {}),
          ...(typeof body.expiresIn === 'number' ? { expiresIn: body.expiresIn } : {}),
        });
      }
      if (c === 'registration-tokens' && id !== undefined && method === 'DELETE') {
        await revokeRegistrationToken(store, id);
        return { jti: id, revoked: true };
      }
      // The local mode opens the key manager's store only: a directory is written through a running node (docs/user-stores.md).
      if (c === 'users' && method === 'POST' && isDirectory(loaded.config))
        throw new UserStoreError(
          'USER_STORE_CONFIG',

          `[user_store] type = "${loaded.config.user_store.type}": users sign in against the directory; add them there, or with --url through a running node for read_write_ldap`,
        );
      if (c === 'users' && method === 'POST')
        return m.addUser(
          {
            username: s('username') ?? '',
            password: s('password') ?? '',
            ...(Array.isArray(body.roles) ? { roles: body.roles as string[] } : {}),
          },
          rules,
        );
      throw new InternalError(`no operation ${method} ${route}`);
    },
    async close() {
      await mailer.idle();
      await mailer.close();
      await store.close();
    },
  };
}

/** The tenant routes of the admin API over the local store (docs/tenants.md). */
async function localTenants(
  tenants: Tenants,
  method: string,
  domain: string | undefined,
  sub: string | undefined,
  body: Record<string, unknown>,
  rules: { username: RegExp; password: RegExp },
): Promise<unknown> {
  const s = (k: string): string => (typeof body[k] === 'string' ? (body[k] as string) : '');
  if (domain === undefined && method === 'GET') return { list: tenants.list() };
  if (domain === undefined && method === 'POST') {
    checkNewUser({ username: s('admin'), password: s('password') }, rules);
    return tenants
      .add({ domain: s('domain'), admin: s('admin'), password: s('password'), ...(s('package') !== '' ? { package: s('package') } : {}) })
      .catch(tenantRefusal);
  }
  if (domain !== undefined && method === 'POST' && (sub === 'activate' || sub === 'deactivate'))
    return tenants.setActive(domain, sub === 'activate').catch(tenantRefusal);
  if (domain !== undefined && method === 'PUT' && sub === 'package') return tenants.setPackage(domain, s('package')).catch(tenantRefusal);
  throw new InternalError(`no operation ${method} /tenants`);
}

function need(opts: Map<string, string>, name: string): string {
  const v = opts.get(name);
  if (v === undefined || v === '') throw new UsageError(`${name} is required`);
  return v;
}

function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

type Rec = Record<string, unknown>;
/**
 * A value as printed: control characters (C0, DEL, C1, U+2028/2029) escaped as \xNN or \uNNNN, so a
 * stored name cannot move the cursor, erase a line or forge a row of a listing.
 */
const PRINTABLE = new RegExp(`[${CONTROL_CHARS}\\\\]`, 'gu');
export function printable(text: string): string {
  return text.replace(PRINTABLE, (c) => {
    if (c === '\\') return '\\\\';
    const n = c.codePointAt(0) ?? 0;
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
}
const S = (v: unknown): string => printable(v === undefined || v === null ? '' : Array.isArray(v) ? v.join(',') : String(v));

export async function runAdminCli(argv: readonly string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`throughway: ${(err as Error).message}\n\n${ADMIN_USAGE}`);
    return 2;
  }
  const { words, opts } = parsed;
  const [cmd, sub, ...rest] = words;
  const json = opts.has('--json');
  const q = (o: Record<string, string | undefined>): string => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(o)) if (v !== undefined) p.set(k, v);
    const s = p.toString();
    return s === '' ? '' : `?${s}`;
  };
  const enc = encodeURIComponent;
  let ops: Ops | undefined;
  try {
    const configFile = path.resolve(io.cwd, opts.get('--config') ?? path.join('conf', 'deployment.toml'));
    const url = opts.get('--url');
    if (url !== undefined) {
      let user = opts.get('--admin-user');
      let password = opts.get('--admin-password');
      if (user === undefined || password === undefined) {
        const loaded = loadConfig({ file: configFile });
        user ??= loaded.config.super_admin.username;
        password ??= loaded.config.super_admin.password;
      }
      ops = remoteOps(url, user, password);
    }
    const run = async (): Promise<unknown> => {
      ops ??= await localOps(configFile, io.cwd, io);
      const owner = opts.get('--owner');
      const key = `${cmd ?? ''} ${sub ?? ''}`;
      const arity = (n: number): void => {
        if (rest.length !== n) throw new UsageError(`${key.trim()} takes ${n === 0 ? 'no' : n} argument${n === 1 ? '' : 's'}`);
      };
      switch (key) {
        case 'apps create':
          arity(1);
          return ops.call('POST', '/applications', {
            name: rest[0],
            ...(owner !== undefined ? { owner } : {}),
            ...(opts.has('--tier') ? { tier: opts.get('--tier') } : {}),
            ...(opts.has('--description') ? { description: opts.get('--description') } : {}),
          });
        case 'apps list':
          arity(0);
          return ops.call('GET', `/applications${q({ owner })}`);
        case 'apps delete':
          arity(1);
          return ops.call('DELETE', `/applications/${enc(rest[0] ?? '')}${q({ owner })}`);
        case 'keys generate':
          arity(0);
          return ops.call('POST', `/applications/${enc(need(opts, '--app'))}/keys${q({ owner })}`, {
            keyType: opts.has('--sandbox') ? 'SANDBOX' : 'PRODUCTION',
            ...(opts.has('--grant-types') ? { grantTypes: (opts.get('--grant-types') ?? '').split(',').filter((g) => g !== '') } : {}),
            ...(opts.has('--callback') ? { callbackUrl: opts.get('--callback') } : {}),
          });
        case 'subscriptions add': {
          arity(0);
          const state = opts.get('--state');
          if (state !== undefined && !(SUBSCRIPTION_STATES as readonly string[]).includes(state))
            throw new UsageError(`--state must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
          return ops.call('POST', '/subscriptions', {
            application: need(opts, '--app'),
            api: need(opts, '--api'),
            version: need(opts, '--api-version'),
            ...(opts.has('--tier') ? { tier: opts.get('--tier') } : {}),
            ...(state !== undefined ? { state } : {}),
          });
        }
        case 'subscriptions list':
          arity(0);
          return ops.call('GET', `/subscriptions${q({ application: opts.get('--app'), api: opts.get('--api') })}`);
        case 'subscriptions block':
        case 'subscriptions unblock':
          arity(0);
          return ops.call('PATCH', '/subscriptions', {
            application: need(opts, '--app'),
            api: need(opts, '--api'),
            ...(opts.has('--api-version') ? { version: opts.get('--api-version') } : {}),
            state: sub === 'unblock' ? 'UNBLOCKED' : opts.has('--prod-only') ? 'PROD_ONLY_BLOCKED' : 'BLOCKED',
          });
        case 'users add':
          arity(1);
          return ops.call('POST', '/users', {
            username: rest[0],
            password: need(opts, '--password'),
            ...(opts.has('--roles') ? { roles: (opts.get('--roles') ?? '').split(',').filter((r) => r !== '') } : {}),
          });
        case 'users list':
          arity(0);
          return ops.call('GET', '/users');
        case 'blocking add':
          arity(0);
          return ops.call('POST', '/blocking-conditions', {
            type: need(opts, '--type').toUpperCase(),
            value: need(opts, '--value'),
            invert: opts.has('--invert'),
          });
        case 'blocking list':
          arity(0);
          return ops.call('GET', '/blocking-conditions');
        case 'blocking remove':
          arity(1);
          return ops.call('DELETE', `/blocking-conditions/${enc(rest[0] ?? '')}`);
        case 'registration token': {
          arity(0);
          const ttl = opts.get('--expires-in');
          if (ttl !== undefined && !/^\d{1,9}$/.test(ttl)) throw new UsageError('--expires-in takes a number of seconds');
          return ops.call('POST', '/registration-tokens', {
            ...(owner !== undefined ? { owner } : {}),
            ...(ttl !== undefined ? { expiresIn: Number(ttl) } : {}),
          });
        }
        case 'registration revoke':
          arity(1);
          return ops.call('DELETE', `/registration-tokens/${enc(rest[0] ?? '')}`);
        case 'tenants add': {
          arity(1);
          const admin = need(opts, '--admin');
          return ops.call('POST', '/tenants', {
            domain: rest[0],
            admin,
            password: await tenantPassword(io),
            ...(opts.has('--package') ? { package: opts.get('--package') } : {}),
          });
        }
        case 'tenants list':
          arity(0);
          return ops.call('GET', '/tenants');
        case 'tenants activate':
        case 'tenants deactivate':
          arity(1);
          return ops.call('POST', `/tenants/${enc(rest[0] ?? '')}/${sub ?? ''}`);
        case 'tenants package':
          if (rest.length !== 2) throw new UsageError(`tenants package takes a domain and a package (${PACKAGES.join(', ')})`);
          return ops.call('PUT', `/tenants/${enc(rest[0] ?? '')}/package`, { package: rest[1] });
        case 'tasks list': {
          arity(0);
          const st = opts.get('--status');
          if (st !== undefined && st !== 'CREATED' && st !== 'APPROVED' && st !== 'REJECTED')
            throw new UsageError('--status must be CREATED, APPROVED or REJECTED');
          return ops.call('GET', `/tasks${q({ type: opts.get('--type'), status: st })}`);
        }
        case 'tasks approve':
        case 'tasks reject':
          arity(1);
          return ops.call('POST', `/tasks/${enc(rest[0] ?? '')}/${sub ?? ''}`, {
            ...(opts.has('--comment') ? { comment: opts.get('--comment') } : {}),
          });
        default:
          throw new UsageError(`unknown command: ${words.join(' ')}`);
      }
    };
    const result = (await run()) as Rec;
    if (json) {
      // JSON.stringify escapes C0 controls; C1 and U+2028/2029 are escaped here (still valid JSON).
      io.out(
        `${JSON.stringify(result, null, 2).replace(/[\u007f-\u009f\u2028\u2029]/gu, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`)}\n`,
      );
      return 0;
    }
    io.out(render(`${cmd ?? ''} ${sub ?? ''}`, result, opts.get('--url')));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`throughway: ${err.message}\n\n${ADMIN_USAGE}`);
      return 2;
    }
    io.err(`throughway: ${printable(err instanceof OAuthError ? err.message : (err as Error).message)}\n`);
    return 1;
  } finally {
    await ops?.close();
  }
}

function render(key: string, r: Rec, url: string | undefined): string {
  const list = (r.list as Rec[] | undefined) ?? [];
  switch (key) {
    case 'apps create':
      return `application ${S(r.name)} created (owner ${S(r.owner)}, tier ${S(r.tier)}, id ${S(r.id)})\nnext: throughway keys generate --app ${JSON.stringify(S(r.name))}${url !== undefined ? ` --url ${url}` : ''}\n`;
    case 'apps delete':
      return `application ${S(r.name)} deleted with its keys and subscriptions\n`;
    case 'apps list':
      return list.length === 0
        ? 'no applications\n'
        : table([
            ['NAME', 'OWNER', 'TIER', 'KEYS'],
            ...list.map((a) => [
              S(a.name),
              S(a.owner),
              S(a.tier),
              ((a.keys as Rec[] | undefined) ?? []).map((k) => `${S(k.keyType)}:${S(k.consumerKey)}`).join(' '),
            ]),
          ]);
    case 'keys generate':
      return `${S(r.keyType)} keys of ${S(r.application)} (the secret is shown only now${r.replaced !== null && r.replaced !== undefined ? `; they replace ${S(r.replaced)}` : ''}):\n  consumer key     ${S(r.consumerKey)}\n  consumer secret  ${S(r.consumerSecret)}\n  grant types      ${S(r.grantTypes)}\n`;
    case 'subscriptions list':
      return list.length === 0
        ? 'no subscriptions\n'
        : table([
            ['APPLICATION', 'API', 'VERSION', 'TIER', 'STATE', 'ID'],
            ...list.map((s) => [S(s.application), S(s.apiContext), S(s.apiVersion), S(s.tier), S(s.state), S(s.id)]),
          ]);
    case 'subscriptions add':
    case 'subscriptions block':
    case 'subscriptions unblock':
      return `${S(r.application)} → ${S(r.apiContext)} ${S(r.apiVersion)}: ${S(r.state)} (tier ${S(r.tier)})\n`;
    case 'users add':
      return `user ${S(r.username)} added (roles ${S(r.roles)})\n`;
    case 'users list':
      return table([['USER', 'ROLES', 'HASH'], ...list.map((u) => [S(u.username), S(u.roles), S(u.hashMethod)])]);
    case 'blocking add':
      return `blocking condition ${S(r.id)} added: ${S(r.type)} ${r.invert === true ? 'not ' : ''}${S(r.value)}${url === undefined ? ' (a running node applies it on restart; use --url to apply it at once)' : ''}\n`;
    case 'blocking remove':
      return `blocking condition ${S(r.id)} removed: ${S(r.type)} ${S(r.value)}\n`;
    case 'registration token':
      return `initial access token for registering clients of ${S(r.owner)} (expires ${new Date(Number(r.expiresAt)).toISOString()}, id ${S(r.jti)}); send it as Authorization: Bearer to ${url ?? 'the management port'}/client-registration/v0.14/register:\n${S(r.token)}\n`;
    case 'registration revoke':
      return `initial access token ${S(r.jti)} revoked\n`;
    case 'registration token':
      return `initial access token for registering clients of ${S(r.owner)} (expires ${new Date(Number(r.expiresAt)).toISOString()}, id ${S(r.jti)}); send it as Authorization: Bearer to ${url ?? 'the management port'}/client-registration/v0.14/register:\n${S(r.token)}\n`;
    case 'registration revoke':
      return `initial access token ${S(r.jti)} revoked\n`;
    case 'tenants add':
      return `tenant ${S(r.domain)} added, admin ${S(r.admin)}${S(r.package) !== '' ? `, package ${S(r.package)}` : ''}: ${r.active === true ? 'active' : 'inactive until the super admin activates it ([multi_tenancy.platform] tenant_activation_moderated)'}\n`;
    case 'tenants activate':
    case 'tenants deactivate':
      return `tenant ${S(r.domain)} ${r.active === true ? 'active' : 'inactive'}\n`;
    case 'tenants package':
      return `tenant ${S(r.domain)}: package ${S(r.package)} (users and APIs past its limits are kept; new ones are refused)\n`;
    case 'tenants list':
      return table([
        ['DOMAIN', 'ADMIN', 'PACKAGE', 'STATE'],
        ...list.map((x) => [S(x.domain), S(x.admin), S(x.package), x.active === true ? 'active' : 'inactive']),
      ]);
    case 'tasks list':
      return list.length === 0
        ? 'no workflow tasks\n'
        : table([
            ['ID', 'TYPE', 'TENANT', 'REQUESTER', 'STATUS', 'DESCRIPTION'],
            ...list.map((x) => [S(x.id), S(x.type), S(x.tenant), S(x.requester), S(x.status), S(x.description)]),
          ]);
    case 'tasks approve':
    case 'tasks reject':
      return `task ${S(r.id)} ${S(r.status)}: ${S(r.description)}${url === undefined ? ' (decided on the store: a running node applies what gateways must hear on restart; use --url to apply it at once)' : ''}\n`;
    case 'blocking list':
      return list.length === 0
        ? 'no blocking conditions\n'
        : table([
            ['ID', 'TYPE', 'VALUE', 'INVERT', 'TENANT'],
            ...list.map((c) => [S(c.id), S(c.type), S(c.value), c.invert === true ? 'yes' : '', S(c.tenant ?? SUPER_TENANT)]),
          ]);
    default:
      return `${JSON.stringify(r)}\n`;
  }
}
