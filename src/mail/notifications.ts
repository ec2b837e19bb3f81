import type { Role } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { addDigestItems, digestReaders } from './digest.js';
import { planMail, type MailOutbox } from './outbox.js';
import type { NotificationKind } from './preferences.js';

/** Something an organization's members hear of: its kind, and what its mail says. */
export interface Notification {
  organizationId: string;
  kind: NotificationKind;
  /** `headline` and `details` say what happened, `path` the page to look at. */
  data: { headline: string; details: string; path: string };
  /**
   * Who of the members hears of it: those of some roles, or the member who submitted a post for
   * approval; every member when absent.
   */
  recipients?: { roles: readonly Role[] } | { submitterOfPost: string };
}

/**
 * Plans the mail of each notification, in the caller's transaction (the one that dispatches the events
 * it comes from), to every member of the organization whose address is confirmed and who did not turn
 * the kind off; a member who chose the daily digest gets it in their next digest instead.
 */
export async function planNotifications(ctx: MailOutbox, trx: Db, notifications: Notification[]): Promise<void> {
  if (notifications.length === 0) return;
  const organizations = [...new Set(notifications.map((one) => one.organizationId))];
  const members = await trx
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .leftJoin('mail_preferences as off', (join) =>
      join.onRef('off.user_id', '=', 'users.id').on('off.wanted', '=', false),
    )
    .select(['memberships.organization_id', 'memberships.role', 'users.id', 'users.email', 'off.kind as off_kind'])
    .where('memberships.organization_id', 'in', organizations)
    .where('users.email_verified_at', 'is not', null)
    .execute();
  const submitted = notifications.flatMap(({ recipients }) =>
    recipients && 'submitterOfPost' in recipients ? [recipients.submitterOfPost] : [],
  );
  const submitters = new Map(
    submitted.length === 0
      ? []
      : (
          await trx
            .selectFrom('posts')
            .select(['id', 'submitted_by_user_id'])
            .where('id', 'in', [...new Set(submitted)])
            .execute()
        ).map((post) => [post.id, post.submitted_by_user_id]),
  );
  const chosen = (notification: Notification, member: { id: string; role: string }) => {
    const wanted = notification.recipients;
    if (!wanted) return true;
    if ('roles' in wanted) return (wanted.roles as readonly string[]).includes(member.role);
    return submitters.get(wanted.submitterOfPost) === member.id;
  };
  for (const notification of notifications) {
    const recipients = new Map<string, string>();
    for (const member of members) {
      if (member.organization_id === notification.organizationId && chosen(notification, member))
        recipients.set(member.id, member.email);
    }
    for (const member of members) {
      if (member.off_kind === notification.kind) recipients.delete(member.id);
    }
    const digest = await digestReaders(trx, [...recipients.keys()]);
    for (const [userId, email] of recipients) {
      // A member who chose the daily digest gets it there instead of in a mail of its own.
      if (digest.has(userId))
        await addDigestItems(trx, userId, [
          { organizationId: notification.organizationId, kind: notification.kind, ...notification.data },
        ]);
      else
        await planMail(ctx, trx, {
          kind: notification.kind,
          to: email,
          data: { ...notification.data, kind: notification.kind, userId },
        });
    }
  }
}
