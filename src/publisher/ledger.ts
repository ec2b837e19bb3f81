import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { PostRow } from '../posts/post-body.js';
import type { Progress } from '../providers/adapter.js';

/**
 * The publisher's reads and writes of the database: claiming a post under a lease, the recorded
 * progress of its attempt, and letting it go.
 */

// A post due now counts as due this much early: the job and the row read the clock a moment apart.
const DUE_TOLERANCE = sql`interval '1 second'`;

export interface ClaimedPost extends PostRow {
  /** The status the post had before the claim: `scheduled` for a new attempt, `publishing` to go on with one. */
  previous_status: string;
  /** The worker that held it before, when its lease ran out (it stopped without letting go). */
  previous_owner: string | null;
}

/**
 * Takes a post for this worker, under a lease of `leaseMs`: a `scheduled` post that is due starts a
 * new attempt; a `publishing` post goes on when nobody holds it (its lease ran out, or it waits for a
 * retry that is due). Anything else (not due, drafted, deleted, published, held) is `undefined`: the
 * job that asked had become pointless. One UPDATE, so two workers never both take a post.
 */
export async function claimPost(db: Db, postId: string, worker: string, leaseMs: number): Promise<ClaimedPost | undefined> {
  const { rows } = await sql<ClaimedPost>`
    with before as (
      select id, status, lease_owner from posts where id = ${postId} for update
    )
    update posts set
      status = 'publishing',
      publish_attempt = case when before.status = 'scheduled' then posts.publish_attempt + 1 else posts.publish_attempt end,
      lease_owner = ${worker},
      lease_until = now() + ${leaseMs} * interval '1 millisecond',
      next_attempt_at = null,
      error_code = null,
      error_message = null,
      updated_at = now()
    from before, channels
    where posts.id = before.id and channels.id = posts.channel_id and (
      (before.status = 'scheduled' and posts.scheduled_at <= now() + ${DUE_TOLERANCE})
      or (
        before.status = 'publishing'
        and (posts.lease_until is null or posts.lease_until < now())
        and (posts.next_attempt_at is null or posts.next_attempt_at <= now() + ${DUE_TOLERANCE})
      )
    )
    returning posts.*, channels.provider, before.status as previous_status,
      case when before.lease_owner is not null then before.lease_owner end as previous_owner`.execute(db);
  return rows[0];
}

/** When a post held by another worker may be taken over (its lease's end), or `undefined` when it is not held. */
export async function heldUntil(db: Db, postId: string): Promise<Date | undefined> {
  const row = await db
    .selectFrom('posts')
    .select('lease_until')
    .where('id', '=', postId)
    .where('status', '=', 'publishing')
    .where('lease_owner', 'is not', null)
    .executeTakeFirst();
  return row?.lease_until ?? undefined;
}

/** Extends this worker's lease; false when the post is no longer this worker's. */
export async function renewLease(db: Db, postId: string, worker: string, leaseMs: number): Promise<boolean> {
  const result = await sql`
    update posts set lease_until = now() + ${leaseMs} * interval '1 millisecond'
    where id = ${postId} and lease_owner = ${worker}`.execute(db);
  return Number(result.numAffectedRows ?? 0) === 1;
}

export interface RecordedProgress extends Progress {
  retries: number;
  createdAt: Date;
}

export async function loadProgress(db: Db, postId: string, attempt: number): Promise<RecordedProgress | undefined> {
  const row = await db
    .selectFrom('post_publications')
    .select(['step', 'reference', 'irreversible_at', 'retries', 'created_at'])
    .where('post_id', '=', postId)
    .where('attempt', '=', attempt)
    .executeTakeFirst();
  if (!row) return undefined;
  return { step: row.step, reference: row.reference, irreversible: row.irreversible_at !== null, retries: row.retries, createdAt: row.created_at };
}

