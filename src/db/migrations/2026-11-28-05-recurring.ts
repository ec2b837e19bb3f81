import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Recurring posts: a series (an RFC 5545 rule in an IANA time zone, and the posts each occurrence
// makes) whose occurrences are created as posts ahead of time. A post of a series names it and the
// occurrence it is; an occurrence exists at most once per channel, so a planning job that runs twice
// creates nothing twice. `skipped`: an occurrence skipped by a person, or missed by more than the grace
// period while the service was down, kept so that it is never created again.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('post_series')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('rule', 'text', (c) => c.notNull())
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('starts_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ends_at', 'timestamptz')
    .addColumn('posts', 'jsonb', (c) => c.notNull())
    .addColumn('planned_until', 'timestamptz', (c) => c.notNull())
    .addColumn('split_from', 'text', (c) => c.references('post_series.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('post_series_organization_idx').on('post_series').columns(['organization_id']).execute();
  // The planning job reads the series whose planned horizon falls behind.
  await sql`create index post_series_planning_idx on post_series (planned_until) where ends_at is null`.execute(db);

  await db.schema
    .alterTable('posts')
    .addColumn('series_id', 'text', (c) => c.references('post_series.id').onDelete('set null'))
    .execute();
  await db.schema.alterTable('posts').addColumn('occurrence_at', 'timestamptz').execute();
  await sql`create unique index posts_series_occurrence_idx on posts (series_id, occurrence_at, channel_id)
    where series_id is not null`.execute(db);

  await sql`alter table posts drop constraint posts_status_check`.execute(db);
  await sql`alter table posts add constraint posts_status_check
    check (status in (
      'draft', 'pending_approval', 'scheduled', 'publishing', 'published', 'failed', 'skipped'
    ))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table posts drop constraint posts_status_check`.execute(db);
  await sql`update posts set status = 'draft' where status = 'skipped'`.execute(db);
  await sql`alter table posts add constraint posts_status_check
    check (status in ('draft', 'pending_approval', 'scheduled', 'publishing', 'published', 'failed'))`.execute(db);
  await db.schema.dropIndex('posts_series_occurrence_idx').execute();
  await db.schema.alterTable('posts').dropColumn('occurrence_at').execute();
  await db.schema.alterTable('posts').dropColumn('series_id').execute();
  await db.schema.dropTable('post_series').execute();
}
