import { randomBytes } from 'node:crypto';
import { markNeedsReconnect } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import type { PublicationOutcome } from '../core/metrics.js';
import type { JobConsumer } from '../jobs/consumer.js';
import type { JobQueue, Jobs } from '../jobs/queue.js';
import type { MediaContext } from '../media/storage.js';
import { recordPostEvent } from '../posts/events.js';
import type { Outcome } from '../providers/publishing-contract.js';
import { allNetworks, type ProvidersContext } from '../providers/registry.js';
import { isMissedOccurrence, skipMissedOccurrences } from './missed-occurrences.js';
import {
  claimPosts,
  countRetry,
  heldUntil,
  loadPosts,
  loadProgress,
  postsWithoutLiveJob,
  releasedAmong,
  renewLease,
  settleHeldPost,
  updateHeldPost,
  type ChangeEvent,
  type ClaimedPost,
  type LoadedPost,
} from './ledger.js';
import { nextStep, type NextStep } from './next-step.js';
import { isComment } from './parts.js';
import { precondition, publishableMedia, runAttempt, type RunResult } from './publish.js';
import { takeStart } from './start-limit.js';
import { transaction } from '../db/transaction.js';

/** A post read for a job of a fetched batch: whether its channel may start it now, and the claim if it was taken. */
interface Prepared {
  loaded: LoadedPost;
  allowed: boolean;
  claimed?: ClaimedPost;
}

/** What the publisher is built from. */
export interface PublisherContext extends MediaContext, ProvidersContext {
  queue: JobQueue;
}

export interface PublisherSettings {
  /** Publications this worker runs at once (they wait on the networks, not on the CPU). */
  concurrency: number;
  /** How often the worker looks for posts that fell due. */
  pollingIntervalSeconds: number;
  /** Base of the retry delays of passing failures (× 1, 6, 24, 120, 360). */
  retryBaseMs: number;
  /** How long a worker holds a post it publishes before it must renew its hold. */
  leaseMs: number;
}

const PUBLISH = 'publish-post';
const RECONCILE = 'reconcile-publications';
// pg-boss's shortest heartbeat: a job whose worker died is given back after it.
const HEARTBEAT_SECONDS = 10;

/**
 * The publisher's queues, as pg-boss keeps them. Crash safety does not rest on pg-boss's retries
 * (the post row and its lease do), but a job whose worker died is given back once its heartbeat
 * stops, so its post is looked at again soon.
 */
export const PUBLISHER_QUEUES = [
  {
    name: PUBLISH,
    options: { retryLimit: 5, retryDelay: 5, heartbeatSeconds: HEARTBEAT_SECONDS, expireInSeconds: 6 * 3600 },
  },
  { name: RECONCILE, options: { retryLimit: 0 } },
] as const;
// A post is left to its own job this long after it is due before reconciliation plans another.
const RECONCILE_GRACE_SECONDS = 60;
const RECONCILE_BATCH = 1000;
// Once the grace period is over, how long the let-go publications get to hand back their jobs.
const LET_GO_MS = 5000;
// Signed media URLs handed to networks that pull the bytes live this long.
const MEDIA_URL_SECONDS = 6 * 3600;

/**
 * The publishing worker: takes due posts from the queue and publishes each through its network's
 * adapter, at most once on the network (see runAttempt), writing every change of the post as an
 * event in the same transaction.
 */
export class Publisher {
  /** This worker's name on the leases it takes. */
  readonly id = `worker-${randomBytes(6).toString('hex')}`;
  private readonly running = new Map<string, AbortController>();
  /** Posts of the batch of jobs being handed out, read and claimed together (see prepare), by id. */
  private readonly prepared = new Map<string, Prepared>();
  private consumer: JobConsumer<Jobs['publish-post']> | undefined;
  private stopping = false;

  constructor(
    private readonly ctx: PublisherContext,
    private readonly settings: PublisherSettings,
  ) {}

