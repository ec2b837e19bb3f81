import express, { type Request, type Response, type Router } from 'express';
import { DateTime } from 'luxon';
import type { components } from '../../generated/public-v1.js';
import { listChannels } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import { ConflictError, DomainError, ValidationError, type ErrorDetail } from '../core/errors.js';
import { randomBase62 } from '../core/ids.js';
import type { Actor } from '../core/roles.js';
import type { RequestBodies } from '../http/request-bodies.js';
import type { MediaContext } from '../media/storage.js';
import { field, type BrowserCookies } from '../pages/visitor.js';
import { createPosts, createRuleProblems } from '../posts/create.js';
import { createSeries } from '../recurring/series.js';
import { editPost, editRuleProblems, getPost } from '../posts/lifecycle.js';
import type { PostsContext } from '../posts/context.js';
import { isEditable, isTooFarInThePast } from '../posts/transitions.js';
import { wallClockInstant } from './calendar-view.js';
import {
  emptyPart,
  partFieldId,
  partInput,
  placeErrors,
  publishedParts,
  readComposerForm,
  settingsFields,
  settingsFrom,
  unreadableUserTags,
  userTagImages,
  storedParts,
  type ComposerValues,
  type FieldErrors,
} from './composer-form.js';
import { commentCounters, countText, fittingLength, textCounters } from './composer-counts.js';
import { repeats, seriesRequest, type RepeatValues } from './composer-repeat.js';
import { ComposerView, type ComposerMode } from './composer-view.js';
import { signedIn } from './signed-in.js';
import { inPeoplesWords } from './composer-messages.js';
import { inReadersZone, readTimeZone } from './time-zone.js';

type CreatePostRequest = components['schemas']['CreatePostRequest'];
type UpdatePostRequest = components['schemas']['UpdatePostRequest'];
type Action = 'schedule' | 'now' | 'draft' | 'queue';
/** What a button asks of the form besides sending it: one part more, or one part fewer. */
type PartChange = { add: true } | { remove: number };

// A post and its thread: the contract's 24 parts after the first, and the first.
const MAX_COUNTED_TEXTS = 25;

// What the page generates per load; anything else in the field is not one of ours and is not used.
const IDEMPOTENCY_KEY = /^[A-Za-z0-9]{24}$/;

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
  const composer: Composer = { ctx, cookies, bodies, view: new ComposerView(ctx, cookies) };
  const router = express.Router();
  router.get('/compose', (req, res) => showNewPost(composer, req, res));
  router.post('/compose', (req, res) => createFromForm(composer, req, res));
  router.post('/compose/counts', express.json({ limit: '1mb' }), (req, res) => countTexts(composer, req, res));
  router.get('/posts/:id/edit', (req, res) => showEdit(composer, req, res));
  router.post('/posts/:id/edit', (req, res) => saveEdit(composer, req, res));
  return router;
}

interface Composer {
  ctx: PostsContext & MediaContext;
  cookies: BrowserCookies;
  bodies: RequestBodies;
  view: ComposerView;
}

/**
 * An empty composer, its date and time the next full hour, or those of the address (`?date=&time=`, from
 * a free slot of the calendar) when they are a day and a time.
 */
async function showNewPost({ ctx, cookies, view }: Composer, req: Request, res: Response): Promise<void> {
  const { zone } = readTimeZone(req, res, cookies);
  const start = DateTime.fromJSDate(ctx.clock.now(), { zone }).plus({ hours: 1 }).startOf('hour');
  const { date, time } = req.query;
  const asked = typeof date === 'string' && typeof time === 'string' && wallClockInstant(date, time, zone);
  const values: ComposerValues = {
    channels: [],
    parts: [emptyPart()],
    date: asked ? date : start.toISODate()!,
    time: asked ? time : start.toFormat('HH:mm'),
    settings: {},
    firstComment: '',
  };
  await view.show(req, res, { kind: 'create', idempotencyKey: randomBase62(24) }, values);
}

