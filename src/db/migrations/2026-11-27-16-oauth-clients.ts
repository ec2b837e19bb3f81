import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// OAuth clients that register themselves (RFC 7591 dynamic client registration) or that are known by
// the URL of their metadata document (OAuth Client ID Metadata Documents): such a client belongs to no
// organization, may be public (no secret: PKCE protects its codes), may have several redirect URIs,
// and is deleted by housekeeping when nobody ever approved it. Apps registered in Settings keep their
// organization, their secret and their one redirect URI (now also the only item of `redirect_uris`).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('oauth_apps')
    .alterColumn('organization_id', (c) => c.dropNotNull())
    .execute();
  await db.schema
    .alterTable('oauth_apps')
    .alterColumn('secret_hash', (c) => c.dropNotNull())
    .execute();
  await db.schema
    .alterTable('oauth_apps')
    .alterColumn('secret_last_four', (c) => c.dropNotNull())
    .execute();
  await db.schema
    .alterTable('oauth_apps')
    .addColumn('redirect_uris', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('registration', 'text', (c) =>
      c
        .notNull()
        .defaultTo('settings')
        .check(sql`registration in ('settings', 'dynamic', 'metadata_document')`),
    )
    .addColumn('token_endpoint_auth_method', 'text', (c) =>
      c
        .notNull()
        .defaultTo('client_secret_basic')
        .check(sql`token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post')`),
    )
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('metadata_expires_at', 'timestamptz')
    .execute();
  await sql`update oauth_apps set redirect_uris = jsonb_build_array(redirect_uri)`.execute(db);
  await db.schema
    .createIndex('oauth_apps_registered_idx')
    .on('oauth_apps')
    .columns(['registration', 'created_at'])
    .where(sql.ref('registration'), '<>', 'settings')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Clients without an organization or a secret cannot be kept by the older schema.
  await sql`delete from oauth_apps where organization_id is null or secret_hash is null`.execute(db);
  await db.schema.dropIndex('oauth_apps_registered_idx').execute();
  await db.schema
    .alterTable('oauth_apps')
    .dropColumn('redirect_uris')
    .dropColumn('registration')
    .dropColumn('token_endpoint_auth_method')
    .dropColumn('last_used_at')
    .dropColumn('metadata_expires_at')
    .execute();
  for (const column of ['organization_id', 'secret_hash', 'secret_last_four']) {
    await db.schema
      .alterTable('oauth_apps')
      .alterColumn(column, (c) => c.setNotNull())
      .execute();
  }
}
