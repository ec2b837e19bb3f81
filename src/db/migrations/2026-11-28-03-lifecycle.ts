import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Deleting an organization: the tokens of its channels wait in `account_revocations` until the
// networks have revoked them, so those rows outlive the organization (its id stays, as the tokens'
// encryption context, without a foreign key). `stored_file_deletions` lists the files of deleted
// media and uploads that the housekeeping removes from the storage, so that a deletion of thousands
// of files is one transaction and no file is forgotten when a worker stops half-way.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table account_revocations drop constraint account_revocations_organization_id_fkey
  `.execute(db);
  await db.schema
    .createTable('stored_file_deletions')
    .addColumn('storage_key', 'text', (c) => c.primaryKey())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('stored_file_deletions_due_idx')
    .on('stored_file_deletions')
    .column('next_attempt_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('stored_file_deletions').execute();
  await sql`delete from account_revocations where organization_id not in (select id from organizations)`.execute(db);
  await sql`
    alter table account_revocations add constraint account_revocations_organization_id_fkey
      foreign key (organization_id) references organizations (id) on delete cascade
  `.execute(db);
}