async function createFromForm({ ctx, cookies, bodies, view }: Composer, req: Request, res: Response): Promise<void> {
  const { organization, actor } = signedIn(res);
  const values = readComposerForm(req);
  const action = readAction(req);
  const key = field(req, 'idempotency_key');
  const mode: ComposerMode = { kind: 'create', idempotencyKey: IDEMPOTENCY_KEY.test(key) ? key : randomBase62(24) };
  if (typeof action === 'object') return changeParts(view, req, res, mode, values, action, 0);
  const { zone } = readTimeZone(req, res, cookies);
  const channels = await listChannels(ctx.db, organization.id);
  const body = createRequest(ctx, values, action, channels, wallClockInstant(values.date, values.time, zone));
  const names = new Map(channels.map((channel) => [channel.id, channel.name]));
  const tagImages = userTagImages(values, values.channels);
  const chosen = values.channels.map((id) => channels.find((channel) => channel.id === id) ?? { id, provider: '' });
  const network = (path: string) => {
    const item = /^posts\[(\d+)\]/.exec(path);
    const provider = item ? chosen[Number(item[1])]?.provider : undefined;
    return provider ? ctx.providers[provider as keyof typeof ctx.providers]?.name : undefined;
  };
  const refused = (details: ErrorDetail[], message?: string) =>
    placeErrors(
      details.map((detail) => inPeoplesWords(detail, network, zone)),
      values.channels,
      names,
      message && inReadersZone(message, zone),
      tagImages,
    );

  const unreadable = unreadableUserTags(values, chosen, (index) => `posts[${index}].`);
  if (repeats(values.repeat)) {
    return createSeriesFromForm({ ctx, bodies, view }, req, res, {
      mode,
      values,
      repeat: values.repeat,
      action,
      body: createRequest(ctx, values, 'schedule', channels, wallClockInstant(values.date, values.time, zone)),
      at: wallClockInstant(values.date, values.time, zone),
      zone,
      unreadable,
      refused,
      idempotencyKey: IDEMPOTENCY_KEY.test(key) ? key : undefined,
    });
  }
  const details = [...bodies.check('createPost', body), ...unreadable];
  // Every problem at once: the rules' too, but for the fields the contract already refused.
  if (details.length > 0) {
    const refusedPaths = new Set(details.map((detail) => detail.path));
    const rules = await createRuleProblems(ctx, organization.id, body);
    details.push(...rules.filter((detail) => !refusedPaths.has(detail.path)));
    return view.show(req, res, mode, values, refused(details), 400);
  }
  let created;
  try {
    created = await createPosts(ctx, actor, body, IDEMPOTENCY_KEY.test(key) ? key : undefined);
  } catch (error) {
    if (!shownOnForm(error)) throw error;
    return view.show(req, res, mode, values, refused(error.details ?? [], error.message), error.status);
  }
  const posts = created.body.data;
  if (posts.length === 1) return res.redirect(303, `/posts/${encodeURIComponent(posts[0]!.id)}?created=1`);
  const first = posts[0]?.scheduledAt ? DateTime.fromISO(posts[0].scheduledAt, { zone }).toISODate() : undefined;
  res.redirect(
    303,
    `/calendar?${new URLSearchParams({ ...(first ? { date: first } : {}), created: String(posts.length) }).toString()}`,
  );
}

interface SeriesForm {
  mode: ComposerMode;
  values: ComposerValues;
  repeat: RepeatValues;
  action: Action;
  /** The posts as a create of them at the time chosen: their items are the series'. */
  body: CreatePostRequest;
  at: Date | undefined;
  zone: string;
  unreadable: ErrorDetail[];
  refused: (details: ErrorDetail[], message?: string) => FieldErrors;
  /** The page load's key: the form sent twice makes one series. */
  idempotencyKey: string | undefined;
}

/**
 * A post that repeats: a series (`POST /public/v1/series`) of the form's posts, first at the time
 * chosen and counted in the reader's zone, checked in one round as a post is; then the series' page.
 * A series is scheduled: the other buttons are refused next to Repeat.
 */
