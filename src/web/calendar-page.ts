import express, { type Request, type Response, type Router } from 'express';
import { DateTime } from 'luxon';
import { listChannels } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import { POST_STATUSES, type PostStatus } from '../core/contract.js';
import { DomainError, ValidationError } from '../core/errors.js';
import { renderPage } from '../pages/render.js';
import { field, safeNext, type BrowserCookies } from '../pages/visitor.js';
import { presentMedia } from '../media/library.js';
import type { MediaContext } from '../media/storage.js';
import { getPost, schedulePostAt } from '../posts/lifecycle.js';
import { listPostPage } from '../posts/list.js';
import type { PostBody } from '../posts/post-body.js';
import type { PostsContext } from '../posts/context.js';
import {
  anchorDay,
  layOutCalendar,
  wallClockInstant,
  type CalendarLayout,
  type CalendarView,
} from './calendar-view.js';
import { firstRunChecklist } from './first-run.js';
import { showPost } from './posts-pages.js';
import { signedIn } from './signed-in.js';
import { readTimeZone, timeZoneOptions } from './time-zone.js';

const PAGE_SIZE = 100;
/** A view shows at most this many posts; beyond, it says so and the channel filter narrows it. */
const MAX_POSTS = 1000;

type Query = Record<string, unknown>;

/**
 * The calendar: the organization's posts in a week or a month, in the reader's time zone, coloured by
 * status and filtered by channel. Dragging a post to another day or hour, or its "Move to…" form,
 * schedules it through the same code as `POST /public/v1/posts/{id}/schedule`.
 */
export function calendarPages(ctx: PostsContext & MediaContext, cookies: BrowserCookies): Router {
  const page: CalendarPage = { ctx, cookies };
  const router = express.Router();
  router.get('/calendar', (req, res) => showCalendar(page, req, res, req.query as Query));
  router.post('/posts/:id/move', (req, res) => movePost(page, req, res));
  return router;
}

interface CalendarPage {
  ctx: PostsContext & MediaContext;
  cookies: BrowserCookies;
}

/** Schedules a post at the day and time it was dragged or moved to, then shows the page it came from. */
async function movePost(page: CalendarPage, req: Request, res: Response): Promise<void> {
  const { ctx, cookies } = page;
  const { organization, actor } = signedIn(res);
  const postId = String(req.params.id);
  const back = safeNext(field(req, 'return'), '/calendar');
  const { zone } = readTimeZone(req, res, cookies);
  const at = wallClockInstant(field(req, 'date'), field(req, 'time'), zone);
  try {
    if (!at)
      throw new ValidationError('Choose a day and a time to move the post to.', [
        { path: 'scheduledAt', message: 'needs a day (YYYY-MM-DD) and a time (HH:MM)' },
      ]);
    await schedulePostAt(ctx, actor, postId, at);
  } catch (error) {
    if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
    const problem = `The post could not be moved: ${error.message}`;
    const url = new URL(back, 'http://page.invalid');
    if (url.pathname === '/calendar')
      return showCalendar(page, req, res, Object.fromEntries(url.searchParams), { problem }, error.status);
    return showPost(ctx, req, res, { organizationId: organization.id, postId, zone, problem, status: error.status });
  }
  const url = new URL(back, 'http://page.invalid');
  url.searchParams.set('moved', postId);
  res.redirect(303, `${url.pathname}${url.search}`);
}

async function showCalendar(
  { ctx, cookies }: CalendarPage,
  req: Request,
  res: Response,
  query: Query,
  extra: { problem?: string } = {},
  status = 200,
): Promise<void> {
  const { organization } = signedIn(res);
  const timeZone = readTimeZone(req, res, cookies);
  const view = readView(query.view);
  const channels = await listChannels(ctx.db, organization.id);
  const chosen = readChannels(query.channel, new Set(channels.map((channel) => channel.id)));
  const statuses = readStatuses(query.status);
  const now = ctx.clock.now();
  const anchor = anchorDay(query.date, timeZone.zone, now);
  const { layout, truncated } = await layOutPosts(ctx, organization.id, {
    view,
    anchor,
    now,
    channels,
    chosen,
    statuses,
  });
  const link = (changes: Query) =>
    `/calendar?${calendarQuery({ view, date: layout.anchor, channel: chosen, status: statuses, ...changes })}`;
  renderPage(
    res,
    '/web/templates/calendar',
    {
      title: 'Calendar',
      path: '/calendar',
      wide: true,
      scripts: ['calendar.js'],
      timeZone,
      zones: timeZoneOptions(timeZone.zone),
      layout,
      channels: channels.map((channel) => ({
        id: channel.id,
        name: channel.name,
        provider: channel.provider,
        checked: chosen.includes(channel.id),
      })),
      activeChannels: channels.filter((channel) => channel.status === 'active').length,
      chosen,
      statuses: POST_STATUSES.map((status) => ({ status, checked: statuses.includes(status) })),
      chosenStatuses: statuses,
      checklist: await firstRunChecklist(ctx.db, organization.id, channels),
      truncated,
      links: {
        previous: link({ date: layout.previous }),
        next: link({ date: layout.next }),
        today: link({ date: undefined }),
        week: link({ view: 'week' }),
        month: link({ view: 'month' }),
      },
      here: link({}),
      notice: await calendarNotice(ctx, organization.id, query, timeZone.zone),
      ...extra,
    },
    status,
  );
}

