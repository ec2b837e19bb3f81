import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// The list of posts filtered by status or by channel, in the list's order (posts_list_idx's sort key:
// undated posts last, then the id byte by byte), so that a page of a filtered list reads its own rows
// and not every post of the organization before them.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index posts_status_list_idx
    on posts (organization_id, status, coalesce(scheduled_at, 'infinity'::timestamptz), (id collate "C"))
  `.execute(db);
  await sql`
    create index posts_channel_list_idx
    on posts (channel_id, coalesce(scheduled_at, 'infinity'::timestamptz), (id collate "C"))
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('posts_channel_list_idx').execute();
  await db.schema.dropIndex('posts_status_list_idx').execute();
}
