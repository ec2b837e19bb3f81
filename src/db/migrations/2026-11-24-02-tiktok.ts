import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Networks that rotate refresh tokens (TikTok) accept each one once: a channel's tokens are refreshed
// by one worker at a time, which holds `refreshing_until` while it asks the network. A video's length,
// read from its container when it is stored, is checked against what a TikTok creator may post.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('channels').addColumn('refreshing_until', 'timestamptz').execute();
  await db.schema.alterTable('media').addColumn('duration_ms', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('media').dropColumn('duration_ms').execute();
  await db.schema.alterTable('channels').dropColumn('refreshing_until').execute();
}
