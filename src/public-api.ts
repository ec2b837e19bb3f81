import express, { type RequestHandler, type Response, type Router } from 'express';
import { API_KEY_PREFIX } from './accounts/api-keys.js';
import { isConnectedOperations } from './accounts/routes.js';
import { channelOperations } from './channels/routes.js';
import type { ChannelRemoval } from './channels/removal.js';
import { SPEC_FILES } from './core/contract.js';
import { assertCan, operationPermission } from './core/roles.js';
import type { CredentialPrefix } from './crypto/issued-secrets.js';
import {
  authenticateAndLimit,
  Authenticator,
  credentialResolver,
  principalOf,
  type CredentialResolver,
} from './http/authenticate.js';
import { apiHeaders } from './http/api-headers.js';
import { contractRouter } from './http/contract-router.js';
import { publicApiErrors } from './http/error-envelope.js';
import type { Principal } from './http/principal.js';
import { RateLimiter } from './http/rate-limit.js';
import { assertScope, scopesByOperation } from './http/scopes.js';
import { refuseUnstorableText } from './http/storable-text.js';
import { strictQueryStrings } from './http/query-strings.js';
import type { PublicHandlers } from './http/typed-routes.js';
import { mediaOperations } from './media/routes.js';
import type { MediaContext } from './media/storage.js';
import type { PostsContext } from './posts/context.js';
import { ACCESS_TOKEN_PREFIX } from './oauth/tokens.js';
import { postOperations } from './posts/routes.js';
import { seriesOperations } from './recurring/routes.js';
import { queueOperations } from './posts/queue-routes.js';
import { pinterestOperations } from './providers/pinterest/routes.js';
import { tiktokOperations } from './providers/tiktok/routes.js';
import { channelConnectOperations } from './providers/connection-routes.js';
import type { WebhookManagement } from './webhooks/management.js';
import { webhookOperations } from './webhooks/routes.js';

export const PUBLIC_API_BASE = '/public/v1';

/**
 * Who a Public API request acts for, and its count against the organization's budget: the same for
 * `/public/v1` and for `/mcp`, whose tool calls are the Public API's operations.
 */
export function publicApiCredentials(ctx: PostsContext): (resourcePath: string) => RequestHandler {
  // API keys and OAuth access tokens act alike: each is looked up by the hash of its secret.
  const resolvers = new Map<CredentialPrefix, CredentialResolver>([
    [API_KEY_PREFIX, credentialResolver('api_key')],
    [ACCESS_TOKEN_PREFIX, credentialResolver('oauth_token')],
  ]);
  const authenticator = new Authenticator(ctx.db, ctx.clock, resolvers);
  const limiter = new RateLimiter(ctx.db, 'public', ctx.config.rateLimit, ctx.clock);
  // Each resource (`/public/v1`, `/mcp`) names itself in its 401s' challenge and takes only the tokens
  // issued for it (or for every resource of this server).
  return (resourcePath) => authenticateAndLimit(authenticator, limiter, () => `${ctx.config.publicUrl}${resourcePath}`);
}

/** The Public API: every operation of `openapi/public-v1.yaml`, from the features that own them. */
export function createPublicApi(
  ctx: MediaContext & PostsContext & { webhooks: WebhookManagement },
  channelRemoval: ChannelRemoval,
  credentials: RequestHandler,
): Router {
  const handlers: PublicHandlers = {
    ...isConnectedOperations(ctx),
    ...channelOperations(ctx, channelRemoval),
    ...channelConnectOperations(ctx),
    ...postOperations(ctx),
    ...seriesOperations(ctx),
    ...queueOperations(ctx),
    ...mediaOperations(ctx),
    ...tiktokOperations(ctx),
    ...pinterestOperations(ctx),
    ...webhookOperations(ctx, ctx.webhooks),
  };
  return contractRouter({
    specFile: SPEC_FILES.publicV1,
    validates: (path) => path.startsWith(`${PUBLIC_API_BASE}/`),
    handlesErrors: (path) => path === PUBLIC_API_BASE || path.startsWith(`${PUBLIC_API_BASE}/`),
    before: [
      [
        PUBLIC_API_BASE,
        apiHeaders(),
        credentials,
        strictQueryStrings(SPEC_FILES.publicV1),
        express.json({ limit: '1mb' }),
      ],
    ],
    after: [[PUBLIC_API_BASE, refuseUnstorableText()]],
    // allErrors: an integrator fixes every problem of a request in one round trip (the envelope keeps
    // the first few); bodies are capped at 1 MB and arrays by the contract, so the extra work is bounded.
    allErrors: true,
    // authenticateAndLimit has established who is calling before the validator runs, and refused every
    // request without a valid credential: the validator's own check of the schemes would repeat it.
    security: false,
    handlers: scoped(handlers, () => `${ctx.config.publicUrl}${PUBLIC_API_BASE}`),
    extra: (_req, res) => ({ principal: principalOf(res) }),
    errors: publicApiErrors(ctx.logger),
    responseViolations: ctx.config.environment === 'production' ? 'log' : 'fail',
    responseValidation: ctx.config.responseValidation,
    logger: ctx.logger,
  });
}

/**
 * Each operation refuses a token whose scopes do not include the one the contract's `security` names
 * for it (`403`, `insufficient_scope`); credentials without scopes call every operation. Then it refuses
 * a credential whose role lacks the operation's permission (`403`, `forbidden`; `core/roles.ts`).
 */
function scoped(handlers: PublicHandlers, resourceUrl: () => string): PublicHandlers {
  const needs = scopesByOperation();
  type Input = { principal: Principal; res: Response };
  return Object.fromEntries(
    Object.entries(handlers as unknown as Record<string, (input: Input) => Promise<unknown>>).map(
      ([operationId, handler]) => [
        operationId,
        (input: Input) => {
          const scope = needs.get(operationId);
          assertScope(input.principal, scope, input.res, resourceUrl());
          const permission = operationPermission(operationId, scope);
          if (permission) assertCan(input.principal, permission, `call ${operationId}`);
          return handler(input);
        },
      ],
    ),
  ) as unknown as PublicHandlers;
}
