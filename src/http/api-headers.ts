import type { RequestHandler } from 'express';

/**
 * The headers of every answer of the JSON APIs, errors included (declared on each response of both
 * contracts): an answer holds one organization's records, or a token, which no shared cache (and no
 * browser's) may keep; and a browser reads the body as the type it is sent as, never as another it
 * guessed. A handler with a caching policy of its own sets it after this.
 */
export function apiHeaders(): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  };
}
