import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Webhook endpoints of an organization (and of the OAuth app that created one: deleting the app
// deletes its endpoints), with their signing secret encrypted and the previous one kept for a day
// after a rotation. A delivery is one event for one endpoint: its payload as first sent, its attempts,
// and where it stands. Post events are the outbox: `webhooks_dispatched_at` is stamped once the
// dispatcher has made an event's deliveries; events written before this migration count as done.
// `channel_events` is the same outbox for channels: connected, and needing to be connected again.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.references('oauth_apps.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('event_types', 'jsonb', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .addColumn('failing_since', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_organization_idx')
    .on('webhook_endpoints')
    .columns(['organization_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigserial', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    // Events of one post reach an endpoint in order: deliveries with the same key wait for earlier ones.
    .addColumn('ordering_key', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_status_code', 'integer')
    .addColumn('last_duration_ms', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('last_response_body', 'text')
    .addColumn('next_attempt_at', 'timestamptz')
    // Held by the worker sending it until then, so that two jobs of one delivery never send it at once.
    .addColumn('claimed_until', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint_idx')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'seq'])
    .execute();
  await sql`
    create index webhook_deliveries_pending_idx
    on webhook_deliveries (endpoint_id, ordering_key, seq) where status = 'pending'
  `.execute(db);

  await db.schema
    .alterTable('post_events')
    .addColumn('webhooks_dispatched_at', 'timestamptz', (c) => c.defaultTo(sql`now()`))
    .execute();
  await sql`alter table post_events alter column webhooks_dispatched_at drop default`.execute(db);
  await sql`create index post_events_undispatched_idx on post_events (id) where webhooks_dispatched_at is null`.execute(
    db,
  );

  await db.schema
    .createTable('channel_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('webhooks_dispatched_at', 'timestamptz')
    .execute();
  await sql`
    create index channel_events_undispatched_idx on channel_events (id) where webhooks_dispatched_at is null
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('channel_events').execute();
  await db.schema.alterTable('post_events').dropColumn('webhooks_dispatched_at').execute();
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
}