  async start(): Promise<void> {
    const tiers = Object.fromEntries(
      allNetworks(this.ctx.providers).flatMap((network) =>
        network.publishing ? [[network.provider, network.publishing.limits.concurrencyPerChannel]] : [],
      ),
    );
    this.consumer = this.ctx.queue.consume(
      PUBLISH,
      {
        capacity: this.settings.concurrency,
        pollingIntervalSeconds: this.settings.pollingIntervalSeconds,
        heartbeatSeconds: HEARTBEAT_SECONDS,
        // Never more publications of one channel at once than its network allows, across all workers.
        groupConcurrency: { default: 1, tiers },
        prepare: (jobs) => this.prepare(jobs.map((job) => job.data.postId)),
      },
      (job) => this.publish(job.data.postId),
    );
    await this.ctx.queue.work(RECONCILE, { pollingIntervalSeconds: 5 }, () => this.reconcile());
    await this.ctx.queue.schedule(RECONCILE, '* * * * *');
  }

  /**
   * Stops taking jobs and lets the running publications finish for up to `graceMs`; the ones still
   * running then are stopped and let go, so that another worker takes them at once (an attempt that
   * had not reached its irreversible point is scheduled again; one that had is asked about).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const consumerStopped = this.consumer?.stop(graceMs + LET_GO_MS);
    // Measured on the monotonic timer: a grace period is a duration, not an instant of the service's clock.
    const deadline = performance.now() + graceMs;
    while (this.running.size > 0 && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    for (const [postId, controller] of this.running) {
      controller.abort();
      await this.letGo(postId).catch((error: unknown) =>
        this.ctx.logger.error({ err: error, postId }, 'could not let go of a post'),
      );
    }
    await consumerStopped;
  }

  /**
   * Reads and claims the posts of a fetched batch of jobs together, in two statements rather than two
   * per post; each job's `publish` then goes on with its post.
   */
  async prepare(postIds: string[]): Promise<void> {
    if (this.stopping) return;
    const ids = [...new Set(postIds)].filter((id) => !this.running.has(id) && !this.prepared.has(id));
    const batch = new Map<string, Prepared>();
    for (const loaded of await loadPosts(this.ctx.db, ids))
      batch.set(loaded.post.id, { loaded, allowed: await this.mayStart(loaded) });
    const allowed = [...batch.values()].filter((entry) => entry.allowed).map((entry) => entry.loaded);
    const claimed = await this.claim(allowed);
    for (const [id, entry] of batch) this.prepared.set(id, { ...entry, claimed: claimed.get(id) });
  }

  /** One job: publish the post if it is due and free, go on with it, or find out what became of it. */
  async publish(postId: string): Promise<void> {
    const prepared = this.prepared.get(postId);
    this.prepared.delete(postId);
    if (this.running.has(postId)) return;
    // A job fetched as the worker stops is handed back for another worker, not dropped.
    if (this.stopping) return prepared?.claimed ? this.letGo(postId) : this.replan(postId);
    // In `running` from here, so that stop() lets go of a post claimed while it stops.
    const controller = new AbortController();
    this.running.set(postId, controller);
    let renewal: NodeJS.Timeout | undefined;
    try {
      const loaded = prepared?.loaded ?? (await loadPosts(this.ctx.db, [postId]))[0];
      if (!loaded) return;
      // Claimed with its batch (see prepare), or now.
      const allowed = prepared ? prepared.allowed : await this.mayStart(loaded);
      if (!allowed) return;
      const post = prepared ? prepared.claimed : (await this.claim([loaded])).get(postId);
      if (!post) return await this.followHeldPost(loaded);
      if (controller.signal.aborted) return await this.letGo(postId);
      renewal = this.keepLease(postId);
      await this.run(post, loaded.channel, controller.signal);
    } finally {
      clearInterval(renewal);
      this.running.delete(postId);
    }
  }

  /** Claims the loaded posts that are free to take (see claimPosts), each with the event of its claim. */
  private async claim(loaded: LoadedPost[]): Promise<Map<string, ClaimedPost>> {
    const { db, clock, config } = this.ctx;
    const now = clock.now();
    const missed = loaded.filter(({ post }) => isMissedOccurrence(post, now, config.recurring.graceMs));
    await skipMissedOccurrences(db, missed, now, config.recurring.graceMs);
    const due = loaded.filter((entry) => !missed.includes(entry));
    return claimPosts(db, due, this.id, this.settings.leaseMs, now, (post) => this.claimEvent(post));
  }

