import type { RequestHandler, Response } from 'express';
import { can, type Actor, type Permission } from '../core/roles.js';
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

/**
 * The visitor and organization that `requireSignIn` has made sure of, and the visitor as the domain
 * code sees them: the organization and their role in it.
 */
export function signedIn(res: Response): { visitor: Visitor; organization: OrganizationChoice; actor: Actor } {
  const visitor = visitorOf(res)!;
  const organization = visitor.organization!;
  const actor = { organizationId: organization.id, role: organization.role, userId: visitor.user.id };
  return { visitor, organization, actor };
}

/**
 * Refuses, with a page that says why, a visitor whose role in the organization they act for lacks
 * `permission`; `changesOnly`: pages that every member may see, whose forms only some may send.
 * Runs after `requireSignIn`.
 */
export function requirePermission(
  permission: Permission,
  what: string,
  { changesOnly = false }: { changesOnly?: boolean } = {},
): RequestHandler {
  return (req, res, next) => {
    const { organization } = signedIn(res);
    if (can(organization.role, permission) || (changesOnly && (req.method === 'GET' || req.method === 'HEAD'))) {
      return next();
    }
    renderErrorPage(
      res,
      403,
      'Not allowed for your role',
      `Your role in ${organization.name} is ${organization.role}, which does not let you ${what}. ` +
        'An admin of the organization can change your role in Settings → Members.',
    );
  };
}
