import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Bluesky accounts are connected by signing in on a page of this server with an app password, not on a
// consent page: a connection in progress counts the passwords tried on it, and is given up after a few
// (the page must not be a way to guess an account's passwords).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('channel_connections')
    .addColumn('sign_in_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('channel_connections').dropColumn('sign_in_attempts').execute();
}
