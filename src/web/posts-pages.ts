import express, { type Request, type Response, type Router } from 'express';
import { listChannels } from '../channels/channels.js';
import { POST_STATUSES, type PostStatus } from '../core/contract.js';
import { DomainError, ValidationError } from '../core/errors.js';
import { DateTime } from 'luxon';
import { formatTime } from '../pages/forms.js';
import type { BrowserCookies } from '../pages/visitor.js';
import { renderPage } from '../pages/render.js';
import type { PostEventBody } from '../posts/events.js';
import { approvePost, lastRejection, rejectPost } from '../posts/approval.js';
import { postHistoryPage } from '../posts/history.js';
import { getSeries } from '../recurring/series.js';
import { skipPost } from '../recurring/skip.js';
import { getPost, movePost, removePost } from '../posts/lifecycle.js';
import { duplicatePost } from '../posts/duplicate.js';
import { streamPostExport } from '../posts/export.js';
import { isEditable, isTooFarInThePast } from '../posts/transitions.js';
import { listPostPage } from '../posts/list.js';
import { toPostBody, type PostBody } from '../posts/post-body.js';
import type { MediaContext } from '../media/storage.js';
import type { PostsContext } from '../posts/context.js';
import { confirmedOrAsk } from './confirm-first.js';
import { importPage } from './import-page.js';
import { bulkPostRoutes, type BulkResult } from './posts-bulk.js';
import { requirePermission, signedIn } from './signed-in.js';
import { inReadersZone, readTimeZone } from './time-zone.js';

const PAGE_SIZE = 50;
/** The states of an occurrence of a series that can be skipped: not on its way, not published, not skipped. */
const SKIPPABLE: string[] = ['draft', 'scheduled', 'failed', 'pending_approval'];
const HISTORY_PAGE_SIZE = 100;

/** What the history of a post says of each event, in words. */
const EVENT_WORDS: Record<string, string> = {
  created: 'Created',
  edited: 'Edited',
  scheduled: 'Scheduled',
  rescheduled: 'Rescheduled',
  drafted: 'Moved to drafts',
  publishing: 'Publishing started',
  retrying: 'Will try again',
  part_published: 'Thread part published',
  comment_published: 'First comment published',
  published: 'Published',
  failed: 'Failed',
  deleted: 'Deleted',
  pending_approval: 'Submitted for approval',
  approved: 'Approved',
  rejected: 'Rejected',
  skipped: 'Skipped',
};

/**
 * Posts: the organization's posts by status and date, each with its channel, time, status and error,
 * and a post's page with its history and, for a failed post, *Schedule again*. The same domain code
 * as the Public API's, so the same rules and errors apply.
 */
