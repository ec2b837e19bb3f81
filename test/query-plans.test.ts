import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { keepHouse } from '../src/housekeeping.js';
import { postsWithoutLiveJob } from '../src/publisher/ledger.js';
import { publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { createTestDatabase, DIALECT } from './support/database.js';
import { eventually } from './support/eventually.js';
import { growDatabase } from './support/grown-database.js';
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

/** Enough rows that a missing index shows as a sequential scan; the organization under test has one in 30. */
const SIZES = { organizations: 300, posts: 30_000, media: 10_000, deliveries: 15_000, finishedJobs: 25_000 };

let network: FakeNetwork;
let receiver: WebhookReceiver;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let endpointId: string;
const sent: CompiledQuery[] = [];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  /** With ANALYZE: the rows the node read and dropped for a condition its index does not hold. */
  'Rows Removed by Filter'?: number;
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

/**
 * Each statement of the list of posts sent while `work` ran, with the rows of the growing tables
 * it read only to drop them (`EXPLAIN (ANALYZE)`, run with the parameters sent): a page of a list that
 * reads its own rows through an index drops none, whatever the organization's other posts. And the
 * tables it read whole, channels included: the installation's channels grow with its organizations,
 * and a page joins its own organization's.
 */
async function droppedRows(
  work: () => Promise<unknown>,
): Promise<{ sql: string; dropped: number; readWhole: string[] }[]> {
  const from = sent.length;
  await work();
  const statements = sent
    .slice(from)
    // The list's statements (in its order), not the worker's that may run meanwhile.
    .filter((query) => /^\s*select\b/i.test(query.sql) && /\border by coalesce\(posts\.scheduled_at\b/.test(query.sql));
  const counts = [];
  for (const statement of statements) {
    const { rows } = await database.pool!.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      `explain (analyze, format json) ${statement.sql}`,
      statement.parameters as unknown[],
    );
    const nodes = [...nodesOf(rows[0]!['QUERY PLAN'][0]!.Plan)];
    const dropped = nodes
      .filter((node) => GROWING.has(node['Relation Name'] ?? ''))
      .reduce((sum, node) => sum + (node['Rows Removed by Filter'] ?? 0), 0);
    const readWhole = nodes
      .filter((node) => node['Node Type'] === 'Seq Scan')
      .map((node) => node['Relation Name'] ?? '')
      .filter((table) => GROWING.has(table) || table === 'channels');
    counts.push({ sql: statement.sql.replace(/\s+/g, ' ').trim(), dropped, readWhole });
  }
  return counts;
}

/** The statements among `plans` that read a growing table whole (none, for the test to pass). */
const scanning = (plans: { sql: string; seqScans: string[] }[]) => plans.filter((plan) => plan.seqScans.length > 0);
/** The statements among `plans` that name `table` (as `table`, `"table"` or `"schema"."table"`). */
const reading = (plans: { sql: string }[], table: string) =>
  plans.filter((plan) => new RegExp(`\\b(from|into|update) ("\\w+"\\.)?"?${table}\\b`, 'i').test(plan.sql));

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
    // Each seeded event shows a post as the API does: the draft's.
    const { post } = await server.ctx.db
      .selectFrom('post_events')
      .select('post')
      .where('post_id', '=', dataOf(draft, 201).data[0]!.id)
      .executeTakeFirstOrThrow();
    await growDatabase(server.ctx.db, SIZES, {
      organizationId: org.id,
      channelId,
      endpointId,
      eventPost: JSON.stringify(post),
      share: 30,
    });
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

  it('reads a page of posts filtered by status, by channel or by time, not the posts before it', async () => {
    const api = publicApi(server, org.auth);
    const now = Date.now();
    const counts = await droppedRows(async () => {
      for (const status of ['scheduled', 'published', 'draft'] as const)
        await api.GET('/public/v1/posts', { params: { query: { status: [status] } } });
      await api.GET('/public/v1/posts', { params: { query: { channelId: [channelId] } } });
      for (const days of [7, 31]) {
        const window = { from: new Date(now).toISOString(), to: new Date(now + days * 86_400_000).toISOString() };
        await api.GET('/public/v1/posts', { params: { query: window } });
      }
      await api.GET('/public/v1/posts', { params: { query: { from: new Date(now).toISOString() } } });
      await api.GET('/public/v1/posts', { params: { query: { to: new Date(now).toISOString() } } });
    });
    expect(counts.length).toBeGreaterThanOrEqual(8);
    expect(counts.filter((count) => count.dropped > 0 || count.readWhole.length > 0)).toEqual([]);
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
    // And reads the posts of the week or month only, not the organization's others.
    const counts = await droppedRows(async () => {
      for (const view of ['week', 'month']) await browser.get(`/calendar?view=${view}`);
    });
    expect(counts.length).toBeGreaterThanOrEqual(2);
    expect(counts.filter((count) => count.dropped > 0 || count.readWhole.length > 0)).toEqual([]);
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
