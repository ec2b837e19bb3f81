import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import type { components } from '../../generated/oauth.js';
import { SPEC_FILES } from '../core/contract.js';
import { NotFoundError } from '../core/errors.js';
import { apiHeaders } from '../http/api-headers.js';
import { clientAddress } from '../http/client-address.js';
import type { AppContext } from '../http/context.js';
import { contractRouter } from '../http/contract-router.js';
import { databaseOutage, isUnreadableRequestError } from '../http/error-envelope.js';
import {
  knownResource,
  MCP_RESOURCE_PATH,
  PROTECTED_RESOURCE_METADATA_PATH,
  PUBLIC_API_RESOURCE_PATH,
  RESOURCE_PATHS,
  type ResourcePath,
} from '../http/resource-challenge.js';
import { contractScopes } from '../http/scopes.js';
import { refuseUnstorableRequestText } from '../http/storable-text.js';
import { pageErrors } from '../pages/errors.js';
import type { OAuthHandlers } from '../http/typed-routes.js';
import { AUTHORIZE_PATH, authorizeOperation } from './authorize.js';
import { ClientAuthenticator, readClientCredentials } from './client-auth.js';
import { redeemCode } from './codes.js';
import {
  noStore,
  OAuthError,
  OAuthThrottledError,
  sendOAuthError,
  sendTemporarilyUnavailable,
  sendThrottled,
} from './errors.js';
import { refreshTokens } from './refresh.js';
import type { OAuthApp } from './tables.js';
import { clientInformation, markClientUsed, registerClient, registrationLimiter } from './registration.js';
import { revokeToken } from './tokens.js';

export const TOKEN_PATH = '/api/oauth/token';
export const REVOKE_PATH = '/api/oauth/revoke';
export const REGISTER_PATH = '/api/oauth/register';
export const METADATA_PATH = '/.well-known/oauth-authorization-server';

/** The documents of RFC 8414 and RFC 9728, read with GET. */
const isDiscoveryPath = (path: string) =>
  path === METADATA_PATH ||
  RESOURCE_PATHS.some((resource) => path === `${PROTECTED_RESOURCE_METADATA_PATH}${resource}`);

/** The paths the OAuth contract validates and answers in JSON; the authorize endpoint is a browser page. */
export const isOAuthApiPath = (path: string) => path.startsWith('/api/oauth/') || isDiscoveryPath(path);

/** A schema violation as express-openapi-validator reports it. */
interface Violation {
  path?: string;
  message?: string;
  errorCode?: string;
}

function isValidatorError(
  error: unknown,
): error is { status: number; errors: Violation[]; headers?: Record<string, string> } {
  return (
    typeof error === 'object' &&
    error !== null &&
    'status' in error &&
    Array.isArray((error as { errors?: unknown }).errors)
  );
}

function isBodyParserError(error: unknown): error is { type: string } {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { type?: unknown }).type === 'string' &&
    'status' in error
  );
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
    case 'minLength':
      return `The ${parameter} parameter is empty.`;
    default:
      return 'The request is not valid.';
  }
}

/** Turns whatever went wrong into an RFC 6749 §5.2 body; the Public API's envelope never appears here. */
export function oauthErrors(ctx: AppContext): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const outage = databaseOutage(error);
    if (outage) {
      ctx.logger.warn({ err: error, requestId: res.locals.requestId, path: req.path }, 'database out of reach');
      return sendTemporarilyUnavailable(res, outage.message, outage.retryAfter);
    }
    if (error instanceof OAuthThrottledError) return sendThrottled(res, error);
    if (error instanceof OAuthError) return sendOAuthError(res, error);
    if (isBodyParserError(error) || isUnreadableRequestError(error)) {
      const description =
        'type' in error && error.type === 'entity.too.large'
          ? 'The request body is too large.'
          : 'The request body could not be read as JSON or form parameters.';
      return sendOAuthError(res, new OAuthError('invalid_request', description));
    }
    if (error instanceof NotFoundError) {
      return sendOAuthError(res, new OAuthError('invalid_request', `There is no OAuth endpoint at ${req.path}.`, 404));
    }
    if (isValidatorError(error) && error.status < 500) {
      if (error.status === 405) {
        const allow = isDiscoveryPath(req.path) ? 'GET, HEAD' : 'POST';
        const only = isDiscoveryPath(req.path) ? 'GET' : 'POST';
        return sendOAuthError(
          res,
          new OAuthError('invalid_request', `This endpoint accepts ${only} only.`, 405, { Allow: allow }),
        );
      }
      if (error.status === 404) {
        return sendOAuthError(
          res,
          new OAuthError('invalid_request', `There is no OAuth endpoint at ${req.path}.`, 404),
        );
      }
      if (error.status === 415) {
        return sendOAuthError(
          res,
          new OAuthError('invalid_request', 'Send the body as application/x-www-form-urlencoded or application/json.'),
        );
      }
      // RFC 7591 §3.2.2: metadata the registration endpoint cannot read is invalid_client_metadata.
      const code = req.path === REGISTER_PATH ? 'invalid_client_metadata' : 'invalid_request';
      return sendOAuthError(res, new OAuthError(code, describeViolation(error.errors[0])));
    }
    ctx.logger.error({ err: error, requestId: res.locals.requestId, path: req.path }, 'OAuth request failed');
    noStore(res);
    res
      .status(500)
      .type('application/json')
      .send(JSON.stringify({ error: 'server_error', error_description: 'Something went wrong on our side.' }));
  };
}

