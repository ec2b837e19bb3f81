import type { Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.js';

/** A row an import created posts from, kept so that importing it again creates nothing twice. */
export interface PostImportTable {
  organization_id: string;
  /** SHA-256 of the row's key: the client's `key`, or the row's canonical JSON when it has none. */
  key_hash: string;
  /** The group of the posts the row created. */
  group_id: string;
  created_at: CreatedAt;
}

export type PostImport = Selectable<PostImportTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    post_imports: PostImportTable;
  }
}
