/**
 * `throughway import app <dir or .zip>`: an application as the reference's CLI exports it (its
 * `<owner>_<name>` project holding `<name>.yaml` or `application.yaml`: `type: application`, `data`
 * with applicationInfo, subscribedAPIs and keyManagerWiseOAuthApp) written into the key manager's store:
 * the application with its tier, its OAuth clients (consumer key, and the secret's digest only when the
 * export carries the secret), and its subscriptions, each resolved to an API file of apis/ by name and
 * version (the export names APIs, the store keeps their context). An application, client or subscription
 * that exists and differs is replaced only with --force; one that exists and matches is left alone.
 */
import { isTable } from '../config/document';
import { DEFAULT_CLIENT_GRANTS, isGrantType } from '../keymanager/settings';
import { digest } from '../store/passwords';
import { SUBSCRIPTION_STATES, type KeyType, type Store, type SubscriptionState } from '../store/types';
import { ImportError } from './codes';
import { leftOver, type Dropped } from './dropped';
import { findApiFile } from './export';
import { parseProjectFile, readProject, type Project } from './project';

type Rec = Record<string, unknown>;
const isRec = isTable;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export interface AppClient {
  readonly keyType: KeyType;
  readonly consumerKey: string;
  readonly secretHash: string;
  readonly grantTypes: readonly string[];
  readonly callbackUrl: string;
}

export interface AppSubscription {
  readonly apiName: string;
  readonly apiVersion: string;
  readonly apiContext: string;
  readonly tier: string;
  readonly state: SubscriptionState;
}

export interface AppImport {
  readonly name: string;
  readonly owner: string;
  readonly tier: string;
  readonly description: string;
  readonly clients: readonly AppClient[];
  readonly subscriptions: readonly AppSubscription[];
  readonly dropped: readonly Dropped[];
}

const isAppRoot = (names: readonly string[]): boolean => names.some((n) => !n.includes('/') && /\.(ya?ml|json)$/.test(n));

/** The reference's subscription states that the store has; ON_HOLD and REJECTED are workflow states. */
function stateOf(v: unknown, where: string): SubscriptionState {
  const s = String(v ?? 'UNBLOCKED').toUpperCase();
  if ((SUBSCRIPTION_STATES as readonly string[]).includes(s)) return s as SubscriptionState;
  throw new ImportError('IMPORT_FIELD', where, `subscription state ${s} is not one of ${SUBSCRIPTION_STATES.join(', ')}`);
}

