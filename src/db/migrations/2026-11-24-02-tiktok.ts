import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Networks that rotate refresh tokens (TikTok) accept each one once: a channel's tokens are refreshed
// by one worker at a time, which holds `refreshing_until` while it asks the network. A video's length,
// read from its container when it is stored, is checked against what a TikTok creator may post.
// `publication_starts` holds when each of a channel's recent publications began, so that a network's
// limit of starts in any minute (TikTok: 6 video inits) is kept by every worker together.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('channels').addColumn('refreshing_until', 'timestamptz').execute();
  await db.schema.alterTable('media').addColumn('duration_ms', 'integer').execute();
  await db.schema
    .createTable('publication_starts')
    .addColumn('channel_id', 'text', (col) => col.notNull().references('channels.id').onDelete('cascade'))
    .addColumn('at', 'timestamptz', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('publication_starts_channel_at')
    .on('publication_starts')
    .columns(['channel_id', 'at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('publication_starts').execute();
  await db.schema.alterTable('media').dropColumn('duration_ms').execute();
  await db.schema.alterTable('channels').dropColumn('refreshing_until').execute();
}
