import { isComment } from './parts.js';
import { sql, type RawBuilder } from 'kysely';
import type { Channel, ChannelState } from '../channels/tables.js';
import type { Db } from '../db/database.js';
import {
  postEventValues,
  recordPostEvent,
  type PostEventDetails,
  type PostEventType,
  type PostEventValues,
} from '../posts/events.js';
import type { PostRow } from '../posts/post-body.js';
import type { Progress, PublishedPart } from '../providers/publishing-contract.js';
import { transaction } from '../db/transaction.js';

/**
 * The publisher's reads and writes of the database: claiming a post under a lease, the recorded
 * progress of its attempt, and letting it go.
 */

// A post counts as due this much early: its job falls due by the database's clock, and the worker
// judges the post by its own; two machines' clocks agree only so closely.
const DUE_TOLERANCE_MS = 1000;

export interface ClaimedPost extends PostRow {
  previous_status: string;
  previous_owner: string | null;
}

/** A post a job is about, with its channel, and the version of its row (PostgreSQL's `xmin`). */
export interface LoadedPost {
  post: PostRow;
  channel: Channel;
  version: string;
}

/** A post's row joined with its channel's columns (prefixed `channel_`) and its row's version. */
interface PostAndChannelRow extends PostRow {
  version: string;
  channel_name: string;
  channel_username: string | null;
  channel_picture: string | null;
  channel_status: ChannelState;
  channel_created_at: Date;
  channel_external_id: string | null;
  channel_credentials: string | null;
  channel_connected_at: Date | null;
  channel_refreshing_until: Date | null;
}

/** The posts of `postIds` that exist, each with its channel and the version of its row. */
export async function loadPosts(db: Db, postIds: readonly string[]): Promise<LoadedPost[]> {
  if (postIds.length === 0) return [];
  const { rows } = await sql<PostAndChannelRow>`
    select posts.*, posts.xmin::text as version, channels.provider, channels.name as channel_name,
      channels.username as channel_username, channels.picture as channel_picture,
      channels.status as channel_status, channels.created_at as channel_created_at,
      channels.external_id as channel_external_id, channels.credentials as channel_credentials,
      channels.connected_at as channel_connected_at,
      channels.refreshing_until as channel_refreshing_until
    from posts join channels on channels.id = posts.channel_id
    where posts.id in (${sql.join(postIds)})`.execute(db);
  return rows.map(toLoadedPost);
}

function toLoadedPost({
  version,
  channel_name,
  channel_username,
  channel_picture,
  channel_status,
  channel_created_at,
  channel_external_id,
  channel_credentials,
  channel_connected_at,
  channel_refreshing_until,
  ...post
}: PostAndChannelRow): LoadedPost {
  return {
    post,
    channel: {
      id: post.channel_id,
      organization_id: post.organization_id,
      provider: post.provider,
      name: channel_name,
      username: channel_username,
      picture: channel_picture,
      status: channel_status,
      created_at: channel_created_at,
      external_id: channel_external_id,
      credentials: channel_credentials,
      connected_at: channel_connected_at,
      refreshing_until: channel_refreshing_until,
    },
    version,
  };
}

/** The event a change of a post is written with. */
export interface ChangeEvent {
  type: PostEventType;
  details: PostEventDetails;
}

/**
 * Takes the loaded posts that are free to take for this worker, in one statement: a post `scheduled`
 * and due (a new attempt), or `publishing` with no live lease and due for its next try (the same
 * attempt, taken over). Each claim is written with its event; it holds only if the post's row is
 * still the version that was loaded, so the event shows the post as it is. The posts taken, by id.
 */
export async function claimPosts(
  db: Db,
  loaded: readonly LoadedPost[],
  worker: string,
  leaseMs: number,
  at: Date,
  eventOf: (claimed: ClaimedPost) => ChangeEvent | undefined,
): Promise<Map<string, ClaimedPost>> {
  const claims = prepareClaims(loaded, worker, at, eventOf);
  if (claims.length === 0) return new Map();
  const taken = await writeClaims(db, claims, worker, leaseMs, at);
  const byId = new Map(claims.map(({ claimed }) => [claimed.id, claimed]));
  return new Map(taken.map((id) => [id, byId.get(id)!]));
}

