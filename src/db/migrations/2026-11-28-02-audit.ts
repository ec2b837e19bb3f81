import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// The audit log: who did what in an organization (members, roles, API keys, OAuth apps, approved apps,
// webhooks, channels, posts' deletions and approvals), a row per change written in the same transaction
// as the change. The actor and the subject are kept as ids and as the words they had then (an email, a
// key's name), so an entry still reads the same once the member left or the key was deleted. Listed
// newest first per organization; deleted by age (the retention) on the index by time. A channel
// connection started through the Public API with an API key keeps the key's id, so that the channel's
// connection is recorded as that key's doing when the user comes back from the network.
//
// The daily digest of notifications: a member who chose it (a `daily-digest` row of mail_preferences)
// has each notification kept as an item until the day's digest mail takes them all; a row per member
// and day says the day's digest was planned, so it is planned once whatever runs the job again.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('notification_digest_items')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('headline', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('notification_digest_items_user_idx')
    .on('notification_digest_items')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createTable('notification_digests')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('day', 'date', (c) => c.notNull())
    .addPrimaryKeyConstraint('notification_digests_pkey', ['user_id', 'day'])
    .execute();
  await db.schema.alterTable('channel_connections').addColumn('api_key_id', 'text').execute();
  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    // In milliseconds, as JavaScript's dates hold it: a page's last entry, given back as where the next
    // page starts, then compares exactly.
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`date_trunc('milliseconds', now())`))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) =>
      c.notNull().check(sql`actor_type in ('user', 'api_key', 'oauth_grant', 'operator')`),
    )
    .addColumn('actor_id', 'text')
    .addColumn('actor_label', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('subject_label', 'text', (c) => c.notNull())
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await sql`create index audit_log_organization_idx on audit_log (organization_id, created_at desc, id desc)`.execute(
    db,
  );
  await db.schema.createIndex('audit_log_created_idx').on('audit_log').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('notification_digests').execute();
  await db.schema.dropTable('notification_digest_items').execute();
  await db.schema.dropTable('audit_log').execute();
  await db.schema.alterTable('channel_connections').dropColumn('api_key_id').execute();
}
