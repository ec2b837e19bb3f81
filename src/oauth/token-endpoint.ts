import express, { type ErrorRequestHandler, type Request, type Router } from 'express';
import type { components } from '../../generated/oauth.js';
import type { AppContext } from '../context.js';
import { builtOnFirstUse } from '../http/built-on-first-use.js';
import { clientAddress } from '../http/client-address.js';
import { isUnreadableRequestError } from '../http/error-envelope.js';
import { refuseUnstorableRequestText } from '../http/storable-text.js';
import { readSpecForValidator, SPEC_FILES } from '../http/spec.js';
import { ClientAuthenticator, readClientCredentials } from './client-auth.js';
import { redeemCode } from './codes.js';
import { noStore, OAuthError, OAuthThrottledError, sendOAuthError, sendThrottled } from './errors.js';
import { revokeAccessToken } from './tokens.js';

type TokenRequest = components['schemas']['TokenRequest'];
type RevokeRequest = components['schemas']['RevokeRequest'];
type TokenResponse = components['schemas']['TokenResponse'];
type Metadata = components['schemas']['AuthorizationServerMetadata'];

export const TOKEN_PATH = '/api/oauth/token';
export const REVOKE_PATH = '/api/oauth/revoke';
export const METADATA_PATH = '/.well-known/oauth-authorization-server';

/** The paths the OAuth contract validates; the browser side (`/oauth/*`) answers in HTML instead. */
const isOAuthApiPath = (path: string) => path.startsWith('/api/oauth/') || path === METADATA_PATH;

/** A schema violation as express-openapi-validator reports it. */
interface Violation {
  path?: string;
  message?: string;
  errorCode?: string;
}

function isValidatorError(error: unknown): error is { status: number; errors: Violation[]; headers?: Record<string, string> } {
  return typeof error === 'object' && error !== null && 'status' in error && Array.isArray((error as { errors?: unknown }).errors);
}

function isBodyParserError(error: unknown): error is { type: string } {
  return typeof error === 'object' && error !== null && typeof (error as { type?: unknown }).type === 'string' && 'status' in error;
}

/** The first violation, said as an OAuth client developer would want to read it. */
function describeViolation(violation: Violation | undefined): string {
  const keyword = violation?.errorCode?.replace(/\.openapi\.validation$/, '');
  const path = violation?.path ?? '';
  const parameter = path.replace(/^\/?(body|query)[./]?/, '').split(/[./]/)[0] || 'body';
  if (path.startsWith('/query') || path.startsWith('query')) {
    return 'Parameters are not accepted in the query string (it ends up in logs); send them in the request body.';
  }
  switch (keyword) {
    case 'required':
      return `The ${/'([^']+)'/.exec(violation?.message ?? '')?.[1] ?? parameter} parameter is missing.`;
    case 'type':
      return parameter === 'body'
        ? 'The request body must be a JSON object or form parameters.'
        : `The ${parameter} parameter must be a single string value (parameters must not be repeated).`;
    case 'maxLength':
      return `The ${parameter} parameter is too long.`;
    default:
      return 'The request is not valid.';
  }
}

/** Turns whatever went wrong into an RFC 6749 §5.2 body; the Public API's envelope never appears here. */
function oauthErrors(ctx: AppContext): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof OAuthThrottledError) return sendThrottled(res, error);
    if (error instanceof OAuthError) return sendOAuthError(res, error);
    if (isBodyParserError(error) || isUnreadableRequestError(error)) {
      const description =
        'type' in error && error.type === 'entity.too.large' ? 'The request body is too large.' : 'The request body could not be read as JSON or form parameters.';
      return sendOAuthError(res, new OAuthError('invalid_request', description));
    }
    if (isValidatorError(error) && error.status < 500) {
      if (error.status === 405) {
        const allow = req.path === METADATA_PATH ? 'GET, HEAD' : 'POST';
        const only = req.path === METADATA_PATH ? 'GET' : 'POST';
        return sendOAuthError(res, new OAuthError('invalid_request', `This endpoint accepts ${only} only.`, 405, { Allow: allow }));
      }
      if (error.status === 404) {
        return sendOAuthError(res, new OAuthError('invalid_request', `There is no OAuth endpoint at ${req.path}.`, 404));
      }
      if (error.status === 415) {
        return sendOAuthError(
          res,
          new OAuthError('invalid_request', 'Send the body as application/x-www-form-urlencoded or application/json.'),
        );
      }
      return sendOAuthError(res, new OAuthError('invalid_request', describeViolation(error.errors[0])));
    }
    ctx.logger.error({ err: error, requestId: res.locals.requestId, path: req.path }, 'OAuth request failed');
    noStore(res);
    res.status(500).type('application/json').send(JSON.stringify({ error: 'server_error', error_description: 'Something went wrong on our side.' }));
  };
}

