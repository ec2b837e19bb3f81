import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Facebook Login for Business gives one consent for several accounts (the user's Pages and the Instagram
// accounts linked to them), among which the user then chooses on a page of this server: between the
// network's answer and that choice, the connection in progress keeps what the network granted, encrypted
// (the user's token and the accounts it reaches), until it is chosen from or expires. A channel of such an
// account has when its access ends unless the user connects it again (Meta's data access expiry) in a table of
// its own, so that the user is warned a week before (a `channel_events` row of type `access_ending`).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('channel_connections').addColumn('granted_accounts', 'text').execute();
  await db.schema
    .createTable('channel_access_ends')
    .addColumn('channel_id', 'text', (c) => c.primaryKey().references('channels.id').onDelete('cascade'))
    .addColumn('ends_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('channel_access_ends').execute();
  await db.schema.alterTable('channel_connections').dropColumn('granted_accounts').execute();
}
