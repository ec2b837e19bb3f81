import express, { type Request, type Response, type Router } from 'express';
import { DateTime } from 'luxon';
import type { components } from '../../generated/public-v1.js';
import { listChannels } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import { POST_CONTENT_MAX_LENGTH } from '../core/contract.js';
import { ConflictError, DomainError, ValidationError, type ErrorDetail } from '../core/errors.js';
import { randomBase62 } from '../core/ids.js';
import type { RequestBodies } from '../http/request-bodies.js';
import { mediaPage } from '../media/library.js';
import type { MediaContext } from '../media/storage.js';
import { renderPage } from '../pages/render.js';
import { field, type BrowserCookies } from '../pages/visitor.js';
import { createPosts } from '../posts/create.js';
import { editPost, getPost } from '../posts/lifecycle.js';
import type { PostRow } from '../posts/post-body.js';
import type { PostsContext } from '../posts/publication-plan.js';
import { isEditable } from '../posts/transitions.js';
import type { CreatorInfo } from '../providers/provider.js';
import { wallClockInstant } from './calendar-view.js';
import {
  placeErrors,
  readComposerForm,
  settingsFields,
  settingsFrom,
  type ComposerValues,
  type FieldErrors,
} from './composer-form.js';
import { describeMedia, mediaOrigins } from './media-pages.js';
import { signedIn } from './signed-in.js';
import { readTimeZone } from './time-zone.js';

type CreatePostRequest = components['schemas']['CreatePostRequest'];
type UpdatePostRequest = components['schemas']['UpdatePostRequest'];
type Action = 'schedule' | 'now' | 'draft';

const LIBRARY_SIZE = 60;
// What the page generates per load; anything else in the field is not one of ours and is not used.
const IDEMPOTENCY_KEY = /^[A-Za-z0-9]{24}$/;

const PRIVACY_WORDS: Record<string, string> = {
  PUBLIC_TO_EVERYONE: 'Everyone',
  MUTUAL_FOLLOW_FRIENDS: 'Friends (followers you follow back)',
  FOLLOWER_OF_CREATOR: 'Followers',
  SELF_ONLY: 'Only me',
};

type Mode = { kind: 'create'; idempotencyKey: string } | { kind: 'edit'; post: PostRow };

/**
 * The composer: a post for one or several channels (one post each, as `POST /public/v1/posts` makes
 * them), or an edit of one post (`PATCH /public/v1/posts/{id}`, then the schedule or status operation
 * its button means). The body is checked against the contract like the API's, then goes through the
 * same domain code; every refusal is shown next to the field its `details` path names. A create
 * carries an idempotency key made for each load of the page, so a double click creates one post.
 */
