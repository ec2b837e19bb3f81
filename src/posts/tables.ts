import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { PostStatus } from '../core/contract.js';
import type { CreatedAt, Timestamp } from '../db/columns.js';

export interface PostTable {
  id: string;
  organization_id: string;
  group_id: string;
  channel_id: string;
  content: string;
  media_ids: ColumnType<string[], string, string>;
  /** The alternative text of the post's images, by media id. */
  alt_texts: ColumnType<Record<string, string>, string | undefined, string>;
  /** The parts after the post's own content, published in order as replies; `[]` for a single post. */
  thread: ColumnType<StoredThreadPart[], string | undefined, string>;
  /** The comment published on the post right after it; `null` when it has none. */
  first_comment: ColumnType<StoredFirstComment | null, string | null | undefined, string | null>;
  settings: ColumnType<unknown, string | null, string | null>;
  status: PostStatus;
  /** Placed in its channel's next free slot (`type: queue`): a changed schedule moves it, never a post given a time. */
  queued: Generated<boolean>;
  scheduled_at: Timestamp | null;
  published_at: Timestamp | null;
  release_id: string | null;
  release_url: string | null;
  /** What the network needs to know of the published first part to reply to it (a thread). */
  release_reference: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** Why publishing failed: a code of the contract's `PostError` and a message for people. */
  error_code: string | null;
  error_message: string | null;
  /** How many times publishing has started; an attempt keeps its number through its retries. */
  publish_attempt: Generated<number>;
  /** The worker publishing the post, and until when it holds it (a lease it keeps renewing). */
  lease_owner: string | null;
  lease_until: Timestamp | null;
  /** When an attempt that met a passing failure goes on. */
  next_attempt_at: Timestamp | null;
  /** The series the post is an occurrence of, and which occurrence (`null` for a post of no series). */
  series_id: ColumnType<string | null, string | null | undefined, string | null>;
  occurrence_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Who asked for the post to be published when it went to `pending_approval` (see approval.ts). */
  submitted_by_user_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

/** One part of a thread after the first, and where it was published once it is. */
export interface StoredThreadPart {
  content: string;
  mediaIds: string[];
  /** The alternative text of the part's images, by media id (absent on parts stored before it existed). */
  altTexts?: Record<string, string>;
  releaseId: string | null;
  releaseUrl: string | null;
  /** What the network needs to know of the published part to reply to it. */
  reference: Record<string, unknown> | null;
}

/** A post's first comment, and where it was published once it is. */
export interface StoredFirstComment {
  content: string;
  releaseId: string | null;
  releaseUrl: string | null;
  reference: Record<string, unknown> | null;
}

/** One change of a post: its history, and the outbox the webhooks deliver from. */
export interface PostEventTable {
  id: Generated<string>;
  organization_id: string;
  post_id: string;
  type: string;
  at: Timestamp;
  details: ColumnType<Record<string, unknown>, string, string>;
  /** The post as the API showed it right after the event. */
  post: ColumnType<unknown, string, string>;
  /** When the webhook dispatcher made the event's deliveries; `null` until then. */
  webhooks_dispatched_at: ColumnType<Date | null, never, Date>;
}

/** A create that succeeded with an `Idempotency-Key`, kept to answer its retries. */
export interface IdempotencyKeyTable {
  organization_id: string;
  /** SHA-256 of the key as the client sent it. */
  key_hash: string;
  /** SHA-256 of the request body in canonical JSON, to tell a retry from another request. */
  request_hash: string;
  response_status: number | null;
  /** The response body's JSON text. */
  response_body: string | null;
  created_at: Timestamp;
}

export type Post = Selectable<PostTable>;
export type NewPost = Insertable<PostTable>;
export type PostUpdate = Updateable<PostTable>;
export type IdempotencyKey = Selectable<IdempotencyKeyTable>;
export type PostEventRow = Selectable<PostEventTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    posts: PostTable;
    post_events: PostEventTable;
    idempotency_keys: IdempotencyKeyTable;
  }
}
