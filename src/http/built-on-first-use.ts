import type { RequestHandler } from 'express';
import { inTurn } from './in-turn.js';

/**
 * Middleware built when the first request reaches it. The contract validators load their library and
 * parse and compile their contract when they are built, most of a second of CPU: built at start, they
 * would hold up every start (and readiness) for requests that may come much later; built on first use,
 * only the first request that needs them waits. Once built, a request goes straight to it.
 */
export function builtOnFirstUse(build: () => Promise<RequestHandler | RequestHandler[]>): RequestHandler {
  let built: RequestHandler | undefined;
  let building: Promise<RequestHandler> | undefined;
  return (req, res, next) => {
    if (built) return built(req, res, next);
    building ??= build().then((handlers) => (built = Array.isArray(handlers) ? inTurn(handlers) : handlers));
    building.then((handler) => handler(req, res, next)).catch(next);
  };
}
