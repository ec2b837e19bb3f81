import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Meta's networks: channels of Facebook Pages, Instagram and Threads. A post may carry a first comment
// (`posts.first_comment`: its text, and where it was published once it is, like a thread's part), and
// the sandbox network records which of its posts a comment is on (`comment_on`).
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  const providers = ['youtube', 'tiktok', 'sandbox', 'bluesky', 'mastodon', 'x', 'facebook', 'instagram', 'threads'];
  await sql`alter table channels add constraint channels_provider_check
    check (provider in (${sql.join(providers.map((provider) => sql.lit(provider)))}))`.execute(db);
  await db.schema.alterTable('posts').addColumn('first_comment', 'jsonb').execute();
  await db.schema
    .alterTable('sandbox_releases')
    .addColumn('comment_on', 'text', (c) => c.references('sandbox_releases.id').onDelete('set null'))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sandbox_releases').dropColumn('comment_on').execute();
  await db.schema.alterTable('posts').dropColumn('first_comment').execute();
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  await sql`alter table channels add constraint channels_provider_check
    check (provider in ('youtube', 'tiktok', 'sandbox', 'bluesky', 'mastodon', 'x'))`.execute(db);
}
