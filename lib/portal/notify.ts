/**
 * The reference's new-version notification (docs/self-service.md, "New-version notification"): when the
 * publisher publishes a version of an API, the owners of the applications subscribed to the previous
 * version (the highest lower version of the same name that is published or deprecated) get a mail through
 * `[apim.notifications]`, once per owner, at the e-mail address of their profile. Owners without a
 * profile (added by an admin) have no address and get none. Sent from the outbox: publishing never waits
 * for the mail server.
 */
import type { ApiDefinition } from '../gateway/apis';
import type { Logger } from '../log';
import type { PortalKeyManager } from './backend';
import type { ApiCatalogue } from './catalogue';
import type { SelfService } from './selfservice';

const compare = (a: string, b: string): number => a.localeCompare(b, 'en', { numeric: true });

/** Mails the subscribers of the version before `api`; resolves to how many mails were queued. */
export async function notifyNewVersion(
  o: { selfService: SelfService; keys: PortalKeyManager; catalogue: ApiCatalogue; logger: Logger },
  api: Pick<ApiDefinition, 'name' | 'version' | 'context'>,
): Promise<number> {
  const s = o.selfService;
  if (!s.mailer.configured('notification')) return 0;
  const previous = o.catalogue
    .list()
    .filter(
      (e) =>
        e.api !== undefined &&
        e.api.name === api.name &&
        (e.state === 'PUBLISHED' || e.state === 'DEPRECATED') &&
        compare(e.api.version, api.version) < 0,
    )
    .sort((a, b) => compare(b.api?.version ?? '', a.api?.version ?? ''))[0]?.api;
  if (previous === undefined) return 0;
  const subs = (await o.keys.listSubscriptions({ apiContext: previous.context })).filter((x) => x.apiVersion === previous.version);
  const owners = new Set<string>();
  for (const sub of subs) {
    const app = await o.keys.getApplication(sub.applicationId);
    if (app !== undefined) owners.add(app.owner);
  }
  let queued = 0;
  for (const owner of owners) {
    const p = await s.store.getProfile(owner);
    if (p === undefined || p.email === '') continue;
    await s.mailer.send({
      kind: 'new-version',
      to: p.email,
      tenant: p.tenant,
      subject: `${api.name} ${api.version} is published`,
      text: `Hello ${owner},\n\na new version of ${api.name}, which your applications use in version ${previous.version}, is published: ${api.name} ${api.version}.\n\nSee it in the developer portal: ${s.settings.portalUrl}\n`,
    });
    queued++;
  }
  o.logger.log('info', 'portal_new_version_notified', { api: api.name, version: api.version, previous: previous.version, mails: queued });
  return queued;
}
