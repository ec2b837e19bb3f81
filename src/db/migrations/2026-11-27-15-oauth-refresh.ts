import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Short access tokens with refresh tokens (RFC 6749 §6, RFC 9700 §4.14). An app may give its access
// tokens a lifetime (`null`: they never expire, as every app registered before this keeps); such a
// token carries its expiry. Refresh tokens are stored by the SHA-256 of their secret; each use spends
// one and issues its successor in the same chain (the authorization it descends from), so that a spent
// token presented again revokes the whole chain, its access tokens included.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oauth_apps').addColumn('access_token_lifetime_seconds', 'integer').execute();
  await db.schema.alterTable('oauth_tokens').addColumn('expires_at', 'timestamptz').execute();
  await db.schema.alterTable('oauth_tokens').addColumn('chain_id', 'text').execute();
  await db.schema.createIndex('oauth_tokens_chain_idx').on('oauth_tokens').column('chain_id').execute();
  // Housekeeping deletes expired tokens; only the tokens of apps that chose expiry have an expiry.
  await db.schema
    .createIndex('oauth_tokens_expires_idx')
    .on('oauth_tokens')
    .column('expires_at')
    .where(sql.ref('expires_at'), 'is not', null)
    .execute();

  await db.schema
    .createTable('oauth_refresh_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('chain_id', 'text', (c) => c.notNull())
    .addColumn('resource', 'text')
    .addColumn('scope', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('spent_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('oauth_refresh_tokens_grant_idx').on('oauth_refresh_tokens').column('grant_id').execute();
  await db.schema.createIndex('oauth_refresh_tokens_chain_idx').on('oauth_refresh_tokens').column('chain_id').execute();
  await db.schema
    .createIndex('oauth_refresh_tokens_expires_idx')
    .on('oauth_refresh_tokens')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oauth_refresh_tokens').execute();
  await db.schema.dropIndex('oauth_tokens_expires_idx').execute();
  await db.schema.dropIndex('oauth_tokens_chain_idx').execute();
  await db.schema.alterTable('oauth_tokens').dropColumn('chain_id').execute();
  await db.schema.alterTable('oauth_tokens').dropColumn('expires_at').execute();
  await db.schema.alterTable('oauth_apps').dropColumn('access_token_lifetime_seconds').execute();
}
