import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// LinkedIn: channels of members and company pages. The list of providers is the whole of this round's
// (Pinterest's too), so that the migrations of both networks leave the same constraint in either order.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  const providers = [
    'youtube',
    'tiktok',
    'sandbox',
    'bluesky',
    'mastodon',
    'x',
    'facebook',
    'instagram',
    'threads',
    'linkedin',
    'pinterest',
  ];
  await sql`alter table channels add constraint channels_provider_check
    check (provider in (${sql.join(providers.map((provider) => sql.lit(provider)))}))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  const before = ['youtube', 'tiktok', 'sandbox', 'bluesky', 'mastodon', 'x', 'facebook', 'instagram', 'threads'];
  await sql`alter table channels add constraint channels_provider_check
    check (provider in (${sql.join(before.map((provider) => sql.lit(provider)))}))`.execute(db);
}
