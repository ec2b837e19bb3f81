import { findMedia } from '../media/queries.js';
import { confirmedOrAsk } from './confirm-first.js';
import express, { type ErrorRequestHandler, type Response, type Router } from 'express';
import { DomainError, UnsupportedMediaTypeError, ValidationError } from '../core/errors.js';
import { databaseOutage, sendError } from '../http/error-envelope.js';
import type { RequestBodies } from '../http/request-bodies.js';
import { mediaPage, presentMedia, removeMedia } from '../media/library.js';
import type { MediaBody } from '../media/media-body.js';
import { MediaPolicy } from '../media/media-types.js';
import type { MediaContext } from '../media/storage.js';
import { SignedUploads, type CreateUploadRequest } from '../media/uploads.js';
import { renderPage } from '../pages/render.js';
import { signedIn } from './signed-in.js';

const LIBRARY_PAGE_SIZE = 60;

/**
 * The media library, and the signed upload as the composer and the library run it from the browser:
 * the same three steps and the same code as `POST /public/v1/media/uploads` and `…/complete`, the
 * bytes going straight to the signed URL. Answers of the upload steps are the API's JSON bodies and
 * error envelope; their requests carry the session's CSRF token in `X-CSRF-Token`.
 */
export function mediaPages(ctx: MediaContext, bodies: RequestBodies): Router {
  const router = express.Router();
  const policy = new MediaPolicy(ctx.config.media);
  router.use(uploadRoutes(ctx, bodies, new SignedUploads(ctx, policy)));
  router.use(libraryRoutes(ctx, policy));
  return router;
}

/** The names people know file types by. */
const TYPE_NAMES: Record<string, string> = {
  'image/jpeg': 'JPEG',
  'image/png': 'PNG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
  'video/mp4': 'MP4',
  'video/quicktime': 'QuickTime (MOV)',
  'video/webm': 'WebM',
  'application/pdf': 'PDF',
};

/** The accepted types in words: "JPEG, PNG images; MP4 videos". */
export function acceptedTypesInWords(types: readonly string[]): string {
  const groups = new Map<string, string[]>();
  for (const type of types) {
    const kind = type.split('/')[0] === 'image' ? 'images' : type.split('/')[0] === 'video' ? 'videos' : 'documents';
    groups.set(kind, [...(groups.get(kind) ?? []), TYPE_NAMES[type] ?? type]);
  }
  return [...groups].map(([kind, names]) => `${names.join(', ')} ${kind}`).join('; ');
}

/** The upload's steps from the browser, answering as the API does (a refused type in people's words). */
function uploadRoutes(ctx: MediaContext, bodies: RequestBodies, uploads: SignedUploads): Router {
  const router = express.Router();
  router.post('/media/uploads', express.json({ limit: '16kb' }), async (req, res) => {
    const { organization } = signedIn(res);
    const body: unknown = req.body;
    const details = bodies.check('createUpload', body);
    if (details.length > 0) throw new ValidationError('The request does not match the API contract.', details);
    const declared = body as CreateUploadRequest; // The contract's check above is what makes it one.
    try {
      res.status(201).json(await uploads.create(organization.id, declared));
    } catch (error) {
      // Said for people choosing a file: what it is and what the library takes.
      if (!(error instanceof UnsupportedMediaTypeError)) throw error;
      throw new UnsupportedMediaTypeError(
        `This kind of file (${declared.contentType}) is not accepted. ` +
          `Accepted: ${acceptedTypesInWords(ctx.config.media.allowedTypes)}.`,
      );
    }
  });

  router.post('/media/uploads/:uploadId/complete', async (req, res) => {
    const { organization } = signedIn(res);
    const media = await uploads.complete(organization.id, String(req.params.uploadId));
    res.status(200).json(await presentMedia(ctx, media));
  });

  router.use('/media/uploads', ((error, _req, res, next) => {
    // The database out of reach is answered as the API answers it (503, Retry-After); other failures of
    // the server go to the pages' error handler, which logs them.
    const outage = databaseOutage(error);
    const failure: unknown = outage ?? error;
    if (res.headersSent || !(failure instanceof DomainError) || (failure.status >= 500 && !outage)) return next(error);
    const retryAfter = outage?.retryAfter;
    sendError(
      res,
      { status: failure.status, code: failure.code, message: failure.message, details: failure.details, retryAfter },
      String(res.locals.requestId ?? ''),
    );
  }) as ErrorRequestHandler);
  return router;
}

