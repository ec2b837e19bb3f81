import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// RFC 8707: an authorization request, its code and the access tokens issued for it may name the one
// resource the token is for (the Public API, the MCP server, or the origin, which is both): the audience
// a resource server checks. `null` is a token for every resource, as tokens were before.
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_authorization_requests', 'oauth_codes', 'oauth_tokens']) {
    await db.schema.alterTable(table).addColumn('resource', 'text').execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_tokens', 'oauth_codes', 'oauth_authorization_requests']) {
    await db.schema.alterTable(table).dropColumn('resource').execute();
  }
}
