import express, { type Response, type Router } from 'express';
import { changeEmail } from '../accounts/email-change.js';
import { verifyEmail, type AddressChangeStep } from '../accounts/mail-tokens.js';
import { RateLimiter } from '../http/rate-limit.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { attempt } from '../pages/forms.js';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { anonymousFormToken, field, verifyAnonymousForm, type BrowserCookies } from '../pages/visitor.js';
import { setDigestWanted, wantsDigest } from '../mail/digest.js';
import { planMail } from '../mail/outbox.js';
import {
  NOTIFICATION_KINDS,
  NOTIFICATIONS,
  readUnsubscribeToken,
  setNotificationWanted,
  unwantedNotifications,
} from '../mail/preferences.js';
import type { MailContext } from '../mail/worker.js';
import { requireSignIn, signedIn } from './signed-in.js';

// Verification mails a user may ask for again, per hour.
const RESENDS = { max: 5, windowSeconds: 60 * 60 };

/**
 * The account page (the address and its verification, the notifications by mail), the verification
 * links' landing page and the notifications' unsubscribe page.
 */
export function emailPages(ctx: MailContext, cookies: BrowserCookies, csrf: CsrfTokens): Router {
  const router = express.Router();
  // Once an address changed, the old one hears of it, in the same transaction: if it wasn't the
  // account's owner who changed it, whoever reads the old mailbox knows.
  const noticeToOldAddress: AddressChangeStep = (trx, change) =>
    planMail(ctx, trx, {
      kind: 'email-changed',
      to: change.previous,
      data: { name: change.name, newAddress: change.email },
    });
  const resends = new RateLimiter(ctx.db, 'verification-resend', RESENDS, ctx.clock);
  const sendsMail = () => ctx.config.mail.smtpUrl !== undefined;

  const showAccount = async (res: Response, status = 200, extra: object = {}) => {
    const { visitor } = signedIn(res);
    const user = await ctx.db
      .selectFrom('users')
      .select(['email', 'pending_email', 'email_verified_at'])
      .where('id', '=', visitor.user.id)
      .executeTakeFirstOrThrow();
    renderPage(
      res,
      '/web/templates/account',
      {
        title: 'Your account',
        path: '/account',
        email: user.email,
        verified: user.email_verified_at !== null,
        pendingEmail: user.pending_email,
        sendsMail: sendsMail(),
        notifications: await notificationChoices(visitor.user.id),
        digest: await wantsDigest(ctx.db, visitor.user.id),
        values: {},
        ...extra,
      },
      status,
    );
  };

  const notificationChoices = async (userId: string) => {
    const unwanted = await unwantedNotifications(ctx.db, userId);
    return NOTIFICATION_KINDS.map((kind) => ({ kind, words: NOTIFICATIONS[kind], wanted: !unwanted.has(kind) }));
  };

  router.use('/account', requireSignIn(csrf));
  router.get('/account', (_req, res) => showAccount(res));

  router.post('/account/email', async (req, res) => {
    const { visitor } = signedIn(res);
    const values = { email: field(req, 'email') };
    const changed = await attempt(() =>
      changeEmail(
        ctx.db,
        visitor.user.id,
        {
          email: values.email,
          password: field(req, 'password'),
          verifyFirst: sendsMail(),
        },
        noticeToOldAddress,
      ),
    );
    if (!changed.ok) {
      const labels: Record<string, string> = { email: 'New email', password: 'Your password' };
      const errors = Object.fromEntries(
        Object.entries(changed.errors).map(([name, message]) => [name, `${labels[name] ?? ''} ${message}`.trim()]),
      );
      return showAccount(res, changed.status, { values, errors });
    }
    if (changed.value.pending) {
      await planMail(ctx, ctx.db, {
        kind: 'email-verification',
        to: changed.value.email,
        data: { userId: visitor.user.id },
      });
      return showAccount(res, 200, {
        notice: `We sent a link to ${changed.value.email}. Your address changes once you follow it.`,
      });
    }
    await showAccount(res, 200, { notice: `Your address is now ${changed.value.email}.` });
  });

  router.post('/account/verification', async (_req, res) => {
    const { visitor } = signedIn(res);
    const user = await ctx.db
      .selectFrom('users')
      .select(['email', 'pending_email', 'email_verified_at'])
      .where('id', '=', visitor.user.id)
      .executeTakeFirstOrThrow();
    const to = user.pending_email ?? (user.email_verified_at ? undefined : user.email);
    if (!to || !sendsMail()) return showAccount(res, 409, { errors: { form: 'There is no address to confirm.' } });
    const state = await resends.hit(visitor.user.id);
    if (!state.allowed) {
      res.setHeader('Retry-After', String(state.resetSeconds));
      return showAccount(res, 429, {
        throttled: `Too many links asked for; try again in ${Math.ceil(state.resetSeconds / 60)} minutes.`,
      });
    }
    await planMail(ctx, ctx.db, { kind: 'email-verification', to, data: { userId: visitor.user.id } });
    await showAccount(res, 200, { notice: `We sent a new link to ${to}.` });
  });

  router.post('/account/pending-email/cancel', async (_req, res) => {
    const { visitor } = signedIn(res);
    await ctx.db.updateTable('users').set({ pending_email: null }).where('id', '=', visitor.user.id).execute();
    res.redirect(303, '/account');
  });

  router.post('/account/notifications', async (req, res) => {
    const { visitor } = signedIn(res);
    for (const kind of NOTIFICATION_KINDS)
      await setNotificationWanted(ctx.db, visitor.user.id, kind, field(req, kind) === 'on');
    await setDigestWanted(ctx.db, visitor.user.id, field(req, 'delivery') === 'digest');
    await showAccount(res, 200, { notice: 'Your notifications are saved.' });
  });

  // A notification's unsubscribe link works without signing in; it asks before it acts, so that a mail
  // scanner following the link turns nothing off.
  router.get('/mail/unsubscribe/:token', async (req, res) => {
    const named = await readUnsubscribeToken(ctx.secrets, req.params.token);
    if (!named) return renderErrorPage(res, 404, 'Unknown link', 'This unsubscribe link is not one of ours.');
    renderPage(res, '/web/templates/unsubscribe', {
      title: 'Stop these notifications',
      csrfToken: await anonymousFormToken(req, res, cookies, csrf),
      action: req.originalUrl,
      words: NOTIFICATIONS[named.kind],
    });
  });

  router.post('/mail/unsubscribe/:token', async (req, res) => {
    if (!(await verifyAnonymousForm(req, cookies, csrf))) return formExpired(res);
    const named = await readUnsubscribeToken(ctx.secrets, req.params.token);
    if (!named) return renderErrorPage(res, 404, 'Unknown link', 'This unsubscribe link is not one of ours.');
    await setNotificationWanted(ctx.db, named.userId, named.kind, false);
    renderPage(res, '/web/templates/account-message', {
      title: 'Unsubscribed',
      message: `You get no more mail about this: ${NOTIFICATIONS[named.kind].toLowerCase()}.`,
      link: { href: '/account', text: 'All your notifications' },
    });
  });

  // Opened from a mail, signed in or not: the link alone proves that its reader has the mailbox.
  router.get('/email/verify/:token', async (req, res) => {
    const outcome = await verifyEmail(ctx.db, req.params.token, ctx.clock.now(), noticeToOldAddress);
    if (outcome.verified) {
      return renderPage(res, '/web/templates/account-message', {
        title: 'Address confirmed',
        message: `Thank you: ${outcome.email} is confirmed as your account’s address.`,
        link: { href: '/', text: 'Go on' },
      });
    }
    if (outcome.reason === 'taken')
      return renderErrorPage(res, 409, 'Address in use', `Another account uses ${outcome.email} now.`);
    renderErrorPage(
      res,
      410,
      'Link expired',
      'This confirmation link has expired, was used already, or is for an address you no longer asked for. ' +
        'Ask for a new one on your account page.',
    );
  });
  return router;
}
