import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.js';

/** One entry of an organization's audit log: who did what, written with the change it records. */
export interface AuditLogTable {
  id: string;
  organization_id: string;
  created_at: CreatedAt;
  action: string;
  actor_type: 'user' | 'api_key' | 'oauth_grant' | 'operator';
  actor_id: string | null;
  actor_label: string;
  subject_type: string;
  subject_id: string | null;
  subject_label: string;
  /** What the change was beyond its kind, e.g. `{ from: 'editor', to: 'admin' }`; written as JSON text. */
  details: ColumnType<Record<string, unknown>, string | undefined, never>;
}

export type AuditLogRow = Selectable<AuditLogTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    audit_log: AuditLogTable;
  }
}
