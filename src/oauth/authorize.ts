import express, { type Request, type Response, type Router } from 'express';
import type { AppContext } from '../context.js';
import type { OAuthApp } from '../db/schema.js';
import type { CsrfTokens } from '../web/csrf.js';
import { formExpired, renderErrorPage, renderPage } from '../web/render.js';
import { field, verifySessionForm, visitorOf } from '../web/visitor.js';
import { appPicturePath } from './app-pictures.js';
import { checkAuthorizationParameters, identifyClient, type AuthorizationQuery } from './authorization-parameters.js';
import { createAuthorizationRequest } from './authorization-requests.js';
import { answerConsent } from './consent.js';
import { withQuery } from './urls.js';

export const AUTHORIZE_PATH = '/oauth/authorize';
const CONSENT_PATH = '/oauth/consent';

/** An authorization request that cannot be trusted: an error page, never a redirect. */
function invalidLink(res: Response, message: string): void {
  renderErrorPage(res, 400, 'This authorization link is not valid', message);
}

function methodNotAllowed(allow: string) {
  return (_req: Request, res: Response) => {
    res.setHeader('Allow', allow);
    renderErrorPage(res, 405, 'Method not allowed', `This address accepts ${allow} only.`);
  };
}

const originOf = (url: string) => new URL(url).origin;

/** The authorize endpoint (the consent page) and the consent form's answer. */
export function authorizePages(ctx: AppContext, csrf: CsrfTokens): Router {
  const router = express.Router();

  router.get(AUTHORIZE_PATH, async (req, res) => {
    const query = req.query as AuthorizationQuery;
    const client = await identifyClient(ctx.db, query);
    if (!client.ok) return invalidLink(res, client.message);
    const { app } = client;
    const checked = checkAuthorizationParameters(query);
    if (!checked.ok) {
      return res.redirect(302, withQuery(app.redirect_uri, { error: checked.error, error_description: checked.description, state: checked.state }));
    }

    const visitor = visitorOf(res);
    // RFC 6749 §3.1: the user is authenticated first; after signing in they come back here and see the
    // consent page, never an approval they did not give.
    if (!visitor) return res.redirect(302, `/login?next=${encodeURIComponent(req.originalUrl)}`);
    if (!visitor.organization) {
      return renderErrorPage(res, 403, 'No organization', 'Your account does not belong to an organization, so there is nothing to authorize.');
    }
    const requestId = await createAuthorizationRequest(
      ctx.db,
      {
        sessionId: visitor.session.id,
        appId: app.id,
        organizationId: visitor.organization.id,
        redirectUri: app.redirect_uri,
        redirectUriGiven: client.redirectUriGiven,
        state: checked.state ?? null,
        codeChallenge: checked.codeChallenge ?? null,
      },
      ctx.clock(),
    );
    renderConsent(res, app, requestId, checked.state, req.originalUrl);
  });

  router.all(AUTHORIZE_PATH, methodNotAllowed('GET, HEAD'));

  router.post(CONSENT_PATH, async (req, res) => {
    const visitor = visitorOf(res);
    if (!visitor) return renderErrorPage(res, 403, 'Your session has ended', 'Log in and open the app’s authorization link again.');
    if (!(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
    const outcome = await answerConsent(
      ctx.db,
      { sessionId: visitor.session.id, userId: visitor.user.id, organizationIds: visitor.organizations.map((o) => o.id) },
      {
        requestId: field(req, 'request_id'),
        decision: field(req, 'decision'),
        clientId: field(req, 'client_id'),
        organizationId: field(req, 'organization_id'),
        state: field(req, 'state'),
      },
      ctx.clock(),
    );
    if ('refused' in outcome) return renderErrorPage(res, 400, outcome.refused.title, outcome.refused.message);
    // 303, never 307: a 307 would re-send the form, with the user's CSRF token, to the app (RFC 9700 §4.12).
    res.redirect(303, outcome.redirectTo);
  });

  router.all(CONSENT_PATH, methodNotAllowed('POST'));

  return router;
}

function renderConsent(res: Response, app: OAuthApp, requestId: string, state: string | undefined, path: string): void {
  const visitor = visitorOf(res)!;
  renderPage(
    res,
    'consent',
    {
      title: `Authorize ${app.name}`,
      path,
      app,
      organization: visitor.organization,
      requestId,
      state: state ?? '',
      redirectOrigin: originOf(app.redirect_uri),
      picture: appPicturePath(app),
    },
    200,
    // After the answer the form leads to the app's redirect URL, which form-action must allow
    // (browsers apply it to redirects).
    { formOrigins: [originOf(app.redirect_uri)] },
  );
}
