import { findInvitation, invitationPath } from '../accounts/invitations.js';
import { issueMailToken } from '../accounts/mail-tokens.js';
import { findUserByEmail } from '../accounts/organizations.js';
import type { AppContext } from '../http/context.js';
import {
  isNotificationKind,
  NOTIFICATIONS,
  unsubscribeToken,
  unwantedNotifications,
  type NotificationKind,
} from './preferences.js';

/** What a mail's template reads besides the installation's name and PUBLIC_URL. */
export type MailData = Record<string, string>;

/**
 * A kind of mail: its subject and templates (`src/mail/templates/<kind>-text.eta` and `-html.eta`), and
 * what is read or made when it is sent. `prepare` runs in the worker, so a link's token is made when its
 * mail goes out and never waits in the queue; it answers `undefined` when there is nothing to send.
 */
export interface MailKind {
  subject(data: MailData, installationName: string): string;
  /** The templates' name when it is not the kind's. */
  template?: string;
  prepare?(ctx: AppContext, to: string, data: MailData): Promise<MailData | undefined>;
}

export const MAIL_KINDS = {
  /**
   * Planned for any address typed on the "Forgot password?" form: the request does the same whether or
   * not an account has it, and only here, in the worker, is the account looked up.
   */
  'password-reset': {
    subject: (_data, name) => `Reset your ${name} password`,
    prepare: async (ctx, to) => {
      const user = await findUserByEmail(ctx.db, to);
      if (!user) return undefined;
      const token = await issueMailToken(
        ctx.db,
        { userId: user.id, purpose: 'password_reset', email: to },
        ctx.clock.now(),
      );
      return { name: user.name, link: `${ctx.config.publicUrl}/password/reset/${token}`, minutes: '30' };
    },
  },
  /** After sign-up, and for a new address: sent while the address is the user's or the one they asked for. */
  'email-verification': {
    subject: (_data, name) => `Confirm your email address for ${name}`,
    prepare: async (ctx, to, data) => {
      const user = await ctx.db
        .selectFrom('users')
        .select(['id', 'name', 'email', 'pending_email', 'email_verified_at'])
        .where('id', '=', data.userId ?? '')
        .executeTakeFirst();
      const wanted = user && (user.pending_email === to || (user.email === to && !user.email_verified_at));
      if (!wanted) return undefined;
      const token = await issueMailToken(
        ctx.db,
        { userId: user.id, purpose: 'email_verification', email: to },
        ctx.clock.now(),
      );
      return {
        name: user.name,
        link: `${ctx.config.publicUrl}/email/verify/${token}`,
        newAddress: to === user.email ? '' : 'yes',
      };
    },
  },
  /**
   * An invitation to join an organization: its link is sealed in the queue like any mail's data, and
   * not sent once the invitation was revoked, accepted or has expired.
   */
  invitation: {
    subject: (data, name) => `Join ${data.organizationName ?? 'an organization'} on ${name}`,
    prepare: async (ctx, _to, data) => {
      const invitation = await findInvitation(ctx.db, data.token ?? '', ctx.clock.now());
      if (!invitation) return undefined;
      return {
        organizationName: invitation.organizationName,
        role: invitation.role,
        inviter: data.inviter ?? '',
        link: `${ctx.config.publicUrl}${invitationPath(data.token ?? '')}`,
        expires: invitation.expiresAt.toISOString().slice(0, 10),
      };
    },
  },
  /** To every member with a confirmed address, planned in the transaction that deletes the organization. */
  'organization-deleted': {
    subject: (data, name) => `${data.organizationName ?? 'An organization'} was deleted · ${name}`,
  },
  /** To the address of an account that was deleted, in the transaction that deletes it. */
  'account-deleted': {
    subject: (_data, name) => `Your ${name} account was deleted`,
  },
  /**
   * To the address an account had, once it changed to another: whoever holds the old mailbox learns of
   * the change (and where to turn) should it not be the account's owner who made it.
   */
  'email-changed': {
    subject: (_data, name) => `Your ${name} address was changed`,
    prepare: (ctx, _to, data) =>
      Promise.resolve({
        name: data.name ?? '',
        newAddress: data.newAddress ?? '',
        link: `${ctx.config.publicUrl}/login`,
      }),
  },
  /**
   * The day's notifications in one mail, for a member who chose the daily digest: those of a kind they
   * turned off since are left out, and nothing is sent when none is left or the address is no longer
   * theirs and confirmed.
   */
  'notification-digest': {
    subject: (data, name) => `Your ${name} digest: ${data.count ?? ''} notification${data.count === '1' ? '' : 's'}`,
    prepare: async (ctx, to, data) => {
      const userId = data.userId ?? '';
      const user = await ctx.db
        .selectFrom('users')
        .select(['email', 'email_verified_at'])
        .where('id', '=', userId)
        .executeTakeFirst();
      if (!user || user.email !== to || !user.email_verified_at) return undefined;
      const unwanted = await unwantedNotifications(ctx.db, userId);
      const origin = ctx.config.publicUrl;
      const items = (
        JSON.parse(data.items ?? '[]') as { kind: string; headline: string; details: string; path: string }[]
      )
        .filter((item) => isNotificationKind(item.kind) && !unwanted.has(item.kind))
        .map((item) => ({ headline: item.headline, details: item.details, link: `${origin}${item.path}` }));
      if (items.length === 0) return undefined;
      return {
        day: data.day ?? '',
        count: String(items.length),
        items: JSON.stringify(items),
        preferences: `${origin}/account`,
      };
    },
  },
  'post-failed': notification(),
  'channel-needs-reconnect': notification(),
  'channel-expiring': notification(),
  'post-awaits-approval': notification(),
  'post-reviewed': notification(),
} satisfies Record<string, MailKind>;

/**
 * A notification (see notifications.ts): its data says what happened (`headline`, `details`) and where to
 * look (`path`); the worker adds the links, the unsubscribe link of its kind included. A member whose
 * address is no longer confirmed, or who turned the kind off meanwhile, gets nothing.
 */
function notification(): MailKind {
  return {
    template: 'notification',
    subject: (data, name) => `${data.headline ?? 'News'} · ${name}`,
    prepare: async (ctx, to, data) => {
      const userId = data.userId ?? '';
      const kind = data.kind as NotificationKind;
      const user = await ctx.db
        .selectFrom('users')
        .select(['email', 'email_verified_at'])
        .where('id', '=', userId)
        .executeTakeFirst();
      if (!user || user.email !== to || !user.email_verified_at) return undefined;
      if ((await unwantedNotifications(ctx.db, userId)).has(kind)) return undefined;
      const origin = ctx.config.publicUrl;
      return {
        headline: data.headline ?? '',
        details: data.details ?? '',
        link: `${origin}${data.path ?? '/'}`,
        about: NOTIFICATIONS[kind],
        unsubscribe: `${origin}/mail/unsubscribe/${await unsubscribeToken(ctx.secrets, userId, kind)}`,
        preferences: `${origin}/account`,
      };
    },
  };
}

export type MailKindName = keyof typeof MAIL_KINDS;

export function isMailKind(kind: string): kind is MailKindName {
  return Object.hasOwn(MAIL_KINDS, kind);
}