  /** Renews the post's lease every third of its length while this worker publishes it. */
  private keepLease(postId: string): NodeJS.Timeout {
    return setInterval(
      () => {
        renewLease(this.ctx.db, postId, this.id, this.settings.leaseMs, this.ctx.clock.now()).catch((error: unknown) =>
          this.ctx.logger.warn({ err: error, postId }, 'could not renew a lease'),
        );
      },
      Math.floor(this.settings.leaseMs / 3),
    );
  }

  /**
   * Runs an attempt on a claimed post and settles it, unless the worker stopped meanwhile (then `stop`
   * lets go of it). An unexpected error settles it as a passing failure that may have been delivered,
   * unless its record says it had not reached its irreversible point.
   */
  private async run(post: ClaimedPost, channel: Channel, signal: AbortSignal): Promise<void> {
    try {
      const result = await this.attempt(post, channel, signal);
      if (!signal.aborted) await this.settle(post, result);
    } catch (error) {
      if (signal.aborted) return;
      this.ctx.logger.error({ err: error, postId: post.id }, 'publishing failed unexpectedly');
      const progress = await loadProgress(this.ctx.db, post.id, post.publish_attempt).catch(() => undefined);
      const reason = 'the publisher met an unexpected error';
      // When this fails too (the database out of reach), so does the job: pg-boss hands it out again
      // after its retry delay, and that job finds the post held until its lease runs out, then takes
      // it over and asks the network what became of it.
      await this.settle(post, { status: 'retry', reason, maybeDelivered: progress?.irreversible ?? true });
    }
  }

  private async attempt(post: ClaimedPost, channel: Channel, signal: AbortSignal): Promise<RunResult> {
    const adapter = this.ctx.providers[post.provider].publishing;
    const blocked = precondition(adapter, channel);
    if (blocked || !adapter) return blocked!;
    return runAttempt(this.ctx, adapter, post, this.id, async (part, placement) => {
      const { content, mediaIds, altTexts } =
        part === 0
          ? { content: post.content, mediaIds: post.media_ids, altTexts: post.alt_texts }
          : isComment(post, part)
            ? { content: post.first_comment!.content, mediaIds: [], altTexts: {} }
            : post.thread[part - 1]!;
      const media = await publishableMedia(this.ctx, post.organization_id, mediaIds, MEDIA_URL_SECONDS, altTexts);
      if (!media) return undefined;
      return {
        post: { id: post.id, attempt: post.publish_attempt, content, settings: post.settings },
        channel,
        media,
        ...placement,
        signal,
        released: (ids) => releasedAmong(this.ctx.db, channel.id, ids),
      };
    });
  }

  /** The event of taking a post: a new attempt, or one taken over from a worker that stopped. */
  private claimEvent(post: ClaimedPost): ChangeEvent | undefined {
    if (post.previous_status === 'scheduled') return { type: 'publishing', details: { attempt: post.publish_attempt } };
    if (post.previous_owner === null) return undefined;
    return {
      type: 'retrying',
      details: {
        attempt: post.publish_attempt,
        reason: 'the worker that was publishing it stopped; another one goes on',
        nextAttemptAt: this.ctx.clock.now().toISOString(),
      },
    };
  }

  /** Writes how the run ended, with its event, and plans what comes next, in one transaction. */
  private async settle(post: ClaimedPost, result: RunResult): Promise<void> {
    const now = this.ctx.clock.now();
    const recorded =
      result.status === 'published' ? undefined : await loadProgress(this.ctx.db, post.id, post.publish_attempt);
    const step = nextStep(result, recorded, now, this.settings.retryBaseMs);
    this.report(post, step, recorded?.step);
    if (step.status === 'published' || step.status === 'failed') return this.finish(post, step, now);
    await transaction(this.ctx.db, async (trx) => {
      const settled = await updateHeldPost(trx, post.id, this.id, { next_attempt_at: step.at }, now);
      if (!settled) return;
      if (step.status === 'retry') {
        await countRetry(trx, post.id, post.publish_attempt, now);
        await recordPostEvent(trx, settled, 'retrying', now, {
          attempt: post.publish_attempt,
          reason: step.reason,
          nextAttemptAt: step.at.toISOString(),
          ...(step.logId ? { logId: step.logId } : {}),
        });
      }
      await this.ctx.queue.planPublish(trx, [{ ...post, at: step.at }]);
    });
  }