/** Reads and converts an exported application; `apisDir` resolves its subscriptions. */
export function convertApp(source: string, cwd: string, apisDir: string): AppImport {
  const project: Project = readProject(source, cwd, isAppRoot);
  const file = [...project.files.keys()].find((n) => !n.includes('/') && /\.(ya?ml|json)$/.test(n));
  if (file === undefined)
    throw new ImportError('IMPORT_NOT_PROJECT', source, "no application file (<name>.yaml or .json) at the project's root");
  const where = `${project.where}/${file}`;
  const doc = parseProjectFile(project.files.get(file) as Buffer, where);
  if (!isRec(doc) || doc.type !== 'application' || !isRec(doc.data))
    throw new ImportError('IMPORT_NOT_PROJECT', where, 'not an exported application (type: application, data: applicationInfo ...)');
  const data = doc.data;
  const info = isRec(data.applicationInfo) ? data.applicationInfo : undefined;
  if (info === undefined) throw new ImportError('IMPORT_FIELD', `${where}:data.applicationInfo`, 'applicationInfo is required');
  const name = str(info.name);
  if (name === undefined) throw new ImportError('IMPORT_FIELD', `${where}:data.applicationInfo.name`, 'an application needs a name');
  const owner = str(info.owner) ?? 'admin';
  const dropped: Dropped[] = [];
  const infoRead = new Set([
    'name',
    'owner',
    'throttlingPolicy',
    'description',
    'applicationId',
    'subscriptionCount',
    'status',
    'keys',
    'tokenType',
    'hashEnabled',
    'createdTime',
    'lastUpdatedTime',
  ]);
  dropped.push(
    ...leftOver(info, infoRead, `${where}:data.applicationInfo.`).map((d) => ({
      path: d.path,
      why: /groups|attributes|subscriptionScopes/.test(d.path)
        ? 'application groups, attributes and subscription scopes are not kept by the store'
        : 'the store has no such field',
    })),
  );
  if (info.status !== undefined && info.status !== 'APPROVED')
    dropped.push({
      path: `${where}:data.applicationInfo.status`,
      why: `${String(info.status)}: an application here is active once created (no approval workflow)`,
    });

  const clients: AppClient[] = [];
  const byKm = isRec(data.keyManagerWiseOAuthApp) ? data.keyManagerWiseOAuthApp : {};
  for (const keyType of ['PRODUCTION', 'SANDBOX'] as const) {
    const kms = isRec(byKm[keyType]) ? (byKm[keyType] as Rec) : {};
    Object.entries(kms).forEach(([km, app], i) => {
      const at = `${where}:data.keyManagerWiseOAuthApp.${keyType}.${km}`;
      if (!isRec(app)) return;
      if (i > 0) {
        dropped.push({ path: at, why: 'one key manager: the store keeps one client per key type (the first is kept)' });
        return;
      }
      const consumerKey = str(app.clientId) ?? str(app.consumerKey);
      if (consumerKey === undefined) throw new ImportError('IMPORT_FIELD', `${at}.clientId`, 'a client needs its clientId');
      const secret = str(app.clientSecret) ?? str(app.consumerSecret);
      if (secret === undefined) {
        dropped.push({
          path: `${at}.clientSecret`,
          why: `the export carries no secret: no client written for ${consumerKey}; generate keys (throughway keys generate --app ${name}${keyType === 'SANDBOX' ? ' --sandbox' : ''})`,
        });
        return;
      }
      const params = isRec(app.parameters) ? app.parameters : {};
      const rawGrants = Array.isArray(params.grant_types)
        ? params.grant_types.map(String)
        : typeof params.grant_types === 'string'
          ? params.grant_types.split(/[\s,]+/).filter((g) => g !== '')
          : [...DEFAULT_CLIENT_GRANTS];
      const grantTypes = rawGrants.filter((g) => isGrantType(g));
      for (const g of rawGrants)
        if (!isGrantType(g))
          dropped.push({ path: `${at}.parameters.grant_types`, why: `${g}: not a grant type of the key manager (docs/key-manager.md)` });
      const callbackUrl = str(params.redirect_uris) ?? str(app.callBackURL) ?? '';
      clients.push({
        keyType,
        consumerKey,
        secretHash: digest(secret),
        grantTypes: grantTypes.length > 0 ? grantTypes : [...DEFAULT_CLIENT_GRANTS],
        callbackUrl,
      });
    });
  }

  const subscriptions: AppSubscription[] = [];
  (Array.isArray(data.subscribedAPIs) ? data.subscribedAPIs : []).forEach((s, i) => {
    const at = `${where}:data.subscribedAPIs[${i}]`;
    const id = isRec(s) && isRec(s.apiId) ? s.apiId : isRec(s) ? s : {};
    const apiName = str(id.apiName) ?? str(id.name);
    const apiVersion = str(id.version);
    if (!isRec(s) || apiName === undefined || apiVersion === undefined)
      throw new ImportError('IMPORT_FIELD', `${at}.apiId`, 'a subscription names its API by apiName and version');
    let apiContext: string;
    try {
      apiContext = String(findApiFile(apisDir, apiName, apiVersion).doc.context);
    } catch {
      throw new ImportError(
        'IMPORT_FIELD',
        `${at}.apiId`,
        `no API file ${apiName} ${apiVersion} in ${apisDir}: import the API first (throughway import api)`,
      );
    }
    const tier = str(s.throttlingPolicy) ?? (isRec(s.tier) ? str(s.tier.name) : str(s.tier)) ?? 'Unlimited';
    subscriptions.push({
      apiName,
      apiVersion,
      apiContext,
      tier,
      state: stateOf(s.subStatus ?? s.subscriptionStatus ?? s.status, `${at}.subStatus`),
    });
  });
  return {
    name,
    owner,
    tier: str(info.throttlingPolicy) ?? 'Unlimited',
    description: str(info.description) ?? '',
    clients,
    subscriptions,
    dropped,
  };
}

