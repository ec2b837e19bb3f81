import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Approval: a contributor's post waits in `pending_approval` until an editor (or above) approves it
// (it is scheduled) or rejects it (a draft again). `submitted_by_user_id` is who asked for it to be
// published, told by mail when it is approved or rejected; `null` once that account is gone.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table posts drop constraint posts_status_check`.execute(db);
  await sql`alter table posts add constraint posts_status_check
    check (status in ('draft', 'pending_approval', 'scheduled', 'publishing', 'published', 'failed'))`.execute(db);
  await db.schema
    .alterTable('posts')
    .addColumn('submitted_by_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('posts').dropColumn('submitted_by_user_id').execute();
  // Without approval, a post that waited for it is a draft: nobody scheduled it.
  await sql`update posts set status = 'draft' where status = 'pending_approval'`.execute(db);
  await sql`alter table posts drop constraint posts_status_check`.execute(db);
  await sql`alter table posts add constraint posts_status_check
    check (status in ('draft', 'scheduled', 'publishing', 'published', 'failed'))`.execute(db);
}
