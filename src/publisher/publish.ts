import type { Channel } from '../channels/tables.js';
import type { Clock } from '../core/clock.js';
import type { Db } from '../db/database.js';
import type { MediaContext } from '../media/storage.js';
import type { MediaContentType } from '../core/contract.js';
import {
  PermanentPublishError,
  PublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishedPart,
  type PublishingAdapter,
  type StepResult,
} from '../providers/publishing-contract.js';
import { plainText } from '../providers/network-text.js';
import type { ClaimedPost } from './ledger.js';
import { isComment, partsOf } from './parts.js';
import { loadProgress, recordPartPublished, saveProgress } from './ledger.js';

/** How a run of an attempt ended: an outcome, or a reason to go on later. */
export type RunResult =
  | Outcome
  /**
   * A passing failure: retried after a wait (counted). `maybeDelivered` when an irreversible step
   * got no answer (it may have got through): the next run asks the network before anything else.
   */
  | { status: 'retry'; reason: string; maybeDelivered: boolean; retryAfterSeconds?: number; logId?: string }
  /**
   * The network is still processing it, or (`forQuota`) its publishing limit is used up: asked again
   * after a wait (not counted as a failure).
   */
  | { status: 'pending'; checkAgainInSeconds: number; forQuota?: boolean };

const failure = (code: string, message: string, logId?: string): Outcome => ({
  status: 'failed',
  code,
  message,
  ...(logId ? { logId } : {}),
});

/**
 * The media of a post or of one part of its thread as an adapter reads them, with signed URLs valid
 * for `urlSeconds`; `undefined` when one of them is gone.
 */
export async function publishableMedia(
  ctx: MediaContext,
  organizationId: string,
  mediaIds: string[],
  urlSeconds: number,
  altTexts: Record<string, string> = {},
): Promise<PublishableMedia[] | undefined> {
  if (mediaIds.length === 0) return [];
  const rows = await ctx.db
    .selectFrom('media')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', mediaIds)
    .execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  const expiresAt = new Date(Math.floor(ctx.clock.now().getTime() / 1000) * 1000 + urlSeconds * 1000);
  const media: PublishableMedia[] = [];
  for (const id of mediaIds) {
    const row = byId.get(id);
    if (!row) return undefined;
    const contentType = row.content_type as MediaContentType;
    media.push({
      id: row.id,
      fileName: row.file_name,
      contentType,
      kind: row.kind,
      size: Number(row.size),
      ...(altTexts[id] === undefined ? {} : { altText: altTexts[id] }),
      url: await ctx.storage.signedGetUrl(row.storage_key, { contentType, expiresAt }),
      open: (range) => ctx.storage.get(row.storage_key, range),
    });
  }
  return media;
}

/**
 * Where a part goes besides the post's own: a reply in its thread, or the first comment on it.
 */
export type Placement = Pick<PublicationInput, 'reply' | 'comment'>;

/**
 * What a part of the post sends: part 0 is the post's own content, part 1 its first thread part …,
 * and after the thread its first comment, if it has one; with the published parts it replies to or
 * comments on. `undefined` when a media file of the part is gone.
 */
export type PartInput = (part: number, placement: Placement | undefined) => Promise<PublicationInput | undefined>;

/**
 * Runs an attempt from where it stands, step by step: each step's progress is recorded before the
 * next runs, a step marked irreversible before it runs. An attempt that may have crossed its
 * irreversible point (it was recorded there by an earlier run: the worker stopped or died, or the
 * call got no answer) is never simply run again: the network is asked first what became of it, and
 * only a network that knows nothing of it lets the step run again.
 *
 * A thread is published part after part, each a reply to the one before, with its own steps and
 * irreversible point; a published part is recorded, with the first step of the next, before the
 * next one runs (see `recordPartPublished`). An attempt begins at the first part not published yet,
 * so a thread that failed midway and is scheduled again goes on where it stopped.
 */
export async function runAttempt(
  ctx: { db: Db; clock: Clock },
  adapter: PublishingAdapter,
  post: ClaimedPost,
  worker: string,
  inputOf: PartInput,
): Promise<RunResult> {
  const parts = partsOf(post);
  // A new attempt has recorded nothing yet; one taken over may have.
  const recorded =
    post.previous_status === 'scheduled' ? undefined : await loadProgress(ctx.db, post.id, post.publish_attempt);
  // A recorded step of a part already published is behind (its next part had a media file gone).
  const first = firstUnpublishedPart(post);
  let part = recorded && recorded.part >= first ? recorded.part : first;
  // The part's progress as an earlier run recorded it (asked about if irreversible), or as this run
  // recorded it with the part before (its first step, not run yet).
  let resume: { progress: Progress; byThisRun: boolean } | undefined =
    recorded?.part === part ? { progress: recorded, byThisRun: false } : undefined;
  for (;;) {
    // Every part is published: a worker stopped after recording the last one.
    if (part >= parts) return publishedPost(post);
    const input = await inputOf(part, placementOf(post, part));
    if (!input) return inThread(mediaMissing(), post, part);
    const result = inWords(await runSteps(ctx, adapter, post, input, part, resume));
    if (result.status !== 'published' || parts === 1) return inThread(result, post, part);
    const release = { releaseId: result.releaseId, releaseUrl: result.releaseUrl, reference: result.reference ?? {} };
    const next =
      part + 1 < parts ? await inputOf(part + 1, placementOf(withPart(post, part, release), part + 1)) : undefined;
    const start = next && adapter.start(next);
    resume = start && { progress: start, byThisRun: true };
    const saved = await recordPartPublished(ctx.db, post, worker, part, release, start, ctx.clock.now());
    if (!saved) return { status: 'retry', reason: 'the worker lost its hold on the post', maybeDelivered: false };
    // The held post follows what was recorded: the next parts reply to it, and its outcome keeps it.
    Object.assign(post, saved);
    if (part + 1 < parts && !next) return inThread(mediaMissing(), post, part + 1);
    part += 1;
  }
}

