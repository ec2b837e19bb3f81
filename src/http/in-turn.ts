import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Middleware that runs `handlers` one after another, as `router.use(path, ...handlers)` runs them, in one
 * layer of the router: Express matches a layer's path and trims its prefix from the URL (then puts it
 * back) for each handler mounted on its own, on every request. As there, `next('route')` goes on to the
 * next handler, and an error (passed to `next`, thrown, or a rejection) ends the turn and goes to `next`,
 * which sends it to the error handlers; `next('router')` leaves the router the turn is mounted in.
 * Handlers take no error (four arguments): error handlers stay layers of their own.
 */
export function inTurn(handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next = (error?: unknown) => {
      if (error && error !== 'route') return done(error);
      const handler = handlers[index++];
      if (handler === undefined) return done();
      try {
        const result = handler(req, res, next);
        if (typeof (result as Promise<unknown> | undefined)?.then === 'function') {
          (result as Promise<unknown>).then(undefined, (rejection: unknown) =>
            next(rejection || new Error('Rejected promise')),
          );
        }
      } catch (thrown) {
        next(thrown);
      }
    };
    next();
  };
}
