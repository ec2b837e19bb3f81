import type { RequestHandler } from 'express';
import { redactUrl, type Logger } from '../core/logger.js';

/**
 * One log line per request, when its response is finished (or its connection closed first): method,
 * URL with sensitive query values redacted, status, milliseconds taken and the request id that the
 * client sees in X-Request-Id and in error bodies. Written with the service's logger itself, not a
 * child logger made for each request: on the hot paths that child was a tenth of a request's CPU.
 */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const url = req.originalUrl;
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      const line = {
        req: { method: req.method, url: redactUrl(url) },
        requestId: res.locals.requestId as string,
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - started),
      };
      if (res.statusCode >= 500) logger.error(line, 'request errored');
      else if (!res.writableFinished) logger.info(line, 'request aborted');
      else logger.info(line, 'request completed');
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