/** The token endpoint, revocation (RFC 7009) and the server metadata (RFC 8414). */
export function createOAuthApi(ctx: AppContext): Router {
  // Exact case only, as the validator's and the error handler's path checks are.
  const router = express.Router({ caseSensitive: true });
  const clients = new ClientAuthenticator(ctx.db, ctx.config.oauthClientAuthFailures, ctx.clock);

  // Served ahead of the validator, which knows only GET, so that HEAD works too (RFC 9110 §9.3.2).
  router.get(METADATA_PATH, (_req, res) => {
    const origin = ctx.config.publicUrl;
    const metadata: Metadata = {
      issuer: origin,
      authorization_endpoint: `${origin}/oauth/authorize`,
      token_endpoint: `${origin}${TOKEN_PATH}`,
      revocation_endpoint: `${origin}${REVOKE_PATH}`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
      service_documentation: `${origin}/docs/oauth`,
    };
    res.status(200).json(metadata);
  });

  // extended: false keeps a repeated parameter as an array, which the contract (strings only) then
  // refuses: RFC 6749 §3.2 forbids repeating a parameter.
  router.use('/api/oauth', express.json({ limit: '16kb' }), express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }));
  router.use('/api/oauth', refuseUnstorableRequestText(() => new OAuthError('invalid_request', 'Parameters must not contain the NUL character (U+0000) or malformed Unicode.')));
  router.use(builtOnFirstUse(async () =>
    (await import('express-openapi-validator')).middleware({
      apiSpec: readSpecForValidator(SPEC_FILES.oauth) as never,
      // The authorize endpoint is a browser page: its errors are HTML pages or redirects, never JSON.
      ignorePaths: (path: string) => !isOAuthApiPath(path),
      // The contract is linted against the OpenAPI schema before it ships (`npm run lint:spec`);
      // checking it again on every start cost a fifth of the start-up time.
      validateApiSpec: false,
      // coerceTypes off: a number or an object where a string belongs is refused, never turned into one.
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
      validateResponses:
        ctx.config.environment !== 'production'
          ? { removeAdditional: false }
          : {
              removeAdditional: false,
              onError: (error, _body, req) => ctx.logger.error({ err: error, path: req.path }, 'response breaks the OAuth contract'),
            },
      // Client authentication is the endpoint's own business: it must answer RFC 6749 errors.
      validateSecurity: false,
      fileUploader: false,
      ignoreUndocumented: false,
    }),
  ));

  router.post(TOKEN_PATH, async (req, res) => {
    noStore(res);
    const body = req.body as TokenRequest;
    const credentials = readClientCredentials(req.headers.authorization, body);
    if (body.grant_type !== 'authorization_code') {
      throw new OAuthError('unsupported_grant_type', 'Only grant_type=authorization_code is supported.');
    }
    if (!body.code) throw new OAuthError('invalid_request', 'The code parameter is missing.');
    const app = await clients.authenticate(credentials, clientAddress(req));
    const { organizationId, accessToken } = await redeemCode(
      ctx.db,
      app,
      { code: body.code, redirectUri: body.redirect_uri, codeVerifier: body.code_verifier },
      ctx.clock(),
    );
    const response: TokenResponse = { id: organizationId, cus: null, access_token: accessToken, token_type: 'bearer' };
    res.status(200).json(response);
  });

  router.post(REVOKE_PATH, async (req, res) => {
    noStore(res);
    const body = req.body as RevokeRequest;
    const credentials = readClientCredentials(req.headers.authorization, body);
    const app = await clients.authenticate(credentials, clientAddress(req));
    await revokeAccessToken(ctx.db, app.id, body.token, ctx.clock());
    res.status(200).end();
  });

  router.use((error: unknown, req: Request, res: express.Response, next: express.NextFunction) => {
    if (!isOAuthApiPath(req.path)) return next(error);
    oauthErrors(ctx)(error, req, res, next);
  });
  return router;
}
