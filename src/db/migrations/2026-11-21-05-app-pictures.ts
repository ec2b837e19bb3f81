import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
// An app's picture is downloaded once, when the developer registers the app or changes its URL, and
// served from this installation: browsers showing the consent page never contact the developer's
// server. The bytes live in a table of their own so that reading an app (on every token request)
// never reads its picture; `picture_sha256` on the app says whether there is one and names its version.
// Apps registered before have none until their developer saves a picture URL again.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oauth_apps').addColumn('picture_sha256', 'text').execute();
  await db.schema
    .createTable('oauth_app_pictures')
    .addColumn('app_id', 'text', (c) => c.primaryKey().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bytea', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oauth_app_pictures').execute();
  await db.schema.alterTable('oauth_apps').dropColumn('picture_sha256').execute();
}