/**
 * Records where the attempt stands, before the worker moves on. Recording a step marked irreversible
 * stamps the attempt as having (possibly) crossed its point of no return.
 */
export async function saveProgress(db: Db, post: { id: string; publish_attempt: number; provider: string }, progress: Progress): Promise<void> {
  const reference = JSON.stringify(progress.reference);
  await db
    .insertInto('post_publications')
    .values({
      post_id: post.id,
      attempt: post.publish_attempt,
      provider: post.provider,
      step: progress.step,
      reference,
      irreversible_at: progress.irreversible ? sql<Date>`now()` : null,
      updated_at: sql<Date>`now()`,
    })
    .onConflict((oc) =>
      oc.columns(['post_id', 'attempt']).doUpdateSet({
        step: progress.step,
        reference,
        irreversible_at: progress.irreversible ? sql<Date>`coalesce(post_publications.irreversible_at, now())` : null,
        updated_at: sql<Date>`now()`,
      }),
    )
    .execute();
}

export async function countRetry(db: Db, postId: string, attempt: number): Promise<void> {
  await db
    .updateTable('post_publications')
    .set((eb) => ({ retries: eb('retries', '+', 1), updated_at: sql<Date>`now()` }))
    .where('post_id', '=', postId)
    .where('attempt', '=', attempt)
    .execute();
}

/** Changes the post if this worker still holds it; the changed post, or `undefined` when it lost it. */
export async function updateHeldPost(
  db: Db,
  postId: string,
  worker: string,
  changes: {
    status?: 'scheduled' | 'publishing' | 'published' | 'failed';
    published_at?: Date;
    release_id?: string;
    release_url?: string | null;
    error_code?: string | null;
    error_message?: string | null;
    next_attempt_at?: Date | null;
  },
): Promise<PostRow | undefined> {
  const { rows } = await sql<PostRow>`
    update posts set
      status = coalesce(${changes.status ?? null}, posts.status),
      published_at = coalesce(${changes.published_at ?? null}::timestamptz, posts.published_at),
      release_id = coalesce(${changes.release_id ?? null}, posts.release_id),
      release_url = case when ${changes.release_id !== undefined} then ${changes.release_url ?? null} else posts.release_url end,
      error_code = ${changes.error_code ?? null},
      error_message = ${changes.error_message ?? null},
      next_attempt_at = ${changes.next_attempt_at ?? null}::timestamptz,
      lease_owner = null,
      lease_until = null,
      updated_at = now()
    from channels
    where posts.id = ${postId} and posts.lease_owner = ${worker} and channels.id = posts.channel_id
    returning posts.*, channels.provider`.execute(db);
  return rows[0];
}

export interface OverduePost {
  id: string;
  channel_id: string;
  provider: string;
}

/**
 * Posts that should have a live publish job and have none: due (or waiting for an attempt that is
 * due, or held by a lease that ran out) for longer than `graceSeconds`, with no job of the queue
 * `queue` created, retrying or active for them in pg-boss's table.
 */
export async function postsWithoutLiveJob(db: Db, queue: string, graceSeconds: number, limit: number): Promise<OverduePost[]> {
  const grace = sql`${graceSeconds} * interval '1 second'`;
  const { rows } = await sql<OverduePost>`
    select posts.id, posts.channel_id, channels.provider
    from posts join channels on channels.id = posts.channel_id
    where (
      (posts.status = 'scheduled' and posts.scheduled_at < now() - ${grace})
      or (
        posts.status = 'publishing'
        and (posts.lease_until is null or posts.lease_until < now() - ${grace})
        and (posts.next_attempt_at is null or posts.next_attempt_at < now() - ${grace})
      )
    )
    and posts.id not in (
      select job.data->>'postId' from pgboss.job
      where job.name = ${queue} and job.state in ('created', 'retry', 'active') and job.data->>'postId' is not null
    )
    order by posts.scheduled_at
    limit ${limit}`.execute(db);
  return rows;
}
