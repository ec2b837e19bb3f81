import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Connections started through the Public API: where the user's browser goes back to when the
// network has answered (the integrator's return URL and state), and which OAuth app started it
// (deleting the app forgets its connections in progress). `connection_return_origins` lists the
// origins an organization's API keys may return to. `account_revocations` holds the tokens of removed
// channels until the network has revoked them (the encrypted value moves there unchanged).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('channel_connections')
    .addColumn('return_url', 'text')
    .addColumn('client_state', 'text')
    .addColumn('app_id', 'text', (c) => c.references('oauth_apps.id').onDelete('cascade'))
    .execute();

  await db.schema
    .createTable('connection_return_origins')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('connection_return_origins_pkey', ['organization_id', 'origin'])
    .execute();

  await db.schema
    .createTable('account_revocations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('credentials', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('account_revocations').execute();
  await db.schema.dropTable('connection_return_origins').execute();
  await db.schema
    .alterTable('channel_connections')
    .dropColumn('return_url')
    .dropColumn('client_state')
    .dropColumn('app_id')
    .execute();
}
