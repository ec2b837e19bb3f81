/**
 * The named errors the domain throws. One error middleware turns each into the documented error
 * envelope (`code`, `message`, `details`); the status and code live here so every room of the code
 * reports a given failure the same way.
 */
import type { ErrorDetail } from './contract.js';

export type { ErrorDetail };

export abstract class DomainError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  readonly details: ErrorDetail[] | undefined;

  constructor(message: string, details?: ErrorDetail[], options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.details = details && details.length > 0 ? details : undefined;
  }
}

export class ValidationError extends DomainError {
  readonly status = 400;
  readonly code = 'validation_failed';
}

export class UnauthorizedError extends DomainError {
  readonly status = 401;
  readonly code = 'unauthorized';
}

export class ForbiddenError extends DomainError {
  readonly status = 403;
  readonly code = 'forbidden';
}

export class NotFoundError extends DomainError {
  readonly status = 404;
  readonly code = 'not_found';
}

export class ConflictError extends DomainError {
  readonly status = 409;
  readonly code = 'conflict';
}

export class PayloadTooLargeError extends DomainError {
  readonly status = 413;
  readonly code = 'payload_too_large';
}

export class UnsupportedMediaTypeError extends DomainError {
  readonly status = 415;
  readonly code = 'unsupported_media_type';
}

/** The request is well-formed but breaks a business rule. */
export class UnprocessableError extends DomainError {
  readonly status = 422;
  readonly code = 'unprocessable';
}

export class RateLimitedError extends DomainError {
  readonly status = 429;
  readonly code = 'rate_limited';
  constructor(
    message: string,
    /** Seconds until a request may succeed again. */
    readonly retryAfter: number,
  ) {
    super(message);
  }
}

export class NotImplementedError extends DomainError {
  readonly status = 501;
  readonly code = 'not_implemented';
}

/** A social network (or another upstream) failed or could not be reached. */
export class ProviderError extends DomainError {
  readonly status = 502;
  readonly code = 'provider_error';
}

/**
 * The service cannot do its work for a moment: its database cannot be reached (a restart, a
 * failover, its connections cut). Nothing in the request was wrong; the same request may succeed
 * after `retryAfter` seconds.
 */
export class ServiceUnavailableError extends DomainError {
  readonly status = 503;
  readonly code = 'service_unavailable';
  constructor(
    message: string,
    /** Seconds after which the request is worth sending again. */
    readonly retryAfter: number,
  ) {
    super(message);
  }
}