/** A claim to write: the post as the claim makes it, the version it was loaded at, and its event. */
interface Claim {
  claimed: ClaimedPost;
  version: string;
  event: PostEventValues | undefined;
}

/** What claiming would make of each loaded post that may be claimed (`scheduled` or `publishing`). */
function prepareClaims(
  loaded: readonly LoadedPost[],
  worker: string,
  at: Date,
  eventOf: (claimed: ClaimedPost) => ChangeEvent | undefined,
): Claim[] {
  return loaded
    .filter(({ post }) => post.status === 'scheduled' || post.status === 'publishing')
    .map(({ post, version }) => {
      const fresh = post.status === 'scheduled';
      const claimed: ClaimedPost = {
        ...post,
        status: 'publishing',
        publish_attempt: fresh ? post.publish_attempt + 1 : post.publish_attempt,
        lease_owner: worker,
        next_attempt_at: null,
        error_code: null,
        error_message: null,
        updated_at: at,
        previous_status: post.status,
        previous_owner: post.lease_owner,
      };
      const event = eventOf(claimed);
      return { claimed, version, event: event && postEventValues(claimed, event.type, at, event.details) };
    });
}

/** Writes the claims that still hold, with their events, in one statement; the ids of the posts taken. */
async function writeClaims(
  db: Db,
  claims: readonly Claim[],
  worker: string,
  leaseMs: number,
  at: Date,
): Promise<string[]> {
  const due = new Date(at.getTime() + DUE_TOLERANCE_MS);
  const input = JSON.stringify(
    claims.map(({ claimed, version, event }) => ({
      id: claimed.id,
      version,
      attempt: claimed.publish_attempt,
      organization_id: claimed.organization_id,
      event_type: event?.type ?? null,
      details: event?.details ?? null,
      post: event?.post ?? null,
    })),
  );
  // The input's limit is its length: it tells the planner how many posts to expect (a set-returning
  // function counts as 100), so that it finds each by its key rather than read the table whole.
  const { rows } = await sql<{ id: string }>`
    with input as (
      select * from jsonb_to_recordset(${input}::jsonb)
        as input(id text, version text, attempt integer, organization_id text, event_type text, details text, post text)
      limit ${claims.length}
    ),
    claimed as (
      update posts set
        status = 'publishing',
        publish_attempt = input.attempt,
        lease_owner = ${worker},
        lease_until = ${new Date(at.getTime() + leaseMs)},
        next_attempt_at = null,
        error_code = null,
        error_message = null,
        updated_at = ${at}
      from input
      where posts.id = input.id and posts.xmin = input.version::xid and (
        (posts.status = 'scheduled' and posts.scheduled_at <= ${due})
        or (
          posts.status = 'publishing'
          and (posts.lease_until is null or posts.lease_until < ${at})
          and (posts.next_attempt_at is null or posts.next_attempt_at <= ${due})
        )
      )
      returning posts.id
    ),
    events as (
      insert into post_events (organization_id, post_id, type, at, details, post)
      select input.organization_id, input.id, input.event_type, ${at}, input.details::jsonb, input.post::jsonb
      from input join claimed on claimed.id = input.id
      where input.event_type is not null
    )
    select id from claimed`.execute(db);
  return rows.map((row) => row.id);
}

/**
 * Writes how a publication ended on a post this worker holds, with its event, in one statement, and
 * lets go of the post; the post as it is then, or undefined if the worker no longer held it.
 */
export async function settleHeldPost(
  db: Db,
  held: PostRow,
  worker: string,
  at: Date,
  outcome:
    | { status: 'published'; published_at: Date; release_id: string; release_url: string | null }
    | { status: 'failed'; error_code: string; error_message: string },
  event: ChangeEvent,
): Promise<PostRow | undefined> {
  const settled: PostRow = {
    ...held,
    ...outcome,
    error_code: outcome.status === 'failed' ? outcome.error_code : null,
    error_message: outcome.status === 'failed' ? outcome.error_message : null,
    next_attempt_at: null,
    lease_owner: null,
    lease_until: null,
    updated_at: at,
  };
  const settle = sql`
    update posts set
      status = ${settled.status},
      published_at = ${settled.published_at},
      release_id = ${settled.release_id},
      release_url = ${settled.release_url},
      error_code = ${settled.error_code},
      error_message = ${settled.error_message},
      next_attempt_at = null,
      lease_owner = null,
      lease_until = null,
      updated_at = ${at}
    where posts.id = ${held.id} and posts.lease_owner = ${worker}
    returning posts.id`;
  return (await changeWithEvent(db, settle, postEventValues(settled, event.type, at, event.details)))
    ? settled
    : undefined;
}