export function composerPages(
  ctx: PostsContext & MediaContext,
  cookies: BrowserCookies,
  bodies: RequestBodies,
): Router {
  const router = express.Router();

  router.get('/compose', async (req, res) => {
    const { zone } = readTimeZone(req, res, cookies);
    const start = DateTime.fromJSDate(ctx.clock(), { zone }).plus({ hours: 1 }).startOf('hour');
    const values: ComposerValues = {
      channels: [],
      content: '',
      media: [],
      date: start.toISODate()!,
      time: start.toFormat('HH:mm'),
      settings: {},
    };
    await show(req, res, { kind: 'create', idempotencyKey: randomBase62(24) }, values);
  });

  router.post('/compose', async (req, res) => {
    const { organization } = signedIn(res);
    const values = readComposerForm(req);
    const action = readAction(req);
    const { zone } = readTimeZone(req, res, cookies);
    const channels = await listChannels(ctx.db, organization.id);
    const at = wallClockInstant(values.date, values.time, zone);
    const body = {
      type: action,
      ...(at && action !== 'now' ? { date: at.toISOString() } : {}),
      posts: values.channels.map((channelId) => {
        const channel = channels.find((candidate) => candidate.id === channelId);
        const settings = channel ? settingsFrom(channel, values.settings[channelId]) : undefined;
        return { channelId, content: values.content, mediaIds: values.media, ...(settings ? { settings } : {}) };
      }),
    } as CreatePostRequest;
    const key = field(req, 'idempotency_key');
    const mode: Mode = { kind: 'create', idempotencyKey: IDEMPOTENCY_KEY.test(key) ? key : randomBase62(24) };
    const names = new Map(channels.map((channel) => [channel.id, channel.name]));
    const refused = (details: ErrorDetail[], message?: string) => placeErrors(details, values.channels, names, message);

    const details = bodies.check('createPost', body);
    if (details.length > 0) return show(req, res, mode, values, refused(details), 400);
    let created;
    try {
      created = await createPosts(ctx, organization.id, body, IDEMPOTENCY_KEY.test(key) ? key : undefined);
    } catch (error) {
      if (!shownOnForm(error)) throw error;
      return show(req, res, mode, values, refused(error.details ?? [], error.message), error.status);
    }
    const posts = created.body.data;
    if (posts.length === 1) return res.redirect(303, `/posts/${encodeURIComponent(posts[0]!.id)}?created=1`);
    const first = posts[0]?.scheduledAt ? DateTime.fromISO(posts[0].scheduledAt, { zone }).toISODate() : undefined;
    res.redirect(
      303,
      `/calendar?${new URLSearchParams({ ...(first ? { date: first } : {}), created: String(posts.length) })}`,
    );
  });

  router.get('/posts/:id/edit', async (req, res) => {
    const { organization } = signedIn(res);
    const post = await getPost(ctx.db, organization.id, String(req.params.id));
    if (!isEditable(post.status)) throw new ConflictError(`A ${post.status} post cannot be edited.`);
    const { zone } = readTimeZone(req, res, cookies);
    const local = post.scheduled_at ? DateTime.fromJSDate(post.scheduled_at, { zone }) : undefined;
    const values: ComposerValues = {
      channels: [post.channel_id],
      content: post.content,
      media: post.media_ids,
      date: local?.toISODate() ?? '',
      time: local?.toFormat('HH:mm') ?? '',
      settings: { [post.channel_id]: settingsFields(post) },
    };
    await show(req, res, { kind: 'edit', post }, values);
  });

  router.post('/posts/:id/edit', async (req, res) => {
    const { organization } = signedIn(res);
    const post = await getPost(ctx.db, organization.id, String(req.params.id));
    const values = { ...readComposerForm(req), channels: [post.channel_id] };
    const action = readAction(req);
    const { zone } = readTimeZone(req, res, cookies);
    const channels = await listChannels(ctx.db, organization.id);
    const channel = channels.find((candidate) => candidate.id === post.channel_id);
    const settings = channel ? settingsFrom(channel, values.settings[post.channel_id]) : undefined;
    const changes = {
      content: values.content,
      mediaIds: values.media,
      ...(settings ? { settings } : {}),
    } as UpdatePostRequest;
    const at = wallClockInstant(values.date, values.time, zone);
    const names = new Map(channels.map((candidate) => [candidate.id, candidate.name]));
    const mode: Mode = { kind: 'edit', post };
    const details = bodies.check('updatePost', changes);
    if (action === 'schedule' && !at) details.push({ path: 'date', message: 'needs a day and a time to publish at' });
    if (details.length > 0) return show(req, res, mode, values, placeErrors(details, values.channels, names), 400);
    try {
      if (action === 'draft') {
        await editPost(
          ctx,
          organization.id,
          post.id,
          { ...changes, ...(at ? { scheduledAt: at.toISOString() } : {}) },
          { before: { status: 'draft' } },
        );
      } else {
        const scheduledAt = action === 'now' ? ctx.clock() : at!;
        await editPost(ctx, organization.id, post.id, changes, {
          after: { status: 'scheduled', scheduledAt, path: 'date' },
        });
      }
    } catch (error) {
      if (!shownOnForm(error)) throw error;
      const current = await getPost(ctx.db, organization.id, post.id);
      return show(
        req,
        res,
        { kind: 'edit', post: current },
        values,
        placeErrors(error.details ?? [], values.channels, names, error.message),
        error.status,
      );
    }
    res.redirect(303, `/posts/${encodeURIComponent(post.id)}?saved=1`);
  });

  async function show(
    req: Request,
    res: Response,
    mode: Mode,
    values: ComposerValues,
    errors?: FieldErrors,
    status = 200,
  ): Promise<void> {
    const { organization } = signedIn(res);
    const timeZone = readTimeZone(req, res, cookies);
    const all = await listChannels(ctx.db, organization.id);
    const channels = mode.kind === 'edit' ? all.filter((channel) => channel.id === mode.post.channel_id) : all;
    const [library, tiktok] = await Promise.all([
      mediaPage(ctx, organization.id, { limit: LIBRARY_SIZE, cursor: undefined }),
      Promise.all(channels.map((channel) => tiktokCreator(channel))),
    ]);
    // Media chosen on the page stays offered even when it is older than the newest ones listed.
    const listed = new Set(library.data.map((media) => media.id));
    const origins = await mediaOrigins(ctx, library.data);
    renderPage(
      res,
      '/web/templates/composer',
      {
        title: mode.kind === 'edit' ? 'Edit the post' : 'New post',
        path: mode.kind === 'edit' ? '/posts' : '/compose',
        scripts: ['upload.js', 'composer.js'],
        timeZone,
        action: mode.kind === 'edit' ? `/posts/${mode.post.id}/edit` : '/compose',
        mode: mode.kind,
        post: mode.kind === 'edit' ? { id: mode.post.id, status: mode.post.status } : undefined,
        idempotencyKey: mode.kind === 'create' ? mode.idempotencyKey : undefined,
        channels: channels.map((channel, i) => describeChannel(channel, values, tiktok[i]!)),
        networks: [...new Set(channels.map((channel) => channel.provider))].map((provider) => {
          const limit = limitOf(provider);
          return {
            provider,
            name: ctx.providers[provider].name,
            limit,
            count: limit.unit === 'bytes' ? Buffer.byteLength(values.content, 'utf8') : values.content.length,
          };
        }),
        media: library.data.map(describeMedia),
        missingMedia: values.media.filter((id) => !listed.has(id)),
        accept: ctx.config.media.allowedTypes.join(','),
        privacyWords: PRIVACY_WORDS,
        values,
        fieldErrors: errors?.fields ?? {},
        errors: errors?.summary ?? {},
      },
      status,
      { mediaOrigins: origins, connectOrigins: origins },
    );
  }

  function limitOf(provider: Channel['provider']) {
    return (
      ctx.providers[provider].contentLimit ?? { max: POST_CONTENT_MAX_LENGTH, unit: 'characters', becomes: 'text' }
    );
  }

  /** A TikTok channel's creator info, read when the composer is shown (TikTok asks for it before every post); else why there is none. */
  async function tiktokCreator(channel: Channel): Promise<{ info?: CreatorInfo; problem?: string } | undefined> {
    if (channel.provider !== 'tiktok' || channel.status !== 'active') return undefined;
    const source = ctx.providers.tiktok.creatorInfo;
    if (!source)
      return {
        problem:
          'TikTok publishing is not configured on this server, so TikTok posts cannot be made; ask its operator.',
      };
    try {
      return { info: await source.creatorInfo(channel) };
    } catch (error) {
      if (error instanceof DomainError && error.status !== 500) return { problem: error.message };
      throw error;
    }
  }

  function describeChannel(
    channel: Channel,
    values: ComposerValues,
    tiktok: { info?: CreatorInfo; problem?: string } | undefined,
  ) {
    const reason =
      channel.status === 'needs_reconnect'
        ? 'Needs reconnecting in Settings → Channels.'
        : channel.status === 'disabled'
          ? 'Disabled in Settings → Channels.'
          : tiktok?.problem
            ? tiktok.problem
            : tiktok?.info && !tiktok.info.canPost
              ? `TikTok does not let this account post now: ${tiktok.info.cannotPostReason ?? 'TikTok gave no reason'}.`
              : undefined;
    return {
      id: channel.id,
      name: channel.name,
      provider: channel.provider,
      network: ctx.providers[channel.provider].name,
      available: reason === undefined,
      reason,
      checked: values.channels.includes(channel.id),
      creator: tiktok?.info,
      fields: values.settings[channel.id] ?? {},
    };
  }

  return router;
}

function readAction(req: Request): Action {
  const action = field(req, 'action') || 'schedule';
  if (action === 'schedule' || action === 'now' || action === 'draft') return action;
  throw new ValidationError(
    'The form asks for something the composer does not do: schedule, publish now or save a draft.',
  );
}

/** Refusals the composer shows on its form: the request's and the rules' (4xx), and a network that could not be asked (502). */
function shownOnForm(error: unknown): error is DomainError {
  return (
    error instanceof DomainError && (error.status < 500 || error.code === 'provider_error') && error.status !== 404
  );
}
