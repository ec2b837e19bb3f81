import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { keepHouse } from '../src/housekeeping.js';
import { postsWithoutLiveJob } from '../src/publisher/ledger.js';
import { publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { createTestDatabase, DIALECT } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf } from './support/typed-answers.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// The hot paths read the tables that grow with use (posts, their history, media, webhook deliveries,
// pg-boss's jobs) through indexes, never by reading them whole. The server runs on a database that
// records every statement it sends; each test does what a user or the worker does, and asks
// PostgreSQL for the plan of each statement that was sent (`EXPLAIN`, with the same parameters). The
// seed is a few tens of thousands of rows over hundreds of organizations, analyzed: enough that a
// missing index shows as a sequential scan, as it would at millions of rows.

/** The tables that grow with use, as a plan names them (pg-boss's jobs are in its partition `job_common`). */
const GROWING = new Set(['posts', 'post_events', 'media', 'webhook_deliveries', 'job', 'job_common']);

const ORGANIZATIONS = 300;
const POSTS = 45_000;
const MEDIA = 20_000;
const DELIVERIES = 30_000;
const FINISHED_JOBS = 40_000;

let network: FakeNetwork;
let receiver: WebhookReceiver;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let endpointId: string;
let draftId: string;
const sent: CompiledQuery[] = [];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

/** Every statement sent while `work` ran, each with the growing tables its plan reads whole. */
async function plansOf(work: () => Promise<unknown>): Promise<{ sql: string; seqScans: string[] }[]> {
  const from = sent.length;
  await work();
  const statements = sent.slice(from).filter((query) => /^\s*(select|with|insert|update|delete)\b/i.test(query.sql));
  const plans = [];
  for (const statement of statements) {
    // Planned for the parameters it was sent with, as PostgreSQL plans a statement's first runs (and
    // every run when a generic plan would cost more).
    const { rows } = await database.pool!.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      `explain (format json) ${statement.sql}`,
      statement.parameters as unknown[],
    );
    const seqScans = [...nodesOf(rows[0]!['QUERY PLAN'][0]!.Plan)]
      .filter((node) => node['Node Type'] === 'Seq Scan' && GROWING.has(node['Relation Name'] ?? ''))
      .map((node) => node['Relation Name']!);
    plans.push({ sql: statement.sql.replace(/\s+/g, ' ').trim(), seqScans });
  }
  return plans;
}

/** The statements among `plans` that read a growing table whole (none, for the test to pass). */
const scanning = (plans: { sql: string; seqScans: string[] }[]) => plans.filter((plan) => plan.seqScans.length > 0);
/** The statements among `plans` that name `table` (as `table`, `"table"` or `"schema"."table"`). */
const reading = (plans: { sql: string }[], table: string) =>
  plans.filter((plan) => new RegExp(`\\b(from|into|update) ("\\w+"\\.)?"?${table}\\b`, 'i').test(plan.sql));

/**
 * Hundreds of other organizations with their channels, posts (published, scheduled, drafts), the
 * posts' events, media, webhook endpoints with deliveries, and the queue's finished jobs; the
 * organization under test gets a share of posts and media of its own.
 */
