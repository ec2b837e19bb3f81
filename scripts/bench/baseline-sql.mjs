// The statements the service sends for the benchmarked operations, as the bare baseline sends them.
// test/round-trips.test.ts compares them with what the service sends, so the two cannot drift apart.
import { insertJobs } from 'pg-boss/dist/plans.js';

const list = (count, from = 1) => Array.from({ length: count }, (_, i) => `$${from + i}`).join(', ');

export const BASELINE_SQL = {
  credential:
    'select id, organization_id, last_used_at from "api_keys" where "secret_hash" = $1 and revoked_at is null',
  organization: 'select * from "organizations" where "id" = $1',
  channels:
    'select * from "channels" where "channels"."organization_id" = $1 and "channels"."status" <> $2 ' +
    'order by "channels"."created_at", "channels"."id"',
  quota:
    'select "channels"."provider", "channels"."id", ' +
    '(select count(*) as "count" from "posts" where "posts"."channel_id" = "channels"."id" ' +
    'and "posts"."status" in ($1, $2, $3) and "posts"."scheduled_at" >= $4 and "posts"."scheduled_at" < $5) ' +
    'as "used" ' +
    'from "channels" where "channels"."organization_id" = $6 and "channels"."status" <> $7 ' +
    'order by "channels"."created_at", "channels"."id"',
  postsOnDay: (channels) =>
    `select "channel_id", count(*) as "count" from "posts" where "channel_id" in (${list(channels)}) ` +
    `and "status" in (${list(3, channels + 1)}) and "scheduled_at" >= $${channels + 4} ` +
    `and "scheduled_at" < $${channels + 5} group by "channel_id"`,
  listPosts:
    'select "posts".*, (select "channels"."provider" from "channels" where "channels"."id" = "posts"."channel_id") ' +
    'as "provider" from "posts" where "posts"."organization_id" = $1 ' +
    'order by coalesce(posts.scheduled_at, \'infinity\'::timestamptz), (posts.id collate "C") limit $2',
  getPost:
    'select "posts".*, (select "channels"."provider" from "channels" where "channels"."id" = "posts"."channel_id") ' +
    'as "provider" from "posts" where "posts"."organization_id" = $1 and "posts"."id" = $2',
  listMedia: 'select * from "media" where "organization_id" = $1 order by "created_at" desc, "id" desc limit $2',
  createChannels: (channels) =>
    `select * from "channels" where "organization_id" = $1 and "id" in (${list(channels, 2)}) ` +
    `and "status" <> $${channels + 2}`,
  lockChannels: (channels) =>
    `select "id", "status" from "channels" where "organization_id" = $1 and "id" in (${list(channels, 2)}) ` +
    'order by "id" for no key update',
  insertPosts:
    'insert into posts (id, organization_id, group_id, channel_id, content, media_ids, alt_texts, thread, ' +
    'first_comment, settings, status, queued, scheduled_at, series_id, occurrence_at, submitted_by_user_id, ' +
    'created_at, updated_at) ' +
    'select id, organization_id, group_id, channel_id, content, media_ids, alt_texts, thread, first_comment, ' +
    'settings, status, coalesce(queued, false), scheduled_at, series_id, occurrence_at, submitted_by_user_id, ' +
    'created_at, updated_at ' +
    'from jsonb_populate_recordset(null::posts, $1::jsonb) ' +
    'where not exists (select from jsonb_to_recordset($2::jsonb) ' +
    'as claim(channel_id text, adding int, daily_limit int) ' +
    'where claim.adding + (select count(*) from posts where posts.channel_id = claim.channel_id ' +
    'and posts.status in ($3, $4, $5) and posts.scheduled_at >= $6 and posts.scheduled_at < $7) ' +
    '> claim.daily_limit) ' +
    'returning *',
  insertEvents: (events) =>
    'insert into "post_events" ("organization_id", "post_id", "type", "at", "details", "post") values ' +
    Array.from({ length: events }, (_, i) => `(${list(6, 1 + i * 6)})`).join(', '),
  planJobs: insertJobs('pgboss', { table: 'job_common', name: 'publish-post', returnId: false, notify: false }),
  createPost: (channels) => [
    BASELINE_SQL.createChannels(channels),
    'begin',
    BASELINE_SQL.lockChannels(channels),
    BASELINE_SQL.insertPosts,
    BASELINE_SQL.insertEvents(2 * channels),
    BASELINE_SQL.planJobs,
    'commit',
  ],
};
