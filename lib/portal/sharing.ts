/**
 * Application sharing (docs/self-service.md, "Application sharing"): with `[apim.devportal]
 * enable_application_sharing`, users of one tenant whose `application_sharing_claim` has the same value
 * see and use each other's applications in the developer portal, as the reference's default sharing
 * does: keys, tokens, subscriptions and try-it; only the owner deletes one. The claim is the organisation
 * of the user's profile (given at sign-up, lib/store/selfservice.ts); a user without one shares nothing.
 */
import type { ApplicationView } from '../keymanager/manage';
import type { Call } from './context';

/** At most this many members of one organisation are looked at for shared applications. */
const MAX_MEMBERS = 200;

/** The users whose applications the signed-in user sees: themself, and with sharing the members of their organisation. */
export async function applicationOwners(c: Call): Promise<string[]> {
  const user = c.session.user;
  if (user === undefined) return [];
  const s = c.parts.selfService;
  if (s === undefined || !s.settings.sharing.enabled) return [user.username];
  const mine = await s.store.getProfile(user.username);
  if (mine === undefined || mine.organization === '') return [user.username];
  const members = (await s.store.profilesByOrganization(mine.tenant, mine.organization)).slice(0, MAX_MEMBERS).map((p) => p.username);
  return [user.username, ...members.filter((m) => m !== user.username)];
}

/** The applications the signed-in user sees (their own first), by name. */
export async function visibleApplications(c: Call): Promise<ApplicationView[]> {
  const owners = await applicationOwners(c);
  const lists = await Promise.all(owners.map((o) => c.parts.keys.listApplications(o)));
  return lists.flat();
}

/** Whether the signed-in user may use this application: theirs, or shared with them. */
export async function mayUseApplication(c: Call, app: ApplicationView): Promise<boolean> {
  const user = c.session.user;
  if (user === undefined) return false;
  if (app.owner === user.username) return true;
  return (await applicationOwners(c)).includes(app.owner);
}
