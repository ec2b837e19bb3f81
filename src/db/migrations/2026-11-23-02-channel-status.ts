import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// A channel's state becomes one column: `active`; `needs_reconnect` (the network refused its
// credentials: a user connects it again); `disabled` (a user turned it off); or `removed` (a user
// removed it: it is gone from every list, while its posts and their history stay, drafted).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('channels')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .execute();
  await sql`update channels set status = 'disabled' where disabled`.execute(db);
  await db.schema.alterTable('channels').dropColumn('disabled').execute();
  await sql`
    alter table channels
    add constraint channels_status_check check (status in ('active', 'needs_reconnect', 'disabled', 'removed'))
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('channels')
    .addColumn('disabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await sql`update channels set disabled = true where status <> 'active'`.execute(db);
  await sql`delete from channels where status = 'removed'`.execute(db);
  await db.schema.alterTable('channels').dropColumn('status').execute();
}
