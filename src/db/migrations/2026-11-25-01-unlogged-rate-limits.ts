import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Every Public API request counts itself in `rate_limit_windows`. Logged, each count was a WAL record
// and a commit that waited for its flush, costing PostgreSQL more per request than the rest of the
// request together. Unlogged, a count is written to the table only; what it gives up is what a rate
// limiter can lose: after a crash of PostgreSQL (not a clean restart) the table starts empty, so the
// windows open at that moment start again, and a standby does not have the counts.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table rate_limit_windows set unlogged`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table rate_limit_windows set logged`.execute(db);
}
