import express, { type Router } from 'express';
import type { AppContext } from '../http/context.js';
import { renderErrorPage } from '../pages/render.js';
import { findAppPicture } from './apps.js';

export const APP_PICTURE_PATH = '/oauth/apps/:clientId/picture';

/**
 * Serves the pictures of apps, as downloaded when they were registered: the consent page and the
 * settings pages show them from here, so no browser contacts an app developer's server. Client ids
 * are public, and so are the pictures; no session is needed.
 */
export function appPictureRoute(ctx: AppContext): Router {
  const router = express.Router({ caseSensitive: true });

  router.get(APP_PICTURE_PATH, async (req, res) => {
    const picture = await findAppPicture(ctx.db, req.params.clientId);
    if (!picture?.sha256) return renderErrorPage(res, 404, 'Not found', 'This app has no picture.');
    res.setHeader('Content-Type', picture.contentType);
    // The bytes were recognised as a raster image, never served as anything else (nosniff); opened on
    // their own they run nothing and load nothing.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    // Only this site's pages show it: other sites cannot use the installation to host images.
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    // Kept by browsers and checked again each time: a 304 until the developer changes the picture.
    res.setHeader('Cache-Control', 'public, no-cache');
    res.setHeader('ETag', `"${picture.sha256}"`);
    if (req.fresh) return res.status(304).end();
    res.status(200).send(Buffer.from(picture.bytes));
  });

  return router;
}