  /**
   * Tells the operator of every publication that did not go through: which post, channel and network,
   * the step it stood at, and the network's own id of the answer (TikTok's `log_id`, Google's
   * `X-GUploader-UploadID`), which its support asks for. Never the post's content or a credential.
   */
  private report(post: ClaimedPost, step: NextStep, at: string | undefined): void {
    this.count(post, step);
    if (step.status === 'published' || step.status === 'pending') return;
    const fields = {
      postId: post.id,
      channelId: post.channel_id,
      network: post.provider,
      step: at ?? null,
      networkRequestId: step.logId ?? null,
      attempt: post.publish_attempt,
    };
    if (step.status === 'retry') {
      this.ctx.logger.warn(
        { ...fields, reason: step.reason, nextAttemptAt: step.at.toISOString() },
        'publication failed for now; tried again later',
      );
      return;
    }
    const message =
      step.code === 'outcome_unknown'
        ? 'publication outcome unknown: the network may or may not have published it'
        : step.code === 'channel_needs_reconnect'
          ? 'publication failed: the channel needs to be connected again'
          : 'publication failed';
    this.ctx.logger.error({ ...fields, code: step.code, reason: step.message }, message);
  }

  /** The publication's run in the metrics: its outcome, and how late a publication came. */
  private count(post: ClaimedPost, step: NextStep): void {
    const { metrics, clock } = this.ctx;
    if (step.status === 'pending') return;
    metrics.publications.inc({ network: post.provider, outcome: outcomeOf(step) });
    if (step.status === 'published' && post.scheduled_at) {
      const lateMs = clock.now().getTime() - post.scheduled_at.getTime();
      metrics.publishLateness.observe({ network: post.provider }, Math.max(0, lateMs) / 1000);
    }
  }

  /** Records the outcome of the attempt on the post, with its event, and lets go of it. */
  private async finish(post: ClaimedPost, outcome: Outcome, now: Date): Promise<void> {
    const attempt = post.publish_attempt;
    if (outcome.status === 'published') {
      const { releaseId, releaseUrl, note } = outcome;
      const details = { attempt, releaseId, releaseUrl, ...(note ? { note } : {}) };
      const change = {
        status: 'published',
        published_at: now,
        release_id: releaseId,
        release_url: releaseUrl,
      } as const;
      await settleHeldPost(this.ctx.db, post, this.id, now, change, { type: 'published', details });
      return;
    }
    // Its other posts would meet the same refusal: the channel waits for a user to connect it again.
    if (outcome.code === 'channel_needs_reconnect') await markNeedsReconnect(this.ctx.db, post.channel_id, now);
    const details = {
      attempt,
      error: { code: outcome.code, message: outcome.message },
      ...(outcome.logId ? { logId: outcome.logId } : {}),
    };
    const change = { status: 'failed', error_code: outcome.code, error_message: outcome.message } as const;
    await settleHeldPost(this.ctx.db, post, this.id, now, change, { type: 'failed', details });
  }