export interface AppOutcome {
  readonly what: string;
  readonly outcome: 'new' | 'unchanged' | 'replaced';
}

/**
 * Writes the application into the store (nothing with `dryRun`). Everything is compared first: a part
 * that exists and differs refuses the whole import without `force` (IMPORT_EXISTS), before any write.
 */
export async function applyApp(store: Store, a: AppImport, o: { dryRun: boolean; force: boolean }): Promise<AppOutcome[]> {
  const out: AppOutcome[] = [];
  const app = await store.findApplication(a.name, a.owner);
  const differs: string[] = [];
  const appOutcome = app === undefined ? 'new' : app.tier === a.tier && app.description === a.description ? 'unchanged' : 'replaced';
  if (appOutcome === 'replaced') differs.push(`application ${a.name} (tier or description)`);
  out.push({ what: `application ${a.name} of ${a.owner}`, outcome: appOutcome });
  const clients = app === undefined ? [] : await store.listClients(app.id);
  const clientPlan = await Promise.all(
    a.clients.map(async (c) => {
      const mine = clients.find((x) => x.keyType === c.keyType);
      const other = mine?.consumerKey === c.consumerKey ? undefined : await store.getClient(c.consumerKey);
      if (other !== undefined && other.applicationId !== app?.id)
        throw new ImportError('IMPORT_STORE', `client ${c.consumerKey}`, 'the consumer key belongs to another application');
      const same =
        mine !== undefined &&
        mine.consumerKey === c.consumerKey &&
        mine.secretHash === c.secretHash &&
        mine.callbackUrl === c.callbackUrl &&
        mine.grantTypes.join(' ') === c.grantTypes.join(' ');
      const outcome: AppOutcome['outcome'] = mine === undefined ? 'new' : same ? 'unchanged' : 'replaced';
      if (outcome === 'replaced') differs.push(`${c.keyType} keys of ${a.name}`);
      out.push({ what: `${c.keyType} client ${c.consumerKey}`, outcome });
      return { c, mine, outcome };
    }),
  );
  const subs = app === undefined ? [] : await store.listSubscriptions({ applicationId: app.id });
  const subPlan = a.subscriptions.map((s) => {
    const mine = subs.find((x) => x.apiContext === s.apiContext && x.apiVersion === s.apiVersion);
    const outcome: AppOutcome['outcome'] =
      mine === undefined ? 'new' : mine.tier === s.tier && mine.state === s.state ? 'unchanged' : 'replaced';
    if (outcome === 'replaced') differs.push(`subscription to ${s.apiName} ${s.apiVersion}`);
    out.push({ what: `subscription to ${s.apiName} ${s.apiVersion} (${s.apiContext})`, outcome });
    return { s, mine, outcome };
  });
  if (differs.length > 0 && !o.force && !o.dryRun)
    throw new ImportError(
      'IMPORT_EXISTS',
      `application ${a.name}`,
      `exists in the store with other values (${differs.join(', ')}), not replaced without --force; nothing written`,
    );
  if (o.dryRun) return out;
  try {
    const target =
      app === undefined
        ? await store.createApplication({ name: a.name, owner: a.owner, tier: a.tier, description: a.description })
        : appOutcome === 'replaced'
          ? ((await store.updateApplication(app.id, { tier: a.tier, description: a.description })) ?? app)
          : app;
    for (const { c, mine, outcome } of clientPlan) {
      if (outcome === 'unchanged') continue;
      if (mine !== undefined) await store.deleteClient(mine.consumerKey);
      await store.createClient({
        consumerKey: c.consumerKey,
        secretHash: c.secretHash,
        applicationId: target.id,
        keyType: c.keyType,
        grantTypes: c.grantTypes,
        callbackUrl: c.callbackUrl,
      });
    }
    for (const { s, mine, outcome } of subPlan) {
      if (outcome === 'unchanged') continue;
      if (mine !== undefined) await store.deleteSubscription(mine.id);
      await store.addSubscription({
        applicationId: target.id,
        apiContext: s.apiContext,
        apiVersion: s.apiVersion,
        tier: s.tier,
        state: s.state,
      });
    }
  } catch (err) {
    if (err instanceof ImportError) throw err;
    throw new ImportError('IMPORT_STORE', `application ${a.name}`, (err as Error).message);
  }
  return out;
}
