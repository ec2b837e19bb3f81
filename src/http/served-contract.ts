import fs from 'node:fs';
import path from 'node:path';
import express, { type Router } from 'express';
import { projectPath } from '../core/project-files.js';

const OPENAPI_DIR = projectPath('openapi');
export const DOCS_DIR = projectPath('dist', 'docs');

/** The address the hand-written contracts name as their server and in their examples. */
const CONTRACT_ORIGIN = 'http://localhost:3000';

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

/**
 * The contracts (`/openapi/*.yaml`) and their reference pages (`/docs`, `/docs/oauth`) as this
 * installation serves them: naming its own `PUBLIC_URL` as the server and in the examples, so what a
 * reader copies or a client generates calls this installation. Each file is read once, on first use.
 */
export function servedContract(publicUrl: string): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const cache = new Map<string, string>();
  const read = (file: string): string | undefined => {
    if (!cache.has(file)) {
      if (!fs.existsSync(file)) return undefined;
      cache.set(file, fs.readFileSync(file, 'utf8').replaceAll(CONTRACT_ORIGIN, publicUrl));
    }
    return cache.get(file);
  };

  for (const name of ['public-v1', 'oauth']) {
    router.get([`/openapi/${name}.yaml`, `/openapi/${name}`], (_req, res) => {
      res.type('application/yaml; charset=utf-8').send(read(path.join(OPENAPI_DIR, `${name}.yaml`)));
    });
  }
  const docs =
    (file: string): express.RequestHandler =>
    (_req, res) => {
      res.setHeader('Content-Security-Policy', DOCS_CSP);
      const page = read(path.join(DOCS_DIR, file));
      if (page === undefined) {
        res.status(404).type('text/plain').send('The API reference has not been built: run `npm run docs`.');
        return;
      }
      res.type('html').send(page);
    };
  router.get(['/docs', '/docs/public-v1'], docs('public-v1.html'));
  router.get('/docs/oauth', docs('oauth.html'));
  return router;
}
