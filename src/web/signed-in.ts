import type { RequestHandler, Response } from 'express';
import type { CsrfTokens } from '../pages/csrf.js';
import { formExpired, renderErrorPage } from '../pages/render.js';
import { verifySessionForm, visitorOf, type OrganizationChoice, type Visitor } from '../pages/visitor.js';

/** Where a signed-in user starts: the calendar of their organization's posts. */
export const LANDING_PAGE = '/calendar';

/**
 * Settings pages need a signed-in user acting for an organization; every form they post carries the
 * session's CSRF token. A browser without a session goes to the log-in page and comes back.
 */
export function requireSignIn(csrf: CsrfTokens): RequestHandler {
  return async (req, res, next) => {
    const visitor = visitorOf(res);
    if (!visitor) {
      if (req.method === 'GET' || req.method === 'HEAD')
        return res.redirect(302, `/login?next=${encodeURIComponent(req.originalUrl)}`);
      return res.redirect(303, '/login');
    }
    if (req.method === 'POST' && !(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
    if (!visitor.organization) {
      return renderErrorPage(res, 403, 'No organization', 'Your account does not belong to any organization any more.');
    }
    next();
  };
}

/** The visitor and organization that `requireSignIn` has made sure of. */
export function signedIn(res: Response): { visitor: Visitor; organization: OrganizationChoice } {
  const visitor = visitorOf(res)!;
  return { visitor, organization: visitor.organization! };
}
