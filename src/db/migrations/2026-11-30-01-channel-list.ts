import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// The list of posts filtered by a channel, in the list's order, under the organization: the list always
// names the organization too, and an index without it left the planner reading the channel's every post
// and sorting them (or combining two indexes) once the installation held thousands of channels.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index posts_organization_channel_list_idx
    on posts (organization_id, channel_id, coalesce(scheduled_at, 'infinity'::timestamptz), (id collate "C"))
  `.execute(db);
  await db.schema.dropIndex('posts_channel_list_idx').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index posts_channel_list_idx
    on posts (channel_id, coalesce(scheduled_at, 'infinity'::timestamptz), (id collate "C"))
  `.execute(db);
  await db.schema.dropIndex('posts_organization_channel_list_idx').execute();
}