/** The first part of the post not published yet: 0 for a post none of which went out. */
function firstUnpublishedPart(post: ClaimedPost): number {
  if (post.release_id === null) return 0;
  const index = post.thread.findIndex((part) => part.releaseId === null);
  if (index !== -1) return index + 1;
  return post.first_comment && post.first_comment.releaseId === null ? post.thread.length + 1 : partsOf(post);
}

/** A published part as a reply names it: the post's own (0) or a thread part's. */
function publishedPart(post: ClaimedPost, part: number): PublishedPart {
  if (part === 0) {
    return { releaseId: post.release_id!, releaseUrl: post.release_url, reference: post.release_reference ?? {} };
  }
  const stored = post.thread[part - 1]!;
  return { releaseId: stored.releaseId!, releaseUrl: stored.releaseUrl, reference: stored.reference ?? {} };
}

/** Where part `part` goes: a reply to the part before, or the first comment on the post; nothing for the post's own. */
function placementOf(post: ClaimedPost, part: number): Placement | undefined {
  if (part === 0) return undefined;
  if (isComment(post, part)) return { comment: { on: publishedPart(post, 0), part: part + 1 } };
  return {
    reply: {
      part: part + 1,
      parts: post.thread.length + 1,
      root: publishedPart(post, 0),
      parent: publishedPart(post, part - 1),
    },
  };
}

/** The post with part `part` published at `release`, as `recordPartPublished` writes it. */
function withPart(post: ClaimedPost, part: number, release: PublishedPart): ClaimedPost {
  if (part === 0) {
    return {
      ...post,
      release_id: release.releaseId,
      release_url: release.releaseUrl,
      release_reference: release.reference,
    };
  }
  if (isComment(post, part)) return { ...post, first_comment: { ...post.first_comment!, ...release } };
  return { ...post, thread: post.thread.map((stored, i) => (i === part - 1 ? { ...stored, ...release } : stored)) };
}

/** A thread whose every part is published: the post is published where its first part is. */
function publishedPost(post: ClaimedPost): Outcome {
  return { status: 'published', releaseId: post.release_id!, releaseUrl: post.release_url };
}

function mediaMissing(): Outcome {
  return failure('media_missing', 'A media file of the post is gone; edit the post and schedule it again.');
}

/**
 * How a part's run ends for the post. A single post's as it is. A thread's last part published makes
 * the post published where its first part is; a part that fails says which it was, and that the
 * parts before it stay published. A first comment that fails leaves the post on the network.
 */
function inThread(result: RunResult, post: ClaimedPost, part: number): RunResult {
  if (isComment(post, part)) {
    if (result.status === 'failed')
      return {
        ...result,
        // The comment may be on the network: scheduling again would send it again.
        message:
          result.code === 'outcome_unknown'
            ? `The first comment may have been published: ${result.message} The post is published; check its ` +
              'comments on the network before scheduling it again, which sends the comment again.'
            : `The first comment was not published: ${result.message} The post is published; ` +
              'scheduling it again publishes the comment only.',
      };
    return result.status === 'retry' ? { ...result, reason: `the first comment: ${result.reason}` } : result;
  }
  // The post's own part of a post without a thread (a first comment may follow): a single post's words.
  const threadParts = post.thread.length + 1;
  if (threadParts === 1) return result;
  const which = `part ${part + 1} of ${threadParts}`;
  switch (result.status) {
    case 'published':
      return result;
    case 'failed': {
      const unknown = result.code === 'outcome_unknown';
      const before =
        part === 0
          ? ''
          : ` The parts before it are published; scheduling the post again goes on from part ${part + 1}` +
            (unknown ? ', sending it again: check the thread on the network first.' : '.');
      const what = unknown ? 'may have been published' : 'was not published';
      return { ...result, message: `The thread's ${which} ${what}: ${result.message}${before}` };
    }
    case 'retry':
      return { ...result, reason: `${which}: ${result.reason}` };
    case 'pending':
      return result;
  }
}