/** The OAuth API's failures in RFC 6749's JSON, the authorize page's on an error page. */
function answerByPath(api: ErrorRequestHandler, page: ErrorRequestHandler): ErrorRequestHandler {
  return (error, req, res, next) => (req.path === AUTHORIZE_PATH ? page : api)(error, req, res, next);
}

/** The token endpoint, revocation (RFC 7009), the server metadata (RFC 8414) and the authorize page. */
function operations(ctx: AppContext): OAuthHandlers {
  const clients = new ClientAuthenticator(ctx.db, ctx.config.oauthClientAuthFailures, ctx.clock);
  const registrations = registrationLimiter(ctx);
  return {
    authorize: authorizeOperation(ctx),

    token: async ({ req, body }) => {
      const credentials = readClientCredentials(req.headers.authorization, body);
      const refreshIdleMs = ctx.config.oauthRefreshTokenIdleDays * 86_400_000;
      let issued: Awaited<ReturnType<typeof redeemCode>>;
      let app: OAuthApp;
      if (body.grant_type === 'authorization_code') {
        if (!body.code) throw new OAuthError('invalid_request', 'The code parameter is missing.');
        app = await clients.authenticate(credentials, clientAddress(req));
        issued = await redeemCode(
          ctx.db,
          app,
          {
            code: body.code,
            redirectUri: body.redirect_uri,
            codeVerifier: body.code_verifier,
            resource: requestedResource(ctx.config.publicUrl, body.resource),
            refreshIdleMs,
          },
          ctx.clock.now(),
        );
      } else if (body.grant_type === 'refresh_token') {
        if (!body.refresh_token) throw new OAuthError('invalid_request', 'The refresh_token parameter is missing.');
        app = await clients.authenticate(credentials, clientAddress(req));
        issued = await refreshTokens(
          ctx.db,
          app,
          {
            refreshToken: body.refresh_token,
            scope: body.scope,
            resource: requestedResource(ctx.config.publicUrl, body.resource),
            refreshIdleMs,
          },
          ctx.clock.now(),
        );
      } else {
        throw new OAuthError(
          'unsupported_grant_type',
          'Only grant_type=authorization_code and grant_type=refresh_token are supported.',
        );
      }
      // A client that registered itself counts as used: housekeeping keeps it.
      await markClientUsed(ctx.db, app.id, ctx.clock.now());
      const { organizationId, accessToken, expiresIn, refreshToken, scope } = issued;
      return {
        status: 200,
        body: {
          id: organizationId,
          cus: null,
          access_token: accessToken,
          token_type: 'bearer',
          ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
          ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
          ...(scope === null ? {} : { scope }),
        },
        headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
      };
    },

    revoke: async ({ req, body }) => {
      const credentials = readClientCredentials(req.headers.authorization, body);
      const app = await clients.authenticate(credentials, clientAddress(req));
      await revokeToken(ctx.db, app.id, body.token, ctx.clock.now());
      return { status: 200, headers: { 'Cache-Control': 'no-store' } };
    },

    register: async ({ req, body }) => {
      const throttle = await registrations.hit(clientAddress(req));
      if (!throttle.allowed)
        throw new OAuthThrottledError(throttle.resetSeconds, 'client registrations from this address');
      const client = await registerClient(ctx.db, body, ctx.clock.now());
      return {
        status: 201,
        body: clientInformation(client),
        headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
      };
    },

    authorizationServerMetadata: () => {
      const origin = ctx.config.publicUrl;
      const metadata: components['schemas']['AuthorizationServerMetadata'] = {
        issuer: origin,
        authorization_endpoint: `${origin}${AUTHORIZE_PATH}`,
        token_endpoint: `${origin}${TOKEN_PATH}`,
        revocation_endpoint: `${origin}${REVOKE_PATH}`,
        registration_endpoint: `${origin}${REGISTER_PATH}`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
        service_documentation: `${origin}/docs/oauth`,
        scopes_supported: [...contractScopes().keys()],
      };
      return Promise.resolve({ status: 200, body: metadata });
    },

    protectedResourceMetadata: () => Promise.resolve({ status: 200, body: resourceMetadata(ctx, '') }),
    publicApiProtectedResourceMetadata: () =>
      Promise.resolve({ status: 200, body: resourceMetadata(ctx, PUBLIC_API_RESOURCE_PATH) }),
    mcpProtectedResourceMetadata: () =>
      Promise.resolve({ status: 200, body: resourceMetadata(ctx, MCP_RESOURCE_PATH) }),
  };
}

