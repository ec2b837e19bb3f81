import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// The warning that a channel's access ends within a week becomes the webhook event `channel.expiring`, and
// its `channel_events` rows take the name the other channel events have, the event's without `channel.`.
// Warnings written before were never meant for webhooks and stay dispatched.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update channel_events set type = 'expiring' where type = 'access_ending'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`update channel_events set type = 'access_ending' where type = 'expiring'`.execute(db);
}
