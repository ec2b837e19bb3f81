/**
 * How fast GET /public/v1/posts reads a page, at the start of a long list and deep into it, with the
 * query plan of each. Prints numbers; asserts nothing.
 *
 *   npx tsx scripts/bench-posts-list.ts                       # embedded PGlite, in memory
 *   npx tsx scripts/bench-posts-list.ts postgresql://postgres@127.0.0.1:5432/test
 *
 * With a PostgreSQL URL it creates a scratch database next to the one named, and drops it at the end.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { newId } from '../src/core/ids.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { listPosts, postPageQuery } from '../src/posts/queries.js';

const POSTS = 50_000;
const CHANNELS = 5;
const PAGE = 20;
const RUNS = 30;

async function scratchDatabase(url: string | undefined): Promise<DatabaseHandle> {
  if (!url) return openDatabase({});
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: scratch.toString() });
  return {
    ...handle,
    close: async () => {
      await handle.close();
      const again = new pg.Client({ connectionString: url });
      await again.connect();
      await again.query(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}

async function main() {
  const database = await scratchDatabase(process.argv[2]);
  const { db } = database;
  try {
    await migrateToLatest(db);
    const organizationId = newId('org');
    await db.insertInto('organizations').values({ id: organizationId, name: 'Bench' }).execute();
    const channels = Array.from({ length: CHANNELS }, () => newId('ch'));
    await db
      .insertInto('channels')
      .values(
        channels.map((id) => ({
          id,
          organization_id: organizationId,
          provider: 'sandbox' as const,
          name: id,
          username: null,
          picture: null,
        })),
      )
      .execute();

    const seedStart = performance.now();
    const start = Date.parse('2027-01-01T00:00:00.000Z');
    for (let offset = 0; offset < POSTS; offset += 1000) {
      await db
        .insertInto('posts')
        .values(
          Array.from({ length: 1000 }, (_, i) => {
            const n = offset + i;
            return {
              id: newId('post'),
              organization_id: organizationId,
              group_id: newId('grp'),
              channel_id: channels[n % CHANNELS]!,
              content: `post ${n}`,
              media_ids: '[]',
              settings: null,
              status: n % 10 === 0 ? ('draft' as const) : ('scheduled' as const),
              // Several posts share each minute, so the id decides between them; a tenth has no date.
              scheduled_at: n % 10 === 0 ? null : new Date(start + Math.floor(n / 3) * 60_000),
              updated_at: new Date(),
            };
          }),
        )
        .execute();
    }
    await sql`analyze posts`.execute(db);
    console.log(`${database.kind}: seeded ${POSTS} posts in ${Math.round(performance.now() - seedStart)} ms`);

    const firstPage = await listPosts(db, organizationId, {}, undefined, PAGE + 1);
    const deepRows = await listPosts(db, organizationId, { from: new Date(start + 14_000 * 60_000) }, undefined, 1);
    const deep = { scheduledAt: deepRows[0]!.scheduled_at, id: deepRows[0]!.id };
    const cases = [
      { name: 'first page', filters: {}, after: undefined },
      { name: `page after ~${Math.round((14_000 * 3 * 100) / POSTS)}% of the list`, filters: {}, after: deep },
      { name: 'one channel, first page', filters: { channelIds: [channels[0]!] }, after: undefined },
      { name: 'one channel, deep page', filters: { channelIds: [channels[0]!] }, after: deep },
      { name: 'scheduled only, deep page', filters: { statuses: ['scheduled' as const] }, after: deep },
    ];
    console.log(`first page ends at ${firstPage.at(-1)?.scheduled_at?.toISOString()}`);
    for (const c of cases) {
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await listPosts(db, organizationId, c.filters, c.after, PAGE + 1);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(RUNS / 2)]!;
      const p95 = times[Math.floor(RUNS * 0.95)]!;
      const compiled = postPageQuery(db, organizationId, c.filters, c.after, PAGE + 1).compile();
      const plan = await db.executeQuery<{ 'QUERY PLAN': string }>({
        ...compiled,
        sql: `explain ${compiled.sql}`,
      });
      const index =
        plan.rows
          .map((r) => r['QUERY PLAN'])
          .find((line) => /Index/.test(line))
          ?.trim() ?? 'no index';
      console.log(`${c.name.padEnd(34)} median ${median.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms  [${index}]`);
    }
  } finally {
    await database.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
