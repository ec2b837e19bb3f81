import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Pinterest: channels of Pinterest accounts. The provider list is the whole of this round's (LinkedIn's
// too), so that this migration and LinkedIn's set the same constraint whichever runs last.
export async function up(db: Kysely<unknown>): Promise<void> {
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
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  await sql`alter table channels add constraint channels_provider_check
    check (provider in (${sql.join(providers.map((provider) => sql.lit(provider)))}))`.execute(db);
}

// Undone, the list is the one LinkedIn's migration, the one before this, leaves.
export async function down(db: Kysely<unknown>): Promise<void> {
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
  ];
  await sql`alter table channels drop constraint channels_provider_check`.execute(db);
  await sql`alter table channels add constraint channels_provider_check
    check (provider in (${sql.join(providers.map((provider) => sql.lit(provider)))}))`.execute(db);
}
