import express, { type Router } from 'express';
import {
  createOrganizationWithOwner,
  findUserByEmail,
  listUserOrganizations,
  normalizeEmail,
} from '../accounts/organizations.js';
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from '../accounts/passwords.js';
import { createSession, deleteSession, SESSION_LIFETIME_MS, setSessionOrganization } from '../accounts/sessions.js';
import { clientAddress } from '../http/client-address.js';
import { RateLimiter, startAttempt, type RateLimitState } from '../http/rate-limit.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { attempt } from '../pages/forms.js';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import {
  anonymousFormToken,
  field,
  safeNext,
  verifyAnonymousForm,
  verifySessionForm,
  visitorOf,
  type BrowserCookies,
} from '../pages/visitor.js';
import { planMail } from '../mail/outbox.js';
import type { MailContext } from '../mail/worker.js';
import { emailPages } from './email-pages.js';
import { accountDeletionPages } from './organization-pages.js';
import { passwordPages } from './password-pages.js';
import { LANDING_PAGE } from './signed-in.js';

// The account checks say what is wrong with a field ("must be at least 8 characters"); the summary
// above the form lists them apart from their fields, so each starts with the field's label.
const SIGNUP_LABELS: Record<string, string> = {
  name: 'Your name',
  email: 'Email',
  password: 'Password',
  organizationName: 'Organization name',
};

function withLabels(errors: Record<string, string>, labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(errors).map(([field, message]) => [field, labels[field] ? `${labels[field]} ${message}` : message]),
  );
}

// Password guessing: this many failed log-ins per email address per window, then a pause.
const LOGIN_FAILURES = { max: 10, windowSeconds: 15 * 60 };

const minutes = (state: RateLimitState) => Math.ceil(state.resetSeconds / 60);

/** The tools of the anonymous forms: the cookies that carry their tokens, and the tokens. */
interface FormTools {
  cookies: BrowserCookies;
  csrf: CsrfTokens;
}

/** Sign up, log in, log out, the organization switcher, forgotten passwords and the account's address. */
export function accountPages(ctx: MailContext, cookies: BrowserCookies, csrf: CsrfTokens): Router {
  const router = express.Router();
  router.get('/', (_req, res) => {
    res.redirect(302, visitorOf(res) ? LANDING_PAGE : '/login');
  });
  router.use(loginPages(ctx, { cookies, csrf }));
  router.use(signupPages(ctx, { cookies, csrf }));
  router.use(sessionRoutes(ctx, { cookies, csrf }));
  router.use(passwordPages(ctx, cookies, csrf));
  router.use(accountDeletionPages(ctx, cookies, csrf));
  router.use(emailPages(ctx, cookies, csrf));
  return router;
}

function loginPages(ctx: MailContext, forms: FormTools): Router {
  const router = express.Router();
  const { loginFailuresPerAddress, windowSeconds } = ctx.config.accountLimits;
  const loginFailures = new RateLimiter(ctx.db, '/web/templates/login', LOGIN_FAILURES, ctx.clock);
  // Per address as well as per email: one address trying a few passwords on many emails (password
  // spraying) stays under every email's limit.
  const addressLoginFailures = new RateLimiter(
    ctx.db,
    'login-address',
    { max: loginFailuresPerAddress, windowSeconds },
    ctx.clock,
  );
  // Checked against when the email is unknown, so a failed log-in takes as long either way.
  let decoy: Promise<string> | undefined;
  const decoyHash = () => (decoy ??= hashPassword('not anybody’s password'));

  router.get('/login', accountFormPage(forms, 'login'));

  router.post('/login', async (req, res) => {
    if (!(await verifyAnonymousForm(req, forms.cookies, forms.csrf))) return formExpired(res);
    const next = safeNext(field(req, 'next'));
    const email = normalizeEmail(field(req, 'email'));
    const values = { email: field(req, 'email') };
    // Counted as a failure before the password is checked; a successful attempt is taken back.
    const attempt = await startAttempt([
      { limiter: loginFailures, key: email },
      { limiter: addressLoginFailures, key: clientAddress(req) },
    ]);
    if (!attempt.allowed)
      return showAccountForm(forms, 'login', req, res, next, 429, { values, ...loginThrottled(res, attempt) });
    const user = await findUserByEmail(ctx.db, email);
    const passwordMatches = await verifyPassword(field(req, 'password'), user?.password_hash ?? (await decoyHash()));
    if (!user || !passwordMatches) {
      return showAccountForm(forms, 'login', req, res, next, 401, {
        values,
        errors: { email: 'The email or the password is not right.' },
      });
    }
    await attempt.takeBack();
    const organizations = await listUserOrganizations(ctx.db, user.id);
    const { token } = await createSession(ctx.db, user.id, organizations[0]?.id ?? null, ctx.clock.now());
    forms.cookies.setSession(res, token, SESSION_LIFETIME_MS / 1000);
    res.redirect(303, next);
  });
  return router;
}

/** What the log-in form says when an attempt was refused for the email's or the address's failures. */
function loginThrottled(res: express.Response, attempt: { states: RateLimitState[] }): object {
  const [forEmail, forAddress] = attempt.states as [RateLimitState, RateLimitState];
  const waitFor = Math.max(...attempt.states.filter((state) => !state.allowed).map((state) => state.resetSeconds));
  res.setHeader('Retry-After', String(waitFor));
  return !forEmail.allowed
    ? { errors: { email: `Too many failed attempts for this email; try again in ${minutes(forEmail)} minutes.` } }
    : { throttled: `Too many failed log-ins from your network address; try again in ${minutes(forAddress)} minutes.` };
}