async function seed(db: Db): Promise<void> {
  await sql`insert into organizations (id, name) select 'org_seed' || n, 'Seed ' || n
    from generate_series(1, ${ORGANIZATIONS}) n`.execute(db);
  await sql`insert into channels (id, organization_id, provider, name)
    select 'ch_seed' || n, 'org_seed' || (n % ${ORGANIZATIONS} + 1), 'sandbox', 'Seed channel ' || n
    from generate_series(1, ${2 * ORGANIZATIONS}) n`.execute(db);
  // A tenth are drafts, a fifth are scheduled ahead, the rest were published; one post in thirty is the
  // organization's under test.
  await sql`insert into posts (id, organization_id, group_id, channel_id, content, status, scheduled_at, published_at)
    select 'post_seed' || n, organization_id, 'grp_seed' || n, channel_id, 'Seed post ' || n, status,
      case status when 'draft' then null when 'scheduled' then now() + n * interval '1 minute'
        else now() - n * interval '1 minute' end,
      case status when 'published' then now() - n * interval '1 minute' end
    from (
      select n,
        case when n % 30 = 0 then ${org.id} else 'org_seed' || (n % ${ORGANIZATIONS} + 1) end as organization_id,
        case when n % 30 = 0 then ${channelId} else 'ch_seed' || (n % ${2 * ORGANIZATIONS} + 1) end as channel_id,
        case when n % 10 = 1 then 'draft' when n % 10 in (2, 3) then 'scheduled' else 'published' end as status
      from generate_series(1, ${POSTS}) n
    ) seeded`.execute(db);
  // Each event shows a post as the API does: the one of the draft made through the API.
  await sql`insert into post_events (organization_id, post_id, type, at, post, webhooks_dispatched_at)
    select organization_id, id, type, created_at, (select post from post_events where post_id = ${draftId} limit 1),
      now()
    from posts, (values ('created'), ('published')) t(type)
    where id like 'post_seed%'`.execute(db);
  await sql`insert into media (id, organization_id, file_name, content_type, kind, size, storage_key, created_at)
    select 'med_seed' || n, case when n % 30 = 0 then ${org.id} else 'org_seed' || (n % ${ORGANIZATIONS} + 1) end,
      'seed.png', 'image/png', 'image', 1000, 'seed/' || n, now() - n * interval '1 minute'
    from generate_series(1, ${MEDIA}) n`.execute(db);
  await sql`insert into webhook_endpoints (id, organization_id, url, event_types, enabled, secret)
    select 'whe_seed' || n, 'org_seed' || n, 'https://example.com/hooks', '["post.published"]', false, 'unused'
    from generate_series(1, ${ORGANIZATIONS}) n`.execute(db);
  await sql`insert into webhook_deliveries (id, endpoint_id, event_type, payload, status, attempts, created_at)
    select 'msg_seed' || n, case when n % 30 = 0 then ${endpointId} else 'whe_seed' || (n % ${ORGANIZATIONS} + 1) end,
      'post.published', '{}', 'succeeded', 1, now() - n * interval '1 minute'
    from generate_series(1, ${DELIVERIES}) n`.execute(db);
  // The queue as a week of publications leaves it (pg-boss's table, written here as pg-boss writes it).
  await sql`insert into pgboss.job (name, data, state, start_after, created_on, started_on, completed_on)
    select 'publish-post', jsonb_build_object('postId', 'post_seed' || n), 'completed',
      now() - n * interval '10 seconds', now() - n * interval '10 seconds', now() - n * interval '10 seconds',
      now() - n * interval '10 seconds'
    from generate_series(1, ${FINISHED_JOBS}) n`.execute(db);
  await sql`insert into pgboss.job (name, data, start_after)
    select 'publish-post', jsonb_build_object('postId', id), scheduled_at from posts where status = 'scheduled'
    and id like 'post_seed%'`.execute(db);
  for (const table of ['organizations', 'channels', 'posts', 'post_events', 'media', 'webhook_endpoints'])
    await sql`analyze ${sql.table(table)}`.execute(db);
  await sql`analyze webhook_deliveries`.execute(db);
  await sql`analyze pgboss.job`.execute(db);
}

