import type { ErrorRequestHandler } from 'express';
import { DomainError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { outageOfRequest } from '../http/error-envelope.js';
import { renderErrorPage } from './render.js';

const TITLES: Record<number, string> = {
  400: 'Something is wrong with this request',
  401: 'Please log in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  422: 'This cannot be done',
};

/**
 * The error page of every page of this site: a refusal (a named error, or a request Express could not
 * read: a malformed escape in the path, a body that does not parse) says what was wrong; the database
 * out of reach is a 503 that says to try again; anything else is logged and answered 500 with the
 * request id. Never a stack trace, a query or a file path. Express hands an error on to the error
 * handlers of the router it happened in and of the application, never into a sibling router, so a
 * router of pages (the web app's, the authorize page's in the OAuth router) ends with this one.
 */
export function pageErrors(logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    if (outageOfRequest(error, req, res, logger)) {
      return renderErrorPage(
        res,
        503,
        'Back in a moment',
        'This page cannot be shown right now: the service cannot reach its database. Try again in a few seconds.',
      );
    }
    if (error instanceof DomainError && error.status < 500) {
      return renderErrorPage(res, error.status, TITLES[error.status] ?? 'Something is wrong', error.message);
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return renderErrorPage(res, status, TITLES[status] ?? 'Something is wrong', 'The request could not be read.');
    }
    logger.error({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'page failed');
    renderErrorPage(
      res,
      500,
      'Something went wrong',
      `Something went wrong on our side. If it happens again, tell us the request id ${String(res.locals.requestId)}.`,
    );
  };
}
