import express, { type Response, type Router } from 'express';
import { NotFoundError } from '../core/errors.js';
import type { AppContext } from '../http/context.js';
import { AppPictureDownloader, appPicturePath } from '../oauth/app-pictures.js';
import {
  accessTokenLifetime,
  deleteApp,
  findApp,
  listApps,
  registerApp,
  rotateAppSecret,
  updateApp,
  type AppDetails,
} from '../oauth/apps.js';
import type { OAuthApp } from '../oauth/tables.js';
import { attempt, formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';

function appDetailsFromForm(req: express.Request): AppDetails {
  return {
    name: field(req, 'name'),
    description: field(req, 'description'),
    pictureUrl: field(req, 'pictureUrl'),
    redirectUri: field(req, 'redirectUri'),
    expiringTokens: field(req, 'expiringTokens') === 'yes',
  };
}

function appFormValues(app: OAuthApp): AppDetails {
  return {
    name: app.name,
    description: app.description,
    pictureUrl: app.picture_url ?? '',
    redirectUri: app.redirect_uri,
    expiringTokens: accessTokenLifetime(app) !== null,
  };
}

/** Settings → Developers → Apps: the OAuth apps the organization registered. */
export function appPages(ctx: AppContext): Router {
  const router = express.Router();
  const pictures = new AppPictureDownloader(ctx.outbound);

  router.get('/settings/developers/apps', (_req, res) => showApps(ctx, res));

  router.post('/settings/developers/apps', async (req, res) => {
    const { organization, visitor } = signedIn(res);
    const details = appDetailsFromForm(req);
    const registered = await attempt(() =>
      registerApp(ctx.db, organization.id, details, pictures, ctx.clock.now(), { user: visitor.user.id }),
    );
    if (!registered.ok) return showApps(ctx, res, { values: details, errors: registered.errors }, 400);
    showApp(
      ctx,
      res,
      registered.value.app,
      { secret: registered.value.secret, secretHint: 'Your app is registered. This is its client secret.' },
      201,
    );
  });

  router.get('/settings/developers/apps/:appId', async (req, res) => {
    showApp(ctx, res, await appOf(ctx, res, req.params.appId), { saved: req.query.saved === '1' });
  });

  router.post('/settings/developers/apps/:appId', async (req, res) => {
    const app = await appOf(ctx, res, req.params.appId);
    const details = appDetailsFromForm(req);
    const updated = await attempt(() =>
      updateApp(ctx.db, app.organization_id, app.id, details, ctx.clock.now(), pictures),
    );
    if (!updated.ok) return showApp(ctx, res, app, { values: details, errors: updated.errors }, 400);
    res.redirect(303, `/settings/developers/apps/${app.id}?saved=1`);
  });

  router.post('/settings/developers/apps/:appId/rotate-secret', async (req, res) => {
    const app = await appOf(ctx, res, req.params.appId);
    const rotated = await rotateAppSecret(ctx.db, app.organization_id, app.id, ctx.clock.now(), {
      user: signedIn(res).visitor.user.id,
    });
    showApp(ctx, res, rotated.app, {
      secret: rotated.secret,
      secretHint: 'This is the new client secret; the previous one no longer works.',
    });
  });

  router.post('/settings/developers/apps/:appId/delete', async (req, res) => {
    const app = await appOf(ctx, res, req.params.appId);
    if (field(req, 'confirm') !== 'yes') {
      return showApp(
        ctx,
        res,
        app,
        { errors: { 'confirm-delete': 'Tick the box to confirm that the app should be deleted.' } },
        400,
      );
    }
    await deleteApp(ctx.db, app.organization_id, app.id, { user: signedIn(res).visitor.user.id });
    res.redirect(303, '/settings/developers/apps');
  });

  return router;
}

async function showApps(ctx: AppContext, res: Response, extra: object = {}, status = 200): Promise<void> {
  const { organization } = signedIn(res);
  const apps = await listApps(ctx.db, organization.id);
  renderPage(
    res,
    '/web/templates/developers-apps',
    { title: 'Apps', path: '/settings/developers/apps', apps, values: {}, ...extra },
    status,
  );
}

function showApp(ctx: AppContext, res: Response, app: OAuthApp, extra: object = {}, status = 200): void {
  renderPage(
    res,
    '/web/templates/developers-app',
    {
      title: app.name,
      path: `/settings/developers/apps/${app.id}`,
      app,
      picture: appPicturePath(app),
      values: appFormValues(app),
      rotatedText: formatTime(app.secret_rotated_at, zoneOf(res)),
      authorizeUrl: `${ctx.config.publicUrl}/oauth/authorize?client_id=${app.client_id}&response_type=code&state=…`,
      ...extra,
    },
    status,
  );
}

/** The organization's app; 404 for another organization's or an unknown id. */
async function appOf(ctx: AppContext, res: Response, appId: string): Promise<OAuthApp & { organization_id: string }> {
  const organizationId = signedIn(res).organization.id;
  const app = await findApp(ctx.db, organizationId, appId);
  if (!app) throw new NotFoundError('There is no app with this id in your organization.');
  return { ...app, organization_id: organizationId };
}
