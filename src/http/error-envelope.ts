import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ErrorEnvelope } from '../core/contract.js';
import { DomainError, ServiceUnavailableError, type ErrorDetail } from '../core/errors.js';
import { isDatabaseUnreachable } from '../db/connection-loss.js';

interface Failure {
  status: number;
  code: string;
  message: string;
  details?: ErrorDetail[] | undefined;
  retryAfter?: number | undefined;
  headers?: Record<string, string>;
}

/** A schema violation as express-openapi-validator reports it; `errorCode` is `<ajv keyword>.openapi.validation`. */
interface Violation {
  path?: string;
  message?: string;
  errorCode?: string;
}

/** Errors of express-openapi-validator: an HTTP status and the schema violations it found. */
interface ValidatorError {
  status: number;
  message: string;
  errors?: Violation[];
  headers?: Record<string, string>;
}

/** Errors of Express's body parser (`type` is set by the `body-parser` package). */
interface BodyParserError {
  type: string;
  status: number;
}

// A body with thousands of mistakes gets the first few; fixing them reveals the rest.
const MAX_DETAILS = 20;

const CODES_BY_STATUS: Record<number, string> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
};

/**
 * Seconds a client is asked to wait when the database is out of reach: a restarted PostgreSQL takes
 * a few seconds to accept connections again, and lost connections are replaced at once.
 */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * The database out of reach (see `isDatabaseUnreachable`), as the error every handler answers with
 * 503 and `Retry-After`, each in its own form; `undefined` for any other failure.
 */
export function databaseOutage(error: unknown): ServiceUnavailableError | undefined {
  if (error instanceof ServiceUnavailableError) return error;
  if (!isDatabaseUnreachable(error)) return undefined;
  return new ServiceUnavailableError(
    `The service cannot reach its database for a moment; retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds.`,
    DATABASE_RETRY_AFTER_SECONDS,
  );
}

/**
 * `databaseOutage` for an error handler: the outage is logged once for the operator (a warning, with
 * the request), and the response gets its `Retry-After`; the handler answers in its own form.
 */
export function outageOfRequest(
  error: unknown,
  req: Request,
  res: Response,
  logger: Logger,
): ServiceUnavailableError | undefined {
  const outage = databaseOutage(error);
  if (!outage) return undefined;
  logger.warn(
    { err: error, requestId: res.locals.requestId, method: req.method, path: req.path },
    'database out of reach',
  );
  res.setHeader('Retry-After', String(outage.retryAfter));
  return outage;
}

/** `/body/posts/1/settings/privacyLevel` → `posts[1].settings.privacyLevel`; `/query/limit` → `query.limit`. */
export function detailPath(validatorPath: string): string {
  const parts = validatorPath
    .replace(/^[./]+/, '')
    .split(/[./]/)
    .filter(Boolean);
  if (parts[0] === 'body') parts.shift();
  let out = '';
  for (const part of parts) {
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out ? `.${part}` : part;
  }
  return out || 'body';
}

// The validator only says "must match format"; an integrator needs to know what the format is.
const FORMAT_MESSAGES: Record<string, string> = {
  'date-time':
    'must be an RFC 3339 date-time naming a real instant ' +
    'between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, e.g. 2026-12-01T09:30:00.000Z',
};

// The validator's words for a path whose escapes do not decode (`/posts/%ff`), said at the request's path.
const MALFORMED_PATH = "malformed uri'";

function messageOf(violation: Violation): string {
  if (violation.message === MALFORMED_PATH) return 'is not valid percent-encoding (RFC 3986): escape % as %25';
  const format = keyword(violation) === 'format' ? /format "([^"]+)"/.exec(violation.message ?? '')?.[1] : undefined;
  // A property no form of the body declares: the same words whether a closed object or a union found it.
  if (keyword(violation) === 'unevaluatedProperties') return 'must NOT have additional properties';
  // Ajv says `value of tag "type" must be in oneOf`; the detail's path already names the property.
  if (keyword(violation) === 'discriminator') {
    return /must be in oneOf/.test(violation.message ?? '')
      ? 'must be equal to one of the allowed values'
      : (violation.message ?? '').replace(/^.*tag "[^"]+" /, '');
  }
  return (format && FORMAT_MESSAGES[format]) ?? violation.message ?? 'is not valid';
}

/** Where the violation is; a union's discriminator is reported on the object, so the path names its property. */
function pathOf(violation: Violation): string {
  if (violation.message === MALFORMED_PATH) return 'path';
  const tag = keyword(violation) === 'discriminator' ? /tag "([^"]+)"/.exec(violation.message ?? '')?.[1] : undefined;
  return tag ? `${violation.path ?? ''}/${tag}` : (violation.path ?? '');
}

const keyword = (violation: Violation) => violation.errorCode?.replace(/\.openapi\.validation$/, '');
const parentOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf('/')));

/**
 * Turns the validator's violations into the details an integrator can act on. When a value must match
 * one of several forms (a `oneOf`), the schema validator reports why it failed every form, including
 * "required property" and "additional (or unevaluated) property" complaints that only say the value is
 * not the other form. Those are dropped when anything more specific remains, along with the summary
 * lines ("must match exactly one schema", "must match then schema") and repeats. Ajv reports a form's
 * complaints before the `oneOf` that failed them, and the object's own rules (e.g. `date` required
 * when `type` is `schedule`, or a conditional `then`) after it or beside an `if`: those are kept.
 */
