import type { RequestHandler } from 'express';
import { listUserOrganizations } from '../accounts/organizations.js';
import { findSession } from '../accounts/sessions.js';
import type { AppContext } from '../http/context.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { sessionBinding, type BrowserCookies, type Visitor } from '../pages/visitor.js';

/** Reads the session cookie, if any, and puts the signed-in visitor in `res.locals.visitor`. */
export function loadVisitor(ctx: AppContext, cookies: BrowserCookies, csrf: CsrfTokens): RequestHandler {
  return async (req, res, next) => {
    const token = cookies.read(req, cookies.session);
    const found = token ? await findSession(ctx.db, token, ctx.clock.now()) : undefined;
    if (found) {
      const organizations = await listUserOrganizations(ctx.db, found.user.id);
      const visitor: Visitor = {
        sessionId: found.session.id,
        user: found.user,
        organizations,
        organization: organizations.find((o) => o.id === found.session.organization_id) ?? organizations[0],
        csrfToken: await csrf.token(sessionBinding(found.session.id)),
        asksVerification: !found.user.emailVerified && ctx.config.mail.smtpUrl !== undefined,
      };
      res.locals.visitor = visitor;
    }
    next();
  };
}
