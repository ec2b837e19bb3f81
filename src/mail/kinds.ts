import { issueMailToken } from '../accounts/mail-tokens.js';
import { findUserByEmail } from '../accounts/organizations.js';
import type { AppContext } from '../http/context.js';

/** What a mail's template reads besides the installation's name and PUBLIC_URL. */
export type MailData = Record<string, string>;

/**
 * A kind of mail: its subject and templates (`src/mail/templates/<kind>-text.eta` and `-html.eta`), and
 * what is read or made when it is sent. `prepare` runs in the worker, so a link's token is made when its
 * mail goes out and never waits in the queue; it answers `undefined` when there is nothing to send.
 */
export interface MailKind {
  subject(data: MailData, installationName: string): string;
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
} satisfies Record<string, MailKind>;

export type MailKindName = keyof typeof MAIL_KINDS;

export function isMailKind(kind: string): kind is MailKindName {
  return Object.hasOwn(MAIL_KINDS, kind);
}
