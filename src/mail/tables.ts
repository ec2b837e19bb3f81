/** A member's choice about one kind of notification; without a row, the kind is sent. */
export interface MailPreferenceTable {
  user_id: string;
  kind: string;
  wanted: boolean;
}

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    mail_preferences: MailPreferenceTable;
  }
}
