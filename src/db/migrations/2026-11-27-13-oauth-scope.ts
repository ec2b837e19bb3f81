import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// OAuth scopes: an authorization request, its code and its access tokens may be limited to scopes of the
// Public API (space-separated, as RFC 6749 §3.3 writes them). `null` is a token that may call every
// operation, as tokens were before scopes.
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_authorization_requests', 'oauth_codes', 'oauth_tokens']) {
    await db.schema.alterTable(table).addColumn('scope', 'text').execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_tokens', 'oauth_codes', 'oauth_authorization_requests']) {
    await db.schema.alterTable(table).dropColumn('scope').execute();
  }
}
