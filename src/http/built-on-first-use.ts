import express, { type RequestHandler } from 'express';

/**
 * Middleware built when the first request reaches it. The contract validators load their library and
 * parse and compile their contract when they are built, most of a second of CPU: built at start, they
 * would hold up every start (and readiness) for requests that may come much later; built on first use,
 * only the first request that needs them waits.
 */
export function builtOnFirstUse(build: () => Promise<RequestHandler | RequestHandler[]>): RequestHandler {
  let built: Promise<express.Router> | undefined;
  return (req, res, next) => {
    built ??= build().then((handlers) => express.Router().use(handlers));
    built.then((router) => router(req, res, next), next);
  };
}
