import { PassThrough } from 'node:stream';
import express, {
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type Response,
  type Router,
} from 'express';
import { sendError } from '../http/error-envelope.js';
import { LOCAL_FILES_PATH, type LocalMediaStorage, type SignedRequestCheck } from './local-storage.js';
import { ObjectSizeError, type MediaContext } from './storage.js';

type Failure = Parameters<typeof sendError>[1];

/**
 * This server's side of the local storage's signed URLs, outside the Public API: a signed PUT writes
 * an upload's bytes (streamed to disk, cut off past the declared size), a signed GET serves a file.
 * The signature is the only credential, so these routes take no API key; errors use the API's envelope.
 */
export function localFileRoutes(ctx: MediaContext, storage: LocalMediaStorage): Router {
  const router = express.Router();
  router.put(`${LOCAL_FILES_PATH}/*key`, (req, res) => receiveUpload(ctx, storage, req, res));
  router.get(`${LOCAL_FILES_PATH}/*key`, (req, res, next) => serveFile(ctx, storage, req, res, next));
  router.use(LOCAL_FILES_PATH, fileRequestErrors(ctx));
  return router;
}

const fail = (res: Response, failure: Failure) => sendError(res, failure, String(res.locals.requestId ?? ''));
const keyOf = (req: Request) => ([] as string[]).concat(req.params.key ?? []).join('/');

/** A signed PUT: the upload's bytes, of the type and size it was signed for, streamed to disk. */
async function receiveUpload(ctx: MediaContext, storage: LocalMediaStorage, req: Request, res: Response) {
  const check = storage.verify('PUT', keyOf(req), req.query, ctx.clock.now());
  if (!check.ok) return fail(res, refusal(check));
  const size = check.size as number;

  const sentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (sentType !== check.contentType) {
    return fail(res, {
      status: 400,
      code: 'validation_failed',
      message:
        `Send Content-Type: ${check.contentType}, the type this upload was created with ` +
        `(got ${sentType || 'none'}).`,
    });
  }
  const announced = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (announced !== undefined && announced !== size)
    return failSize(res, new ObjectSizeError(size, announced, announced > size));

  // The request is piped through its own stream so that a failed write does not destroy the socket
  // before the error response is sent.
  const body = new PassThrough();
  req.pipe(body);
  req.on('close', () => {
    if (!req.complete) body.destroy(new Error('The client closed the connection before the whole body arrived.'));
  });
  try {
    await storage.put(keyOf(req), body, { contentType: check.contentType, size });
  } catch (error) {
    if (error instanceof ObjectSizeError) return failSize(res, error);
    if (!req.complete) return; // The client went away; nobody is left to answer.
    throw error;
  }
  res.status(200).end();
}

/** A signed GET: the file, as the type it was stored with and inert in a browser. */
function serveFile(ctx: MediaContext, storage: LocalMediaStorage, req: Request, res: Response, next: NextFunction) {
  const key = keyOf(req);
  const check = storage.verify('GET', key, req.query, ctx.clock.now());
  if (!check.ok) return fail(res, refusal(check));
  res.setHeader('Content-Type', check.contentType);
  // Served from the API's own origin: a browser must neither guess another type nor run anything.
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.sendFile(
    storage.pathOf(key),
    { cacheControl: false, dotfiles: 'deny' },
    (error?: Error & { status?: number }) => {
      if (!error) return;
      if (res.headersSent) return res.destroy();
      if (error.status === 404)
        return fail(res, { status: 404, code: 'not_found', message: 'There is no file at this URL any more.' });
      next(error);
    },
  );
}

function fileRequestErrors(ctx: MediaContext): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    // The router marks a path with a malformed percent-escape 400: no URL this server signed has one.
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      return fail(res, refusal({ ok: false, reason: 'invalid' }));
    ctx.logger.error({ err: error, requestId: res.locals.requestId, method: req.method }, 'media file request failed');
    fail(res, {
      status: 500,
      code: 'internal',
      message: 'Something went wrong on our side; the request id helps us find out what.',
    });
  };
}

function failSize(res: Response, error: ObjectSizeError) {
  if (error.tooLarge) {
    // The rest of an oversized body is not read: the connection closes after the answer.
    res.setHeader('Connection', 'close');
    res.on('finish', () => res.req.socket.destroy());
    return fail(res, {
      status: 413,
      code: 'payload_too_large',
      message: `The upload was declared with ${error.expected} bytes; more were sent.`,
    });
  }
  return fail(res, {
    status: 400,
    code: 'validation_failed',
    message: `The upload was declared with ${error.expected} bytes; ${error.received} were sent.`,
  });
}

function refusal(check: Extract<SignedRequestCheck, { ok: false }>): Failure {
  if (check.reason === 'expired') {
    return { status: 403, code: 'forbidden', message: `This signed URL expired at ${check.expiresAt?.toISOString()}.` };
  }
  return {
    status: 403,
    code: 'forbidden',
    message: 'This URL is not validly signed: it was altered or is incomplete.',
  };
}