export function violationDetails(violations: Violation[]): ErrorDetail[] {
  const isSummary = (v: Violation) => keyword(v) === 'oneOf' || keyword(v) === 'if';
  const isExtraProperty = (v: Violation) =>
    keyword(v) === 'additionalProperties' || keyword(v) === 'unevaluatedProperties';
  const isConditional = (v: Violation, i: number) => {
    const next = violations[i + 1];
    return (
      keyword(v) === 'required' && next !== undefined && keyword(next) === 'if' && next.path === parentOf(v.path ?? '')
    );
  };
  const failsOneOf = (v: Violation, after: number) =>
    violations.slice(after).some((other) => keyword(other) === 'oneOf' && other.path === parentOf(v.path ?? ''));
  // An unevaluated property is one no form claimed, because every form failed: reported after the oneOf.
  const choosesForm = (v: Violation, i: number) =>
    keyword(v) === 'unevaluatedProperties'
      ? failsOneOf(v, 0)
      : (keyword(v) === 'required' || isExtraProperty(v)) && failsOneOf(v, i + 1) && !isConditional(v, i);
  let chosen = violations.filter((v, i) => !isSummary(v) && !choosesForm(v, i));
  if (chosen.length === 0) chosen = violations.filter((v) => !isSummary(v) && !isExtraProperty(v));
  if (chosen.length === 0) chosen = violations;
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const violation of chosen) {
    const detail = { path: detailPath(pathOf(violation)), message: messageOf(violation) };
    const key = `${detail.path}\n${detail.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push(detail);
  }
  return details.slice(0, MAX_DETAILS);
}

function isValidatorError(error: unknown): error is ValidatorError {
  return (
    typeof error === 'object' && error !== null && 'status' in error && Array.isArray((error as ValidatorError).errors)
  );
}

function isBodyParserError(error: unknown): error is BodyParserError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as BodyParserError).type === 'string' &&
    'status' in error
  );
}

/**
 * Any other failure to read a request that Express marks as the client's (`http-errors` with a 4xx
 * status and `expose`), such as a body that does not inflate under its Content-Encoding or one that
 * ends before its Content-Length.
 */
export function isUnreadableRequestError(error: unknown): error is { status: number } {
  if (typeof error !== 'object' || error === null) return false;
  const { status, expose } = error as { status?: unknown; expose?: unknown };
  return typeof status === 'number' && status >= 400 && status < 500 && expose === true;
}

function describe(error: unknown, req: Request): Failure | undefined {
  if (error instanceof DomainError) {
    return {
      status: error.status,
      code: error.code,
      message: error.message,
      details: error.details,
      retryAfter: 'retryAfter' in error ? (error.retryAfter as number) : undefined,
    };
  }
  if (isBodyParserError(error)) {
    switch (error.type) {
      case 'entity.parse.failed':
        return { status: 400, code: 'validation_failed', message: 'The request body is not valid JSON.' };
      case 'entity.too.large':
        return { status: 413, code: 'payload_too_large', message: 'The request body is too large.' };
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return { status: 415, code: 'unsupported_media_type', message: 'The request body encoding is not supported.' };
    }
  }
  if (isValidatorError(error) && error.status < 500) {
    const code = CODES_BY_STATUS[error.status] ?? 'validation_failed';
    const failure: Failure = { status: error.status, code, message: error.message, headers: error.headers ?? {} };
    if (error.status === 400) {
      failure.message = 'The request does not match the API contract.';
      failure.details = violationDetails(error.errors ?? []);
    } else if (error.status === 404) {
      failure.message = `There is no operation at ${req.method} ${req.baseUrl}${req.path}.`;
    } else if (error.status === 405) {
      failure.message = `${req.method} is not allowed on ${req.baseUrl}${req.path}.`;
      // The contract lists GET only; HEAD is answered wherever GET is (RFC 9110 §9.3.2).
      const allow = failure.headers?.Allow;
      if (allow && /\bGET\b/.test(allow)) failure.headers = { ...failure.headers, Allow: `${allow}, HEAD` };
    }
    return failure;
  }
  if (isUnreadableRequestError(error)) {
    return {
      status: 400,
      code: 'validation_failed',
      message: 'The request could not be read: its body does not match its Content-Encoding or Content-Length.',
    };
  }
  return undefined;
}

/** Writes the envelope without going through `res.json`, so response validation never rewrites an error. */
export function sendError(res: Response, failure: Failure, requestId: string): void {
  const body: ErrorEnvelope = {
    error: {
      code: failure.code,
      message: failure.message,
      ...(failure.details ? { details: failure.details } : {}),
      requestId,
      ...(failure.retryAfter !== undefined ? { retryAfter: failure.retryAfter } : {}),
    },
  };
  for (const [name, value] of Object.entries(failure.headers ?? {})) res.setHeader(name, value);
  // A resource's own challenge (with its metadata's address) is set before the failure is thrown.
  if (failure.status === 401 && !res.hasHeader('WWW-Authenticate')) {
    res.setHeader('WWW-Authenticate', 'Bearer realm="public-api"');
  }
  if (failure.retryAfter !== undefined) res.setHeader('Retry-After', String(failure.retryAfter));
  res.status(failure.status).type('application/json').send(JSON.stringify(body));
}

/**
 * The one place a Public API failure becomes a response. The database out of reach is a 503 with
 * `Retry-After`; unknown errors are logged and answered 500, without internals.
 */
export function publicApiErrors(logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const requestId = String(res.locals.requestId ?? '');
    const outage = outageOfRequest(error, req, res, logger);
    const failure = describe(outage ?? error, req);
    if (failure) {
      sendError(res, failure, requestId);
      return;
    }
    logger.error({ err: error, requestId, method: req.method, path: req.path }, 'request failed');
    sendError(
      res,
      {
        status: 500,
        code: 'internal',
        message: 'Something went wrong on our side; the request id helps us find out what.',
      },
      requestId,
    );
  };
}
