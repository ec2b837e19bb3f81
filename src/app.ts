import fs from 'node:fs';
import path from 'node:path';
import express, { type Express } from 'express';
import { sql } from 'kysely';
import { pinoHttp } from 'pino-http';
import { newId } from './core/ids.js';
import { redactUrl } from './core/logger.js';
import { projectPath } from './core/project-files.js';
import { localFileRoutes } from './media/local-file-routes.js';
import { LocalMediaStorage } from './media/local-storage.js';
import type { MediaContext } from './media/storage.js';
import { createOAuthApi } from './oauth/api.js';
import { CsrfTokens } from './pages/csrf.js';
import { BrowserCookies } from './pages/visitor.js';
import type { PostsContext } from './posts/publication-plan.js';
import { sandboxNetwork } from './providers/sandbox/network.js';
import { createPublicApi } from './public-api.js';
import type { WebhookManagement } from './webhooks/management.js';
import { createWebApp, pagePrelude } from './web/routes.js';

const OPENAPI_DIR = projectPath('openapi');
export const DOCS_DIR = projectPath('dist', 'docs');

/** Builds the HTTP application from the service's context; it holds no global state. */
export function createApp(ctx: MediaContext & PostsContext & { webhooks: WebhookManagement }, options: { sandboxKey: Buffer }): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('trust proxy', ctx.config.trustProxy);
  // The contract validators match paths with this setting; the API routers match in exact case too.
  app.set('case sensitive routing', true);

  app.use((req, res, next) => {
    res.locals.requestId = newId('req');
    res.setHeader('X-Request-Id', res.locals.requestId);
    next();
  });
  if (ctx.config.publicUrl.startsWith('https:')) app.use(strictTransportSecurity());
  app.use(
    pinoHttp({
      logger: ctx.logger,
      genReqId: (_req, res) => (res as express.Response).locals.requestId,
      // The id a client sees in X-Request-Id and in an error body finds this line.
      customProps: (_req, res) => ({ requestId: (res as express.Response).locals.requestId }),
      serializers: {
        req: (req: { method: string; url: string }) => ({ method: req.method, url: redactUrl(req.url) }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await sql`select 1`.execute(ctx.db);
      res.json({ status: 'ready' });
    } catch (error) {
      ctx.logger.warn({ err: error }, 'database not reachable');
      res.status(503).json({ status: 'unavailable', reason: 'database not reachable' });
    }
  });

  app.use('/openapi', express.static(OPENAPI_DIR, { index: false, extensions: ['yaml'] }));
  app.get(['/docs', '/docs/public-v1'], (_req, res) => sendDocs(res, 'public-v1.html'));
  app.get('/docs/oauth', (_req, res) => sendDocs(res, 'oauth.html'));

  if (ctx.storage instanceof LocalMediaStorage) app.use(localFileRoutes(ctx, ctx.storage));

  const pages = { cookies: new BrowserCookies(ctx.config.publicUrl), csrf: new CsrfTokens(ctx.secrets) };
  app.use(createPublicApi(ctx));
  app.use(sandboxNetwork(ctx, { key: options.sandboxKey, latencyMs: ctx.config.sandbox.latencyMs }));
  app.use(createOAuthApi(ctx, pagePrelude(ctx, pages)));
  app.use(createWebApp(ctx, pages));

  return app;
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

// The Redoc page is self-contained but its "powered by" badge points at a CDN; readers of a
// self-hosted installation's docs should not be announced to third parties, so only this origin loads.
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
].join('; ');

function sendDocs(res: express.Response, file: string): void {
  const full = path.join(DOCS_DIR, file);
  res.setHeader('Content-Security-Policy', DOCS_CSP);
  if (!fs.existsSync(full)) {
    res.status(404).type('text/plain').send('The API reference has not been built: run `npm run docs`.');
    return;
  }
  res.sendFile(full);
}
