import express, { type Router } from 'express';
import { acceptInvitation, findInvitation, invitationPath } from '../accounts/invitations.js';
import { setSessionOrganization } from '../accounts/sessions.js';
import type { AppContext } from '../http/context.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { field, verifySessionForm, visitorOf } from '../pages/visitor.js';

const GONE = 'This invitation has been used, revoked or has expired. Ask whoever invited you for a new one.';

/**
 * An invitation's link: whoever opens it signs up or logs in (and comes back to it), then joins the
 * organization with the invitation's role and acts for it.
 */
export function invitationPages(ctx: AppContext, csrf: CsrfTokens): Router {
  const router = express.Router();

  router.get('/invitations/accept', async (req, res) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    const invitation = await findInvitation(ctx.db, token, ctx.clock.now());
    if (!invitation) return renderErrorPage(res, 404, 'Invitation not valid', GONE);
    const back = encodeURIComponent(invitationPath(token));
    renderPage(res, '/web/templates/invitation', {
      title: `Join ${invitation.organizationName}`,
      path: '/invitations/accept',
      invitation,
      token,
      signUp: `/signup?next=${back}`,
      logIn: `/login?next=${back}`,
    });
  });

  router.post('/invitations/accept', async (req, res) => {
    const visitor = visitorOf(res);
    if (!visitor) return res.redirect(303, '/login');
    if (!(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
    const organizationId = await acceptInvitation(ctx.db, field(req, 'token'), visitor.user.id, ctx.clock.now());
    await setSessionOrganization(ctx.db, visitor.sessionId, organizationId);
    res.redirect(303, '/calendar');
  });

  return router;
}
