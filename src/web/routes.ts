import express, { type RequestHandler, type Router } from 'express';
import type { ChannelRemoval } from '../channels/removal.js';
import { ValidationError } from '../core/errors.js';
import type { AppContext } from '../http/context.js';
import type { PostsContext } from '../posts/context.js';
import { refuseUnstorableRequestText } from '../http/storable-text.js';
import { appPictureRoute } from '../oauth/app-picture-route.js';
import { consentRoutes } from '../oauth/authorize.js';
import { pageErrors } from '../pages/errors.js';
import { ASSETS_DIR, renderErrorPage, securityHeaders } from '../pages/render.js';
import { accountPages } from './account-pages.js';
import { invitationPages } from './invitation-pages.js';
import { calendarPages } from './calendar-page.js';
import { composerPages } from './composer-page.js';
import { mediaPages } from './media-pages.js';
import type { MediaContext } from '../media/storage.js';
import { RequestBodies } from '../http/request-bodies.js';
import { channelChoicePages } from './channel-choice-pages.js';
import { channelSignInPages } from './channel-sign-in-pages.js';
import { channelSitePages } from './channel-site-pages.js';
import type { PageTools } from './page-tools.js';
import { channelCallbackPage } from './channels-page.js';
import { postsPages } from './posts-pages.js';
import { seriesPages } from './series-pages.js';
import { settingsPages } from './settings-pages.js';
import { requirePermission, requireSignIn } from './signed-in.js';
import { loadVisitor } from './visitor-loader.js';
import { readerZone } from './time-zone.js';
import type { WebhookManagement } from '../webhooks/management.js';

/** What the browser pages share. */

/** What a page reads of its request: form bodies (text the database cannot store refused) and the signed-in visitor. */
function pageInput(ctx: AppContext, { cookies, csrf }: PageTools): RequestHandler[] {
  return [
    // The composer's form is the largest: a post's text (20,000 characters, up to 12 bytes each once
    // encoded), its media, and the settings of every channel it goes to.
    express.urlencoded({ extended: false, limit: '320kb', parameterLimit: 1000 }),
    refuseUnstorableRequestText(
      () =>
        new ValidationError(
          'The address or a form field holds the NUL character (U+0000), malformed Unicode or a malformed ' +
            '%-escape, which is not accepted.',
        ),
    ),
    loadVisitor(ctx, cookies, csrf),
  ];
}

/** What every page of this site runs first, wherever it is mounted: the pages' security headers and `pageInput`. */
export function pagePrelude(ctx: AppContext, tools: PageTools): RequestHandler[] {
  return [securityHeaders(), ...pageInput(ctx, tools)];
}

/**
 * The pages people use in a browser: accounts, posts and settings, the consent form's answer and the apps'
 * pictures, and their error page (the OAuth router ends the authorize page with the same one).
 */
export function createWebApp(
  ctx: PostsContext & MediaContext & { webhooks: WebhookManagement },
  tools: PageTools,
  channelRemoval: ChannelRemoval,
): Router {
  const bodies = new RequestBodies();
  const router = express.Router();
  router.use(assetRoutes());
  router.use(securityHeaders());
  // Apps' pictures are public and read nothing of the request but their client id.
  router.use(appPictureRoute(ctx));
  router.use(...pageInput(ctx, tools));
  router.use(accountPages(ctx, tools.cookies, tools.csrf));
  router.use(invitationPages(ctx, tools.csrf));
  router.use(channelCallbackPage(ctx));
  router.use(channelSitePages(ctx, tools));
  router.use(channelSignInPages(ctx, tools));
  router.use(channelChoicePages(ctx, tools));
  router.use('/posts', requireSignIn(tools.csrf));
  router.use('/posts/:id/edit', requirePermission('posts:draft', 'change posts'));
  router.use('/series', requireSignIn(tools.csrf));
  router.use('/calendar', requireSignIn(tools.csrf));
  router.use('/compose', requireSignIn(tools.csrf));
  router.use('/compose', requirePermission('posts:draft', 'write posts'));
  router.use('/media', requireSignIn(tools.csrf));
  router.use('/media', requirePermission('media:write', 'upload or delete media', { changesOnly: true }));
  router.use(calendarPages(ctx, tools.cookies));
  router.use(composerPages(ctx, tools.cookies, bodies));
  router.use(mediaPages(ctx, bodies));
  router.use(postsPages(ctx, tools.cookies));
  router.use(seriesPages(ctx, tools.cookies));
  router.use('/settings', readerZone(tools.cookies));
  router.use(settingsPages(ctx, tools.csrf, channelRemoval));
  router.use(consentRoutes(ctx, tools.csrf));
  router.use((_req, res) => renderErrorPage(res, 404, 'Not found', 'There is no page at this address.'));
  router.use(pageErrors(ctx.logger));
  return router;
}

/** The pages' scripts, stylesheet and icons. */
function assetRoutes(): Router {
  const router = express.Router();
  router.use(
    '/assets',
    express.static(ASSETS_DIR, {
      index: false,
      fallthrough: false,
      maxAge: '1h',
      setHeaders: (res) => res.setHeader('X-Content-Type-Options', 'nosniff'),
    }),
  );
  // Browsers ask every site for /favicon.ico, whatever its pages link to.
  router.get('/favicon.ico', (_req, res) => {
    res.sendFile('favicon.ico', {
      root: ASSETS_DIR,
      maxAge: '1d',
      headers: { 'Content-Type': 'image/x-icon', 'X-Content-Type-Options': 'nosniff' },
    });
  });
  return router;
}
