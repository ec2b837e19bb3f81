import express, { type ErrorRequestHandler, type Router } from 'express';
import type { AppContext } from '../context.js';
import { DomainError, ValidationError } from '../errors.js';
import { refuseUnstorableRequestText } from '../http/storable-text.js';
import { appPictureRoute } from '../oauth/app-picture-route.js';
import { authorizePages } from '../oauth/authorize.js';
import { accountPages } from './account-pages.js';
import { CsrfTokens } from './csrf.js';
import { ASSETS_DIR, renderErrorPage, securityHeaders } from './render.js';
import { settingsPages } from './settings-pages.js';
import { BrowserCookies, loadVisitor } from './visitor.js';

const TITLES: Record<number, string> = {
  400: 'Something is wrong with this request',
  401: 'Please log in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  422: 'This cannot be done',
};

/** The pages people use in a browser: accounts, settings and the OAuth consent page. */
export function createWebApp(ctx: AppContext): Router {
  const router = express.Router();
  const cookies = new BrowserCookies(ctx.config.publicUrl);
  const csrf = new CsrfTokens(ctx.db);

  router.use(
    '/assets',
    express.static(ASSETS_DIR, { index: false, fallthrough: false, maxAge: '1h', setHeaders: (res) => res.setHeader('X-Content-Type-Options', 'nosniff') }),
  );
  router.use(securityHeaders());
  router.use(appPictureRoute(ctx));
  router.use(express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 50 }));
  router.use(refuseUnstorableRequestText(() => new ValidationError('The address or a form field holds the NUL character (U+0000) or malformed Unicode, which is not accepted.')));
  router.use(loadVisitor(ctx, cookies, csrf));

  router.use(accountPages(ctx, cookies, csrf));
  router.use(settingsPages(ctx, csrf));
  router.use(authorizePages(ctx, csrf));
  router.use((_req, res) => renderErrorPage(res, 404, 'Not found', 'There is no page at this address.'));

  const pageErrors: ErrorRequestHandler = (error, req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof DomainError && error.status < 500) {
      return renderErrorPage(res, error.status, TITLES[error.status] ?? 'Something is wrong', error.message);
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return renderErrorPage(res, status, TITLES[status] ?? 'Something is wrong', 'The request could not be read.');
    }
    ctx.logger.error({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'page failed');
    renderErrorPage(res, 500, 'Something went wrong', `Something went wrong on our side. If it happens again, tell us the request id ${String(res.locals.requestId)}.`);
  };
  router.use(pageErrors);
  return router;
}
