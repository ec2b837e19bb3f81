import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';

/**
 * How an installation that has grown looks, per organization: every organization holds the same
 * (`PER_ORGANIZATION`), so the organization measured reads the same rows on a database of one
 * organization as on one of a thousand, and only the rest of the database differs.
 */
export const PER_ORGANIZATION = {
  channels: 10,
  /** Per channel: a tenth drafts, a fifth scheduled over the next four weeks, the rest published over a year. */
  postsPerChannel: 100,
  /** History per post: created, edited, rescheduled, …, publishing and published. */
  eventsPerPost: 10,
  media: 100,
  /** Settled deliveries of the organization's webhook endpoint. */
  deliveries: 100,
};

export interface ScaleSeed {
  /** Organizations besides the one measured (which exists, with its owner and API key). */
  otherOrganizations: number;
  /** Finished jobs of the queue (as pg-boss keeps them until its retention deletes them). */
  finishedJobs: number;
  /** The `post` every seeded event carries (JSON): a post as the API shows one. */
  eventPost: string;
  /** Told of each table seeded, with the time it took. */
  progress?: (step: string, ms: number) => void;
}

/** Every organization with its ordinal `o`, which the seeded rows' ids carry. */
const organizationsInOrder = sql`with seed_organizations as (
  select id, row_number() over (order by id) as o from organizations)`;

/**
 * Fills a migrated database whose job queue has started (pg-boss's tables exist) with generate_series:
 * the other organizations, then, for each organization (the one measured too), its channels, posts with
 * their history, media, a webhook endpoint with its deliveries, then the queue's finished jobs and a
 * waiting job per post scheduled ahead, and analyzes it.
 */
export async function seedScale(db: Db, seed: ScaleSeed): Promise<void> {
  let since = performance.now();
  const done = (step: string) => {
    seed.progress?.(step, performance.now() - since);
    since = performance.now();
  };
  const { channels, postsPerChannel, eventsPerPost, media, deliveries } = PER_ORGANIZATION;
  await sql`insert into organizations (id, name) select 'org_s' || n, 'Seed ' || n
    from generate_series(1, ${seed.otherOrganizations}) n`.execute(db);
  done('organizations');
  await sql`insert into channels (id, organization_id, provider, name)
    ${organizationsInOrder} select 'ch_s' || o || '_' || c, id, 'sandbox', 'Seed channel ' || c
    from seed_organizations, generate_series(1, ${channels}) c`.execute(db);
  done('channels');
  // Published posts every 88 hours per channel back over a year; scheduled ones every 7 hours ahead.
  await sql`insert into posts (id, organization_id, group_id, channel_id, content, status, scheduled_at,
      published_at, created_at, updated_at)
    ${organizationsInOrder} select 'post_s' || o || '_' || c || '_' || k, organization_id,
      'grp_s' || o || '_' || c || '_' || k, channel_id,
      'Seed post ' || k, status, scheduled_at, case status when 'published' then scheduled_at end,
      least(coalesce(scheduled_at, now()), now()) - interval '1 day', now()
    from (
      select o, c, k, s.id as organization_id, 'ch_s' || o || '_' || c as channel_id,
        case when k % 10 = 1 then 'draft' when k % 10 in (2, 3) then 'scheduled' else 'published' end as status,
        case when k % 10 = 1 then null
          when k % 10 in (2, 3) then now() + k * interval '7 hours' + c * interval '13 minutes'
          else now() - k * interval '88 hours' - c * interval '13 minutes' end as scheduled_at
      from seed_organizations s, generate_series(1, ${channels}) c, generate_series(1, ${postsPerChannel}) k
    ) seeded`.execute(db);
  done('posts');
  // A post's events take ids in their order. Sorted by organization in steps of a few dozen, and only their
  // keys, so that each sort fits in memory: 10,000,000 rows sorted at once with their documents spilled
  // gigabytes to disk and took longer than everything else together.
  const { count: organizationCount } = await db
    .selectFrom('organizations')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .executeTakeFirstOrThrow();
  const step = 50;
  for (let first = 1; first <= Number(organizationCount); first += step) {
    await db.transaction().execute(async (trx) => {
      await sql`set local work_mem = '256MB'`.execute(trx);
      await sql`insert into post_events (organization_id, post_id, type, at, post, webhooks_dispatched_at)
        ${organizationsInOrder} select organization_id, id,
          case when e = 1 then 'created'
            when e = ${eventsPerPost} and status = 'published' then 'published'
            when e = ${eventsPerPost} - 1 and status = 'published' then 'publishing'
            when e = 2 then 'rescheduled' else 'edited' end,
          created_at + e * interval '1 minute', ${seed.eventPost}::jsonb, now()
        from (
          select p.organization_id, p.id, p.status, p.created_at, e
          from seed_organizations s
          join posts p on p.organization_id = s.id
          cross join generate_series(1, ${eventsPerPost}) e
          where s.o between ${first} and ${first + step - 1} and p.id like 'post_s%'
          order by p.id, e
        ) keys`.execute(trx);
    });
  }
  done('post_events');
  await sql`insert into media (id, organization_id, file_name, content_type, kind, size, storage_key, created_at)
    ${organizationsInOrder} select 'med_s' || o || '_' || n, id, 'seed.png', 'image/png', 'image', 1000,
      'seed/' || o || '/' || n,
      now() - n * interval '3 days'
    from seed_organizations, generate_series(1, ${media}) n`.execute(db);
  done('media');
  await sql`insert into webhook_endpoints (id, organization_id, url, event_types, enabled, secret)
    ${organizationsInOrder} select 'whe_s' || o, id, 'https://example.com/hooks', '["post.published"]', false, 'unused'
    from seed_organizations`.execute(db);
  done('webhook_endpoints');
  await sql`insert into webhook_deliveries (id, endpoint_id, event_type, payload, status, attempts, created_at)
    ${organizationsInOrder} select 'msg_s' || o || '_' || n, 'whe_s' || o, 'post.published', '{}', 'succeeded', 1,
      now() - n * interval '3 days'
    from seed_organizations, generate_series(1, ${deliveries}) n`.execute(db);
  done('webhook_deliveries');
  // pg-boss's table, written as pg-boss writes it: finished jobs over its retention, and a waiting job for
  // each post scheduled ahead.
  await sql`insert into pgboss.job (name, data, state, start_after, created_on, started_on, completed_on)
    select 'publish-post', jsonb_build_object('postId', 'post_done' || n), 'completed',
      now() - n * interval '0.5 seconds', now() - n * interval '0.5 seconds', now() - n * interval '0.5 seconds',
      now() - n * interval '0.5 seconds'
    from generate_series(1, ${seed.finishedJobs}) n`.execute(db);
  done('finished jobs');
  await sql`insert into pgboss.job (name, data, start_after)
    select 'publish-post', jsonb_build_object('postId', id), scheduled_at from posts
    where status = 'scheduled' and id like 'post_s%'`.execute(db);
  done('waiting jobs');
  for (const table of ['organizations', 'channels', 'posts', 'post_events', 'media', 'webhook_endpoints'])
    await sql`analyze ${sql.table(table)}`.execute(db);
  await sql`analyze webhook_deliveries`.execute(db);
  await sql`analyze pgboss.job`.execute(db);
  done('analyze');
}