export function postsPages(ctx: PostsContext & MediaContext, cookies: BrowserCookies): Router {
  const router = express.Router();
  // The role first: a form it may not send is refused as such, whatever post it names.
  router.post(
    ['/posts/:id/approve', '/posts/:id/reject'],
    requirePermission('posts:publish', 'approve or reject posts'),
  );
  router.post('/posts/:id/skip', requirePermission('posts:publish', 'skip occurrences of a series'));
  router.post(
    ['/posts/:id/withdraw', '/posts/:id/duplicate', '/posts/:id/delete', '/posts/bulk', '/posts/import'],
    requirePermission('posts:draft', 'write or change posts'),
  );

  router.get('/posts', (req, res) => showPostList(ctx, req, res, readTimeZone(req, res, cookies).zone));

  // The list's posts as a file, with the list's filters: the Public API's export, for the signed-in member.
  router.get('/posts/export', async (req, res) => {
    const { organization } = signedIn(res);
    const { zone } = readTimeZone(req, res, cookies);
    const format = req.query.format === 'json' ? 'json' : 'csv';
    await streamPostExport(ctx.db, organization.id, { format, ...listQuery(readFilter(req), zone) }, res);
  });

  router.use(importPage(ctx));
  router.use(
    bulkPostRoutes(ctx, cookies, (req, res, results, status) =>
      showPostList(ctx, req, res, readTimeZone(req, res, cookies).zone, { results, status }),
    ),
  );

  router.get('/posts/:id', async (req, res) => {
    const { organization } = signedIn(res);
    const { zone } = readTimeZone(req, res, cookies);
    const notice = postNotice(req);
    await showPost(ctx, req, res, { organizationId: organization.id, postId: String(req.params.id), zone, notice });
  });

  // What post.js asks while the post is on its way to the network.
  router.get('/posts/:id/status', async (req, res) => {
    const { organization } = signedIn(res);
    const post = await getPost(ctx.db, organization.id, String(req.params.id));
    res.json({ status: post.status });
  });

  /** Runs a change of the post, then shows its page: with `done` as the notice, or with why it was refused. */
  const changePost =
    (change: (req: Request, res: Response) => Promise<unknown>, done: string, refused: string) =>
    async (req: Request, res: Response) => {
      const { organization } = signedIn(res);
      try {
        await change(req, res);
      } catch (error) {
        if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
        const { zone } = readTimeZone(req, res, cookies);
        return showPost(ctx, req, res, {
          organizationId: organization.id,
          postId: String(req.params.id),
          zone,
          problem: `${refused}: ${error.message}`,
          status: error.status,
        });
      }
      res.redirect(303, `/posts/${encodeURIComponent(String(req.params.id))}?${done}=1`);
    };

  router.post(
    '/posts/:id/schedule-again',
    changePost(
      (req, res) => movePost(ctx, signedIn(res).actor, String(req.params.id), { status: 'scheduled' }),
      'scheduled',
      'The post could not be scheduled again',
    ),
  );
  router.post(
    '/posts/:id/approve',
    changePost(
      (req, res) =>
        approvePost(
          ctx,
          signedIn(res).actor,
          String(req.params.id),
          formField(req, 'when') === 'now' ? 'now' : 'scheduled',
          { user: signedIn(res).visitor.user.id },
        ),
      'approved',
      'The post could not be approved',
    ),
  );
  router.post(
    '/posts/:id/reject',
    changePost(
      (req, res) => {
        const comment = formField(req, 'comment').trim();
        if (comment === '')
          throw new ValidationError('Say what the author should change.', [
            { path: 'comment', message: 'is required' },
          ]);
        return rejectPost(ctx, signedIn(res).actor, String(req.params.id), comment.slice(0, REJECTION_MAX_LENGTH), {
          user: signedIn(res).visitor.user.id,
        });
      },
      'rejected',
      'The post could not be rejected',
    ),
  );
  router.post(
    '/posts/:id/skip',
    changePost(
      (req, res) => skipPost(ctx, signedIn(res).actor, String(req.params.id)),
      'skipped',
      'The occurrence could not be skipped',
    ),
  );
  router.post(
    '/posts/:id/withdraw',
    changePost(
      (req, res) => movePost(ctx, signedIn(res).actor, String(req.params.id), { status: 'draft' }),
      'withdrawn',
      'The post could not be taken back',
    ),
  );

  router.post('/posts/:id/duplicate', async (req, res) => {
    const { actor } = signedIn(res);
    const copy = await duplicatePostOrShow(ctx, req, res, actor, cookies);
    if (copy) res.redirect(303, `/posts/${encodeURIComponent(copy.id)}?duplicated=1`);
  });

  router.post('/posts/:id/delete', async (req, res) => {
    const { organization, actor } = signedIn(res);
    const postId = String(req.params.id);
    await getPost(ctx.db, organization.id, postId);
    const confirmation = {
      question: 'Delete this post?',
      consequence:
        'The post and its history are deleted and it will not be published. A post already published stays on ' +
        'the network: only our record of it goes. This cannot be undone.',
      button: 'Delete the post',
      back: `/posts/${encodeURIComponent(postId)}`,
      path: '/posts',
    };
    if (!confirmedOrAsk(req, res, confirmation)) return;
    try {
      await removePost(ctx, actor, postId, { user: signedIn(res).visitor.user.id });
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
      const { zone } = readTimeZone(req, res, cookies);
      return showPost(ctx, req, res, {
        organizationId: organization.id,
        postId,
        zone,
        problem: `The post could not be deleted: ${error.message}`,
        status: error.status,
      });
    }
    res.redirect(303, '/posts?deleted=1');
  });

  return router;
}

/** The longest comment of a rejection (the contract's `RejectPostRequest.comment`). */
const REJECTION_MAX_LENGTH = 2000;

