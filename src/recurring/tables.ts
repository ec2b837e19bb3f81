import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { components } from '../../generated/public-v1.js';
import type { CreatedAt, Timestamp } from '../db/columns.js';

export type PostItem = components['schemas']['PostItem'];

/** A series of recurring posts: a rule in a time zone, and the post each occurrence makes per channel. */
export interface PostSeriesTable {
  id: string;
  organization_id: string;
  /** RFC 5545 `RRULE` text without `DTSTART`, as `normalizeRule` wrote it. */
  rule: string;
  time_zone: string;
  /** The first occurrence (the rule's `DTSTART`). */
  starts_at: Timestamp;
  /** No occurrence at or after it; `null` while the series goes on. */
  ends_at: Timestamp | null;
  /** The post of each occurrence, one item per channel, as the request gave it. */
  posts: ColumnType<PostItem[], string, string>;
  /** Every occurrence before this instant exists as posts (or was skipped): planning goes on from here. */
  planned_until: Timestamp;
  /** The series this one continues from an occurrence on. */
  split_from: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export type PostSeries = Selectable<PostSeriesTable>;
export type NewPostSeries = Insertable<PostSeriesTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    post_series: PostSeriesTable;
  }
}
