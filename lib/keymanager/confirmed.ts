/**
 * The sign-in of users who signed themselves up in the developer portal (docs/self-service.md, "Sign-in
 * of a held account"), wherever a password is checked (the sign-in page, the password grant):
 * - while their sign-up task (AM_USER_SIGNUP, docs/workflows.md) waits for a decision, the sign-in is
 *   refused with SIGN_IN_AWAITING_APPROVAL, logged `sign_in_awaiting_approval`;
 * - with `[multi_tenancy.platform] email_validation_mandatory_for_login` (spec 000), until the link of
 *   their confirmation mail is used, it is refused with SIGN_IN_UNCONFIRMED, logged `sign_in_unconfirmed`.
 * Both only after the password was verified: a wrong password is answered as for any account. Users
 * without a profile (added by an admin, the CLI, a directory) have nothing to confirm or approve.
 */
import type { Logger } from '../log';
import type { Store } from '../store/types';
import { SignInHeldError, type UserStore, withSignInCheck } from '../store/users';

/** Whether a user's self sign-up waits for an approver: one of its AM_USER_SIGNUP tasks has no decision. */
export async function awaitingApproval(store: Store, username: string): Promise<boolean> {
  return (await store.listWorkflowTasks({ type: 'AM_USER_SIGNUP', entity: username, pending: true })).length > 0;
}

export function heldUsers(users: UserStore, store: Store, logger: Logger, o: { readonly emailValidation: boolean }): UserStore {
  return withSignInCheck(users, async (id) => {
    const p = await store.selfService.getProfile(id.username);
    if (p === undefined) return true;
    if (await awaitingApproval(store, id.username)) {
      logger.log('warn', 'sign_in_awaiting_approval', { username: id.username });
      throw new SignInHeldError(
        'SIGN_IN_AWAITING_APPROVAL',
        'Your account awaits approval: you can sign in once an administrator approves your sign-up.',
      );
    }
    if (o.emailValidation && !p.confirmed) {
      logger.log('warn', 'sign_in_unconfirmed', { username: id.username });
      throw new SignInHeldError(
        'SIGN_IN_UNCONFIRMED',
        'Confirm your e-mail address first: open the link of the mail we sent when you signed up.',
      );
    }
    return true;
  });
}
