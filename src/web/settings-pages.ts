import express, { type RequestHandler, type Response, type Router } from 'express';
import { createApiKey, listApiKeys, maskApiKey, revokeApiKey } from '../accounts/api-keys.js';
import type { AppContext } from '../context.js';
import type { OAuthApp } from '../db/schema.js';
import { NotFoundError } from '../errors.js';
import { AppPictureDownloader, appPicturePath } from '../oauth/app-pictures.js';
import { deleteApp, findApp, listApps, registerApp, rotateAppSecret, updateApp, type AppDetails } from '../oauth/apps.js';
import { listApprovedApps, revokeGrant, type ApprovedApp } from '../oauth/grants.js';
import type { CsrfTokens } from './csrf.js';
import { attempt, formatTime } from './forms.js';
import { formExpired, renderErrorPage, renderPage } from './render.js';
import { field, verifySessionForm, visitorOf, type OrganizationChoice, type Visitor } from './visitor.js';

/**
 * Settings pages need a signed-in user acting for an organization; every form they post carries the
 * session's CSRF token. A browser without a session goes to the log-in page and comes back.
 */
function requireSignIn(csrf: CsrfTokens): RequestHandler {
  return async (req, res, next) => {
    const visitor = visitorOf(res);
    if (!visitor) {
      if (req.method === 'GET' || req.method === 'HEAD') return res.redirect(302, `/login?next=${encodeURIComponent(req.originalUrl)}`);
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
function signedIn(res: Response): { visitor: Visitor; organization: OrganizationChoice } {
  const visitor = visitorOf(res)!;
  return { visitor, organization: visitor.organization! };
}

function appDetailsFromForm(req: express.Request): AppDetails {
  return {
    name: field(req, 'name'),
    description: field(req, 'description'),
    pictureUrl: field(req, 'pictureUrl'),
    redirectUri: field(req, 'redirectUri'),
  };
}

function appFormValues(app: OAuthApp): AppDetails {
  return { name: app.name, description: app.description, pictureUrl: app.picture_url ?? '', redirectUri: app.redirect_uri };
}

/** Settings → Developers → Access and Apps, and Settings → Approved apps. */
export function settingsPages(ctx: AppContext, csrf: CsrfTokens): Router {
  const router = express.Router();
  const pictures = new AppPictureDownloader(ctx.config.media.fetch);
  router.use('/settings', requireSignIn(csrf));

  router.get('/settings', (_req, res) => res.redirect(302, '/settings/developers/access'));

  // --- Developers → Access: API keys --------------------------------------------------------------

  const showAccess = async (res: Response, extra: object = {}, status = 200) => {
    const { organization } = signedIn(res);
    const keys = await listApiKeys(ctx.db, organization.id);
    renderPage(
      res,
      'developers-access',
      {
        title: 'API keys',
        path: '/settings/developers/access',
        keys: keys.map((key) => ({
          id: key.id,
          name: key.name,
          masked: maskApiKey(key),
          createdAt: key.created_at.toISOString(),
          createdAtText: formatTime(key.created_at),
          lastUsedText: formatTime(key.last_used_at, 'never used'),
          revoked: key.revoked_at !== null,
          revokedAtText: formatTime(key.revoked_at),
        })),
        ...extra,
      },
      status,
    );
  };

  router.get('/settings/developers/access', (_req, res) => showAccess(res));

  router.post('/settings/developers/access', async (req, res) => {
    const { organization } = signedIn(res);
    const { secret, apiKey } = await createApiKey(ctx.db, organization.id, field(req, 'name').slice(0, 100));
    await showAccess(res, { newKey: { name: apiKey.name, secret } }, 201);
  });

  router.post('/settings/developers/access/:keyId/revoke', async (req, res) => {
    const { organization } = signedIn(res);
    await revokeApiKey(ctx.db, organization.id, req.params.keyId, ctx.clock());
    res.redirect(303, '/settings/developers/access');
  });

  // --- Developers → Apps: OAuth apps --------------------------------------------------------------

  const showApps = async (res: Response, extra: object = {}, status = 200) => {
    const { organization } = signedIn(res);
    const apps = await listApps(ctx.db, organization.id);
    renderPage(res, 'developers-apps', { title: 'Apps', path: '/settings/developers/apps', apps, values: {}, ...extra }, status);
  };

  const showApp = (res: Response, app: OAuthApp, extra: object = {}, status = 200) => {
    renderPage(
      res,
      'developers-app',
      {
        title: app.name,
        path: `/settings/developers/apps/${app.id}`,
        app,
        picture: appPicturePath(app),
        values: appFormValues(app),
        rotatedText: formatTime(app.secret_rotated_at),
        authorizeUrl: `${ctx.config.publicUrl}/oauth/authorize?client_id=${app.client_id}&response_type=code&state=…`,
        ...extra,
      },
      status,
    );
  };

  const appOf = async (res: Response, appId: string): Promise<OAuthApp> => {
    const app = await findApp(ctx.db, signedIn(res).organization.id, appId);
    if (!app) throw new NotFoundError('There is no app with this id in your organization.');
    return app;
  };

  router.get('/settings/developers/apps', (_req, res) => showApps(res));

  router.post('/settings/developers/apps', async (req, res) => {
    const { organization } = signedIn(res);
    const details = appDetailsFromForm(req);
    const registered = await attempt(() => registerApp(ctx.db, organization.id, details, pictures));
    if (!registered.ok) return showApps(res, { values: details, errors: registered.errors }, 400);
    showApp(res, registered.value.app, { secret: registered.value.secret, secretHint: 'Your app is registered. This is its client secret.' }, 201);
  });

  router.get('/settings/developers/apps/:appId', async (req, res) => {
    showApp(res, await appOf(res, req.params.appId), { saved: req.query.saved === '1' });
  });

  router.post('/settings/developers/apps/:appId', async (req, res) => {
    const app = await appOf(res, req.params.appId);
    const details = appDetailsFromForm(req);
    const updated = await attempt(() => updateApp(ctx.db, app.organization_id, app.id, details, ctx.clock(), pictures));
    if (!updated.ok) return showApp(res, app, { values: details, errors: updated.errors }, 400);
    res.redirect(303, `/settings/developers/apps/${app.id}?saved=1`);
  });

  router.post('/settings/developers/apps/:appId/rotate-secret', async (req, res) => {
    const app = await appOf(res, req.params.appId);
    const rotated = await rotateAppSecret(ctx.db, app.organization_id, app.id, ctx.clock());
    showApp(res, rotated.app, {
      secret: rotated.secret,
      secretHint: 'This is the new client secret; the previous one no longer works.',
    });
  });

  router.post('/settings/developers/apps/:appId/delete', async (req, res) => {
    const app = await appOf(res, req.params.appId);
    if (field(req, 'confirm') !== 'yes') {
      return showApp(res, app, { errors: { 'confirm-delete': 'Tick the box to confirm that the app should be deleted.' } }, 400);
    }
    await deleteApp(ctx.db, app.organization_id, app.id);
    res.redirect(303, '/settings/developers/apps');
  });

  // --- Approved apps ------------------------------------------------------------------------------

  router.get('/settings/approved-apps', async (_req, res) => {
    const { visitor } = signedIn(res);
    const approved = await listApprovedApps(ctx.db, visitor.user.id);
    const groups: { organizationId: string; organizationName: string; apps: (ApprovedApp & { approvedText: string; lastUsedText: string })[] }[] = [];
    for (const app of approved) {
      let group = groups.find((g) => g.organizationId === app.organizationId);
      if (!group) groups.push((group = { organizationId: app.organizationId, organizationName: app.organizationName, apps: [] }));
      group.apps.push({
        ...app,
        approvedText: formatTime(app.approvedAt),
        lastUsedText: app.lastUsedAt ? `last used ${formatTime(app.lastUsedAt)}` : 'not used yet',
      });
    }
    renderPage(res, 'approved-apps', { title: 'Approved apps', path: '/settings/approved-apps', groups });
  });

  router.post('/settings/approved-apps/:grantId/revoke', async (req, res) => {
    const { visitor } = signedIn(res);
    await revokeGrant(ctx.db, visitor.user.id, req.params.grantId);
    res.redirect(303, '/settings/approved-apps');
  });

  return router;
}