async function createSeriesFromForm(
  { ctx, bodies, view }: Pick<Composer, 'ctx' | 'bodies' | 'view'>,
  req: Request,
  res: Response,
  form: SeriesForm,
): Promise<void> {
  const { organization, actor } = signedIn(res);
  const posts = 'posts' in form.body ? form.body.posts : [];
  const { request, problems } = seriesRequest(posts, form.repeat, form.at, form.zone);
  const details = [...problems, ...form.unreadable];
  if (form.action !== 'schedule') {
    details.push({
      path: 'rule',
      message:
        'A post that repeats is scheduled: choose Schedule, or Does not repeat to publish it now, add it to the ' +
        'queue or keep it as a draft.',
    });
  }
  if (!form.at) details.push({ path: 'date', message: "must have required property 'date'" });
  // Without a time, the one problem of the start is the one above.
  details.push(...bodies.check('createSeries', request).filter((detail) => form.at || detail.path !== 'startsAt'));
  if (details.length > 0) {
    const refusedPaths = new Set(details.map((detail) => detail.path));
    const rules = await createRuleProblems(ctx, organization.id, form.body);
    details.push(...rules.filter((detail) => !refusedPaths.has(detail.path)));
    return view.show(req, res, form.mode, form.values, form.refused(details), 400);
  }
  let series;
  try {
    series = await createSeries(ctx, actor, request, form.idempotencyKey);
  } catch (error) {
    if (!shownOnForm(error)) throw error;
    return view.show(req, res, form.mode, form.values, form.refused(error.details ?? [], error.message), error.status);
  }
  res.redirect(303, `/series/${encodeURIComponent(series.id)}?created=1`);
}

/**
 * The create the form asks for, as `POST /public/v1/posts` takes it: one post per chosen channel, its
 * thread the parts after the first, its first comment on the channels whose network takes comments (the
 * API refuses it elsewhere).
 */
function createRequest(
  ctx: PostsContext,
  values: ComposerValues,
  action: Action,
  channels: Channel[],
  at: Date | undefined,
): CreatePostRequest {
  const [own = emptyPart(), ...thread] = values.parts;
  return {
    type: action,
    ...(at && action !== 'now' && action !== 'queue' ? { date: at.toISOString() } : {}),
    posts: values.channels.map((channelId) => {
      const channel = channels.find((candidate) => candidate.id === channelId);
      const settings = channel ? settingsFrom(channel, values.settings[channelId]) : undefined;
      const takesAltText = channel !== undefined && ctx.providers[channel.provider].altTextMax !== undefined;
      const takesComment = channel !== undefined && ctx.providers[channel.provider].firstComment !== undefined;
      return {
        channelId,
        ...partInput(own, takesAltText),
        ...(settings ? { settings } : {}),
        ...(thread.length > 0 ? { thread: thread.map((part) => partInput(part, takesAltText)) } : {}),
        ...(takesComment && values.firstComment !== '' ? { firstComment: { content: values.firstComment } } : {}),
      };
    }),
  } as CreatePostRequest;
}

/**
 * The form again with a part added at its end (the page starts at its text), or one removed (the page
 * starts at Add to thread); nothing is saved. The parts already published stay.
 */
function changeParts(
  view: ComposerView,
  req: Request,
  res: Response,
  mode: ComposerMode,
  values: ComposerValues,
  change: PartChange,
  fixed: number,
): Promise<void> {
  if ('add' in change) {
    const parts = [...values.parts, emptyPart()];
    return view.show(req, res, mode, { ...values, parts }, undefined, 200, partFieldId(parts.length - 1, 'content'));
  }
  const removable = change.remove >= Math.max(fixed, 1) && change.remove < values.parts.length;
  const parts = removable ? values.parts.filter((_, i) => i !== change.remove) : values.parts;
  return view.show(req, res, mode, { ...values, parts }, undefined, 200, 'add-part');
}

/**
 * The page's live counts: each text (the parts, in order) as every counter of the organization's
 * channels counts it, by the counter's key, and the first comment as each network that takes comments
 * counts it, from the same rules as the counts the page is rendered with.
 */
