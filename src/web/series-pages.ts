import express, { type Request, type Response, type Router } from 'express';
import { DateTime } from 'luxon';
import type { components } from '../../generated/public-v1.js';
import { listChannels } from '../channels/channels.js';
import { DomainError, UnprocessableError, type ErrorDetail } from '../core/errors.js';
import { formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { field, type BrowserCookies } from '../pages/visitor.js';
import type { PostsContext } from '../posts/context.js';
import { endSeries, getSeries, seriesOccurrences, splitSeries } from '../recurring/series.js';
import { confirmedOrAsk } from './confirm-first.js';
import { REPEAT_CHOICES, repeatRule, type RepeatValues } from './composer-repeat.js';
import { inPeoplesWords } from './composer-messages.js';
import { requirePermission, signedIn } from './signed-in.js';
import { inReadersZone, readTimeZone } from './time-zone.js';

type SeriesBody = components['schemas']['Series'];
type SplitSeriesRequest = components['schemas']['SplitSeriesRequest'];

/** How far back the page lists occurrences: the last week's, to see what became of them. */
const PAST_DAYS = 7;
/** The most occurrences the page lists before now and from now (an hourly series has hundreds). */
const PAST_LISTED = 10;
const UPCOMING_LISTED = 30;

/**
 * A series' page: its rule in words, its time zone, its posts, its occurrences with their status, and,
 * for those who may publish, *Change from an occurrence on* (`split`) and *End the series*, through the
 * same domain code as the Public API's.
 */
export function seriesPages(ctx: PostsContext, cookies: BrowserCookies): Router {
  const router = express.Router();
  router.post(['/series/:id/split', '/series/:id/end'], requirePermission('posts:publish', 'change recurring series'));

  router.get('/series/:id', async (req, res) => {
    const notice = req.query.created
      ? 'The series is created: its first occurrences are scheduled posts, and the next ones are made as time goes on.'
      : req.query.changed
        ? 'The series is changed from the occurrence chosen on: this is the series that continues it.'
        : req.query.ended
          ? 'The series is ended: no occurrence is made any more, and those still ahead are deleted.'
          : undefined;
    await showSeries(ctx, req, res, readTimeZone(req, res, cookies).zone, { notice });
  });

  router.post('/series/:id/split', async (req, res) => {
    const { actor, organization } = signedIn(res);
    const { zone } = readTimeZone(req, res, cookies);
    const current = await getSeries(ctx, organization.id, String(req.params.id));
    const from = field(req, 'from');
    const repeat: RepeatValues = { choice: field(req, 'repeat'), rule: field(req, 'repeat_rule'), until: '' };
    const content = field(req, 'content').replace(/\r\n/g, '\n');
    const start = Date.parse(from);
    const request: SplitSeriesRequest = {
      from,
      ...(repeat.choice === ''
        ? {}
        : { rule: repeatRule(repeat, DateTime.fromMillis(start, { zone: current.timeZone })) }),
      // The text of every channel's post, when the series has one text for all of them.
      ...(sharedContent(current) !== undefined && content !== sharedContent(current)
        ? { posts: current.posts.map((post) => ({ ...post, content })) }
        : {}),
    };
    try {
      if (Number.isNaN(start))
        throw new UnprocessableError('Choose the occurrence to change from.', [
          { path: 'from', message: 'is not an occurrence' },
        ]);
      const next = await splitSeries(ctx, actor, current.id, request);
      res.redirect(303, `/series/${encodeURIComponent(next.id)}?changed=1`);
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
      const problems = (error.details ?? []).map((detail) => inPeoplesWords(detail, () => undefined, zone));
      await showSeries(ctx, req, res, zone, {
        problem: `The series could not be changed: ${describeProblems(error.message, problems)}`,
        status: error.status,
        form: { from, repeat, content },
      });
    }
  });

  router.post('/series/:id/end', async (req, res) => {
    const { actor, organization } = signedIn(res);
    const series = await getSeries(ctx, organization.id, String(req.params.id));
    const confirmation = {
      question: 'End this series?',
      consequence:
        'No occurrence is made any more, and the posts of the occurrences still ahead are deleted; the ones ' +
        'published stay. This cannot be undone: a new series starts again.',
      button: 'End the series',
      back: `/series/${encodeURIComponent(series.id)}`,
      path: '/posts',
    };
    if (!confirmedOrAsk(req, res, confirmation)) return;
    await endSeries(ctx, actor, series.id);
    res.redirect(303, `/series/${encodeURIComponent(series.id)}?ended=1`);
  });

  return router;
}

/** The one text of every channel's post of the series, if they share one. */
function sharedContent(series: SeriesBody): string | undefined {
  const [first, ...others] = series.posts;
  return first && others.every((post) => post.content === first.content) ? first.content : undefined;
}

function describeProblems(message: string, problems: ErrorDetail[]): string {
  if (problems.length === 0) return message;
  const names: Record<string, string> = { from: 'From', rule: 'Repeat', timeZone: 'Time zone' };
  return problems
    .map(
      (problem) =>
        `${names[problem.path] ?? (problem.path.replace(/^posts\[\d+\]\.?/, '') || 'Posts')}: ${problem.message}`,
    )
    .join(' ');
}

interface SeriesPageState {
  notice?: string | undefined;
  problem?: string;
  status?: number;
  /** What the change form held when it was refused. */
  form?: { from: string; repeat: RepeatValues; content: string };
}

async function showSeries(
  ctx: PostsContext,
  req: Request,
  res: Response,
  zone: string,
  state: SeriesPageState,
): Promise<void> {
  const { organization } = signedIn(res);
  const series = await getSeries(ctx, organization.id, String(req.params.id));
  const now = ctx.clock.now();
  const since = new Date(now.getTime() - PAST_DAYS * 86_400_000);
  const [occurrences, channels] = await Promise.all([
    seriesOccurrences(ctx.db, organization.id, series.id, {
      now,
      since,
      past: PAST_LISTED,
      upcoming: UPCOMING_LISTED,
    }),
    listChannels(ctx.db, organization.id),
  ]);
  const channelName = (id: string) => channels.find((channel) => channel.id === id)?.name ?? id;
  const ended = series.endsAt !== null && Date.parse(series.endsAt) <= now.getTime();
  const content = sharedContent(series);
  renderPage(
    res,
    '/web/templates/series',
    {
      title: 'Series',
      path: '/posts',
      series: {
        ...series,
        starts: formatTime(new Date(series.startsAt), zone),
        ends: series.endsAt ? formatTime(new Date(series.endsAt), zone) : undefined,
        ended,
        posts: series.posts.map((post) => ({ channel: channelName(post.channelId), content: post.content })),
        next: series.nextOccurrences.map((at) => ({ at, when: formatTime(new Date(at), zone) })),
      },
      occurrences: occurrences.posts.map((post) => ({
        id: post.id,
        channel: channelName(post.channelId),
        status: post.status,
        when: formatTime(post.scheduledAt ?? post.occurrenceAt, zone),
        moved: post.scheduledAt !== null && post.scheduledAt.getTime() !== post.occurrenceAt.getTime(),
      })),
      continuedBy: occurrences.continuedBy,
      zone,
      repeatChoices: REPEAT_CHOICES.filter((choice) => choice.value !== ''),
      form: state.form ?? {
        from: series.nextOccurrences[0] ?? '',
        repeat: { choice: '', rule: '', until: '' },
        content,
      },
      sharedContent: content !== undefined,
      notice: state.notice,
      problem: state.problem && inReadersZone(state.problem, zone),
    },
    state.status ?? 200,
  );
}
