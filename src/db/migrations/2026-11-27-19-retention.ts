import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Retention: the housekeeping deletes settled webhook deliveries once they are older than the
// retention, every ten minutes; without an index by age each pass read the whole table to find the few
// rows it deletes.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index webhook_deliveries_settled_idx on webhook_deliveries (created_at) where status <> 'pending'
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index webhook_deliveries_settled_idx`.execute(db);
}
