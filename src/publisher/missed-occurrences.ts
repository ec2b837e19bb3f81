import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { postEventValues } from '../posts/events.js';
import type { PostRow } from '../posts/post-body.js';
import type { LoadedPost } from './ledger.js';

/**
 * An occurrence of a series that the publisher reaches more than the grace period after its time
 * (the server was down, or its queue stood still) is skipped rather than published late: after an
 * outage, a weekly series would otherwise publish every missed week within minutes, which networks
 * take for spam. A post of no series, or one a person moved to another time, is published late as
 * before: only the occurrence at its own time is a series' promise.
 */
export function isMissedOccurrence(post: PostRow, now: Date, graceMs: number): boolean {
  return (
    post.status === 'scheduled' &&
    post.series_id !== null &&
    post.occurrence_at !== null &&
    post.scheduled_at !== null &&
    post.scheduled_at.getTime() === post.occurrence_at.getTime() &&
    post.scheduled_at.getTime() < now.getTime() - graceMs
  );
}

/**
 * Makes the missed occurrences `skipped`, each with a `skipped` event saying why, in one statement;
 * a post changed since it was loaded (its row's version) is left alone. The ids of the posts skipped.
 */
export async function skipMissedOccurrences(
  db: Db,
  missed: readonly LoadedPost[],
  now: Date,
  graceMs: number,
): Promise<string[]> {
  if (missed.length === 0) return [];
  const minutes = Math.round(graceMs / 60_000);
  const input = JSON.stringify(
    missed.map(({ post, version }) => {
      const skipped: PostRow = { ...post, status: 'skipped', updated_at: now };
      const reason =
        `missed: due at ${post.scheduled_at!.toISOString()}, more than ${minutes} minutes before it could be ` +
        'published (the server was down); a series never publishes missed occurrences late';
      const event = postEventValues(skipped, 'skipped', now, { reason });
      return { id: post.id, version, organization_id: post.organization_id, details: event.details, post: event.post };
    }),
  );
  const { rows } = await sql<{ id: string }>`
    with input as (
      select * from jsonb_to_recordset(${input}::jsonb)
        as input(id text, version text, organization_id text, details text, post text)
      limit ${missed.length}
    ),
    skipped as (
      update posts set status = 'skipped', updated_at = ${now}
      from input
      where posts.id = input.id and posts.xmin = input.version::xid and posts.status = 'scheduled'
      returning posts.id
    ),
    events as (
      insert into post_events (organization_id, post_id, type, at, details, post)
      select input.organization_id, input.id, 'skipped', ${now}, input.details::jsonb, input.post::jsonb
      from input join skipped on skipped.id = input.id
    )
    select id from skipped`.execute(db);
  return rows.map((row) => row.id);
}
