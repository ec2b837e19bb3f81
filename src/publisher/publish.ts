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
  type PublishingAdapter,
  type StepResult,
} from '../providers/publishing-contract.js';
import { plainText } from '../providers/network-text.js';
import type { ClaimedPost, RecordedProgress } from './ledger.js';
import { loadProgress, saveProgress } from './ledger.js';

/** How a run of an attempt ended: an outcome, or a reason to go on later. */
export type RunResult =
  | Outcome
  /**
   * A passing failure: retried after a wait (counted). `maybeDelivered` when an irreversible step
   * got no answer (it may have got through): the next run asks the network before anything else.
   */
  | { status: 'retry'; reason: string; maybeDelivered: boolean; retryAfterSeconds?: number; logId?: string }
  /** The network is still processing it: asked again after a wait (not counted as a failure). */
  | { status: 'pending'; checkAgainInSeconds: number };

const failure = (code: string, message: string, logId?: string): Outcome => ({
  status: 'failed',
  code,
  message,
  ...(logId ? { logId } : {}),
});

/** The media of a post as an adapter reads them, with signed URLs valid for `urlSeconds`. */
export async function publishableMedia(
  ctx: MediaContext,
  post: ClaimedPost,
  urlSeconds: number,
): Promise<PublishableMedia[] | undefined> {
  if (post.media_ids.length === 0) return [];
  const rows = await ctx.db
    .selectFrom('media')
    .selectAll()
    .where('organization_id', '=', post.organization_id)
    .where('id', 'in', post.media_ids)
    .execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  const expiresAt = new Date(Math.floor(ctx.clock.now().getTime() / 1000) * 1000 + urlSeconds * 1000);
  const media: PublishableMedia[] = [];
  for (const id of post.media_ids) {
    const row = byId.get(id);
    if (!row) return undefined;
    const contentType = row.content_type as MediaContentType;
    media.push({
      id: row.id,
      fileName: row.file_name,
      contentType,
      kind: row.kind,
      size: Number(row.size),
      url: await ctx.storage.signedGetUrl(row.storage_key, { contentType, expiresAt }),
      open: (range) => ctx.storage.get(row.storage_key, range),
    });
  }
  return media;
}

/**
 * Runs an attempt from where it stands, step by step: each step's progress is recorded before the
 * next runs, a step marked irreversible before it runs. An attempt that may have crossed its
 * irreversible point (it was recorded there by an earlier run: the worker stopped or died, or the
 * call got no answer) is never simply run again: the network is asked first what became of it, and
 * only a network that knows nothing of it lets the step run again.
 */
export async function runAttempt(
  ctx: { db: Db; clock: Clock },
  adapter: PublishingAdapter,
  post: ClaimedPost,
  input: PublicationInput,
): Promise<RunResult> {
  return inWords(await runSteps(ctx, adapter, post, input));
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

async function runSteps(
  { db, clock }: { db: Db; clock: Clock },
  adapter: PublishingAdapter,
  post: ClaimedPost,
  input: PublicationInput,
): Promise<RunResult> {
  // A new attempt has recorded nothing yet; one taken over may have.
  const recorded: RecordedProgress | undefined =
    post.previous_status === 'scheduled' ? undefined : await loadProgress(db, post.id, post.publish_attempt);
  let progress: Progress = recorded ?? adapter.start(input);
  if (!recorded) await saveProgress(db, post, progress, clock.now());

  if (recorded?.irreversible) {
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
    // Nothing was published: the step may run again.
    if (found.status !== 'absent') return found;
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
    if ('pending' in result) return { status: 'pending', checkAgainInSeconds: result.pending.checkAgainInSeconds };
    if ('restart' in result) {
      // Counted as a passing failure, so that starting over cannot go on for ever; the next run begins
      // at the first step, which a network limiting its starts counts as one (see the worker's mayStart).
      await saveProgress(db, post, adapter.start(input), clock.now());
      return { status: 'retry', reason: result.restart.reason, maybeDelivered: false };
    }
    progress = result.next;
    await saveProgress(db, post, progress, clock.now());
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
  media: PublishableMedia[] | undefined,
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
  if (!media) return failure('media_missing', 'A media file of the post is gone; edit the post and schedule it again.');
  return undefined;
}
