import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Imports: each imported row's key (the client's, or a hash of the row) and the group of posts it
// created, so that importing the same file again creates nothing twice. A row stays known as long as
// its organization exists: a file imported again a month later must not publish its posts twice.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('post_imports')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    // SHA-256 of the row's key: a client's key of up to 200 characters, or the row's canonical JSON.
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('post_imports_pkey', ['organization_id', 'key_hash'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('post_imports').execute();
}