/** RFC 8707 §2: the token request's `resource`, which must name a resource of this server. */
function requestedResource(origin: string, given: string | undefined): string | undefined {
  if (given === undefined) return undefined;
  const resource = knownResource(origin, given);
  if (resource === undefined) {
    throw new OAuthError(
      'invalid_target',
      `The resource parameter must name a resource of this server: ${origin}${MCP_RESOURCE_PATH}, ` +
        `${origin}${PUBLIC_API_RESOURCE_PATH} or ${origin}.`,
    );
  }
  return resource;
}

const RESOURCE_NAMES: Record<ResourcePath, string> = {
  '': 'Post Scheduler (Public API and MCP server)',
  [PUBLIC_API_RESOURCE_PATH]: 'Post Scheduler Public API',
  [MCP_RESOURCE_PATH]: 'Post Scheduler MCP server',
};

/** RFC 9728 §2: one resource of this installation, whose tokens this authorization server issues. */
function resourceMetadata(ctx: AppContext, path: ResourcePath): components['schemas']['ProtectedResourceMetadata'] {
  const origin = ctx.config.publicUrl;
  return {
    resource: `${origin}${path}`,
    authorization_servers: [origin],
    bearer_methods_supported: ['header'],
    resource_name: RESOURCE_NAMES[path],
    resource_documentation: `${origin}/docs/oauth`,
    scopes_supported: [...contractScopes().keys()],
  };
}

/**
 * The OAuth API of `openapi/oauth.yaml`, mounted by operationId. `pages` are what a browser page of
 * this site runs first (security headers, the signed-in visitor): the authorize endpoint is one.
 */
export function createOAuthApi(ctx: AppContext, pages: RequestHandler[]): Router {
  return contractRouter({
    specFile: SPEC_FILES.oauth,
    validates: isOAuthApiPath,
    // The authorize endpoint is a page: its failures get the pages' error page.
    handlesErrors: (path) => isOAuthApiPath(path) || path === AUTHORIZE_PATH,
    before: [
      [AUTHORIZE_PATH, ...pages],
      // extended: false keeps a repeated parameter as an array, which the contract (strings only) then
      // refuses: RFC 6749 §3.2 forbids repeating a parameter.
      [METADATA_PATH, apiHeaders()],
      [PROTECTED_RESOURCE_METADATA_PATH, apiHeaders()],
      [
        '/api/oauth',
        apiHeaders(),
        express.json({ limit: '16kb' }),
        express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }),
      ],
      [
        '/api/oauth',
        refuseUnstorableRequestText(
          () =>
            new OAuthError(
              'invalid_request',
              'Parameters must not contain the NUL character (U+0000), malformed Unicode or a malformed %-escape.',
            ),
        ),
      ],
    ],
    allErrors: false,
    // Client authentication is the endpoints' own business: it must answer RFC 6749 errors.
    security: false,
    handlers: operations(ctx),
    extra: () => ({}),
    errors: answerByPath(oauthErrors(ctx), pageErrors(ctx.logger)),
    responseViolations: ctx.config.environment === 'production' ? 'log' : 'fail',
    responseValidation: ctx.config.responseValidation,
    logger: ctx.logger,
  });
}
