import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';

/** How many rows of each growing table a grown database holds (over all its organizations). */
export interface GrowthSizes {
  /** Other organizations, each with 2 channels and a (turned off) webhook endpoint. */
  organizations: number;
  /** Posts (a tenth drafts, a fifth scheduled ahead, the rest published), each with 2 events of history. */
  posts: number;
  media: number;
  /** Settled webhook deliveries. */
  deliveries: number;
  /** Finished jobs of the queue, as pg-boss keeps them for its retention. */
  finishedJobs: number;
}

/** The organization measured: it gets one row in `share` of each table, on its own channel and endpoint. */
export interface MeasuredOrganization {
  organizationId: string;
  channelId: string;
  endpointId: string;
  /** The `post` every seeded event carries (JSON): a post as the API shows one. */
  eventPost: string;
  share: number;
}

/**
 * Fills a migrated database (whose job queue has started: pg-boss's tables exist) as use fills it, with
 * generate_series, then analyzes it: other organizations with their channels, posts and the posts'
 * history, media, webhook endpoints with deliveries, and the queue's finished jobs and the jobs of the
 * posts scheduled ahead. Used by the test of the hot paths' plans (`npm run bench:scale` seeds with
 * scripts/bench/scale-seed.ts, every organization alike).
 */
export async function growDatabase(db: Db, sizes: GrowthSizes, measured: MeasuredOrganization): Promise<void> {
  const { organizations, posts, media, deliveries, finishedJobs } = sizes;
  const { organizationId, channelId, endpointId, eventPost, share } = measured;
  await sql`insert into organizations (id, name) select 'org_seed' || n, 'Seed ' || n
    from generate_series(1, ${organizations}) n`.execute(db);
  await sql`insert into channels (id, organization_id, provider, name)
    select 'ch_seed' || n, 'org_seed' || (n % ${organizations} + 1), 'sandbox', 'Seed channel ' || n
    from generate_series(1, ${2 * organizations}) n`.execute(db);
  await sql`insert into posts (id, organization_id, group_id, channel_id, content, status, scheduled_at, published_at)
    select 'post_seed' || n, organization_id, 'grp_seed' || n, channel_id, 'Seed post ' || n, status,
      case status when 'draft' then null when 'scheduled' then now() + n * interval '1 minute'
        else now() - n * interval '1 minute' end,
      case status when 'published' then now() - n * interval '1 minute' end
    from (
      select n,
        case when n % ${share} = 0 then ${organizationId} else 'org_seed' || (n % ${organizations} + 1) end
          as organization_id,
        case when n % ${share} = 0 then ${channelId} else 'ch_seed' || (n % ${2 * organizations} + 1) end as channel_id,
        case when n % 10 = 1 then 'draft' when n % 10 in (2, 3) then 'scheduled' else 'published' end as status
      from generate_series(1, ${posts}) n
    ) seeded`.execute(db);
  await sql`insert into post_events (organization_id, post_id, type, at, post, webhooks_dispatched_at)
    select organization_id, id, type, created_at, ${eventPost}::jsonb, now()
    from posts, (values ('created'), ('published')) t(type)
    where id like 'post_seed%'`.execute(db);
  await sql`insert into media (id, organization_id, file_name, content_type, kind, size, storage_key, created_at)
    select 'med_seed' || n,
      case when n % ${share} = 0 then ${organizationId} else 'org_seed' || (n % ${organizations} + 1) end,
      'seed.png', 'image/png', 'image', 1000, 'seed/' || n, now() - n * interval '1 minute'
    from generate_series(1, ${media}) n`.execute(db);
  await sql`insert into webhook_endpoints (id, organization_id, url, event_types, enabled, secret)
    select 'whe_seed' || n, 'org_seed' || n, 'https://example.com/hooks', '["post.published"]', false, 'unused'
    from generate_series(1, ${organizations}) n`.execute(db);
  await sql`insert into webhook_deliveries (id, endpoint_id, event_type, payload, status, attempts, created_at)
    select 'msg_seed' || n,
      case when n % ${share} = 0 then ${endpointId} else 'whe_seed' || (n % ${organizations} + 1) end,
      'post.published', '{}', 'succeeded', 1, now() - n * interval '1 minute'
    from generate_series(1, ${deliveries}) n`.execute(db);
  // pg-boss's table, written as pg-boss writes it: finished jobs spread over the retention, and a waiting
  // job for each post scheduled ahead.
  await sql`insert into pgboss.job (name, data, state, start_after, created_on, started_on, completed_on)
    select 'publish-post', jsonb_build_object('postId', 'post_seed' || n), 'completed',
      now() - n * interval '10 seconds', now() - n * interval '10 seconds', now() - n * interval '10 seconds',
      now() - n * interval '10 seconds'
    from generate_series(1, ${finishedJobs}) n`.execute(db);
  await sql`insert into pgboss.job (name, data, start_after)
    select 'publish-post', jsonb_build_object('postId', id), scheduled_at from posts where status = 'scheduled'
    and id like 'post_seed%'`.execute(db);
  for (const table of ['organizations', 'channels', 'posts', 'post_events', 'media', 'webhook_endpoints'])
    await sql`analyze ${sql.table(table)}`.execute(db);
  await sql`analyze webhook_deliveries`.execute(db);
  await sql`analyze pgboss.job`.execute(db);
}
