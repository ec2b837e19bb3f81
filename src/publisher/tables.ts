import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Timestamp } from '../db/columns.js';

/** The recorded progress of one attempt to publish a post (see the publisher). */
export interface PostPublicationTable {
  post_id: string;
  attempt: number;
  provider: string;
  /** The part of the post the step belongs to: 0, its own content; 1, its first thread part … */
  part: Generated<number>;
  step: string;
  reference: ColumnType<Record<string, unknown>, string, string>;
  /** Set before the attempt's irreversible step runs: from then on it is asked about, never sent again. */
  irreversible_at: Timestamp | null;
  /** Passing failures met before the irreversible point, each retried later. */
  retries: Generated<number>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

/** When a channel's recent publications began, for networks that limit starts per minute. */
export interface PublicationStartTable {
  channel_id: string;
  at: Date;
}

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    post_publications: PostPublicationTable;
    publication_starts: PublicationStartTable;
  }
}
