import express, { type RequestHandler, type Router } from 'express';
import { Authenticator } from '../accounts/authenticate.js';
import { connectionOperations } from '../accounts/routes.js';
import { channelOperations } from '../channels/routes.js';
import { tiktokOperations } from '../channels/tiktok-routes.js';
import { postOperations } from '../posts/routes.js';
import type { AppContext } from '../context.js';
import { mediaOperations } from '../media/routes.js';
import { RateLimitedError } from '../errors.js';
import { publicApiErrors } from './error-envelope.js';
import { builtOnFirstUse } from './built-on-first-use.js';
import { isInstant } from './instant.js';
import { RateLimiter } from './rate-limit.js';
import { refuseUnstorableText } from './storable-text.js';
import { readSpecForValidator, SPEC_FILES } from './spec.js';
import { mountOperations } from './typed-routes.js';

export const PUBLIC_API_BASE = '/public/v1';

/**
 * Authenticates the request and charges it to its organization's rate-limit budget. Runs before the
 * contract validator, so an unauthenticated request learns nothing about the API, and every
 * authenticated response (errors included) carries the rate-limit headers.
 */
function authenticateAndLimit(authenticator: Authenticator, limiter: RateLimiter): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticator.authenticate(req.headers.authorization);
    res.locals.principal = principal;
    const state = await limiter.hit(principal.organizationId);
    res.setHeader('RateLimit-Limit', String(state.limit));
    res.setHeader('RateLimit-Remaining', String(state.remaining));
    res.setHeader('RateLimit-Reset', String(state.resetSeconds));
    if (!state.allowed) {
      throw new RateLimitedError(
        `This organization has used its ${state.limit} requests for this window; retry in ${state.resetSeconds} seconds.`,
        state.resetSeconds,
      );
    }
    next();
  };
}

/**
 * RFC 9110 §9.3.2: HEAD is GET without the content. The contract declares GET operations only, so
 * the validator would answer a HEAD 405; it checks a HEAD as the GET it stands for, and then the GET
 * route answers it (Express routes a HEAD to a GET handler, and Node sends the headers without the body).
 */
function headValidatedAsGet(validation: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'HEAD') return validation(req, res, next);
    req.method = 'GET';
    validation(req, res, (error?: unknown) => {
      req.method = 'HEAD';
      next(error);
    });
  };
}

export interface PublicApiOptions {
  authenticator: Authenticator;
}

export function createPublicApi(ctx: AppContext, { authenticator }: PublicApiOptions): Router {
  // Paths match in their exact case only: the contract validator skips any path that does not start
  // with the lower-case prefix, so a case-insensitive route would reach a handler with unchecked input.
  const router = express.Router({ caseSensitive: true });
  const limiter = new RateLimiter(ctx.db, 'public', ctx.config.rateLimit, ctx.clock);
  const failOnContractViolation = ctx.config.environment !== 'production';

  router.use(PUBLIC_API_BASE, authenticateAndLimit(authenticator, limiter));
  router.use(PUBLIC_API_BASE, express.json({ limit: '1mb' }));
  const validation = express.Router({ caseSensitive: true });
  validation.use(builtOnFirstUse(async () =>
    (await import('express-openapi-validator')).middleware({
      apiSpec: readSpecForValidator(SPEC_FILES.publicV1) as never,
      ignorePaths: (path: string) => !path.startsWith(`${PUBLIC_API_BASE}/`),
      // The contract is linted against the OpenAPI schema before it ships (`npm run lint:spec`);
      // checking it again on every start cost a fifth of the start-up time.
      validateApiSpec: false,
      // Replaces the validator's pattern for date-time, so a date that names no real instant is a 400.
      formats: { 'date-time': { type: 'string', validate: isInstant } },
      // allErrors: an integrator fixes every problem of a request in one round trip (the envelope keeps
      // the first few); bodies are capped at 1 MB and arrays by the contract, so the extra work is bounded.
      validateRequests: {
        allowUnknownQueryParameters: false,
        // Bodies only: the validator always converts path, query and header strings to their types. A JSON
        // body says what it means, and converting would turn `madeForKids: null` (no declaration) into
        // `false` and a number into a title.
        coerceTypes: false,
        allErrors: true,
        // Provider settings are a union discriminated by `__type`: report the chosen provider's rules only.
        discriminator: true,
      },
      // In production a response that breaks the contract is logged and still sent; elsewhere it is a 500,
      // so tests catch it.
      validateResponses: failOnContractViolation
        ? { removeAdditional: false }
        : {
            removeAdditional: false,
            onError: (error, body, req) =>
              ctx.logger.error({ err: error, path: req.path, method: req.method }, 'response breaks the contract'),
          },
      validateSecurity: {
        // authenticateAndLimit has already established who is calling; both schemes accept its verdict.
        handlers: {
          bearerAuth: (req) => req.res?.locals.principal !== undefined,
          bareAuthorization: (req) => req.res?.locals.principal !== undefined,
        },
      },
      fileUploader: false,
      ignoreUndocumented: false,
    }),
  ));
  router.use(headValidatedAsGet(validation));
  router.use(PUBLIC_API_BASE, refuseUnstorableText());

  mountOperations(router, SPEC_FILES.publicV1, {
    ...connectionOperations(ctx),
    ...channelOperations(ctx),
    ...postOperations(ctx),
    ...mediaOperations(ctx),
    ...tiktokOperations(ctx),
  });

  router.use(PUBLIC_API_BASE, publicApiErrors(ctx.logger));
  return router;
}
