import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Queue and slots: an organization has a time zone (IANA name) in which its channels' posting
// schedules are read; a channel's schedule is a set of weekly slots (ISO weekday 1 = Monday … 7 =
// Sunday, and the minute of the local day); a post created "to the queue" takes its channel's next
// free slot and is marked `queued`, so that a changed schedule moves only such posts, never one
// scheduled at a time a person chose.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('organizations')
    .addColumn('time_zone', 'text', (c) => c.notNull().defaultTo('UTC'))
    .execute();
  await db.schema
    .createTable('channel_slots')
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channels.id').onDelete('cascade'))
    .addColumn('weekday', 'smallint', (c) => c.notNull().check(sql`weekday between 1 and 7`))
    .addColumn('minute', 'smallint', (c) => c.notNull().check(sql`minute between 0 and 1439`))
    .addPrimaryKeyConstraint('channel_slots_pkey', ['channel_id', 'weekday', 'minute'])
    .execute();
  await db.schema
    .alterTable('posts')
    .addColumn('queued', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await sql`create index posts_queued_idx on posts (channel_id, scheduled_at) where queued`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index posts_queued_idx`.execute(db);
  await db.schema.alterTable('posts').dropColumn('queued').execute();
  await db.schema.dropTable('channel_slots').execute();
  await db.schema.alterTable('organizations').dropColumn('time_zone').execute();
}