function formField(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A draft copy of the post, or its page again with why there is none (a channel removed since). */
async function duplicatePostOrShow(
  ctx: PostsContext,
  req: Request,
  res: Response,
  actor: Parameters<typeof duplicatePost>[1],
  cookies: BrowserCookies,
) {
  const postId = String(req.params.id);
  try {
    return await duplicatePost(ctx, actor, postId);
  } catch (error) {
    if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
    const { zone } = readTimeZone(req, res, cookies);
    const why = error.details?.map((detail) => detail.message).join(' ') || error.message;
    await showPost(ctx, req, res, {
      organizationId: actor.organizationId,
      postId,
      zone,
      problem: `The post could not be duplicated: ${why}`,
      status: error.status,
    });
    return undefined;
  }
}

/** The list's filters as the list's query: the days are the reader's. */
function listQuery(filter: Filter, zone: string) {
  return {
    ...(filter.status ? { status: [filter.status] } : {}),
    ...(filter.from ? { from: DateTime.fromISO(filter.from, { zone }).startOf('day').toUTC().toISO()! } : {}),
    ...(filter.to ? { to: DateTime.fromISO(filter.to, { zone }).endOf('day').toUTC().toISO()! } : {}),
  };
}

/** The list of posts, filtered by status and dates, a page at a time. */
async function showPostList(
  ctx: PostsContext,
  req: Request,
  res: Response,
  zone: string,
  bulk: { results: BulkResult[]; status: number } = { results: [], status: 200 },
): Promise<void> {
  const { organization } = signedIn(res);
  // After a bulk action (a POST), the list as it is now, unfiltered.
  const filter = req.method === 'GET' ? readFilter(req) : {};
  const query = {
    limit: PAGE_SIZE,
    ...listQuery(filter, zone),
    ...(filter.cursor ? { cursor: filter.cursor } : {}),
  };
  const [page, channels] = await Promise.all([
    listPostPage(ctx, organization.id, query),
    listChannels(ctx.db, organization.id),
  ]);
  const channelNames = new Map(channels.map((channel) => [channel.id, channel.name]));
  const next = page.nextCursor
    ? new URLSearchParams({ ...withoutCursor(filter), cursor: page.nextCursor }).toString()
    : undefined;
  renderPage(
    res,
    '/web/templates/posts',
    {
      title: 'Posts',
      path: '/posts',
      zone,
      filter,
      statuses: POST_STATUSES,
      exportQuery: new URLSearchParams(withoutCursor(filter)).toString(),
      notice: req.query.deleted === '1' ? 'The post is deleted.' : undefined,
      posts: page.data.map((post) => ({
        ...describe(post, zone),
        channelName: channelNames.get(post.channelId) ?? post.channelId,
      })),
      next,
      results: bulk.results,
      move: { date: DateTime.fromJSDate(ctx.clock.now(), { zone }).plus({ days: 1 }).toISODate() },
    },
    bulk.status,
  );
}

/** What a post's page says after the change that led to it. */
function postNotice(req: Request): string | undefined {
  if (req.query.scheduled === '1') return 'The post is scheduled again.';
  if (req.query.created) return 'The post is created.';
  if (req.query.saved) return 'The post is saved.';
  if (req.query.moved) return 'The post has its new time.';
  if (req.query.duplicated) return 'This is a copy of the post, saved as a draft: edit it and schedule it.';
  if (req.query.approved) return 'The post is approved and scheduled.';
  if (req.query.rejected) return 'The post is rejected: it is a draft again, and its author is told why.';
  if (req.query.skipped) return 'This occurrence is skipped: it is not published, and the series goes on.';
  if (req.query.withdrawn) return 'The post no longer waits for approval: it is a draft again.';
  return undefined;
}

interface ShownPost {
  organizationId: string;
  postId: string;
  /** The reader's time zone, for the "Move to…" form. */
  zone: string;
  notice?: string | undefined;
  problem?: string | undefined;
  status?: number;
}

/** A post's page: its details, the link to it on the network, its history, and what can be done with it. */
export async function showPost(ctx: PostsContext, req: Request, res: Response, shown: ShownPost): Promise<void> {
  const post = toPostBody(await getPost(ctx.db, shown.organizationId, shown.postId));
  const cursor = typeof req.query.history === 'string' ? req.query.history : undefined;
  const history = await postHistoryPage(ctx, shown.organizationId, post.id, {
    limit: HISTORY_PAGE_SIZE,
    ...(cursor ? { cursor } : {}),
  });
  const [channels, rejection, series] = await Promise.all([
    listChannels(ctx.db, shown.organizationId),
    post.status === 'draft' ? lastRejection(ctx, post.id) : undefined,
    post.series ? getSeries(ctx, shown.organizationId, post.series.id) : undefined,
  ]);
  const local = post.scheduledAt
    ? DateTime.fromISO(post.scheduledAt, { zone: shown.zone })
    : DateTime.fromJSDate(ctx.clock.now(), { zone: shown.zone }).plus({ hours: 1 }).startOf('hour');
  renderPage(
    res,
    '/web/templates/post',
    {
      title: 'Post',
      path: '/posts',
      scripts: ['post.js'],
      post: {
        ...describe(post, shown.zone),
        channelName: channels.find((channel) => channel.id === post.channelId)?.name ?? post.channelId,
        // Followed by post.js while it goes out: publishing, or scheduled within the next minute.
        follow:
          post.status === 'publishing' ||
          (post.status === 'scheduled' &&
            post.scheduledAt !== null &&
            Date.parse(post.scheduledAt) - ctx.clock.now().getTime() < 60_000),
      },
      movable: (['draft', 'scheduled', 'failed'] as string[]).includes(post.status),
      pending: post.status === 'pending_approval',
      // Approving at its time is possible while that time has not passed.
      dueAhead: post.scheduledAt !== null && !isTooFarInThePast(new Date(post.scheduledAt), ctx.clock.now()),
      // The series the post is an occurrence of: it can be skipped until it is on its way.
      series: series && {
        id: series.id,
        summary: series.summary,
        occurrence: formatTime(new Date(post.series!.occurrenceAt), shown.zone),
        skippable: SKIPPABLE.includes(post.status),
      },
      rejection: rejection && { comment: rejection.comment, when: formatTime(rejection.at, shown.zone) },
      // The contract's status is open to values added later; this server writes the ones it knows.
      editable: isEditable(post.status),
      move: { date: local.toISODate(), time: local.toFormat('HH:mm'), zone: shown.zone },
      events: history.data.map((event) => describeEvent(event, post.thread.length > 0, shown.zone)),
      moreHistory: history.nextCursor ? `?history=${encodeURIComponent(history.nextCursor)}` : undefined,
      notice:
        post.status === 'pending_approval' && (req.query.created || req.query.saved)
          ? 'The post is submitted for approval: an editor approves or rejects it.'
          : shown.notice,
      problem: shown.problem && inReadersZone(shown.problem, shown.zone),
    },
    shown.status ?? 200,
    // The page follows a post that is being published (post.js).
    { connectOrigins: [] },
  );
}

interface Filter {
  status?: PostStatus;
  from?: string;
  to?: string;
  cursor?: string;
}

/** The list's filters from the address; a value that is not one refuses the page with 400. */
function readFilter(req: Request): Filter {
  const text = (name: string): string | undefined => {
    const value = req.query[name];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') throw new ValidationError(`Give ${name} once.`);
    return value;
  };
  const filter: Filter = {};
  const status = text('status');
  if (status !== undefined) {
    if (!(POST_STATUSES as readonly string[]).includes(status))
      throw new ValidationError(`There is no status "${status}".`);
    filter.status = status as PostStatus;
  }
  for (const name of ['from', 'to'] as const) {
    const day = text(name);
    if (day === undefined) continue;
    // A day of the calendar (2026-02-30 is none, though Date.parse takes it).
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || !DateTime.fromISO(day, { zone: 'UTC' }).isValid)
      throw new ValidationError(`${name} must be a date such as 2026-12-01.`);
    filter[name] = day;
  }
  const cursor = text('cursor');
  if (cursor !== undefined) filter.cursor = cursor;
  return filter;
}