/** The week or month around `anchor` with the posts of the chosen channels (all when none is chosen) in it. */
async function layOutPosts(
  ctx: PostsContext & MediaContext,
  organizationId: string,
  shown: {
    view: CalendarView;
    anchor: DateTime;
    now: Date;
    channels: Channel[];
    chosen: string[];
    statuses: PostStatus[];
  },
): Promise<{ layout: CalendarLayout; truncated: boolean }> {
  const { view, anchor, now } = shown;
  const shell = layOutCalendar(view, anchor, [], now);
  const { posts, truncated } = await postsBetween(ctx, organizationId, shell, shown);
  const names = new Map(shown.channels.map((channel) => [channel.id, channel.name]));
  const thumbnails = await firstMedia(ctx, organizationId, posts);
  const entries = posts.map((post) => ({
    id: post.id,
    // The contract's status is open to values added later; this server writes the ones it knows.
    status: post.status,
    scheduledAt: new Date(post.scheduledAt!),
    channelName: names.get(post.channelId) ?? post.channelId,
    content: post.content,
    thumbnail: post.mediaIds[0] === undefined ? undefined : thumbnails.get(post.mediaIds[0]),
  }));
  return { layout: layOutCalendar(view, anchor, entries, now), truncated };
}

/** The first media of each post, by id: an image with a signed address to show it small, other kinds by name. */
async function firstMedia(
  ctx: PostsContext & MediaContext,
  organizationId: string,
  posts: PostBody[],
): Promise<Map<string, { kind: string; url: string | undefined; name: string }>> {
  const ids = [...new Set(posts.flatMap((post) => post.mediaIds.slice(0, 1)))];
  if (ids.length === 0) return new Map();
  const rows = await ctx.db
    .selectFrom('media')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .execute();
  const shown = await Promise.all(
    rows.map(async (media) => {
      const url = media.kind === 'image' ? (await presentMedia(ctx, media)).url : undefined;
      return [media.id, { kind: media.kind, url, name: media.file_name }] as const;
    }),
  );
  return new Map(shown);
}

/** What the page says after posts were created from the composer, or a post was moved. */
async function calendarNotice(
  ctx: PostsContext,
  organizationId: string,
  query: Query,
  zone: string,
): Promise<string | undefined> {
  if (typeof query.moved === 'string') return movedNotice(ctx, organizationId, query.moved, zone);
  return typeof query.created === 'string' && /^\d{1,3}$/.test(query.created)
    ? `${query.created} posts are created, one per channel.`
    : undefined;
}

async function movedNotice(
  ctx: PostsContext,
  organizationId: string,
  postId: string,
  zone: string,
): Promise<string | undefined> {
  const post = await getPost(ctx.db, organizationId, postId).catch(() => undefined);
  if (!post?.scheduled_at) return undefined;
  const when = DateTime.fromJSDate(post.scheduled_at, { zone }).toFormat('ccc d LLL yyyy, HH:mm');
  return `The post is ${post.status === 'scheduled' ? 'scheduled' : 'moved'} for ${when} (${zone}).`;
}

function readView(value: unknown): CalendarView {
  if (value === undefined || value === '' || value === 'week') return 'week';
  if (value === 'month') return 'month';
  throw new ValidationError('The calendar shows a week (view=week) or a month (view=month).');
}

/** The statuses to show, from the address (none: every status); one that is not a status is refused. */
function readStatuses(value: unknown): PostStatus[] {
  if (value === undefined || value === '') return [];
  const values = (Array.isArray(value) ? value : [value]).map(String);
  for (const status of values)
    if (!(POST_STATUSES as readonly string[]).includes(status))
      throw new ValidationError(`The calendar shows posts by status: ${POST_STATUSES.join(', ')}; not ${status}.`);
  return [...new Set(values)] as PostStatus[];
}

/** The channels to show, from the address; one that is not the organization's is refused rather than ignored. */
function readChannels(value: unknown, known: Set<string>): string[] {
  if (value === undefined || value === '') return [];
  const ids = (Array.isArray(value) ? value : [value]).map(String);
  for (const id of ids)
    if (!known.has(id)) throw new ValidationError(`There is no channel ${id} in this organization.`);
  return [...new Set(ids)];
}

function calendarQuery(values: {
  view: CalendarView;
  date: string | undefined;
  channel: string[];
  status: PostStatus[];
}): string {
  const query = new URLSearchParams();
  if (values.view !== 'week') query.set('view', values.view);
  if (values.date) query.set('date', values.date);
  for (const id of values.channel) query.append('channel', id);
  for (const status of values.status) query.append('status', status);
  return query.toString();
}

/** Every post due in `[start, end)`, through the same listing as `GET /public/v1/posts`, page by page. */
async function postsBetween(
  ctx: PostsContext,
  organizationId: string,
  { start, end }: { start: Date; end: Date },
  { chosen: channelIds, statuses }: { chosen: string[]; statuses: PostStatus[] },
): Promise<{ posts: PostBody[]; truncated: boolean }> {
  const posts: PostBody[] = [];
  let cursor: string | undefined;
  while (posts.length < MAX_POSTS) {
    const page = await listPostPage(ctx, organizationId, {
      limit: PAGE_SIZE,
      from: start.toISOString(),
      to: end.toISOString(),
      ...(channelIds.length > 0 ? { channelId: channelIds } : {}),
      ...(statuses.length > 0 ? { status: statuses } : {}),
      ...(cursor ? { cursor } : {}),
    });
    posts.push(...page.data);
    if (!page.nextCursor) return { posts, truncated: false };
    cursor = page.nextCursor;
  }
  return { posts, truncated: true };
}