function signupPages(ctx: MailContext, forms: FormTools): Router {
  const router = express.Router();
  const { signupsPerAddress, windowSeconds } = ctx.config.accountLimits;
  // Every sign-up hashes a password with scrypt (32 MiB, tens of milliseconds) and creates rows.
  const addressSignups = new RateLimiter(
    ctx.db,
    'signup-address',
    { max: signupsPerAddress, windowSeconds },
    ctx.clock,
  );

  router.get('/signup', accountFormPage(forms, 'signup'));

  router.post('/signup', async (req, res) => {
    if (!(await verifyAnonymousForm(req, forms.cookies, forms.csrf))) return formExpired(res);
    const next = safeNext(field(req, 'next'));
    const values = {
      name: field(req, 'name'),
      email: field(req, 'email'),
      organizationName: field(req, 'organizationName'),
    };
    // Counted before trying, like log-ins; a form refused for a field that is not valid is taken back
    // (nothing was hashed, and a person correcting typos should not run out of attempts).
    const signup = await startAttempt([{ limiter: addressSignups, key: clientAddress(req) }]);
    if (!signup.allowed) {
      res.setHeader('Retry-After', String(signup.refusedBy.resetSeconds));
      return showAccountForm(forms, 'signup', req, res, next, 429, {
        values,
        throttled: `Too many sign-ups from your network address; try again in ${minutes(signup.refusedBy)} minutes.`,
      });
    }
    // An existing email counts: the answer tells whether an account exists.
    if (await findUserByEmail(ctx.db, values.email)) {
      return showAccountForm(forms, 'signup', req, res, next, 409, {
        values,
        errors: { email: 'An account with this email exists already: log in instead.' },
      });
    }
    const created = await attempt(() =>
      createOrganizationWithOwner(
        ctx.db,
        {
          organizationName: values.organizationName,
          email: values.email,
          password: field(req, 'password'),
          userName: values.name,
        },
        { sandboxChannel: true },
      ),
    );
    if (!created.ok) {
      if (created.status === 400) await signup.takeBack();
      return showAccountForm(forms, 'signup', req, res, next, 400, {
        values,
        errors: withLabels(created.errors, SIGNUP_LABELS),
      });
    }
    // A new user is asked to confirm the address (a banner until then), and may do everything meanwhile.
    if (created.value.createdUser && ctx.config.mail.smtpUrl) {
      const { user } = created.value;
      await planMail(ctx, ctx.db, { kind: 'email-verification', to: user.email, data: { userId: user.id } });
    }
    const { token } = await createSession(
      ctx.db,
      created.value.user.id,
      created.value.organization.id,
      ctx.clock.now(),
    );
    forms.cookies.setSession(res, token, SESSION_LIFETIME_MS / 1000);
    res.redirect(303, next);
  });
  return router;
}

const ACCOUNT_FORMS = {
  login: {
    template: '/web/templates/login',
    title: 'Log in',
    reason: 'An app is asking for access to your account: log in to review the request.',
  },
  signup: {
    template: '/web/templates/signup',
    title: 'Sign up',
    reason: 'An app is asking for access to your account: create one to review the request.',
    minPasswordLength: MIN_PASSWORD_LENGTH,
  },
} as const;

/** The empty form, or, for a visitor signed in already, where it would lead. */
function accountFormPage(forms: FormTools, form: keyof typeof ACCOUNT_FORMS): express.RequestHandler {
  return async (req, res) => {
    const next = safeNext(req.query.next);
    if (visitorOf(res)) return res.redirect(303, next);
    await showAccountForm(forms, form, req, res, next);
  };
}

/** The log-in or sign-up form; `next` is where it leads, and says why when an app's authorization does. */
async function showAccountForm(
  forms: FormTools,
  form: keyof typeof ACCOUNT_FORMS,
  req: express.Request,
  res: express.Response,
  next: string,
  status = 200,
  extra: object = {},
): Promise<void> {
  const { template, title, reason, ...more } = ACCOUNT_FORMS[form];
  renderPage(
    res,
    template,
    {
      title,
      csrfToken: await anonymousFormToken(req, res, forms.cookies, forms.csrf),
      next,
      values: {},
      ...more,
      reason: next.startsWith('/oauth/authorize') ? reason : undefined,
      ...extra,
    },
    status,
  );
}

/** Log out, and the organization switcher of a signed-in visitor. */
function sessionRoutes(ctx: MailContext, { cookies, csrf }: FormTools): Router {
  const router = express.Router();
  router.post('/logout', async (req, res) => {
    const visitor = visitorOf(res);
    if (visitor) {
      if (!(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
      await deleteSession(ctx.db, visitor.sessionId);
    }
    cookies.clearSession(res);
    res.redirect(303, '/login');
  });

  router.post('/session/organization', async (req, res) => {
    const visitor = visitorOf(res);
    if (!visitor) return res.redirect(303, '/login');
    if (!(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
    const organization = visitor.organizations.find((o) => o.id === field(req, 'organization_id'));
    if (!organization)
      return renderErrorPage(res, 404, 'No such organization', 'You do not belong to this organization.');
    await setSessionOrganization(ctx.db, visitor.sessionId, organization.id);
    res.redirect(303, safeNext(field(req, 'next')));
  });
  return router;
}
