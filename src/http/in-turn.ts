import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Middleware that runs `handlers` one after another, as `router.use(path, ...handlers)` would, in one
 * layer of the router: Express matches a layer's path and trims its prefix from the URL (then puts it
 * back) for each handler mounted on its own, on every request. A handler's error, thrown or rejected,
 * ends the turn and goes to `next`, as Express sends it to the error handlers.
 */
export function inTurn(handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next = (error?: unknown) => {
      if (error !== undefined && error !== null) return done(error);
      const handler = handlers[index++];
      if (handler === undefined) return done();
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch(next);
      } catch (thrown) {
        next(thrown);
      }
    };
    next();
  };
}
