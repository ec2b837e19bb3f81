import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Mail to people: a user's address is verified by a link mailed to it (a user who signed up before has
// none verified yet), a new address waits in `pending_email` until its link is followed, and the links of
// password resets and verifications are single-use tokens of which only the SHA-256 is kept. A member's
// choice of the notifications they get by mail (a post failed, a channel needs reconnecting or is about to
// lose its access) is a row per kind they changed; without one, the kind is sent.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('email_verified_at', 'timestamptz')
    .addColumn('pending_email', 'text')
    .execute();
  await db.schema
    .createTable('account_mail_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('password_reset', 'email_verification')`))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('account_mail_tokens_user_idx')
    .on('account_mail_tokens')
    .columns(['user_id', 'purpose'])
    .execute();
  await db.schema
    .createTable('mail_preferences')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('wanted', 'boolean', (c) => c.notNull())
    .addPrimaryKeyConstraint('mail_preferences_pkey', ['user_id', 'kind'])
    .execute();
  await db.schema
    .createIndex('account_mail_tokens_expires_idx')
    .on('account_mail_tokens')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mail_preferences').execute();
  await db.schema.dropTable('account_mail_tokens').execute();
  await db.schema.alterTable('users').dropColumn('pending_email').dropColumn('email_verified_at').execute();
}
