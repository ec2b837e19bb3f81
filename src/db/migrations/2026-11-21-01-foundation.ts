import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('memberships')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('owner', 'member')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('memberships_pkey', ['organization_id', 'user_id'])
    .execute();
  await db.schema.createIndex('memberships_user_idx').on('memberships').column('user_id').execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_organization_idx').on('api_keys').column('organization_id').execute();

  await db.schema
    .createTable('channels')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('youtube', 'tiktok', 'sandbox')`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('username', 'text')
    .addColumn('picture', 'text')
    .addColumn('disabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('channels_organization_idx')
    .on('channels')
    .columns(['organization_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('media')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('image', 'video')`))
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('storage_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('media_organization_idx')
    .on('media')
    .columns(['organization_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('posts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channels.id').onDelete('cascade'))
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('media_ids', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('settings', 'jsonb')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('draft', 'scheduled', 'publishing', 'published', 'failed')`),
    )
    .addColumn('scheduled_at', 'timestamptz')
    .addColumn('published_at', 'timestamptz')
    .addColumn('release_id', 'text')
    .addColumn('release_url', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('posts_organization_schedule_idx')
    .on('posts')
    .columns(['organization_id', 'scheduled_at', 'id'])
    .execute();
  await db.schema
    .createIndex('posts_channel_schedule_idx')
    .on('posts')
    .columns(['channel_id', 'scheduled_at'])
    .execute();
  await db.schema.createIndex('posts_group_idx').on('posts').column('group_id').execute();

  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pkey', ['bucket', 'window_start'])
    .execute();

  await db.schema
    .createTable('instance_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'instance_secrets',
    'rate_limit_windows',
    'posts',
    'media',
    'channels',
    'api_keys',
    'memberships',
    'users',
    'organizations',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
