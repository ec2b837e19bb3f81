import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Roles: a member is an owner, admin, editor, contributor or viewer. The members of before could do
// everything but own the organization, so they become admins. API keys and OAuth grants act with a
// role of their own (at most their maker's); `null` is a credential made before roles, which keeps
// acting as an owner. Invitations: an email invited with a role, through a single-use link stored hashed.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table memberships drop constraint memberships_role_check`.execute(db);
  await sql`update memberships set role = 'admin' where role = 'member'`.execute(db);
  await sql`alter table memberships add constraint memberships_role_check
    check (role in ('owner', 'admin', 'editor', 'contributor', 'viewer'))`.execute(db);

  await db.schema
    .alterTable('api_keys')
    .addColumn('role', 'text', (c) => c.check(sql`role in ('owner', 'admin', 'editor', 'contributor', 'viewer')`))
    .execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('created_by_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('oauth_grants')
    .addColumn('role', 'text', (c) => c.check(sql`role in ('owner', 'admin', 'editor', 'contributor', 'viewer')`))
    .execute();

  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('admin', 'editor', 'contributor', 'viewer')`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('accepted_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('invitations_organization_idx')
    .on('invitations')
    .columns(['organization_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('invitations').execute();
  await db.schema.alterTable('oauth_grants').dropColumn('role').execute();
  await db.schema.alterTable('api_keys').dropColumn('created_by_user_id').execute();
  await db.schema.alterTable('api_keys').dropColumn('role').execute();
  await sql`alter table memberships drop constraint memberships_role_check`.execute(db);
  await sql`update memberships set role = 'member' where role <> 'owner'`.execute(db);
  await sql`alter table memberships add constraint memberships_role_check check (role in ('owner', 'member'))`.execute(
    db,
  );
}
