/**
 * `[multi_tenancy.platform] email_validation_mandatory_for_login` (spec 000) for the users who signed
 * themselves up in the developer portal (docs/self-service.md): until the link of their confirmation mail
 * is used, their password is refused everywhere a password is checked (the sign-in page, the password
 * grant), as a wrong one would be, and `sign_in_unconfirmed` is logged. Users without a profile (added by
 * an admin, the CLI, a directory) have nothing to confirm.
 */
import type { Logger } from '../log';
import type { SelfServiceStore } from '../store/selfservice';
import { type UserStore, withSignInCheck } from '../store/users';

export function confirmedUsers(users: UserStore, profiles: SelfServiceStore, logger: Logger): UserStore {
  return withSignInCheck(users, async (id) => {
    const p = await profiles.getProfile(id.username);
    if (p === undefined || p.confirmed) return true;
    logger.log('warn', 'sign_in_unconfirmed', { username: id.username });
    return false;
  });
}
