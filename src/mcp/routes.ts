import cors from 'cors';
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { readSpec, SPEC_FILES } from '../core/contract.js';
import type { Logger } from '../core/logger.js';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../core/errors.js';
import { apiHeaders } from '../http/api-headers.js';
import { builtOnFirstUse } from '../http/built-on-first-use.js';
import { publicApiErrors, sendError } from '../http/error-envelope.js';
import { refuseUnstorableRequestText } from '../http/storable-text.js';
import type { RequestListener } from './tool-calls.js';

export const MCP_PATH = '/mcp';

/**
 * `/mcp`: the Model Context Protocol's Streamable HTTP transport, stateless (each POST carries whole
 * JSON-RPC messages and is answered in JSON; no session to keep between processes). Its tools are the
 * Public API's operations (generated/mcp-tools.ts), each run through the application as its HTTP
 * request. Authenticated and counted against the organization's budget as `/public/v1` is.
 */
export function mcpRoutes(options: {
  app: RequestListener;
  credentials: RequestHandler;
  logger: Logger;
  allowedOrigins: 'any' | string[];
}): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  router.use(
    MCP_PATH,
    apiHeaders(),
    browserOrigins(options.allowedOrigins),
    options.credentials,
    express.json({ limit: '1mb' }),
    // A path, query or message with text no operation could store is refused before the transport reads it.
    refuseUnstorableRequestText(
      (where) =>
        new ValidationError(
          where === 'url'
            ? 'The request URL has an escape that is no text (a malformed escape or a NUL).'
            : `The message has text that cannot be stored at ${where} (a NUL or a lone surrogate).`,
        ),
    ),
  );

  // The MCP SDK and the tools are loaded by the first call, not at every start of the process.
  router.post(
    MCP_PATH,
    builtOnFirstUse(async () => {
      // The server's version is the Public API's, whose operations its tools are.
      const { version } = (readSpec(SPEC_FILES.publicV1) as { info: { version: string } }).info;
      return (await import('./tool-server.js')).mcpHandler(options.app, version);
    }),
  );
  // Stateless: no stream of server messages to open (GET) and no session to end (DELETE).
  router.all(MCP_PATH, (req, res) => {
    res.setHeader('Allow', 'POST');
    sendError(
      res,
      { status: 405, code: 'method_not_allowed', message: `${req.method} is not allowed on ${MCP_PATH}: send POST.` },
      String(res.locals.requestId ?? ''),
    );
  });
  // Nothing lives under /mcp: a path below it is no resource of this server's, answered in the envelope.
  router.use(MCP_PATH, (req) => {
    throw new NotFoundError(`Nothing is at ${req.originalUrl.split('?')[0]}: the MCP endpoint is ${MCP_PATH}.`);
  });
  router.use(mcpErrors(options.logger));
  return router;
}

/**
 * Calls from web pages (an agent running in a browser): CORS for the origins the operator allows, and
 * the transport's `Origin` check (a request from a page of another origin is refused with 403 before
 * its credential is read). Any origin by default: `/mcp` takes no cookie, only a bearer credential a
 * page must already hold, so a page can do nothing with it that its own server could not. The preflight
 * is answered here, before the credential it does not carry.
 */
function browserOrigins(allowed: 'any' | string[]): RequestHandler {
  const headers = cors({
    origin: allowed === 'any' ? '*' : allowed,
    methods: ['POST'],
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Accept',
      'Mcp-Protocol-Version',
      'Mcp-Session-Id',
      'Last-Event-ID',
    ],
    exposedHeaders: [
      'WWW-Authenticate',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'X-Request-Id',
    ],
    maxAge: 7200,
  });
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (allowed !== 'any' && origin !== undefined && !allowed.includes(origin)) {
      next(
        new ForbiddenError(
          `Pages of ${origin} may not call ${MCP_PATH}: ` +
            `the operator allows ${allowed.join(', ')} (MCP_ALLOWED_ORIGINS).`,
        ),
      );
      return;
    }
    headers(req, res, next);
  };
}

/**
 * `/mcp`'s failures before the transport (no credential, the budget spent, a body that is no JSON) in
 * the Public API's envelope. The 401 is answered here only, where the protected resource's challenge
 * (RFC 9728 §5.1) belongs.
 */
function mcpErrors(logger: Logger): ErrorRequestHandler {
  const envelope = publicApiErrors(logger);
  return (error, req, res, next) => {
    if (error instanceof UnauthorizedError && !res.headersSent) {
      sendError(res, { status: 401, code: error.code, message: error.message }, String(res.locals.requestId ?? ''));
      return;
    }
    envelope(error, req, res, next);
  };
}
