import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Channels that users connect themselves: the account's id on its network (connecting the same
// account again updates its channel) and its tokens, encrypted. `channel_connections` holds each
// authorization in progress between the user leaving for the network's consent page and coming
// back: the hash of its `state`, the PKCE verifier (encrypted), and who started it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('channels')
    .addColumn('external_id', 'text')
    .addColumn('credentials', 'text')
    .addColumn('connected_at', 'timestamptz')
    .execute();
  await sql`
    create unique index channels_account_idx
    on channels (organization_id, provider, external_id) where external_id is not null
  `.execute(db);

  await db.schema
    .createTable('channel_connections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('state_hash', 'text', (c) => c.notNull().unique())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    // The browser session that started it in the web app: only that session may finish it.
    .addColumn('session_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('channel_connections').execute();
  await sql`drop index channels_account_idx`.execute(db);
  await db.schema
    .alterTable('channels')
    .dropColumn('external_id')
    .dropColumn('credentials')
    .dropColumn('connected_at')
    .execute();
}
