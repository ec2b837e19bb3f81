import express, { type Router } from 'express';
import { findMailToken, PasswordTooShortError, resetPassword } from '../accounts/mail-tokens.js';
import { isEmailAddress, normalizeEmail } from '../accounts/organizations.js';
import { MIN_PASSWORD_LENGTH } from '../accounts/passwords.js';
import { clientAddress } from '../http/client-address.js';
import { RateLimiter, startAttempt } from '../http/rate-limit.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { anonymousFormToken, field, verifyAnonymousForm, type BrowserCookies } from '../pages/visitor.js';
import { planMail } from '../mail/outbox.js';
import type { MailContext } from '../mail/worker.js';

// A reset mail per address at most this often (nobody's mailbox is flooded through this form), and
// resets asked from one network address (one visitor trying many addresses).
const RESETS_PER_EMAIL = { max: 3, windowSeconds: 60 * 60 };
const RESETS_PER_ADDRESS = { max: 20, windowSeconds: 60 * 60 };

const EXPIRED_LINK =
  'This password reset link has expired or was used already. Ask for a new one on the “Forgot password?” page.';

/**
 * "Forgot password?": the form asks for an address and always answers the same (whether an account has
 * it is never told, and the request plans one job either way: the account is looked up by the worker
 * that sends the mail); the mailed link leads to a form for the new password.
 */
export function passwordPages(ctx: MailContext, cookies: BrowserCookies, csrf: CsrfTokens): Router {
  const router = express.Router();
  const perEmail = new RateLimiter(ctx.db, 'password-reset-email', RESETS_PER_EMAIL, ctx.clock);
  const perAddress = new RateLimiter(ctx.db, 'password-reset-address', RESETS_PER_ADDRESS, ctx.clock);
  const sendsMail = () => ctx.config.mail.smtpUrl !== undefined;

  const showForgot = async (req: express.Request, res: express.Response, status = 200, extra: object = {}) => {
    renderPage(
      res,
      '/web/templates/forgot-password',
      { title: 'Forgot password', csrfToken: await anonymousFormToken(req, res, cookies, csrf), values: {}, ...extra },
      status,
    );
  };

  router.get('/password/forgot', (req, res) => showForgot(req, res));

  router.post('/password/forgot', async (req, res) => {
    if (!(await verifyAnonymousForm(req, cookies, csrf))) return formExpired(res);
    const email = normalizeEmail(field(req, 'email'));
    const values = { email: field(req, 'email') };
    if (!isEmailAddress(email))
      return showForgot(req, res, 400, { values, errors: { email: 'Email must be an email address' } });
    const tries = await startAttempt([
      { limiter: perEmail, key: email },
      { limiter: perAddress, key: clientAddress(req) },
    ]);
    if (!tries.allowed) {
      res.setHeader('Retry-After', String(tries.refusedBy.resetSeconds));
      return showForgot(req, res, 429, {
        values,
        throttled: `Too many reset requests; try again in ${Math.ceil(tries.refusedBy.resetSeconds / 60)} minutes.`,
      });
    }
    await planMail(ctx, ctx.db, { kind: 'password-reset', to: email });
    renderPage(res, '/web/templates/forgot-password-sent', {
      title: 'Check your mail',
      email,
      sendsMail: sendsMail(),
    });
  });

  const showReset = async (req: express.Request, res: express.Response, status = 200, extra: object = {}) => {
    renderPage(
      res,
      '/web/templates/reset-password',
      {
        title: 'Choose a new password',
        csrfToken: await anonymousFormToken(req, res, cookies, csrf),
        action: req.originalUrl,
        minPasswordLength: MIN_PASSWORD_LENGTH,
        ...extra,
      },
      status,
    );
  };

  router.get('/password/reset/:token', async (req, res) => {
    if (!(await findMailToken(ctx.db, req.params.token, 'password_reset', ctx.clock.now())))
      return renderErrorPage(res, 410, 'Link expired', EXPIRED_LINK);
    await showReset(req, res);
  });

  router.post('/password/reset/:token', async (req, res) => {
    if (!(await verifyAnonymousForm(req, cookies, csrf))) return formExpired(res);
    let user;
    try {
      user = await resetPassword(ctx.db, req.params.token, field(req, 'password'), ctx.clock.now());
    } catch (error) {
      if (!(error instanceof PasswordTooShortError)) throw error;
      return showReset(req, res, 400, {
        errors: { password: `Password must be at least ${MIN_PASSWORD_LENGTH} characters` },
      });
    }
    if (!user) return renderErrorPage(res, 410, 'Link expired', EXPIRED_LINK);
    // Every session of the user ended, this browser's too if it had one.
    cookies.clearSession(res);
    renderPage(res, '/web/templates/account-message', {
      title: 'Password changed',
      message: 'Your password was changed, and every browser signed in to your account was signed out.',
      link: { href: '/login', text: 'Log in with the new password' },
    });
  });
  return router;
}
