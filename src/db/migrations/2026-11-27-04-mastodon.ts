import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Mastodon: accounts live on instances the users name, and this installation registers an app of its
// own on each (`POST /api/v1/apps`). `mastodon_apps` keeps every app it registered, one per instance,
// callback URL and scopes (a new PUBLIC_URL or new scopes register another), its client secret
// encrypted. A connection in progress records the site it goes to (`channel_connections.site`: the
// instance's origin), named before the consent page or on a page of this server.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mastodon_apps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('instance', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('mastodon_apps_instance_redirect_scopes', ['instance', 'redirect_uri', 'scopes'])
    .execute();
  await db.schema.alterTable('channel_connections').addColumn('site', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('channel_connections').dropColumn('site').execute();
  await db.schema.dropTable('mastodon_apps').execute();
}