async function countTexts({ ctx }: Composer, req: Request, res: Response): Promise<void> {
  const { organization } = signedIn(res);
  const { texts, comment = '' } = (req.body ?? {}) as { texts?: unknown; comment?: unknown };
  if (!Array.isArray(texts) || texts.length > MAX_COUNTED_TEXTS || !texts.every((t) => typeof t === 'string')) {
    throw new ValidationError(`The counts are asked for a list of at most ${MAX_COUNTED_TEXTS} texts.`);
  }
  if (typeof comment !== 'string') throw new ValidationError('The comment to count is a text.');
  const channels = await listChannels(ctx.db, organization.id);
  const counters = await textCounters(ctx.providers, channels);
  res.json({
    comment: Object.fromEntries(
      commentCounters(ctx.providers, channels).map((counter) => [
        counter.key,
        countText(counter.limit, comment.replace(/\r\n/g, '\n')),
      ]),
    ),
    counts: Object.fromEntries(
      counters.map((counter) => [
        counter.key,
        texts.map((text) => countText(counter.limit, text.replace(/\r\n/g, '\n'))),
      ]),
    ),
    // Where the preview cuts each text that is too long, in the text as the page holds it (line ends `\n`).
    fits: Object.fromEntries(
      counters.map((counter) => [
        counter.key,
        texts.map((text) => fittingLength(counter.limit, text.replace(/\r\n/g, '\n'))),
      ]),
    ),
  });
}

/** The composer holding a post as it is, its time in the reader's time zone. */
async function showEdit({ ctx, cookies, view }: Composer, req: Request, res: Response): Promise<void> {
  const { organization } = signedIn(res);
  const post = await getPost(ctx.db, organization.id, String(req.params.id));
  if (!isEditable(post.status)) throw new ConflictError(`A ${post.status} post cannot be edited.`);
  const { zone } = readTimeZone(req, res, cookies);
  const local = post.scheduled_at ? DateTime.fromJSDate(post.scheduled_at, { zone }) : undefined;
  const values: ComposerValues = {
    channels: [post.channel_id],
    parts: storedParts(post),
    date: local?.toISODate() ?? '',
    time: local?.toFormat('HH:mm') ?? '',
    settings: { [post.channel_id]: settingsFields(post) },
    firstComment: post.first_comment?.content ?? '',
  };
  await view.show(req, res, { kind: 'edit', post }, values);
}