  /**
   * Lets go of a post this worker is stopping on. An attempt that had not reached its irreversible
   * point goes back to `scheduled` (nothing reached the network) and is taken again at once. One
   * that had stays `publishing`, free, and is asked about after the first retry delay, so that a
   * publication the network was still processing when the call was cut has landed by then.
   */
  private async letGo(postId: string): Promise<void> {
    await transaction(this.ctx.db, async (trx) => {
      const post = await trx
        .selectFrom('posts')
        .select(['publish_attempt'])
        .where('id', '=', postId)
        .where('lease_owner', '=', this.id)
        .executeTakeFirst();
      if (!post) return;
      const progress = await loadProgress(trx, postId, post.publish_attempt);
      const crossed = progress?.irreversible === true;
      const now = this.ctx.clock.now();
      const askAt = new Date(now.getTime() + this.settings.retryBaseMs);
      const released = await updateHeldPost(
        trx,
        postId,
        this.id,
        crossed ? { next_attempt_at: askAt } : { status: 'scheduled' },
        now,
      );
      if (!released) return;
      const reason = 'the worker publishing it stopped; another one takes it over';
      await recordPostEvent(
        trx,
        released,
        crossed ? 'retrying' : 'scheduled',
        now,
        crossed
          ? {
              attempt: post.publish_attempt,
              reason: `${reason} and asks the network what became of it`,
              nextAttemptAt: askAt.toISOString(),
            }
          : { reason },
      );
      await this.ctx.queue.planPublish(trx, [{ ...released, at: crossed ? askAt : null }]);
    });
  }

  /**
   * A job found its post held by another worker. If that worker stopped without letting go, the post
   * is free when the lease runs out: come back then, so a crash costs one lease, not a reconciliation.
   */
  private async followHeldPost({ post }: LoadedPost): Promise<void> {
    const until = heldUntil(post);
    if (until) await this.replan(post.id, new Date(until.getTime() + 1000));
  }

  /** Plans another job for a post, at `startAfter` or at once. */
  private async replan(postId: string, startAfter?: Date): Promise<void> {
    const post = await this.ctx.db
      .selectFrom('posts')
      .innerJoin('channels', 'channels.id', 'posts.channel_id')
      .select(['posts.id', 'posts.channel_id', 'channels.provider'])
      .where('posts.id', '=', postId)
      .executeTakeFirst();
    if (post) await this.ctx.queue.planPublish(this.ctx.db, [{ ...post, at: startAfter }]);
  }

  /**
   * A network that limits how many publications a channel starts per minute (TikTok: 6) delays the
   * channel's next ones until a start frees up, without holding up other channels. A post counts
   * when it begins, and again when an attempt that never got past its first step is tried again
   * (the network refused that step for its rate, or failed): each of those calls the network anew.
   */
  private async mayStart({ post }: LoadedPost): Promise<boolean> {
    const limit = this.ctx.providers[post.provider].publishing?.limits.startsPerMinutePerChannel;
    if (limit === undefined) return true;
    if (post.status !== 'scheduled') {
      // Held by a worker that is running it: that run counted when it began.
      const held = heldUntil(post);
      if (held && held > this.ctx.clock.now()) return true;
      const progress =
        post.status === 'publishing' ? await loadProgress(this.ctx.db, post.id, post.publish_attempt) : undefined;
      const atFirstStep =
        progress !== undefined && !progress.irreversible && Object.keys(progress.reference).length === 0;
      if (!atFirstStep) return true;
    }
    const start = await takeStart(this.ctx.db, post.channel_id, limit, this.ctx.clock.now());
    if (start.allowed) return true;
    await this.replan(post.id, start.retryAt);
    return false;
  }

  /** Plans a job for every post that should have one and has none: nothing is lost between two steps. */
  async reconcile(): Promise<void> {
    const overdue = await postsWithoutLiveJob(
      this.ctx.db,
      (postId) => this.ctx.queue.noLiveJob(PUBLISH, 'postId', postId),
      RECONCILE_GRACE_SECONDS,
      RECONCILE_BATCH,
      this.ctx.clock.now(),
    );
    if (overdue.length === 0) return;
    this.ctx.logger.info({ posts: overdue.length }, 'planning publications that had no job');
    await this.ctx.queue.planPublish(this.ctx.db, overdue);
  }
}

/** A run's outcome as the metrics count it. */
function outcomeOf(step: Exclude<NextStep, { status: 'pending' }>): PublicationOutcome {
  if (step.status === 'published') return 'published';
  if (step.status === 'retry') return 'retried';
  if (step.code === 'outcome_unknown') return 'outcome_unknown';
  return step.code === 'channel_needs_reconnect' ? 'needs_reconnect' : 'failed';
}