/** The library's page, and deleting media from it. */
function libraryRoutes(ctx: MediaContext, policy: MediaPolicy): Router {
  const router = express.Router();
  router.get('/media', async (req, res) => {
    await showLibrary(ctx, policy, res, {
      cursor: typeof req.query.cursor === 'string' ? req.query.cursor : undefined,
      notice: req.query.deleted === '1' ? 'The media is deleted.' : undefined,
    });
  });

  router.post('/media/:id/delete', async (req, res) => {
    const { organization } = signedIn(res);
    const media = await findMedia(ctx.db, organization.id, String(req.params.id));
    const confirmation = {
      question: `Delete ${media?.file_name ?? 'this media'}?`,
      consequence: 'The file is deleted for good. This cannot be undone.',
      button: 'Delete the media',
      back: '/media',
      path: '/media',
    };
    if (media && !confirmedOrAsk(req, res, confirmation)) return;
    try {
      await removeMedia(ctx, organization.id, String(req.params.id));
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
      const refused = {
        id: String(req.params.id),
        message: error.message,
        // Each post that uses it, to open and edit or delete: the domain names them as `used by <id> (<status>)`.
        details: (error.details ?? []).map((d) => {
          const user = /^used by (post_\w+) \((\w+)\)$/.exec(d.message);
          return user ? { message: d.message, postId: user[1], status: user[2] } : { message: d.message };
        }),
      };
      return showLibrary(ctx, policy, res, { cursor: undefined, refused }, error.status);
    }
    res.redirect(303, '/media?deleted=1');
  });
  return router;
}

async function showLibrary(
  ctx: MediaContext,
  policy: MediaPolicy,
  res: Response,
  shown: {
    cursor: string | undefined;
    notice?: string;
    refused?: { id: string; message: string; details: { message: string; postId?: string; status?: string }[] };
  },
  status = 200,
): Promise<void> {
  const { organization } = signedIn(res);
  const page = await mediaPage(ctx, organization.id, { limit: LIBRARY_PAGE_SIZE, cursor: shown.cursor });
  const origins = await mediaOrigins(ctx, page.data);
  renderPage(
    res,
    '/web/templates/media',
    {
      title: 'Media',
      path: '/media',
      wide: true,
      scripts: ['upload.js'],
      media: page.data.map(describeMedia),
      next: page.nextCursor ? `/media?cursor=${encodeURIComponent(page.nextCursor)}` : undefined,
      accept: policy.allowedTypes.join(','),
      notice: shown.notice,
      refused: shown.refused,
    },
    status,
    { mediaOrigins: origins, connectOrigins: origins },
  );
}

/** Media as the pages show it: its size in words, and whether the page can show it as an image or a video. */
export function describeMedia(media: MediaBody) {
  return {
    ...media,
    sizeText: sizeInWords(media.size),
    durationText: media.durationSec === null ? undefined : `${Math.round(media.durationSec)} s`,
    pagesText: media.pageCount === null ? undefined : `${media.pageCount} page${media.pageCount === 1 ? '' : 's'}`,
  };
}

export function sizeInWords(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GB`;
}

/**
 * Where the media's files are served from and uploads go, for the page's content security policy:
 * this site with local storage, the bucket's origin with S3. A signed URL says it exactly.
 */
export async function mediaOrigins(ctx: MediaContext, shown: MediaBody[]): Promise<string[]> {
  const probe = await ctx.storage.signedGetUrl('media/origin', {
    contentType: 'image/png',
    expiresAt: new Date(ctx.clock.now().getTime() + 60_000),
  });
  return [...new Set([probe, ...shown.map((media) => media.url)].map((url) => new URL(url).origin))];
}
