/**
 * What the decision of a self sign-up (AM_USER_SIGNUP, docs/workflows.md) does to its account
 * (docs/self-service.md, "Sign-up under approval"). The account exists from the sign-up on, held
 * (lib/keymanager/confirmed.ts refuses its sign-in while the task waits):
 * - approved: nothing more to write (the task is no longer waiting, so the account signs in); its owner
 *   is mailed that it may sign in;
 * - rejected: the account and its profile are removed, as the reference's sign-up approval executor
 *   deletes the user, and its owner is mailed the approver's comment.
 * Mail goes out only where `[output_adapter.email]` has a mail server (Mailer.send stores nothing
 * otherwise). Registered by the developer portal of a node and by `throughway tasks` on the store.
 */
import type { Logger } from '../log';
import type { OutgoingMail } from '../mail/outbox';
import type { Store, WorkflowTaskRecord } from '../store/types';
import type { WorkflowEffect } from '../workflows';

export interface SignUpEffectOptions {
  readonly store: Store;
  readonly logger: Logger;
  readonly mail: (m: OutgoingMail) => Promise<unknown>;
  /** The developer portal's base (links in the mail), when known. */
  readonly portalUrl?: string;
}

export function signUpEffect(o: SignUpEffectOptions): WorkflowEffect {
  const addressOf = async (t: WorkflowTaskRecord): Promise<string> =>
    (await o.store.selfService.getProfile(t.entity))?.email ?? t.attributes.email ?? '';
  return {
    async approved(t) {
      o.logger.log('info', 'portal_sign_up_approved', { username: t.entity, task: t.id });
      const to = await addressOf(t);
      const where = o.portalUrl !== undefined ? ` at ${o.portalUrl}/login` : '';
      if (to !== '')
        await o.mail({
          kind: 'sign-up',
          to,
          tenant: t.tenant,
          subject: 'Your developer portal account is approved',
          text: `Hello ${t.entity},\n\nyour sign-up is approved: you can sign in${where}.`,
        });
    },
    async rejected(t, comment) {
      const to = await addressOf(t);
      await o.store.deleteUser(t.entity);
      await o.store.selfService.deleteProfile(t.entity);
      o.logger.log('info', 'portal_sign_up_rejected', { username: t.entity, task: t.id });
      const why = comment !== '' ? `\n\nThe approver's comment: ${comment}` : '';
      if (to !== '')
        await o.mail({
          kind: 'sign-up',
          to,
          tenant: t.tenant,
          subject: 'Your developer portal sign-up was not approved',
          text: `Hello ${t.entity},\n\nyour sign-up was not approved, and the account is removed.${why}`,
        });
    },
  };
}
