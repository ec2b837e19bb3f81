import type { Generated, Insertable, Selectable } from 'kysely';
import type { MediaKind } from '../core/contract.js';
import type { BigIntColumn, CreatedAt, Timestamp } from '../db/columns.js';

export interface MediaTable {
  id: string;
  organization_id: string;
  file_name: string;
  content_type: string;
  kind: MediaKind;
  size: BigIntColumn;
  storage_key: string;
  /** A video's length as its container states it; null for images and videos that do not say. */
  duration_ms: Generated<number | null>;
  /**
   * An image's size in pixels as its header states it; null for videos, images that do not say, and media
   * stored before it was read.
   */
  width: Generated<number | null>;
  height: Generated<number | null>;
  /** A document's number of pages, as its page tree states it; null for images and videos. */
  page_count: Generated<number | null>;
  created_at: CreatedAt;
}

/** A signed upload: declared at creation, checked and turned into media when completed. */
export interface UploadTable {
  id: string;
  organization_id: string;
  file_name: string;
  /** The declared type; the bytes must match it. */
  content_type: string;
  /** The declared size in bytes. */
  size: BigIntColumn;
  storage_key: string;
  /** When the signed PUT URL stops working. */
  expires_at: Timestamp;
  /** The media it became, once completed. */
  media_id: string | null;
  /** Why completing it was refused; a refused upload stays refused. */
  failure: string | null;
  /** A request is completing it until then (a lease, so a crashed request does not block it forever). */
  completing_until: Timestamp | null;
  created_at: CreatedAt;
}

/** A stored file whose media or upload was deleted with its organization: the housekeeping removes it. */
export interface StoredFileDeletionTable {
  storage_key: string;
  attempts: Generated<number>;
  created_at: CreatedAt;
  next_attempt_at: Generated<Date>;
}

export type Media = Selectable<MediaTable>;
export type NewMedia = Insertable<MediaTable>;
export type Upload = Selectable<UploadTable>;
export type NewUpload = Insertable<UploadTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    media: MediaTable;
    uploads: UploadTable;
    stored_file_deletions: StoredFileDeletionTable;
  }
}