describe.skipIf(DIALECT !== 'postgres')('the hot paths on a database that has grown', () => {
  beforeAll(async () => {
    network = await startFakeNetwork();
    receiver = await startWebhookReceiver();
    database = await createTestDatabase();
    // The same connections, through a Kysely that records every statement the service sends.
    const recording: Db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: database.pool! }),
      log: (event) => {
        if (event.level === 'query') sent.push(event.query);
      },
    });
    server = await startTestServer({
      worker: true,
      database: { ...database, db: recording },
      env: {
        SANDBOX_NETWORK_URL: network.url,
        WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
        RATE_LIMIT_MAX: '100000',
      },
    });
    org = await createOrganization(server.ctx.db, 'Grown');
    channelId = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Grown sandbox')).id;
    const endpoint = await publicApi(server, org.auth).POST('/public/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['post.published'] },
    });
    endpointId = dataOf(endpoint, 201).id;
    const draft = await publicApi(server, org.auth).POST('/public/v1/posts', {
      body: { type: 'draft', content: 'As the API shows a post', channelIds: [channelId] },
    });
    draftId = dataOf(draft, 201).data[0]!.id;
    await seed(server.ctx.db);
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([network?.close(), receiver?.close()]);
  });

  it('lists posts, their history, media, channels and deliveries on indexes', async () => {
    const api = publicApi(server, org.auth);
    const weekAhead = { from: new Date().toISOString(), to: new Date(Date.now() + 7 * 86_400_000).toISOString() };
    const plans = await plansOf(async () => {
      const first = dataOf(await api.GET('/public/v1/posts', { params: { query: { limit: 50 } } }));
      expect(first.data).toHaveLength(50);
      await api.GET('/public/v1/posts', { params: { query: { limit: 50, cursor: first.nextCursor! } } });
      await api.GET('/public/v1/posts', { params: { query: { status: ['scheduled'] } } });
      await api.GET('/public/v1/posts', { params: { query: { channelId: [channelId] } } });
      await api.GET('/public/v1/posts', { params: { query: weekAhead } });
      const postId = first.data[0]!.id;
      dataOf(await api.GET('/public/v1/posts/{id}/history', { params: { path: { id: postId } } }));
      const media = dataOf(await api.GET('/public/v1/media', { params: { query: { limit: 50 } } }));
      expect(media.data).toHaveLength(50);
      await api.GET('/public/v1/media', { params: { query: { limit: 50, cursor: media.nextCursor! } } });
      dataOf(await api.GET('/public/v1/channels'));
      const deliveries = await api.GET('/public/v1/webhooks/{id}/deliveries', { params: { path: { id: endpointId } } });
      expect(dataOf(deliveries).data.length).toBeGreaterThan(0);
    });
    for (const table of ['posts', 'post_events', 'media', 'channels', 'webhook_deliveries'])
      expect(reading(plans, table), table).not.toEqual([]);
    expect(scanning(plans)).toEqual([]);
  });

  it("shows the calendar's week and month on indexes", async () => {
    const browser = new BrowserSession(server);
    await browser.logIn(org.email, org.password);
    const plans = await plansOf(async () => {
      for (const view of ['week', 'month']) {
        const page = await browser.get(`/calendar?view=${view}`);
        expect(page.status).toBe(200);
      }
    });
    expect(reading(plans, 'posts')).not.toEqual([]);
    expect(scanning(plans)).toEqual([]);
  });

  it('claims a due post, records its events and dispatches them to webhooks on indexes', async () => {
    const api = publicApi(server, org.auth);
    const before = receiver.received.length;
    const plans = await plansOf(async () => {
      const created = await api.POST('/public/v1/posts', {
        body: { type: 'now', content: 'Grown and still quick', channelIds: [channelId] },
      });
      const postId = dataOf(created, 201).data[0]!.id;
      await eventually(async () => {
        const post = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id: postId } } }));
        expect(post.status).toBe('published');
      });
      await receiver.untilReceived(before + 1);
    });
    expect(plans.map((plan) => plan.sql)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/update posts set status = 'publishing'/),
        expect.stringMatching(/from "?post_events"? where webhooks_dispatched_at is null/),
        expect.stringMatching(/insert into "webhook_deliveries"/),
      ]),
    );
    expect(scanning(plans)).toEqual([]);
  });

  it("finds lost jobs, reports the queue's load and keeps house on indexes", async () => {
    const { queue } = server.ctx;
    const plans = await plansOf(async () => {
      const now = server.clock.now();
      await postsWithoutLiveJob(server.ctx.db, (id) => queue.noLiveJob('publish-post', 'postId', id), 60, 100, now);
      await queue.load();
      await keepHouse(server.ctx);
    });
    expect(reading(plans, 'job')).not.toEqual([]);
    expect(scanning(plans)).toEqual([]);
  });
});
