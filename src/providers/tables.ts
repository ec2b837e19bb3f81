import type { ColumnType, Selectable } from 'kysely';
import type { Timestamp } from '../db/columns.js';

/** A post the sandbox network published, shown on its page of this server. */
export interface SandboxReleaseTable {
  id: string;
  /** The publisher's key for the publication (post and attempt): at most one release per key. */
  publication_key: string;
  organization_id: string;
  channel_id: string;
  content: string;
  media: ColumnType<
    { id: string; fileName: string; contentType: string; kind: string; altText?: string }[],
    string,
    string
  >;
  settings: ColumnType<unknown, string | null, string | null>;
  /** The sandbox post this one replies to (a thread's part after the first). */
  reply_to: ColumnType<string | null, string | null | undefined, string | null>;
  /** The post of the channel this one is a comment on (a first comment). */
  comment_on: ColumnType<string | null, string | null | undefined, string | null>;
  published_at: Timestamp;
}

export type SandboxRelease = Selectable<SandboxReleaseTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    sandbox_releases: SandboxReleaseTable;
  }
}