/** Runs an `update posts … returning posts.id` and, if it changed the post, writes the event with it. */
async function changeWithEvent(
  db: Db,
  update: RawBuilder<unknown>,
  event: PostEventValues | undefined,
): Promise<boolean> {
  const writeEvent = event
    ? sql`, event as (
        insert into post_events (organization_id, post_id, type, at, details, post)
        select ${event.organization_id}, changed.id, ${event.type}, ${event.at},
          ${event.details}::jsonb, ${event.post}::jsonb
        from changed)`
    : sql``;
  const { rows } = await sql`with changed as (${update}) ${writeEvent} select id from changed`.execute(db);
  return rows.length === 1;
}

/** When a post held by another worker is free again, if that worker stopped without letting go. */
export function heldUntil(post: PostRow): Date | undefined {
  return post.status === 'publishing' && post.lease_owner !== null ? (post.lease_until ?? undefined) : undefined;
}

export async function renewLease(db: Db, postId: string, worker: string, leaseMs: number, now: Date): Promise<boolean> {
  const result = await sql`
    update posts set lease_until = ${new Date(now.getTime() + leaseMs)}
    where id = ${postId} and lease_owner = ${worker}`.execute(db);
  return Number(result.numAffectedRows ?? 0) === 1;
}

export interface RecordedProgress extends Progress {
  /** The part of the post the step belongs to: 0, its own content; 1, its first thread part … */
  part: number;
  retries: number;
  /** When the attempt last moved on: a step recorded or a passing failure counted. */
  progressedAt: Date;
}

export async function loadProgress(db: Db, postId: string, attempt: number): Promise<RecordedProgress | undefined> {
  const row = await db
    .selectFrom('post_publications')
    .select(['part', 'step', 'reference', 'irreversible_at', 'retries', 'updated_at'])
    .where('post_id', '=', postId)
    .where('attempt', '=', attempt)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    part: row.part,
    step: row.step,
    reference: row.reference,
    irreversible: row.irreversible_at !== null,
    retries: row.retries,
    progressedAt: row.updated_at,
  };
}

/**
 * Records where the attempt stands, before the worker moves on. Recording a step marked irreversible
 * stamps the attempt as having (possibly) crossed its point of no return.
 */
export async function saveProgress(
  db: Db,
  post: { id: string; publish_attempt: number; provider: string },
  progress: Progress,
  now: Date,
  /** The part of the post the step belongs to (0, its own content). */
  part = 0,
): Promise<void> {
  const reference = JSON.stringify(progress.reference);
  await db
    .insertInto('post_publications')
    .values({
      post_id: post.id,
      attempt: post.publish_attempt,
      provider: post.provider,
      part,
      step: progress.step,
      reference,
      irreversible_at: progress.irreversible ? now : null,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['post_id', 'attempt']).doUpdateSet({
        part,
        step: progress.step,
        reference,
        irreversible_at: progress.irreversible ? sql<Date>`coalesce(post_publications.irreversible_at, ${now})` : null,
        updated_at: now,
      }),
    )
    .execute();
}

/**
 * Records a part of a thread as published, on a post this worker holds, in one transaction: where it
 * went (the post's own release for part 0, the thread's part otherwise), its `part_published` event,
 * and the first step of the next part when there is one. What keeps a crash from sending a published
 * part again or skipping one is that the part is recorded no later than the next part's first step
 * (an attempt goes on from the first part not recorded, and asks the network about a recorded
 * irreversible step); test/thread-crash.test.ts kills workers between parts. The post as it is then,
 * or undefined if the worker no longer holds it.
 */
