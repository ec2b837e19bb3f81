import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per Idempotency-Key of an organization whose create succeeded. The row is inserted first
  // in the create's transaction, so a concurrent request with the same key waits on it and then
  // replays the stored response instead of creating the posts again.
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    // The response's JSON text as sent, so a replay answers it byte for byte (jsonb would reorder keys).
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['organization_id', 'key_hash'])
    .execute();
  await db.schema
    .createIndex('idempotency_keys_expiry_idx')
    .on('idempotency_keys')
    .columns(['organization_id', 'created_at'])
    .execute();

  // The order of GET /posts as one row value, so a page's keyset condition is a range of this index:
  // scheduledAt with undated posts last ('infinity'), then id compared byte by byte.
  await sql`
    create index posts_list_idx
    on posts (organization_id, coalesce(scheduled_at, 'infinity'::timestamptz), (id collate "C"))
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('posts_list_idx').execute();
  await db.schema.dropTable('idempotency_keys').execute();
}
