import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepHouse } from '../src/housekeeping.js';
import { publicApi } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// What the service keeps of finished work, and for how long: the queue's finished jobs for
// JOB_RETENTION_DAYS (pg-boss deletes them), settled webhook deliveries for
// WEBHOOK_DELIVERY_RETENTION_DAYS (the housekeeping deletes them); a post's history stays. The clock
// moves past the retention instead of waiting for it.
let network: FakeNetwork;
let receiver: WebhookReceiver;
let server: TestServer;
let org: TestOrganization;
let channelIds: string[];

const DAY_MS = 86_400_000;
const CHANNELS = 4;

beforeAll(async () => {
  network = await startFakeNetwork();
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    worker: true,
    env: {
      SANDBOX_NETWORK_URL: network.url,
      JOB_RETENTION_DAYS: '1',
      WEBHOOK_DELIVERY_RETENTION_DAYS: '2',
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      RATE_LIMIT_MAX: '100000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  channelIds = [];
  for (let i = 0; i < CHANNELS; i++)
    channelIds.push((await createChannel(server.ctx.db, org.id, 'sandbox', `Sandbox ${i}`)).id);
});
afterAll(async () => {
  await server?.close();
  await Promise.all([network?.close(), receiver?.close()]);
});

const api = () => publicApi(server, org.auth);

/** The queue's jobs of one queue, by state, as pg-boss keeps them. */
async function jobsOf(queue: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ state: string; count: number }>`
    select state, count(*)::int as count from pgboss.job where name = ${queue} group by state`.execute(server.ctx.db);
  return Object.fromEntries(rows.map((row) => [row.state, row.count]));
}

/** Publishes a post on every channel at once and waits until all are published. */
async function publishRound(round: number): Promise<string[]> {
  const created = await api().POST('/public/v1/posts', {
    body: { type: 'now', content: `Round ${round}`, channelIds },
  });
  const ids = dataOf(created, 201).data.map((post) => post.id);
  await eventually(
    async () => {
      const page = dataOf(await api().GET('/public/v1/posts', { params: { query: { limit: 100 } } }));
      const statuses = page.data.filter((post) => ids.includes(post.id)).map((post) => post.status);
      expect(statuses).toEqual(ids.map(() => 'published'));
    },
    { timeout: scaled(30_000) },
  );
  return ids;
}

describe('retention', () => {
  it(
    "keeps one day's jobs over many days of publications, and every post's history",
    { timeout: scaled(60_000) },
    async () => {
      const published: string[] = [];
      for (let day = 1; day <= 3; day++) {
        published.push(...(await publishRound(day)));
        // The day's jobs, marked completed in batches just after their posts; the day before's are gone
        // (kept a day, and pg-boss's pass runs hourly).
        await eventually(async () => expect(await jobsOf('publish-post')).toEqual({ completed: CHANNELS }), {
          timeout: scaled(20_000),
        });
        await server.clock.advance(DAY_MS + 3_600_000);
      }
      const history = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id: published[0]! } } });
      expect(dataOf(history).data.map((event) => event.type)).toContain('published');
    },
  );

  it('forgets settled webhook deliveries after their retention, and keeps younger and pending ones', async () => {
    const endpoint = dataOf(
      await api().POST('/public/v1/webhooks', {
        body: { url: receiver.url, eventTypes: ['post.failed'] },
      }),
      201,
    );
    const now = server.clock.now().getTime();
    const delivery = (id: string, status: 'succeeded' | 'failed' | 'pending', ageDays: number) => ({
      id,
      endpoint_id: endpoint.id,
      event_type: 'post.failed',
      ordering_key: null,
      payload: '{}',
      status,
      next_attempt_at: status === 'pending' ? new Date(now + DAY_MS) : null,
      created_at: new Date(now - ageDays * DAY_MS),
    });
    await server.ctx.db
      .insertInto('webhook_deliveries')
      .values([
        delivery('msg_oldSucceeded00000000', 'succeeded', 2.1),
        delivery('msg_oldFailed00000000000', 'failed', 3),
        delivery('msg_youngSucceeded000000', 'succeeded', 1.9),
        delivery('msg_oldPending0000000000', 'pending', 3),
      ])
      .execute();
    await keepHouse(server.ctx);
    const kept = await api().GET('/public/v1/webhooks/{id}/deliveries', { params: { path: { id: endpoint.id } } });
    expect(
      dataOf(kept)
        .data.map((d) => d.id)
        .sort(),
    ).toEqual(['msg_oldPending0000000000', 'msg_youngSucceeded000000']);
  });
});
