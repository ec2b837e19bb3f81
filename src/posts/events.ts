import type { components } from '../../generated/public-v1.js';
import type { Db } from '../db/database.js';
import { toPostBody, type PostRow } from './post-body.js';

export type PostEventBody = components['schemas']['PostEvent'];
type PostError = components['schemas']['PostError'];

/** The events this service writes (the contract's `PostEventType` may grow). */
export type PostEventType =
  | 'created'
  | 'scheduled'
  | 'rescheduled'
  | 'drafted'
  | 'edited'
  | 'publishing'
  | 'retrying'
  | 'part_published'
  | 'comment_published'
  | 'published'
  | 'failed'
  | 'deleted'
  /** An occurrence of a series that will not be published (`reason` says why). */
  | 'skipped'
  | 'pending_approval'
  | 'approved'
  | 'rejected';

/** What an event says beyond its type. */
export interface PostEventDetails {
  attempt?: number;
  reason?: string;
  nextAttemptAt?: string;
  releaseId?: string;
  releaseUrl?: string | null;
  note?: string;
  error?: PostError;
  logId?: string;
  /** The part of a thread, from 1 (the post's own content). */
  part?: number;
  /** What the reviewer said to the author (`rejected`). */
  comment?: string;
}

/**
 * Writes one change of a post, in the transaction that makes it: the history of the post, and the
 * outbox the webhooks deliver from, with the post as the API shows it right after the change.
 */
export async function recordPostEvent(
  trx: Db,
  post: PostRow,
  type: PostEventType,
  at: Date,
  details: PostEventDetails = {},
): Promise<void> {
  await trx
    .insertInto('post_events')
    .values(postEventValues(post, type, at, details))
    .execute();
}

/** Writes several changes of posts in one statement (see `recordPostEvent`). */
export async function recordPostEvents(
  trx: Db,
  events: { post: PostRow; type: PostEventType; at: Date }[],
): Promise<void> {
  if (events.length === 0) return;
  await trx
    .insertInto('post_events')
    .values(events.map(({ post, type, at }) => postEventValues(post, type, at)))
    .execute();
}

export interface PostEventValues {
  organization_id: string;
  post_id: string;
  type: PostEventType;
  at: Date;
  details: string;
  post: string;
}

/** The row of an event, for statements that write a change and its event at once. */
export function postEventValues(
  post: PostRow,
  type: PostEventType,
  at: Date,
  details: PostEventDetails = {},
): PostEventValues {
  return {
    organization_id: post.organization_id,
    post_id: post.id,
    type,
    at,
    details: JSON.stringify(details),
    post: JSON.stringify(toPostBody(post)),
  };
}

/** Up to `count` of a post's events after the event `afterId` (exclusive), oldest first. */
export function listPostEvents(db: Db, postId: string, afterId: string | undefined, count: number) {
  let query = db
    .selectFrom('post_events')
    .select(['id', 'post_id', 'type', 'at', 'details', 'post'])
    .where('post_id', '=', postId);
  if (afterId !== undefined) query = query.where('id', '>', afterId);
  return query.orderBy('id').limit(count).execute();
}

export function toPostEventBody(row: {
  id: string;
  post_id: string;
  type: string;
  at: Date;
  details: Record<string, unknown>;
  post: unknown;
}): PostEventBody {
  const post = row.post as components['schemas']['Post'];
  return {
    id: `evt_${row.id}`,
    postId: row.post_id,
    type: row.type,
    at: row.at.toISOString(),
    status: post.status,
    scheduledAt: post.scheduledAt,
    ...(row.details as PostEventDetails),
  };
}
