import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Publishing. A post's row stays the source of truth of where it is; while a worker publishes it,
// the worker holds a lease on the row (`lease_owner`, `lease_until`), so a worker that dies lets go
// of it when the lease runs out. A failure has a code and a message instead of a sentence.
//
// `post_publications` is the step-recorded progress of each attempt to publish a post: the step it
// reached, the network's reference for it (an upload session, a publish id) and whether the attempt
// crossed its irreversible point, written before the worker moves on, so that after a crash the
// attempt is resumed or asked about, never sent again.
//
// `post_events` is the history of every post, written in the same transaction as each change, and the
// outbox that webhooks deliver from; it outlives the post (no foreign key), so a deletion stays told.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('posts')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('publish_attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('next_attempt_at', 'timestamptz')
    .execute();
  await sql`update posts set error_code = 'publish_failed', error_message = error where error is not null`.execute(db);
  await db.schema.alterTable('posts').dropColumn('error').execute();
  // The posts a worker may have to pick up: due or waiting for another attempt.
  await sql`
    create index posts_publishing_idx on posts (status, scheduled_at) where status in ('scheduled', 'publishing')
  `.execute(db);

  await db.schema
    .createTable('post_publications')
    .addColumn('post_id', 'text', (c) => c.notNull().references('posts.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('step', 'text', (c) => c.notNull())
    .addColumn('reference', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('irreversible_at', 'timestamptz')
    .addColumn('retries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('post_publications_pkey', ['post_id', 'attempt'])
    .execute();

  await db.schema
    .createTable('post_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('post_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    // What the event says beyond its type: the reason of a retry, the error of a failure, the release.
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    // The post as the API returned it right after the event, for deliveries of the event.
    .addColumn('post', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('post_events_post_idx').on('post_events').columns(['post_id', 'id']).execute();
  await db.schema
    .createIndex('post_events_organization_idx')
    .on('post_events')
    .columns(['organization_id', 'id'])
    .execute();

  // The sandbox network: what it published, shown on a page of this server.
  await db.schema
    .createTable('sandbox_releases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The caller's key for the publication, so asking again about it finds it (at most one per key).
    .addColumn('publication_key', 'text', (c) => c.notNull().unique())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('media', 'jsonb', (c) => c.notNull())
    .addColumn('settings', 'jsonb')
    .addColumn('published_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sandbox_releases').execute();
  await db.schema.dropTable('post_events').execute();
  await db.schema.dropTable('post_publications').execute();
  await db.schema.dropIndex('posts_publishing_idx').execute();
  await db.schema.alterTable('posts').addColumn('error', 'text').execute();
  await sql`update posts set error = error_message where error_message is not null`.execute(db);
  await db.schema
    .alterTable('posts')
    .dropColumn('error_code')
    .dropColumn('error_message')
    .dropColumn('publish_attempt')
    .dropColumn('lease_owner')
    .dropColumn('lease_until')
    .dropColumn('next_attempt_at')
    .execute();
}