function withoutCursor({ cursor: _cursor, ...filter }: Filter): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** A post as the pages show it: its times in words, its error, whether it can be scheduled again. */
function describe(post: PostBody, zone: string) {
  const time =
    post.status === 'published'
      ? `published ${formatTime(post.publishedAt ? new Date(post.publishedAt) : null, zone)}`
      : post.scheduledAt
        ? `${post.status === 'draft' ? 'was due' : 'due'} ${formatTime(new Date(post.scheduledAt), zone)}`
        : 'no time set';
  const releaseLink = webAddress(post.releaseUrl);
  // A thread's parts after the first, each with where it was published once it is.
  const parts = post.thread.map((part, index) => ({
    number: index + 2,
    content: part.content,
    media: part.mediaIds.length,
    releaseLink: webAddress(part.releaseUrl),
    published: part.releaseId !== null,
  }));
  // Its first comment, published after the thread, with where it was published once it is.
  const comment = post.firstComment && {
    content: post.firstComment.content,
    releaseLink: webAddress(post.firstComment.releaseUrl),
    published: post.firstComment.releaseId !== null,
  };
  return { ...post, time, releaseLink, parts, comment, canScheduleAgain: post.status === 'failed' };
}

/** Only a web address is a link: the network's answer is not trusted to be one. */
function webAddress(url: string | null | undefined): string | undefined {
  return url && /^https?:\/\//i.test(url) ? url : undefined;
}

function describeEvent(event: PostEventBody, threaded: boolean, zone: string) {
  // Without a thread, the one part recorded before the first comment is the post itself: no thread to name.
  const ownPart = event.type === 'part_published' && !threaded;
  const parts: string[] = [];
  if (event.attempt !== undefined) parts.push(`attempt ${event.attempt}`);
  if (event.part !== undefined && !ownPart) parts.push(`part ${event.part}`);
  if (event.reason) parts.push(event.reason);
  if (event.nextAttemptAt) parts.push(`next try ${formatTime(new Date(event.nextAttemptAt), zone)}`);
  if (event.error) parts.push(`${event.error.code}: ${event.error.message}`);
  if (event.note) parts.push(event.note);
  if (event.comment) parts.push(`“${event.comment}”`);
  return {
    ...event,
    what: ownPart ? 'Post published, before its first comment' : (EVENT_WORDS[event.type] ?? event.type),
    when: formatTime(new Date(event.at), zone),
    detail: parts.join(' · '),
  };
}