export async function recordPartPublished(
  db: Db,
  held: PostRow,
  worker: string,
  part: number,
  release: PublishedPart,
  next: Progress | undefined,
  now: Date,
): Promise<PostRow | undefined> {
  const comment = isComment(held, part);
  const post: PostRow =
    part === 0
      ? {
          ...held,
          release_id: release.releaseId,
          release_url: release.releaseUrl,
          release_reference: release.reference,
          updated_at: now,
        }
      : comment
        ? { ...held, first_comment: { ...held.first_comment!, ...release }, updated_at: now }
        : {
            ...held,
            thread: held.thread.map((stored, i) => (i === part - 1 ? { ...stored, ...release } : stored)),
            updated_at: now,
          };
  return transaction(db, async (trx) => {
    const { rows } = await sql`
      update posts set
        release_id = ${post.release_id}, release_url = ${post.release_url},
        release_reference = ${JSON.stringify(post.release_reference)}::jsonb,
        thread = ${JSON.stringify(post.thread)}::jsonb,
        first_comment = ${post.first_comment && JSON.stringify(post.first_comment)}::jsonb, updated_at = ${now}
      where id = ${held.id} and lease_owner = ${worker}
      returning id`.execute(trx);
    if (rows.length === 0) return undefined;
    await recordPostEvent(trx, post, comment ? 'comment_published' : 'part_published', now, {
      attempt: held.publish_attempt,
      ...(comment ? {} : { part: part + 1 }),
      releaseId: release.releaseId,
      releaseUrl: release.releaseUrl,
    });
    if (next) await saveProgress(trx, post, next, now, part + 1);
    return post;
  });
}

export async function countRetry(db: Db, postId: string, attempt: number, now: Date): Promise<void> {
  await db
    .updateTable('post_publications')
    .set((eb) => ({ retries: eb('retries', '+', 1), updated_at: now }))
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
  now: Date,
): Promise<PostRow | undefined> {
  const { rows } = await sql<PostRow>`
    update posts set
      status = coalesce(${changes.status ?? null}, posts.status),
      published_at = coalesce(${changes.published_at ?? null}::timestamptz, posts.published_at),
      release_id = coalesce(${changes.release_id ?? null}, posts.release_id),
      release_url = case
        when ${changes.release_id !== undefined} then ${changes.release_url ?? null} else posts.release_url
      end,
      error_code = ${changes.error_code ?? null},
      error_message = ${changes.error_message ?? null},
      next_attempt_at = ${changes.next_attempt_at ?? null}::timestamptz,
      lease_owner = null,
      lease_until = null,
      updated_at = ${now}
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
 * due, or held by a lease that ran out) for longer than `graceSeconds`, for which `noLiveJob` (the job
 * queue's lost-job finder) holds.
 */
export async function postsWithoutLiveJob(
  db: Db,
  noLiveJob: (postId: RawBuilder<string>) => RawBuilder<boolean>,
  graceSeconds: number,
  limit: number,
  now: Date,
): Promise<OverduePost[]> {
  const since = new Date(now.getTime() - graceSeconds * 1000);
  const { rows } = await sql<OverduePost>`
    select posts.id, posts.channel_id, channels.provider
    from posts join channels on channels.id = posts.channel_id
    where (
      (posts.status = 'scheduled' and posts.scheduled_at < ${since})
      or (
        posts.status = 'publishing'
        and (posts.lease_until is null or posts.lease_until < ${since})
        and (posts.next_attempt_at is null or posts.next_attempt_at < ${since})
      )
    )
    and ${noLiveJob(sql.ref('posts.id'))}
    order by posts.scheduled_at
    limit ${limit}`.execute(db);
  return rows;
}

/**
 * Which of `ids`, a network's ids of posts or comments, some post of the channel is already recorded as
 * published at: its own part, a part of its thread or its first comment. A look-up after a lost answer
 * never takes one of them for what it sent.
 */
export async function releasedAmong(db: Db, channelId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`
    select released.id from posts,
      lateral (
        select posts.release_id as id
        union all select posts.first_comment ->> 'releaseId'
        union all select part ->> 'releaseId' from jsonb_array_elements(posts.thread) as part
      ) as released
    where posts.channel_id = ${channelId} and released.id in (${sql.join(ids)})`.execute(db);
  return new Set(rows.map((row) => row.id));
}