async function saveEdit({ ctx, cookies, bodies, view }: Composer, req: Request, res: Response): Promise<void> {
  const { organization, actor } = signedIn(res);
  const post = await getPost(ctx.db, organization.id, String(req.params.id));
  // The parts already published are sent as they are, and a published comment not at all: the form shows
  // them without fields.
  const published = publishedParts(post);
  const commentPublished = post.first_comment !== null && post.first_comment.releaseId !== null;
  const form = readComposerForm(req, published);
  const values = {
    ...form,
    channels: [post.channel_id],
    firstComment: commentPublished ? post.first_comment!.content : form.firstComment,
  };
  const action = readAction(req);
  if (typeof action === 'object')
    return changeParts(view, req, res, { kind: 'edit', post }, values, action, published.length);
  if (action === 'queue') {
    throw new ValidationError('A post being edited is scheduled at a time; a new post can be added to the queue.');
  }
  const { zone } = readTimeZone(req, res, cookies);
  const channels = await listChannels(ctx.db, organization.id);
  const channel = channels.find((candidate) => candidate.id === post.channel_id);
  const settings = channel ? settingsFrom(channel, values.settings[post.channel_id]) : undefined;
  const takesAltText = ctx.providers[post.provider].altTextMax !== undefined;
  const takesComment = ctx.providers[post.provider].firstComment !== undefined && !commentPublished;
  const [own = emptyPart(), ...thread] = values.parts;
  const ownPart = partInput(own, takesAltText);
  const changes = {
    ...ownPart,
    // The alternative texts replace the old ones as a whole: none left is none.
    ...(takesAltText ? { altTexts: ownPart.altTexts ?? {} } : {}),
    thread: thread.map((part) => partInput(part, takesAltText)),
    ...(settings ? { settings } : {}),
    // An empty field is no comment: `null` removes the one the post had.
    ...(takesComment ? { firstComment: values.firstComment === '' ? null : { content: values.firstComment } } : {}),
  } as UpdatePostRequest;
  const at = wallClockInstant(values.date, values.time, zone);
  const names = new Map(channels.map((candidate) => [candidate.id, candidate.name]));
  const tagImages = userTagImages(values, values.channels);
  const details = [
    ...bodies.check('updatePost', changes),
    ...unreadableUserTags(values, channel ? [channel] : [], () => ''),
  ];
  if (action === 'schedule' && !at) details.push({ path: 'date', message: "must have required property 'date'" });
  const network = () => ctx.providers[post.provider].name;
  const inWords = (problems: ErrorDetail[]) => problems.map((detail) => inPeoplesWords(detail, network, zone));
  const contractRefused = details.length > 0;
  const now = ctx.clock.now();
  if (action === 'schedule' && at && isTooFarInThePast(at, now))
    details.push({ path: 'date', message: `is more than 1 minute in the past (it is ${now.toISOString()} now)` });
  if (details.length > 0) {
    // Every problem at once: the rules' too, but for the fields already refused.
    const refusedPaths = new Set(details.map((detail) => detail.path));
    const rules = await editRuleProblems(ctx, post, changes);
    details.push(...rules.filter((detail) => !refusedPaths.has(detail.path)));
    const errors = placeErrors(inWords(details), values.channels, names, undefined, tagImages);
    return view.show(req, res, { kind: 'edit', post }, values, errors, contractRefused ? 400 : 422);
  }
  try {
    await applyEdit(ctx, actor, post.id, changes, action, at);
  } catch (error) {
    if (!shownOnForm(error)) throw error;
    const current = await getPost(ctx.db, organization.id, post.id);
    const message = inReadersZone(error.message, zone);
    const errors = placeErrors(inWords(error.details ?? []), values.channels, names, message, tagImages);
    return view.show(req, res, { kind: 'edit', post: current }, values, errors, error.status);
  }
  res.redirect(303, `/posts/${encodeURIComponent(post.id)}?saved=1`);
}

/** Saves the changes, then makes the post a draft, or schedules it at `at` or now, as the button asked. */
async function applyEdit(
  ctx: PostsContext,
  actor: Actor,
  postId: string,
  changes: UpdatePostRequest,
  action: Action,
  at: Date | undefined,
): Promise<void> {
  if (action === 'draft') {
    await editPost(
      ctx,
      actor,
      postId,
      { ...changes, ...(at ? { scheduledAt: at.toISOString() } : {}) },
      { before: { status: 'draft' } },
    );
  } else {
    const scheduledAt = action === 'now' ? ctx.clock.now() : at!;
    await editPost(ctx, actor, postId, changes, { after: { status: 'scheduled', scheduledAt, path: 'date' } });
  }
}

function readAction(req: Request): Action | PartChange {
  const action = field(req, 'action') || 'schedule';
  if (action === 'schedule' || action === 'now' || action === 'draft' || action === 'queue') return action;
  if (action === 'add-part') return { add: true };
  const remove = /^remove-part-(\d{1,2})$/.exec(action);
  if (remove) return { remove: Number(remove[1]) };
  throw new ValidationError(
    'The form asks for something the composer does not do: schedule, publish now, add to the queue, save a draft, ' +
      'or add or remove a part of the thread.',
  );
}

/**
 * Refusals the composer shows on its form: the request's and the rules' (4xx), and a network that could
 * not be asked (502).
 */
function shownOnForm(error: unknown): error is DomainError {
  return (
    error instanceof DomainError && (error.status < 500 || error.code === 'provider_error') && error.status !== 404
  );
}
