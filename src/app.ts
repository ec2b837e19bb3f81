import express, { type ErrorRequestHandler, type Express } from 'express';
import { sql } from 'kysely';
import { ChannelRemoval } from './channels/removal.js';
import { newId } from './core/ids.js';
import { localFileRoutes } from './media/local-file-routes.js';
import { LOCAL_FILES_PATH, LocalMediaStorage } from './media/local-storage.js';
import type { MediaContext } from './media/storage.js';
import { DATABASE_RETRY_AFTER_SECONDS, publicApiErrors } from './http/error-envelope.js';
import { MCP_PATH, mcpRoutes } from './mcp/routes.js';
import { metricsRoute, requestMetrics } from './http/metrics-routes.js';
import { requestLog } from './http/request-log.js';
import { requestSpans } from './http/request-spans.js';
import { servedContract } from './http/served-contract.js';
import { createOAuthApi, isOAuthApiPath, oauthErrors } from './oauth/api.js';
import { CsrfTokens } from './pages/csrf.js';
import { pageErrors } from './pages/errors.js';
import { BrowserCookies } from './pages/visitor.js';
import type { PostsContext } from './posts/context.js';
import { draftPostsOfRemovedChannel } from './posts/removed-channels.js';
import { queueRevocation } from './providers/account-revocations.js';
import { SANDBOX_API_PATH, sandboxApiErrors, sandboxNetwork } from './providers/sandbox/network.js';
import { createPublicApi, PUBLIC_API_BASE, publicApiCredentials } from './public-api.js';
import type { WebhookManagement } from './webhooks/management.js';
import { createWebApp, pagePrelude } from './web/routes.js';

/** Builds the HTTP application from the service's context; it holds no global state. */
export function createApp(
  ctx: MediaContext & PostsContext & { webhooks: WebhookManagement },
  options: { sandboxKey: Buffer },
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('trust proxy', ctx.config.trustProxy);
  // The contract validators match paths with this setting; the API routers match in exact case too.
  app.set('case sensitive routing', true);

  app.use((req, res, next) => {
    const requestId = newId('req');
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    next();
  });
  if (ctx.config.publicUrl.startsWith('https:')) app.use(strictTransportSecurity());
  app.use(requestLog(ctx.logger));
  app.use(requestMetrics(ctx.metrics));
  // On the main port only behind its token; METRICS_PORT alone serves it on a listener of its own.
  if (ctx.config.metrics.token !== undefined) app.get('/metrics', metricsRoute(ctx.metrics, ctx.config.metrics.token));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Ready while the database answers: a load balancer sends no requests to a process that would answer
  // them 503, and an orchestrator waits instead of restarting it (the process recovers by itself).
  app.get('/readyz', async (_req, res) => {
    try {
      await sql`select 1`.execute(ctx.db);
      res.json({ status: 'ready' });
    } catch (error) {
      ctx.logger.warn({ err: error }, 'database not reachable');
      res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
      res.status(503).json({ status: 'unavailable', reason: 'database not reachable' });
    }
  });

  // Traced from here on: the probes above would begin a trace every few seconds.
  if (ctx.config.tracing) app.use(requestSpans());

  const pages = { cookies: new BrowserCookies(ctx.config.publicUrl), csrf: new CsrfTokens(ctx.secrets) };
  // A removed channel's waiting posts become drafts, and its account's tokens are revoked at the network.
  const channelRemoval = new ChannelRemoval(ctx, [draftPostsOfRemovedChannel, queueRevocation]);
  const credentials = publicApiCredentials(ctx);
  // The Public API first: its calls are the most frequent, and the routers below answer none of its paths.
  app.use(createPublicApi(ctx, channelRemoval, credentials(PUBLIC_API_BASE)));

  app.use(servedContract(ctx.config.publicUrl));

  if (ctx.storage instanceof LocalMediaStorage) app.use(localFileRoutes(ctx, ctx.storage));
  // MCP tool calls are the Public API's operations, run through this application as their requests.
  app.use(
    mcpRoutes({
      app,
      credentials: credentials(MCP_PATH),
      logger: ctx.logger,
      allowedOrigins: ctx.config.mcpAllowedOrigins,
    }),
  );
  app.use(sandboxNetwork(ctx, { key: options.sandboxKey, latencyMs: ctx.config.sandbox.latencyMs }));
  app.use(createOAuthApi(ctx, pagePrelude(ctx, pages)));
  app.use(createWebApp(ctx, pages, channelRemoval));

  // A failure no router answered itself (one raised before a router's own error handler, or by a route
  // outside the routers that have one) is answered in the shape of the surface its path belongs to:
  // Express's own last handler writes the stack trace into its page outside production.
  const under = (base: string) => (path: string) => path === base || path.startsWith(`${base}/`);
  const envelope = publicApiErrors(ctx.logger);
  app.use(
    errorsBySurface(
      [
        [under(PUBLIC_API_BASE), envelope],
        [under(MCP_PATH), envelope],
        [under(LOCAL_FILES_PATH), envelope],
        [isOAuthApiPath, oauthErrors(ctx)],
        [under(SANDBOX_API_PATH), sandboxApiErrors(ctx.logger)],
      ],
      pageErrors(ctx.logger),
    ),
  );
  return app;
}

/** The error handler of the first surface whose paths include the request's, else `otherwise` (the pages'). */
function errorsBySurface(
  surfaces: [includes: (path: string) => boolean, errors: ErrorRequestHandler][],
  otherwise: ErrorRequestHandler,
): ErrorRequestHandler {
  return (error, req, res, next) => {
    const errors = surfaces.find(([includes]) => includes(req.path))?.[1] ?? otherwise;
    return errors(error, req, res, next);
  };
}

/**
 * Served over https, the installation tells browsers to use nothing else for a year (RFC 6797), so a
 * network attacker cannot downgrade a later visit to http and read the session cookie or the consent
 * page. Without includeSubDomains or preload: the domain's other hosts are the operator's to commit.
 */
function strictTransportSecurity(): express.RequestHandler {
  return (_req, res, next) => {
    res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    next();
  };
}
