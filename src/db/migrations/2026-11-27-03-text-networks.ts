import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Channels of the text networks: Bluesky, Mastodon and X.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  await sql`alter table channels add constraint channels_provider_check
    check (provider in ('youtube', 'tiktok', 'sandbox', 'bluesky', 'mastodon', 'x'))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  await sql`alter table channels add constraint channels_provider_check
    check (provider in ('youtube', 'tiktok', 'sandbox'))`.execute(db);
}
