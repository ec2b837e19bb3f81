import type { ColumnType, Insertable, Selectable, Updateable } from 'kysely';
import type { PostStatus } from '../core/contract.js';
import type { CreatedAt, Timestamp } from '../db/columns.js';

export interface PostTable {
  id: string;
  organization_id: string;
  group_id: string;
  channel_id: string;
  content: string;
  media_ids: ColumnType<string[], string, string>;
  settings: ColumnType<unknown, string | null, string | null>;
  status: PostStatus;
  scheduled_at: Timestamp | null;
  published_at: Timestamp | null;
  release_id: string | null;
  release_url: string | null;
  error: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
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

export interface PostTables {
  posts: PostTable;
  idempotency_keys: IdempotencyKeyTable;
}

export type Post = Selectable<PostTable>;
export type NewPost = Insertable<PostTable>;
export type PostUpdate = Updateable<PostTable>;
export type IdempotencyKey = Selectable<IdempotencyKeyTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database extends PostTables {}
}
