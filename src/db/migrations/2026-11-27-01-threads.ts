import { sql, type Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// Threads: a post's parts after its own content, published in order as replies. `posts.thread` holds
// them with where each was published (`releaseId`, `releaseUrl`, and the network's `reference` a
// reply to it needs); `posts.release_reference` is that reference for the post's own part.
// `post_publications.part` says which part an attempt's recorded step belongs to (0, the post's own
// content; 1, its first thread part …). The sandbox's stored settings gain `failingPart` (1 before),
// and its network records which of its posts a post replies to (`reply_to`).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('posts')
    .addColumn('thread', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('release_reference', 'jsonb')
    .execute();
  await db.schema
    .alterTable('post_publications')
    .addColumn('part', 'smallint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('sandbox_releases')
    .addColumn('reply_to', 'text', (c) => c.references('sandbox_releases.id').onDelete('set null'))
    .execute();
  await sql`
    update posts set settings = settings || '{"failingPart": 1}'::jsonb
    where settings->>'__type' = 'sandbox' and not settings ? 'failingPart'
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`update posts set settings = settings - 'failingPart' where settings->>'__type' = 'sandbox'`.execute(db);
  await db.schema.alterTable('sandbox_releases').dropColumn('reply_to').execute();
  await db.schema.alterTable('post_publications').dropColumn('part').execute();
  await db.schema.alterTable('posts').dropColumn('thread').dropColumn('release_reference').execute();
}
