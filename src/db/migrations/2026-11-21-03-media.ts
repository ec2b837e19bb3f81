import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('storage_key', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    // No foreign key: an upload whose media was deleted must still say that it was completed.
    .addColumn('media_id', 'text')
    .addColumn('failure', 'text')
    .addColumn('completing_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('uploads_expires_idx').on('uploads').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('uploads').execute();
}
