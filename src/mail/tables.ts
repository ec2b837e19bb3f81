import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt } from '../db/columns.js';

/** A member's choice about one kind of notification; without a row, the kind is sent. */
export interface MailPreferenceTable {
  user_id: string;
  kind: string;
  wanted: boolean;
}

/** A notification waiting for its member's daily digest. */
export interface NotificationDigestItemTable {
  id: Generated<string>;
  user_id: string;
  organization_id: string;
  kind: string;
  headline: string;
  details: string;
  path: string;
  created_at: CreatedAt;
}

/** The day's digest of a member was planned: at most one a day. */
export interface NotificationDigestTable {
  user_id: string;
  /** The day (UTC), as `YYYY-MM-DD`. */
  day: ColumnType<string, string, string>;
}

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    mail_preferences: MailPreferenceTable;
    notification_digest_items: NotificationDigestItemTable;
    notification_digests: NotificationDigestTable;
  }
}
