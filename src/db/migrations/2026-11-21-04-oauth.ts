import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
// Every secret below (session tokens, client secrets, authorization codes, access tokens) is stored as
// the SHA-256 of its value only.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.references('organizations.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_expiry_idx').on('sessions').column('expires_at').execute();

  await db.schema
    .createTable('oauth_apps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('picture_url', 'text')
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('secret_last_four', 'text', (c) => c.notNull())
    .addColumn('secret_rotated_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('oauth_apps_organization_idx')
    .on('oauth_apps')
    .columns(['organization_id', 'created_at'])
    .execute();

  // One row per (app, organization) that a user approved: what Settings → Approved apps lists and
  // what a user's Revoke removes, together with the codes and tokens issued under it.
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('approved_by_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('approved_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('oauth_grants_app_organization_key', ['app_id', 'organization_id'])
    .execute();
  await db.schema.createIndex('oauth_grants_organization_idx').on('oauth_grants').column('organization_id').execute();

  // What a consent page showed, bound to the browser session that saw it, so that the answer
  // approves exactly that and nothing the form could be edited to say.
  await db.schema
    .createTable('oauth_authorization_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('redirect_uri_given', 'boolean', (c) => c.notNull())
    .addColumn('state', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('oauth_authorization_requests_session_idx')
    .on('oauth_authorization_requests')
    .column('session_id')
    .execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('consumed_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('oauth_codes_grant_idx').on('oauth_codes').column('grant_id').execute();

  await db.schema
    .createTable('oauth_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('code_id', 'text', (c) => c.references('oauth_codes.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('oauth_tokens_grant_idx').on('oauth_tokens').column('grant_id').execute();
  await db.schema.createIndex('oauth_tokens_code_idx').on('oauth_tokens').column('code_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'oauth_tokens',
    'oauth_codes',
    'oauth_authorization_requests',
    'oauth_grants',
    'oauth_apps',
    'sessions',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
