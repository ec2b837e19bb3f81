import { timingSafeEqual } from 'node:crypto';
import express, { type ErrorRequestHandler, type Request, type Response, type Router } from 'express';
import { DomainError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import { findChannel } from '../../channels/channels.js';
import type { Db } from '../../db/database.js';
import { downloadUrlExpiry } from '../../media/library.js';
import { mediaKey } from '../../media/media-body.js';
import type { MediaContext } from '../../media/storage.js';
import { outageOfRequest } from '../../http/error-envelope.js';
import { refuseUnstorableRequestText } from '../../http/storable-text.js';
import { pageErrors } from '../../pages/errors.js';
import { pageHtml, renderErrorPage } from '../../pages/render.js';
import type { SandboxRelease } from '../tables.js';
import { sandboxToken } from './adapter.js';

export interface SandboxNetworkOptions {
  key: Buffer;
  /** How long the network takes to answer a publication (SANDBOX_LATENCY_MS), to try slow networks. */
  latencyMs: number;
}

export const SANDBOX_API_PATH = '/sandbox/api';
const RELEASES_PATH = '/sandbox/releases';
const MAX_KEY_LENGTH = 200;

interface PublicationRequest {
  key?: unknown;
  channelId?: unknown;
  content?: unknown;
  settings?: unknown;
  media?: unknown;
  /** The release this one replies to, and which part of its thread it is. */
  replyTo?: unknown;
  commentOn?: unknown;
  part?: unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The sandbox channel the request is signed for, or `undefined`. */
function signedChannel(req: Request, key: Buffer, channelId: string): boolean {
  const given = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!given) return false;
  const expected = Buffer.from(sandboxToken(key, channelId));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Where the media of a page come from: this site, or the bucket of its signed URLs. */
function mediaOrigins(urls: (string | undefined)[]): string[] {
  return [...new Set(urls.filter((url): url is string => url !== undefined).map((url) => new URL(url).origin))];
}

function releaseAnswer(ctx: MediaContext, release: Pick<SandboxRelease, 'id'>) {
  return { id: release.id, url: `${ctx.config.publicUrl}${RELEASES_PATH}/${release.id}` };
}

/**
 * The sandbox network, served by this server: a pretend social network with an API of its own (what
 * the sandbox adapter calls, as the real adapters call YouTube or TikTok) and a public page for each
 * post it published. It keeps a copy of what it was sent, as a network does.
 */
export function sandboxNetwork(ctx: MediaContext, options: SandboxNetworkOptions): Router {
  const router = express.Router({ caseSensitive: true });
  // Text the database cannot store (PostgreSQL's text holds no NUL) is refused before any query is made of it.
  router.use(
    SANDBOX_API_PATH,
    express.json({ limit: '1mb' }),
    refuseUnstorableRequestText(
      () =>
        new ValidationError(
          'The request holds the NUL character (U+0000), malformed Unicode or a malformed %-escape: ' +
            'the sandbox network does not accept it.',
        ),
    ),
  );
  router.use(
    RELEASES_PATH,
    refuseUnstorableRequestText(
      () =>
        new ValidationError('The address holds the NUL character (U+0000) or a malformed %-escape: it names no post.'),
    ),
  );

  router.post(`${SANDBOX_API_PATH}/releases`, (req, res) => publish(ctx, options, req, res));

  router.get(`${SANDBOX_API_PATH}/releases/by-key/:key`, async (req, res) => {
    const release = await releaseWithKey(ctx.db, req.params.key).executeTakeFirst();
    // Asked by the channel that published it only.
    if (!release || !signedChannel(req, options.key, release.channel_id))
      return refuse(res, 404, 'not_found', 'The sandbox network published nothing with this key.');
    res.status(200).json(releaseAnswer(ctx, release));
  });
  router.use(SANDBOX_API_PATH, (_req, res) =>
    refuse(res, 404, 'not_found', 'The sandbox network has no such endpoint.'),
  );

  router.get(`${RELEASES_PATH}/:id`, (req, res) => showRelease(ctx, req, res));

  router.use(SANDBOX_API_PATH, sandboxApiErrors(ctx.logger));
  router.use(RELEASES_PATH, pageErrors(ctx.logger));
  return router;
}

const refuse = (res: Response, status: number, error: string, message: string) =>
  res.status(status).json({ error, message });

/**
 * The sandbox API's failures in its own shape, `{error, message}`, as a network's API answers them: a
 * request it cannot read is the caller's mistake (400, or 413 past 1 MB); the database out of reach is
 * a 503 with `Retry-After`, like every other surface's; anything else is logged and answered 500. The
 * adapter retries both. Never a stack trace or a query.
 */
export function sandboxApiErrors(logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const outage = outageOfRequest(error, req, res, logger);
    if (outage) return refuse(res, 503, 'service_unavailable', outage.message);
    if (error instanceof DomainError && error.status < 500)
      return refuse(res, error.status, error.status === 400 ? 'invalid_request' : error.code, error.message);
    const { status, type } = error as { status?: unknown; type?: unknown };
    if (type === 'entity.too.large') return refuse(res, 413, 'payload_too_large', 'The request body is over 1 MB.');
    if (type === 'entity.parse.failed')
      return refuse(res, 400, 'invalid_request', 'The request body is not valid JSON.');
    if (typeof status === 'number' && status >= 400 && status < 500)
      return refuse(res, status, 'invalid_request', 'The request could not be read.');
    logger.error(
      { err: error, requestId: res.locals.requestId, method: req.method, path: req.path },
      'sandbox request failed',
    );
    refuse(res, 500, 'server_error', 'Something went wrong on the sandbox network; try again later.');
  };
}

type Publication = Pick<PublicationRequest, 'settings'> & {
  key: string;
  channelId: string;
  content: string;
  media: unknown[];
  replyTo?: string;
  commentOn?: string;
  part?: number;
};

function isPublication(body: PublicationRequest): body is Publication {
  return (
    typeof body.key === 'string' &&
    body.key.length > 0 &&
    body.key.length <= MAX_KEY_LENGTH &&
    typeof body.channelId === 'string' &&
    typeof body.content === 'string' &&
    Array.isArray(body.media) &&
    (body.replyTo === undefined || (typeof body.replyTo === 'string' && body.replyTo.length <= MAX_KEY_LENGTH)) &&
    (body.commentOn === undefined || (typeof body.commentOn === 'string' && body.commentOn.length <= MAX_KEY_LENGTH)) &&
    (body.replyTo === undefined || body.commentOn === undefined) &&
    (body.part === undefined || (Number.isSafeInteger(body.part) && (body.part as number) >= 1))
  );
}

/** Whether the settings ask the sandbox to refuse this part (`outcome: failed` at `failingPart`, 1 by default). */
function refusedBySettings(settings: unknown, part: number): boolean {
  const { outcome, failingPart } = (settings ?? {}) as { outcome?: unknown; failingPart?: unknown };
  return outcome === 'failed' && (typeof failingPart === 'number' ? failingPart : 1) === part;
}

function releaseWithKey(db: Db, key: string) {
  return db.selectFrom('sandbox_releases').select(['id', 'channel_id']).where('publication_key', '=', key);
}

/** A publication: once per key, whatever the number of requests, as the adapter's retries need. */
async function publish(ctx: MediaContext, options: SandboxNetworkOptions, req: Request, res: Response) {
  const body = (req.body ?? {}) as PublicationRequest;
  if (!isPublication(body))
    return refuse(res, 400, 'invalid_request', 'A publication needs key, channelId, content and media.');
  if (!signedChannel(req, options.key, body.channelId))
    return refuse(res, 401, 'unauthorized', 'The credentials of this sandbox channel are not valid.');
  if (options.latencyMs > 0) await sleep(options.latencyMs);
  const existing = await releaseWithKey(ctx.db, body.key).executeTakeFirst();
  if (existing) return res.status(200).json(releaseAnswer(ctx, existing));
  const channel = await ctx.db
    .selectFrom('channels')
    .select(['id', 'organization_id', 'provider'])
    .where('id', '=', body.channelId)
    .executeTakeFirst();
  if (!channel || channel.provider !== 'sandbox')
    return refuse(res, 404, 'not_found', 'The sandbox network has no such channel.');
  const part = body.part ?? 1;
  if (refusedBySettings(body.settings, part)) {
    const which = part === 1 ? 'the post' : body.commentOn ? 'the first comment' : `part ${part} of the thread`;
    return refuse(
      res,
      422,
      'rejected',
      `The sandbox refused ${which}, as its settings ask (outcome: failed). Edit the settings and schedule it again.`,
    );
  }
  const above = body.replyTo ?? body.commentOn;
  if (above !== undefined) {
    const parent = await ctx.db
      .selectFrom('sandbox_releases')
      .select('channel_id')
      .where('id', '=', above)
      .executeTakeFirst();
    if (parent?.channel_id !== channel.id)
      return refuse(
        res,
        422,
        'rejected',
        `The post ${body.commentOn ? 'commented on' : 'replied to'} is not one of this channel on the sandbox network.`,
      );
  }
  const release = await ctx.db
    .insertInto('sandbox_releases')
    .values({
      id: newId('rel'),
      publication_key: body.key,
      organization_id: channel.organization_id,
      channel_id: channel.id,
      content: body.content,
      media: JSON.stringify(body.media),
      settings: body.settings === undefined ? null : JSON.stringify(body.settings),
      reply_to: body.replyTo ?? null,
      comment_on: body.commentOn ?? null,
      published_at: ctx.clock.now(),
    })
    // Two requests with one key at once: one release, and both answer it.
    .onConflict((oc) => oc.column('publication_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  const created = release ?? (await releaseWithKey(ctx.db, body.key).executeTakeFirstOrThrow());
  res.status(release ? 201 : 200).json(releaseAnswer(ctx, created));
}

/** The public page of a published post, with its media from signed URLs. */
async function showRelease(ctx: MediaContext, req: Request, res: Response): Promise<void> {
  const release = await ctx.db
    .selectFrom('sandbox_releases')
    .selectAll()
    .where('id', '=', String(req.params.id))
    .executeTakeFirst();
  if (!release) return renderErrorPage(res, 404, 'Not found', 'The sandbox network published nothing at this address.');
  const [channel, replies, comments] = await Promise.all([
    findChannel(ctx.db, release.organization_id, release.channel_id),
    ctx.db
      .selectFrom('sandbox_releases')
      .select('id')
      .where('reply_to', '=', release.id)
      .orderBy('published_at')
      .execute(),
    ctx.db
      .selectFrom('sandbox_releases')
      .select(['id', 'content'])
      .where('comment_on', '=', release.id)
      .orderBy('published_at')
      .execute(),
  ]);
  const expiresAt = downloadUrlExpiry(ctx);
  const media = await Promise.all(
    release.media.map(async (item) => {
      const key = mediaKey(release.organization_id, item.id);
      const stored = await ctx.storage.stat(key);
      const url = stored
        ? await ctx.storage.signedGetUrl(key, { contentType: item.contentType, expiresAt })
        : undefined;
      return { ...item, url };
    }),
  );
  const html = pageHtml(
    res,
    '/providers/sandbox/templates/release',
    {
      title: channel ? `${channel.name} on the sandbox` : 'A sandbox post',
      release,
      channelName: channel?.name ?? 'A removed sandbox channel',
      publishedText: `${release.published_at.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      media,
      replyToUrl: release.reply_to === null ? undefined : `${RELEASES_PATH}/${release.reply_to}`,
      replyUrls: replies.map((reply) => `${RELEASES_PATH}/${reply.id}`),
      commentOnUrl: release.comment_on === null ? undefined : `${RELEASES_PATH}/${release.comment_on}`,
      comments: comments.map((comment) => ({ url: `${RELEASES_PATH}/${comment.id}`, content: comment.content })),
      settings: release.settings === null ? '' : JSON.stringify(release.settings, null, 2),
    },
    { mediaOrigins: mediaOrigins(media.map((item) => item.url)) },
  );
  res.status(200).type('html').send(html);
}