/**
 * A run's result with the networks' words in it as plain text: a network's message becomes the post's
 * error or a retry's reason, which are stored and shown as text, and some networks write HTML.
 */
function inWords(result: RunResult): RunResult {
  if (result.status === 'failed') return { ...result, message: plainText(result.message) };
  if (result.status === 'retry') return { ...result, reason: plainText(result.reason) };
  return result;
}

/**
 * Runs the steps of one part, from its recorded progress or from its first step. A step an earlier run
 * recorded as irreversible may have got through: the network is asked first. One this run recorded
 * (the next part's first step, with the part before) has not run yet.
 */
async function runSteps(
  { db, clock }: { db: Db; clock: Clock },
  adapter: PublishingAdapter,
  post: ClaimedPost,
  input: PublicationInput,
  part: number,
  resume: { progress: Progress; byThisRun: boolean } | undefined,
): Promise<RunResult> {
  let progress: Progress = resume?.progress ?? adapter.start(input);
  if (!resume) await saveProgress(db, post, progress, clock.now(), part);

  if (resume && !resume.byThisRun && progress.irreversible) {
    let found: Lookup;
    try {
      found = await adapter.lookup(input, progress);
    } catch (error) {
      if (error instanceof TransientPublishError) return retryOf(error, true);
      return outcomeUnknown(
        `asking the network about it failed: ${(error as Error).message}`,
        error instanceof PublishError ? error.logId : undefined,
      );
    }
    if (found.status === 'unknown') return outcomeUnknown(found.message, found.logId);
    // Nothing was published: the step may run again, as the network's adapter records it anew.
    if (found.status !== 'absent') return found;
    if (found.again) {
      progress = found.again;
      await saveProgress(db, post, progress, clock.now(), part);
    }
  }

  for (;;) {
    let result: StepResult;
    try {
      result = await adapter.run(input, progress);
    } catch (error) {
      if (error instanceof ReconnectNeededError) {
        return failure(
          'channel_needs_reconnect',
          `The network refused the channel's credentials (${error.message}). ` +
            'Reconnect the channel, then schedule the post again.',
          error.logId,
        );
      }
      if (error instanceof PermanentPublishError) return failure(error.code, error.message, error.logId);
      // A refusal the network answered leaves nothing behind; silence after an irreversible step might.
      return retryOf(error, progress.irreversible && !(error instanceof TransientPublishError && error.answered));
    }
    if ('outcome' in result) return result.outcome;
    if ('pending' in result) return { status: 'pending', ...result.pending };
    if ('restart' in result) {
      // Counted as a passing failure, so that starting over cannot go on for ever; the next run begins
      // at the first step, which a network limiting its starts counts as one (see the worker's mayStart).
      await saveProgress(db, post, adapter.start(input), clock.now(), part);
      return { status: 'retry', reason: result.restart.reason, maybeDelivered: false };
    }
    progress = result.next;
    await saveProgress(db, post, progress, clock.now(), part);
  }
}

/** The post was sent, and nobody can tell whether it was published: never sent again on our own. */
export function outcomeUnknown(why: string, logId?: string): Outcome {
  return failure(
    'outcome_unknown',
    `The post was sent to the network, which cannot tell whether it was published (${why}). ` +
      'Check the channel before scheduling it again.',
    logId,
  );
}

function retryOf(error: unknown, maybeDelivered: boolean): RunResult {
  if (error instanceof Error && error.name === 'AbortError') throw error;
  const reason =
    error instanceof TransientPublishError
      ? error.message
      : `the publication failed unexpectedly (${(error as Error).message})`;
  return {
    status: 'retry',
    reason: maybeDelivered
      ? `${reason}; the network is asked what became of the post before anything is sent again`
      : reason,
    maybeDelivered,
    ...(error instanceof TransientPublishError && error.retryAfterSeconds !== undefined
      ? { retryAfterSeconds: error.retryAfterSeconds }
      : {}),
    ...(error instanceof PublishError && error.logId ? { logId: error.logId } : {}),
  };
}

/** Why a post cannot be published at all, before anything is sent. */
export function precondition(
  adapter: PublishingAdapter | undefined,
  channel: Channel | undefined,
): Outcome | undefined {
  if (!channel) return failure('channel_disabled', 'The channel of the post no longer exists.');
  if (channel.status === 'needs_reconnect') {
    return failure(
      'channel_needs_reconnect',
      `The channel ${channel.name} needs to be connected again (the network refused its credentials). ` +
        'Reconnect it, then schedule the post again.',
    );
  }
  if (channel.status === 'removed')
    return failure('channel_disabled', `The channel ${channel.name} was removed after the post was scheduled.`);
  if (channel.status === 'disabled')
    return failure(
      'channel_disabled',
      `The channel ${channel.name} was disabled after the post was scheduled; enable it, then schedule the post again.`,
    );
  if (!adapter)
    return failure(
      'provider_not_configured',
      `This server has no ${channel.provider} app configured, so it cannot publish to ${channel.provider}; ` +
        'ask its operator.',
    );
  return undefined;
}
