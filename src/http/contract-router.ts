import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { NotFoundError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { builtOnFirstUse } from './built-on-first-use.js';
import { inTurn } from './in-turn.js';
import { isInstant } from './instant.js';
import { readSpecForValidator } from './spec.js';
import { mountOperations } from './typed-routes.js';

export interface ContractRouterOptions<Extra> {
  /** The hand-written contract: routes, validation and handler types all come from it. */
  specFile: string;
  /** The paths whose requests and responses are checked against the contract. */
  validates: (path: string) => boolean;
  /** The paths whose failures `errors` answers; the others go on to the next error handler. */
  handlesErrors: (path: string) => boolean;
  /** Middleware before validation, each on a path prefix: authentication, body parsers, early refusals. */
  before?: [path: string, ...handlers: RequestHandler[]][];
  /** Middleware after validation and before the handlers. */
  after?: [path: string, ...handlers: RequestHandler[]][];
  /** Report every violation of a request (for the Public API's `details`), or the first. */
  allErrors: boolean;
  /** The verdict of each security scheme, or `false` when the operations authenticate clients themselves. */
  security: false | Record<string, (req: Request) => boolean>;
  /** One handler per operationId of the contract (typed by the caller: `PublicHandlers`, `OAuthHandlers`). */
  handlers: Record<string, unknown>;
  /** What the handlers get besides the operation's input. */
  extra: (req: Request, res: Response) => Extra;
  /** Turns any failure on a validated path into the contract's error body. */
  errors: ErrorRequestHandler;
  /** A response that breaks the contract fails (development, tests) or is only logged (production). */
  responseViolations: 'fail' | 'log';
  /** Which responses are checked: all, about one in a hundred, or none (`Config['responseValidation']`). */
  responseValidation: 'strict' | 'sample' | 'off';
  logger: Logger;
}

/**
 * RFC 9110 §9.3.2: HEAD is GET without the content. The contracts declare GET operations only, so the
 * validator would answer a HEAD 405; it checks a HEAD as the GET it stands for, and then the GET route
 * answers it (Express routes a HEAD to a GET handler, and Node sends the headers without the body).
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

// One response in this many is checked when only a sample is.
const RESPONSE_SAMPLE = 100;

/**
 * The validator for a response-validation mode. A sample is taken by sending about one request in a
 * hundred through a validator that also checks responses, and the others through one that checks
 * requests only: express-openapi-validator checks all responses or none.
 */
function validatorFor(
  mode: ContractRouterOptions<unknown>['responseValidation'],
  validator: (checksResponses: boolean) => RequestHandler,
): RequestHandler {
  if (mode !== 'sample') return validator(mode === 'strict');
  const checked = validator(true);
  const unchecked = validator(false);
  return (req, res, next) => (Math.random() * RESPONSE_SAMPLE < 1 ? checked : unchecked)(req, res, next);
}

/**
 * The one factory of the contract-first routers (the Public API and the OAuth API): express-openapi-
 * validator configured in one place, every operation mounted by its operationId, and one error handler.
 */
export function contractRouter<Extra>(options: ContractRouterOptions<Extra>): Router {
  // Paths match exactly, in their case and without a trailing slash (`/posts/` is not `/posts`): the
  // validator skips any path it does not own, so a looser route would reach a handler with unchecked input.
  const router = express.Router({ caseSensitive: true, strict: true });
  // Each prefix's middleware in one layer: Express trims a layer's prefix, and puts it back, per layer.
  for (const [path, ...handlers] of options.before ?? []) router.use(path, inTurn(handlers));
  router.use(refuseTrailingSlash(options.validates));
  const validation = validatorFor(options.responseValidation, (checksResponses) =>
    contractValidator(options, checksResponses),
  );
  // A path the contract does not validate (a page, the other API's) skips the validator, which would
  // only pass it on, and never waits for its build.
  const validated = headValidatedAsGet(validation);
  router.use((req, res, next) => (options.validates(req.path) ? validated(req, res, next) : next()));
  for (const [path, ...handlers] of options.after ?? []) router.use(path, inTurn(handlers));

  mountOperations(router, options.specFile, options.handlers, options.extra);
  // A path the validator let through that no operation matches ends here, in the contract's envelope.
  router.use((req, _res, next) => {
    if (!options.validates(req.path)) return next();
    next(new NotFoundError(`There is no operation at ${req.method} ${req.path}.`));
  });

  router.use(((error, req, res, next) => {
    if (!options.handlesErrors(req.path)) return next(error);
    options.errors(error, req, res, next);
  }) satisfies ErrorRequestHandler);
  return router;
}

/** The validator reads `/posts/` as `/posts`: refused before, so one path names one operation. */
function refuseTrailingSlash(validates: (path: string) => boolean): RequestHandler {
  return (req, _res, next) => {
    if (req.path.length > 1 && req.path.endsWith('/') && validates(req.path)) {
      return next(new NotFoundError(`There is no operation at ${req.method} ${req.path}.`));
    }
    next();
  };
}

/** express-openapi-validator with every option written out, built on its first request. */
function contractValidator(
  options: Pick<
    ContractRouterOptions<unknown>,
    'specFile' | 'validates' | 'allErrors' | 'security' | 'responseViolations' | 'logger'
  >,
  checksResponses: boolean,
): RequestHandler {
  return builtOnFirstUse(async () => {
    // patches/express-openapi-validator+5.6.2.patch (applied at install): its route lookup prepares the
    // contract's paths once instead of compiling them on every request (a twentieth of a request's CPU),
    // its steps run at once when the contract is loaded instead of each in a promise callback, the
    // security step is left out when off, and a URL without a query skips the legacy URL parser.
    return (await import('express-openapi-validator')).middleware({
      apiSpec: readSpecForValidator(options.specFile) as never,
      ignorePaths: (path: string) => !options.validates(path),
      // The contracts are linted against the OpenAPI schema before they ship (`npm run lint:spec`);
      // checking them again on every start cost a fifth of the start-up time.
      validateApiSpec: false,
      // Replaces the validator's pattern for date-time, so a date that names no real instant is a 400.
      formats: { 'date-time': { type: 'string', validate: isInstant } },
      validateRequests: {
        allowUnknownQueryParameters: false,
        // Bodies only: the validator always converts path, query and header strings to their types. A
        // body says what it means, and converting would turn `madeForKids: null` into `false` and a
        // number into a title.
        coerceTypes: false,
        allErrors: options.allErrors,
        // Unions discriminated by a property (provider settings by `__type`): report the chosen branch's
        // rules only.
        discriminator: true,
      },
      validateResponses: !checksResponses
        ? false
        : options.responseViolations === 'fail'
          ? { removeAdditional: false }
          : {
              removeAdditional: false,
              onError: (error, _body, req) =>
                options.logger.error(
                  { err: error, path: req.path, method: req.method },
                  'response breaks the contract',
                ),
            },
      validateSecurity: options.security === false ? false : { handlers: options.security },
      fileUploader: false,
      ignoreUndocumented: false,
    });
  });
}
