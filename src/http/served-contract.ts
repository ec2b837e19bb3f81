import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import express, { type Request, type Response, type Router } from 'express';
import { projectPath } from '../core/project-files.js';

const OPENAPI_DIR = projectPath('openapi');
export const DOCS_DIR = projectPath('dist', 'docs');

/** The address the hand-written contracts name as their server and in their examples. */
const CONTRACT_ORIGIN = 'http://localhost:3000';

// The pages load Redoc's script from this server; readers of a self-hosted installation's docs should
// not be announced to third parties, so only this origin loads.
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
].join('; ');

/** Redoc's script beside the pages (scripts/build-docs.sh), named for a hash of its content. */
const REDOC_SCRIPT = /^redoc-[0-9a-f]{16}\.js$/;

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);
type Encoding = 'br' | 'gzip' | 'identity';
const COMPRESS: Record<Exclude<Encoding, 'identity'>, (body: Buffer) => Promise<Buffer>> = {
  // Brotli's quality 5 of 11 makes Redoc's 2.3 MB script 590 KB in a fifth of a second, in Node's thread
  // pool; 11 would make it 520 KB in nine seconds.
  br: (body) =>
    brotli(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 5,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  gzip: (body) => gzip(body),
};

interface Representation {
  body: Buffer;
  etag: string;
}

/**
 * Files as this installation serves them: each read once, with the contracts' address replaced by its
 * own where asked, and compressed once for each content coding a client accepts (Brotli, gzip), on
 * first use. Each representation has its ETag, so a browser's revalidation is answered 304.
 */
class ServedFiles {
  private readonly representations = new Map<string, Promise<Representation>>();

  constructor(private readonly publicUrl: string) {}

  /** Sends the file, or answers false when it does not exist. */
  async send(req: Request, res: Response, file: string, options: { namesOrigin: boolean }): Promise<boolean> {
    const accepted = req.acceptsEncodings('br', 'gzip', 'identity');
    const encoding: Encoding = accepted === 'br' || accepted === 'gzip' ? accepted : 'identity';
    const key = `${encoding}\n${file}`;
    let representation = this.representations.get(key);
    if (representation === undefined) {
      if (!fs.existsSync(file)) return false;
      representation = this.represent(file, encoding, options.namesOrigin);
      this.representations.set(key, representation);
      representation.catch(() => this.representations.delete(key));
    }
    const { body, etag } = await representation;
    res.vary('Accept-Encoding');
    if (encoding !== 'identity') res.setHeader('Content-Encoding', encoding);
    res.setHeader('ETag', etag);
    res.send(body);
    return true;
  }

  private async represent(file: string, encoding: Encoding, namesOrigin: boolean): Promise<Representation> {
    const read = await fs.promises.readFile(file);
    const text = namesOrigin ? Buffer.from(read.toString('utf8').replaceAll(CONTRACT_ORIGIN, this.publicUrl)) : read;
    const body = encoding === 'identity' ? text : await COMPRESS[encoding](text);
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
  }
}

/**
 * The contracts (`/openapi/*.yaml`) and their reference pages (`/docs`, `/docs/oauth`) as this
 * installation serves them: naming its own `PUBLIC_URL` as the server and in the examples, so what a
 * reader copies or a client generates calls this installation.
 */
export function servedContract(publicUrl: string): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const files = new ServedFiles(publicUrl);

  for (const name of ['public-v1', 'oauth']) {
    router.get([`/openapi/${name}.yaml`, `/openapi/${name}`], (req, res, next) => {
      res.type('application/yaml; charset=utf-8');
      files
        .send(req, res, path.join(OPENAPI_DIR, `${name}.yaml`), { namesOrigin: true })
        .then((sent) => sent || next(), next);
    });
  }
  const docs =
    (file: string): express.RequestHandler =>
    (req, res, next) => {
      res.setHeader('Content-Security-Policy', DOCS_CSP);
      // A page names the script of its build; a browser asks whether it changed before showing it again.
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html');
      files.send(req, res, path.join(DOCS_DIR, file), { namesOrigin: true }).then((sent) => {
        if (sent) return;
        res.removeHeader('Cache-Control');
        res.status(404).type('text/plain').send('The API reference has not been built: run `npm run docs`.');
      }, next);
    };
  router.get(['/docs', '/docs/public-v1'], docs('public-v1.html'));
  router.get('/docs/oauth', docs('oauth.html'));
  router.get('/docs/:script', (req, res, next) => {
    const script = req.params.script;
    if (!REDOC_SCRIPT.test(script)) return next();
    // Its name changes with its content, so a browser keeps it for good.
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.type('text/javascript');
    files.send(req, res, path.join(DOCS_DIR, script), { namesOrigin: false }).then((sent) => {
      if (sent) return;
      res.removeHeader('Cache-Control');
      next();
    }, next);
  });
  return router;
}
