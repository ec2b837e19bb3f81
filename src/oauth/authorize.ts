import express, { type Request, type Response, type Router } from 'express';
import type { AppContext } from '../http/context.js';
import type { OAuthHandler } from '../http/typed-routes.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { errorPageHtml, formExpired, pageHtml, renderErrorPage } from '../pages/render.js';
import { field, verifySessionForm, visitorOf } from '../pages/visitor.js';
import { appPicturePath } from './app-pictures.js';
import {
  checkAuthorizationParameters,
  identifyClient,
  type AuthorizationQuery,
  type ClientCheck,
  type ParameterCheck,
} from './authorization-parameters.js';
import { createAuthorizationRequest } from './authorization-requests.js';
import { answerConsent } from './consent.js';
import { ClientMetadataDocuments } from './metadata-documents.js';
import { registrationLimiter } from './registration.js';
import { clientAddress } from '../http/client-address.js';
import { grantedAccess, scopedAccess } from './granted-access.js';
import type { OAuthApp } from './tables.js';
import { withQuery } from './urls.js';

export const AUTHORIZE_PATH = '/oauth/authorize';
const CONSENT_PATH = '/oauth/consent';

const originOf = (url: string) => new URL(url).origin;

/**
 * The authorize endpoint: the consent page. Its query is the browser's, unchecked by the contract's
 * validator (whose errors are JSON): a request that cannot be trusted gets an error page, and any other
 * error of a known app goes back to the app.
 */
export function authorizeOperation(ctx: AppContext): OAuthHandler<'authorize'> {
  const metadataDocuments = new ClientMetadataDocuments(
    ctx.db,
    ctx.outbound,
    ctx.config.oauthClients.metadataFetchSeconds,
    ctx.clock,
  );
  const registrations = registrationLimiter(ctx);
  return async ({ req, res }) => {
    const query = req.query as AuthorizationQuery;
    // A document fetched counts as a registration of the visitor's address.
    const mayFetch = async () => (await registrations.hit(clientAddress(req))).allowed;
    const client = await identifyClient(ctx.db, query, (clientId) => metadataDocuments.lookup(clientId, mayFetch));
    // An authorization request that cannot be trusted: an error page, never a redirect.
    if (!client.ok)
      return { status: 400, html: errorPageHtml(res, 'This authorization link is not valid', client.message) };
    const { app } = client;
    const checked = checkAuthorizationParameters(query, ctx.config.publicUrl, app.secret_hash === null);
    if (!checked.ok) {
      // A client nobody vouches for (it registered itself, or is a metadata document) is not sent its
      // error: anyone could make this server redirect to any address of theirs (RFC 9700 §4.11.1).
      if (app.registration !== 'settings') {
        return {
          status: 400,
          html: errorPageHtml(res, 'This authorization link is not valid', checked.description),
        };
      }
      const location = withQuery(client.redirectUri, {
        error: checked.error,
        error_description: checked.description,
        state: checked.state,
        iss: ctx.config.publicUrl,
      });
      return { status: 302, headers: { Location: location } };
    }

    return askConsent(ctx, req, res, client, checked);
  };
}

type AuthorizeAnswer = Awaited<ReturnType<OAuthHandler<'authorize'>>>;

/** The consent page of a valid request, for a signed-in user of an organization. */
async function askConsent(
  ctx: AppContext,
  req: Request,
  res: Response,
  client: Extract<ClientCheck, { ok: true }>,
  checked: Extract<ParameterCheck, { ok: true }>,
): Promise<AuthorizeAnswer> {
  const { app } = client;
  const visitor = visitorOf(res);
  // RFC 6749 §3.1: the user is authenticated first; after signing in they come back here and see the
  // consent page, never an approval they did not give.
  if (!visitor) return { status: 302, headers: { Location: `/login?next=${encodeURIComponent(req.originalUrl)}` } };
  if (!visitor.organization) {
    return {
      status: 403,
      html: errorPageHtml(
        res,
        'No organization',
        'Your account does not belong to an organization, so there is nothing to authorize.',
      ),
    };
  }
  const requestId = await createAuthorizationRequest(
    ctx.db,
    {
      sessionId: visitor.sessionId,
      appId: app.id,
      organizationId: visitor.organization.id,
      redirectUri: client.redirectUri,
      redirectUriGiven: client.redirectUriGiven,
      state: checked.state ?? null,
      codeChallenge: checked.codeChallenge ?? null,
      resource: checked.resource ?? null,
      scope: checked.scope?.join(' ') ?? null,
    },
    ctx.clock.now(),
  );
  const access = checked.scope ? scopedAccess(checked.scope) : grantedAccess(ctx.config, visitor.organization.name);
  return {
    status: 200,
    html: consentPage(res, app, client.redirectUri, requestId, checked.state, req.originalUrl, access),
  };
}

function consentPage(
  res: Response,
  app: OAuthApp,
  redirectUri: string,
  requestId: string,
  state: string | undefined,
  path: string,
  access: string[],
): string {
  const visitor = visitorOf(res)!;
  return pageHtml(
    res,
    '/oauth/templates/consent',
    {
      title: `Authorize ${app.name}`,
      path,
      app,
      organization: visitor.organization,
      requestId,
      state: state ?? '',
      redirectOrigin: originOf(redirectUri),
      redirectHost: new URL(redirectUri).host,
      // Nobody vouches for a client that registered itself or is known by its metadata document.
      unverified: app.registration !== 'settings',
      picture: appPicturePath(app),
      access,
    },
    // After the answer the form leads to the app's redirect URL, which form-action must allow
    // (browsers apply it to redirects).
    { formOrigins: [originOf(redirectUri)] },
  );
}

function methodNotAllowed(allow: string) {
  return (_req: Request, res: Response) => {
    res.setHeader('Allow', allow);
    renderErrorPage(res, 405, 'Method not allowed', `This address accepts ${allow} only.`);
  };
}

/** The consent form's answer, and the other methods of the authorize and consent addresses. */
export function consentRoutes(ctx: AppContext, csrf: CsrfTokens): Router {
  const router = express.Router();

  router.all(AUTHORIZE_PATH, methodNotAllowed('GET, HEAD'));

  router.post(CONSENT_PATH, async (req, res) => {
    const visitor = visitorOf(res);
    if (!visitor)
      return renderErrorPage(res, 403, 'Your session has ended', 'Log in and open the app’s authorization link again.');
    if (!(await verifySessionForm(req, visitor, csrf))) return formExpired(res);
    const outcome = await answerConsent(
      ctx.db,
      ctx.config.publicUrl,
      {
        sessionId: visitor.sessionId,
        userId: visitor.user.id,
        organizationIds: visitor.organizations.map((o) => o.id),
      },
      {
        requestId: field(req, 'request_id'),
        decision: field(req, 'decision'),
        clientId: field(req, 'client_id'),
        organizationId: field(req, 'organization_id'),
        state: field(req, 'state'),
      },
      ctx.clock.now(),
    );
    if ('refused' in outcome) return renderErrorPage(res, 400, outcome.refused.title, outcome.refused.message);
    // 303, never 307: a 307 would re-send the form, with the user's CSRF token, to the app (RFC 9700 §4.12).
    res.redirect(303, outcome.redirectTo);
  });

  router.all(CONSENT_PATH, methodNotAllowed('POST'));

  return router;
}
