import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Documents (PDF) become a kind of media, which LinkedIn publishes as document posts, with their number
// of pages, read from the page tree when they are stored, so the rules at create can hold a document to
// LinkedIn's 300 pages. Images and videos have none (null).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('media').dropConstraint('media_kind_check').execute();
  await db.schema
    .alterTable('media')
    .addCheckConstraint('media_kind_check', sql`kind in ('image', 'video', 'document')`)
    .execute();
  await db.schema.alterTable('media').addColumn('page_count', 'integer').execute();
}

// Documents cannot stay without their kind: they are deleted with it (their files are left to the
// operator, as the rows no longer name them).
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('media').dropColumn('page_count').execute();
  await sql`delete from media where kind = 'document'`.execute(db);
  await db.schema.alterTable('media').dropConstraint('media_kind_check').execute();
  await db.schema
    .alterTable('media')
    .addCheckConstraint('media_kind_check', sql`kind in ('image', 'video')`)
    .execute();
}
